"""The machinery shared by every skbong estimator that holds a Gaussian belief over the
parameters of a model: parameter checking, building the model, and predicting from the
belief (the numbers come from :mod:`skbong.engine`).

The belief is kept as a tuple of numpy arrays in ``_state`` (a ``MeanCov`` or a
``DLRState`` of the family ``_posterior_family()``), so estimators pickle and resume
on another machine.
"""

import functools
from numbers import Integral

import jax
import jax.numpy as jnp
import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted, validate_data

from .. import engine
from ..adapters import _as_model, _framework_of
from . import inputs as _inputs
from .guard import _check_not_forked

_PREDICT_BLOCKS = (1, 8, 128, 1024)
"""Row-block sizes of the compiled predictives: a call pads its rows up to the smallest
block that holds them (1, 8 or 128) or runs 1024-row blocks, so at most four programs
exist per predictive, configuration and feature count. In float64 one row is a block of
its own: a served prediction would otherwise compute eight (a sampled predictive's
transcendentals made a one-row ``predict_proba`` 1.5× slower in an 8-row block), and
the blocks agree to ~1e-15. In float32 every call of up to 128 rows runs the 128-row
block (:data:`_FLOAT32_BLOCKS`)."""

_FLOAT32_BLOCKS = _PREDICT_BLOCKS[2:]
"""The blocks of a float32 predictive. XLA:CPU's float32 kernels round a row differently
in blocks of different sizes, by ~1e-6 relative, past scikit-learn's subset-invariance
check (rtol 1e-7): a lone row against a block everywhere, and on a 2-core AMD EPYC the
8- against the 128-row block too (the dlr Poisson regressor's predictive variance, a
float32 network regressor's). One block for every small call keeps a row's prediction
independent of the rows it is predicted with. A one-row float32 ``predict`` then
computes 128 rows: 0–60 µs more per call on that machine (one-row Poisson ``predict``,
three alternating runs of 400 calls: 175–285 µs in 8 rows, 244–299 µs in 128), and one
program fewer per predictive."""


_BLOCK_ELEMENTS = 2**23
"""The most elements a block's per-row Jacobians may hold (32 MB in float32): the
linearised moments form J (C × P) for every row of a block, padding rows included, so a
block of b rows holds b C P numbers. A predictive that forms them runs the blocks of
:data:`_PREDICT_BLOCKS` / :data:`_FLOAT32_BLOCKS` that fit, or else one block size for
every call: 8 rows where 8 fit, else 1 (in float32 one size keeps a row's prediction
independent of the rows it is predicted with). At P = 1e6 (dlr-10 network regressor,
float32) a one-row ``predict(X, return_std=True)`` computed 128 Jacobians, 512 MB, in
0.8–0.9 s; in one 8-row block it takes 89–93 ms (medians, :doc:`/performance`)."""


def _blocks(dt, row_elements):
    """The row blocks of a predictive in dtype ``dt`` whose programs hold
    ``row_elements`` numbers per row (0: nothing that grows with P); see
    :data:`_BLOCK_ELEMENTS`."""
    blocks = _PREDICT_BLOCKS if dt is np.float64 else _FLOAT32_BLOCKS
    fit = tuple(b for b in blocks if b * row_elements <= _BLOCK_ELEMENTS)
    if fit:
        return fit
    return (8 if 8 * row_elements <= _BLOCK_ELEMENTS else 1,)


def _check_fitted(est):
    """``check_is_fitted(est, "_state")``, without scikit-learn's tag lookup once fitted
    (about 10 µs of every one-row call)."""
    if "_state" not in est.__dict__:
        check_is_fitted(est, "_state")


def _check_model(model):
    if model is None or _framework_of(model) is not None:  # a flax or equinox network
        return
    init = getattr(model, "init", None) if not isinstance(model, tuple) else model[0]
    apply = getattr(model, "apply", None) if not isinstance(model, tuple) else model[1]
    if not (callable(init) and callable(apply)) or (isinstance(model, tuple) and len(model) != 2):
        raise ValueError(
            "model must be None, a pair (init, apply) of callables, an object with "
            "callable .init and .apply attributes, or a flax or equinox network; got "
            f"{model!r}"
        )


@functools.lru_cache(maxsize=256)
def _cached_key(seed, purpose):
    """``fold_in(PRNGKey(seed), purpose)`` as a read-only numpy array (computed once)."""
    key = np.asarray(engine.make_key(seed, purpose))
    key.flags.writeable = False
    return key


NORMALS_MAX = 2**20
"""Most entries (S × P) of the standard normal draws a sampled predictive keeps cached
(8 MiB in float64); above it the parameter draws are made from the estimator's key at
every call."""


@functools.lru_cache(maxsize=8)
def _cached_normals(seed, n, p):
    """The standard normal rows (n, p) in float64 of the sampled predictives, from
    numpy's generator seeded by ``(seed, 2)``, as a read-only array made once per process.
    Drawn on the host: a program of their own would add a compilation to the first
    sampled prediction, and threefry in the predictive's program cost 100 µs of every
    265 µs one-row ``predict_proba`` at P = 11, S = 100."""
    eps = np.random.default_rng([seed, 2]).standard_normal((n, p))
    eps.flags.writeable = False
    return eps


def _offsets(parts, belief):
    """Where the arrays ``parts`` lie in those of ``belief`` (byte offsets: a bank's
    filters are views into the stacked arrays, a single belief is its own), or None
    where one does not lie inside its counterpart; the same for a copy of the belief."""
    offsets = []
    for a, b in zip(parts, belief):
        offset = a.__array_interface__["data"][0] - b.__array_interface__["data"][0]
        if offset < 0 or offset + a.nbytes > b.nbytes:
            return None
        offsets.append(offset)
    return tuple(offsets)


_PARAM_NAMES = {}
_SCALARS = frozenset((bool, int, float, str, type(None)))

_TRANSIENT = ("_belief_memo", "_config_cache", "_prior_var_cache", "_loo_cache")
"""Caches rebuilt on demand, left out of the pickled state (:meth:`BeliefBase.__getstate__`)."""


class BeliefBase(BaseEstimator):
    """The root of every skbong estimator that holds a Gaussian belief: parameter
    checking, the working dtype, model building, pickling, and predicting from the
    belief in compiled row blocks (``_predict_rows``, ``_draw_outputs``), which the
    faces call. It has no public member: the public attributes of the belief
    (``posterior_``, ``posterior_var_``, ...) are this module's functions, which the
    online and batch bases name in their class bodies.

    A subclass defines ``_validate_all_params()`` (returning the hidden layer sizes),
    ``_config()`` (the engine :class:`~skbong.engine.Config` of the fitted belief),
    ``_posterior_family()``, and, through its face, ``_linear_attributes`` and
    ``_predictive_kind``; for a mixture of beliefs it names the bank's ``_components``.
    """

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = False
        return tags

    def _poor_score(self):
        """scikit-learn's ``poor_score`` tag (set by the regression and classification
        faces): whether the checks' score thresholds are not promised. False here."""
        return False

    @classmethod
    def _get_param_names(cls):
        # scikit-learn reads the constructor signature with ``inspect`` on every
        # get_params / _validate_params call; it never changes, so read it once per class.
        names = _PARAM_NAMES.get(cls)
        if names is None:
            names = _PARAM_NAMES[cls] = super()._get_param_names()
        return names

    def _check_params(self):
        """Validate the parameters and return the hidden layer sizes as a tuple of ints.

        The checks run again only when a parameter changed since the last successful
        check (:meth:`_param_snapshot`), so that a stream of one-row ``partial_fit``
        calls pays for them once.
        """
        snapshot = self._param_snapshot()
        if snapshot == getattr(self, "_checked", (None, None))[0]:
            return self._checked[1]
        hidden = self._validate_all_params()
        self._checked = (snapshot, hidden)
        return hidden

    def _param_snapshot(self):
        # Scalars by type name and value (cheap to compare; a name, not the type, so that
        # no type object is stored), anything else (a list, an array, a model) by
        # ``repr``, which also sees it mutated in place.
        return tuple(
            (type(v).__name__, v) if type(v) in _SCALARS else repr(v)
            for v in map(functools.partial(getattr, self), self._get_param_names())
        )

    def _is_plain_rows(self, X):
        """Whether ``validate_data(self, X, reset=False)`` would return X unchanged and
        warn about nothing, so that it can be skipped: a finite float numpy array of
        rows of the fitted width, and no feature names fitted. The common case of one-row
        ``predict`` and ``partial_fit`` calls; anything else is validated."""
        return (
            type(X) is np.ndarray
            and X.dtype.char in "fd"
            and X.ndim == 2
            and X.shape[0] >= 1
            and X.shape[1] == self.n_features_in_
            and not hasattr(self, "feature_names_in_")
            and bool(np.isfinite(X).all())
        )

    def _dtype_name(self):
        """``dtype`` resolved (``"auto"`` by :meth:`_auto_dtype`)."""
        return self._auto_dtype() if self.dtype == "auto" else self.dtype

    def _auto_dtype(self):
        """``dtype="auto"``: ``"float32"`` (the regressor's hook)."""
        return "float32"

    def _jax_dtype(self):
        return np.float64 if self._dtype_name() == "float64" else np.float32

    def _x64(self):
        return jax.enable_x64(self._dtype_name() == "float64")

    def _model_params(self):
        """Check ``hidden_layer_sizes`` and ``model``; return the layer sizes as a tuple of
        ints (an int is one layer, as in ``MLPClassifier``)."""
        sizes = tuple(np.atleast_1d(np.asarray(self.hidden_layer_sizes, dtype=object)).tolist())
        if any(not isinstance(s, Integral) or isinstance(s, bool) or s < 1 for s in sizes):
            raise ValueError(
                "hidden_layer_sizes must be a tuple of positive integers, got "
                f"{self.hidden_layer_sizes!r}"
            )
        _check_model(self.model)
        return tuple(int(s) for s in sizes)

    def _build_model(self, n_features, n_outputs, hidden):
        """The engine model: an MLP from ``hidden_layer_sizes``, or the user's ``model``."""
        if self.model is None:
            return engine.MLP(
                n_features, n_outputs, hidden, self.activation, bool(self.fit_intercept)
            )
        model = _as_model(self.model)
        init, apply = model if isinstance(model, tuple) else (model.init, model.apply)
        return engine.UserModel(init, apply, n_features, n_outputs)

    def __getstate__(self):
        """The state kept by pickle, deepcopy and ``skops.io``: without the caches rebuilt
        on demand (:data:`_TRANSIENT`; the stream's memo holds JAX arrays, which unpickle
        as float32 without x64) and with no sampled predictives' draws kept (their dict
        is keyed by tuples, which ``skops.io`` cannot save); predictions are the same,
        bit for bit, and :meth:`_draws` keeps draws again from the next one."""
        state = super().__getstate__()  # object's is the instance's own dict: copy
        state = {k: v for k, v in state.items() if k not in _TRANSIENT}
        if "_draws_cache" in state:
            state["_draws_cache"] = []
        return state

    def _key(self, purpose):
        return _cached_key(self._seed, purpose)

    def _normals(self, n_samples):
        """The sampled predictives' standard normal rows (S, P) (:func:`_cached_normals`);
        ``None`` above :data:`NORMALS_MAX` entries, where the parameters are drawn from
        ``self._key(2)``."""
        p = np.shape(self._state[0])[-1]  # the mean's (a bank's filters on a leading axis)
        if n_samples * p > NORMALS_MAX:
            return None
        return _cached_normals(self._seed, int(n_samples), int(p))

    def _draws(self, config, parts, state, n_samples):
        """The sampled predictives' parameter draws θₛ (S, P) from the belief ``parts``
        (``state``: the same in float64): the transform of the cached normals
        (:meth:`_normals`), made once per belief (and per filter of a bank) and kept
        until the next update (the dlr transform's eigendecomposition was most of a
        one-row ``predict_proba``); drawn from ``self._key(2)`` at every call above
        :data:`NORMALS_MAX`, which also bounds what is kept in all."""
        # ``_draws_cache`` is a list made by fit and filled in place, so that predicting
        # leaves ``__dict__`` as it was (scikit-learn's check_dict_unchanged); an
        # estimator without one (unpickled from an older version) keeps nothing. It holds
        # ``[belief, {key: draws}]``, a filter keyed by where it lies in the belief.
        cache = self.__dict__.get("_draws_cache")
        where = _offsets(parts, self._state)
        key = (n_samples, self._seed, where)
        if cache and cache[0] is self._state and key in cache[1]:
            return cache[1][key]
        eps = self._normals(n_samples)
        thetas = engine.draw_parameters(config, state, self._key(2), n_samples, eps)
        if eps is not None and cache is not None and where is not None:
            if not cache or cache[0] is not self._state:  # a new belief: forget the old
                cache[:] = [self._state, {}]
            kept = cache[1]
            if sum(t.size for t in kept.values()) + thetas.size <= NORMALS_MAX:
                thetas = kept[key] = np.asarray(thetas)
        return thetas

    def _state_class(self):
        """``DLRState`` or ``MeanCov``, the engine type of the belief's tuple."""
        return engine.FAMILIES[self._posterior_family()].state_type

    def _components(self, static_only=False):
        """The beliefs predictions mix, as ``(weight, state, noise)``: here one, of weight 1
        (a model without drift: ``static_only`` changes nothing)."""
        return [(1.0, self._state, getattr(self, "_noise", None))]

    def _publish(self, config):
        """Expose the belief as numpy fitted attributes (``posterior_var_`` on first access)."""
        parts = self._components()
        if len(parts) == 1:  # the same numbers as the sum below (weight 1), without it
            self.posterior_mean_ = np.array(parts[0][1][0], self._state[0].dtype)
        else:
            self.posterior_mean_ = sum(
                wt * np.asarray(st[0], np.float64) for wt, st, _ in parts
            ).astype(self._state[0].dtype)
        self._posterior_var, self._fitted_config = None, config
        if self.model is None and not self._hidden:
            d, c = self.n_features_in_, self._n_out
            weights = self.posterior_mean_[: d * c].reshape(d, c).T
            bias = self.posterior_mean_[d * c :] if self.fit_intercept else np.zeros(c)
            affine = getattr(self, "_input_standardisation", None)
            if affine is not None:  # W (x − m) / s + b = (W / s) x + (b − (W / s) m)
                weights = weights / affine[1]
                bias = bias - weights @ affine[0]
            self.coef_, self.intercept_ = self._linear_attributes(weights, bias)

    # ------------------------------------------------------------ predicting
    def _program_state(self, parts, dt):
        """The belief ``parts`` (a tuple of numpy arrays) as a program argument in dtype
        ``dt``: the JAX arrays it was read from where the stream's memo holds them
        (:func:`~skbong._online.stream.engine_belief`; no conversion), else
        numpy arrays."""
        memo = getattr(self, "_belief_memo", None)
        if memo is not None and memo[0] is parts and parts[0].dtype == dt:
            return memo[2] if memo[1] is None else memo[2][0]
        return self._state_class()(*(np.asarray(a, dt) for a in parts))

    def _predict_rows(
        self, X, fn, state=None, sampled=False, validated=False, jacobians=0, **kw
    ):
        """Apply a jitted engine predictive to X in fixed-size row blocks (to the belief
        ``state``, a tuple of numpy arrays, default the fitted one).

        ``validated=True``: X is rows the estimator has already checked (its own).
        ``jacobians``: how many C × P arrays ``fn`` forms per row (1 for the linearised
        moments, 1 + D with their input gradients), which bounds the block
        (:func:`_blocks`).
        ``sampled=True`` (a Monte Carlo predictive) computes in float64 whatever
        ``dtype``: XLA's float32 matrix kernels round differently for 8-, 128- and
        1024-row blocks (by ~1e-6 on the logits), so a row's averaged prediction would
        depend on which rows it is predicted with; in float64 the difference is ~1e-15.
        ``fn`` then takes the belief's ``predictive_samples`` parameter draws
        (:meth:`_draws`) as ``thetas``.
        """
        _check_fitted(self)
        _check_not_forked()
        if not (validated or self._is_plain_rows(X)):
            X = validate_data(self, X, reset=False, dtype=[np.float64, np.float32])
        dt = np.float64 if sampled else self._jax_dtype()
        X = _inputs.engine_inputs(self, X).astype(dt, copy=False)  # a network's standardisation
        config = self._config()
        outs = []
        with jax.enable_x64(dt is np.float64):
            parts = self._state if state is None else state
            state = self._program_state(parts, dt)
            key = self._key(2)
            if sampled:
                kw["thetas"] = self._draws(config, parts, state, int(self.predictive_samples))
            blocks = _blocks(dt, jacobians * parts[0].shape[-1] * self._n_out)
            big = blocks[-1]
            for start in range(0, X.shape[0], big):
                block = X[start : start + big]
                n = block.shape[0]
                size = next(b for b in blocks if b >= n)
                if size > n:
                    block = np.concatenate([block, np.zeros((size - n, X.shape[1]), X.dtype)])
                res = fn(config, state, block, key, **kw)
                outs.append(tuple(np.array(r)[:n] for r in res))  # writable copies
        if len(outs) == 1:
            return outs[0]
        return tuple(np.concatenate(parts) for parts in zip(*outs))

    def _draw_outputs(self, X, n_samples, random_state):
        """Model outputs f(x, θ) at n_samples draws θ ~ q, for ``sample_y``, ``sample_f``
        and ``sample_proba``.

        With a bank of filters, the number of draws of each comes from one multinomial
        draw on the weights (an exact draw from the mixture). One parameter sample is
        shared by all rows of a draw. All parameter draws are taken from the generator
        before anything else, so a caller that goes on to draw noise from it does not
        change the parameter draws.

        Returns
        -------
        rng : numpy.random.RandomState
            The generator of ``random_state``, after the parameter draws.
        draws : list of (noise, f)
            One pair per filter drawn from, in order: its noise posterior (None when
            the noise is fixed) and the outputs f, float64 of shape (n_rows, C, s_k),
            Σ s_k = n_samples.
        """
        _check_fitted(self)
        _check_not_forked()
        if not isinstance(n_samples, int | np.integer) or n_samples < 1:
            raise ValueError(f"n_samples must be a positive integer, got {n_samples!r}")
        rng = check_random_state(random_state)
        parts = self._components()
        counts = rng.multinomial(n_samples, [wt for wt, _, _ in parts])  # draws per filter
        keys = [
            jax.random.PRNGKey(int(rng.randint(np.iinfo(np.int32).max))) if n_k else None
            for n_k in counts
        ]
        draws = []
        for (_, state, noise), n_k, key in zip(parts, counts, keys):
            if n_k == 0:
                continue

            def draw(cfg, st, x, _, key=key, n_k=int(n_k)):
                f = engine.sample_outputs(cfg, st, x, key, "mc", n_k)
                return (jnp.moveaxis(f, 0, -1),)

            (f,) = self._predict_rows(X, draw, state=state)
            draws.append((noise, f.astype(np.float64)))
        return rng, draws



def posterior(est):
    """The Gaussian belief itself, as the engine's state of read-only numpy copies.

    ``skbong.engine.MeanCov(mean, cov)`` for the ``full`` and ``full_moment``
    families (``cov`` the covariance Σ, (P, P)) and for ``diag`` / ``diag_moment``
    (``cov`` the variances, (P,)); ``skbong.engine.DLRState(mean, prec_diag,
    prec_lr)`` for ``dlr``, the precision Σ⁻¹ = diag(prec_diag) + prec_lr prec_lrᵀ
    with ``prec_lr`` of shape (P, R). With a prior bank every array has
    a leading axis over the bank's filters (``prior_weights_``). In the working
    ``dtype``; a fresh copy on each access.
    """
    _check_fitted(est)
    arrays = []
    for a in est._state:
        a = np.array(a)
        a.flags.writeable = False
        arrays.append(a)
    return est._state_class()(*arrays)


def dtype(est):
    """The working precision of the belief, ``"float32"`` or ``"float64"``: ``dtype``,
    or what ``"auto"`` chose for the fitted model."""
    _check_fitted(est)
    return np.dtype(est.posterior_mean_.dtype).name


def predictive(est):
    """The posterior predictive that ``predict`` and its siblings use by default:
    ``predictive``, or what ``"auto"`` means for this estimator."""
    _check_fitted(est)
    return est._predictive_kind()


def posterior_var(est):
    """Posterior marginal variances diag(Σ), shape (P,).

    Computed from the belief on first access after an update (a single-row
    ``partial_fit`` does not pay for it), then kept.
    """
    _check_fitted(est)
    if getattr(est, "_posterior_var", None) is None:
        _check_not_forked()
        cls = est._state_class()
        parts = est._components()
        with est._x64():
            var = [
                np.asarray(engine.marginal_var(est._fitted_config, cls(*st)))
                for _, st, _ in parts
            ]
        if len(parts) == 1:
            est._posterior_var = var[0]
        else:  # mixture: E[θ²] − E[θ]² over the bank's filters
            second = sum(
                wt * (v.astype(np.float64) + np.square(st[0], dtype=np.float64))
                for (wt, st, _), v in zip(parts, var)
            )
            mean = est.posterior_mean_.astype(np.float64)
            est._posterior_var = (second - mean * mean).astype(est._state[0].dtype)
    return est._posterior_var


def n_params(est):
    """Number of model parameters P."""
    _check_fitted(est)
    return int(est._prior_mean.shape[0])


__all__ = ["BeliefBase", "dtype", "n_params", "posterior", "posterior_var", "predictive"]
