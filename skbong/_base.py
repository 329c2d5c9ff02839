"""Shared scikit-learn machinery of BongRegressor and BongClassifier.

The estimators validate, encode, convert to and from JAX, and delegate every
number to :mod:`skbong.engine`. The fitted belief is kept as numpy arrays (no JAX
array and no jitted function lives on an estimator), so estimators pickle and
resume on another machine.
"""

import os
import warnings
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import _check_sample_weight, validate_data

from . import engine
from ._bank import PRIOR_GRID, PriorBankMixin, discounted_gain, evidence_discount
from ._guard import _check_not_forked
from ._posterior import PosteriorMixin
from ._signature import structural_signature
from .exceptions import NonFiniteUpdateError, SkippedRowsWarning

STRUCTURAL = (
    "hidden_layer_sizes",
    "activation",
    "model",
    "fit_intercept",
    "family",
    "rank",
    "rule",
    "hessian",
    "n_iter",
    "mc_samples",
    "batch_size",
    "dtype",
    "backtrack",
)
"""Parameters that fix the shape of the belief or the compiled program: changing one
of them between ``partial_fit`` calls requires a new ``fit``."""

def _physical_memory():
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):  # pragma: no cover - non-POSIX
        return 16 * 2**30



def _is_sound(family, state):
    """Whether a belief (a tuple of numpy arrays) is usable: the family's once-per-call
    host check (:attr:`~skbong.engine.families.Family.host_check`; the dense families'
    Cholesky, the dlr variances), for the families whose per-step validity check does
    not guarantee it."""
    check = engine.FAMILIES[family].host_check
    return check is None or check(state)


class BongBase(PriorBankMixin, PosteriorMixin, BaseEstimator):
    """Parameters, validation and streaming shared by the BONG estimators."""

    _parameter_constraints = {
        "hidden_layer_sizes": ["array-like", Interval(Integral, 1, None, closed="left")],
        "activation": [StrOptions(set(engine.models.ACTIVATIONS))],
        "model": "no_validation",
        "fit_intercept": ["boolean"],
        "family": [StrOptions(set(engine.FAMILY_NAMES))],
        "rank": [Interval(Integral, 1, None, closed="left")],
        "rule": [StrOptions(set(engine.RULE_NAMES))],
        "hessian": [StrOptions(set(engine.HESSIAN_NAMES))],
        "learning_rate": [Interval(Real, 0, None, closed="neither")],
        "n_iter": [Interval(Integral, 1, None, closed="left")],
        "mc_samples": [Interval(Integral, 1, None, closed="left")],
        "backtrack": [Interval(Integral, 0, None, closed="left")],
        "prior_variance": [Interval(Real, 0, None, closed="neither"), StrOptions({"auto"})],
        "drift": [Interval(Real, 0, 1, closed="right")],
        "process_noise": [Interval(Real, 0, None, closed="left")],
        "batch_size": [Interval(Integral, 1, None, closed="left")],
        "predictive": [StrOptions({*engine.PREDICTIVES, "auto"})],
        "predictive_samples": [Interval(Integral, 1, None, closed="left")],
        "dtype": [StrOptions({"float32", "float64"})],
        "on_error": [StrOptions({"raise", "skip"})],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
    }

    def __init__(
        self,
        *,
        hidden_layer_sizes=(),
        activation="relu",
        model=None,
        fit_intercept=True,
        family="dlr",
        rank=10,
        rule="bong",
        hessian="lin_hess",
        learning_rate=0.1,
        n_iter=10,
        mc_samples=10,
        backtrack=0,
        prior_variance=1.0,
        drift=1.0,
        process_noise=0.0,
        batch_size=1,
        predictive="auto",
        predictive_samples=100,
        dtype="float32",
        on_error="raise",
        random_state=None,
        verbose=0,
    ):
        self.hidden_layer_sizes = hidden_layer_sizes
        self.activation = activation
        self.model = model
        self.fit_intercept = fit_intercept
        self.family = family
        self.rank = rank
        self.rule = rule
        self.hessian = hessian
        self.learning_rate = learning_rate
        self.n_iter = n_iter
        self.mc_samples = mc_samples
        self.backtrack = backtrack
        self.prior_variance = prior_variance
        self.drift = drift
        self.process_noise = process_noise
        self.batch_size = batch_size
        self.predictive = predictive
        self.predictive_samples = predictive_samples
        self.dtype = dtype
        self.on_error = on_error
        self.random_state = random_state
        self.verbose = verbose

    def _poor_score(self):
        """scikit-learn's ``poor_score`` tag: True for the plain-gradient rules (BOG,
        BBB), whose one-pass score depends on a ``learning_rate`` tuned to the data's
        scale, so that no fixed rate reaches the checks' R² 0.5 / accuracy 0.83 on every
        dataset (doc: scikit-learn compatibility)."""
        rule = engine.RULES.get(self.rule) if isinstance(self.rule, str) else None
        return rule is not None and not rule.natural

    # ------------------------------------------------------------------ hooks
    # Subclasses define: _likelihood(), _n_outputs(), _encode_y(y, first) and the
    # public fit / partial_fit signatures.

    # --------------------------------------------------------------- checking
    def _validate_all_params(self):
        self._validate_params()
        hidden = self._model_params()
        engine.check_names(family=self.family, hessian=self.hessian)
        if self.rule == "blr" and self.learning_rate > 1:
            raise ValueError(
                f"learning_rate={self.learning_rate} must be in (0, 1] for rule='blr' (the natural "
                "step is a convex combination of the current and prior precisions)"
            )
        return hidden

    def _signature(self):
        """The structural parameters by value (:func:`~skbong._signature.structural_signature`)."""
        return structural_signature(self, STRUCTURAL)

    def _build_config(self, n_features, n_outputs, hidden):
        model = self._build_model(n_features, n_outputs, hidden)
        n_params = model.n_params()
        family = engine.FAMILIES[self.family]
        need = family.memory(n_params, int(self.rank), np.dtype(self._jax_dtype()).itemsize)
        if need > 0.5 * _physical_memory():
            raise ValueError(
                f"family={self.family!r} with P={n_params} parameters needs about "
                f"{need / 2**30:.1f} GiB for the belief and its update, more than half "
                f"of this machine's memory ({_physical_memory() / 2**30:.1f} GiB); use "
                "family='dlr' or 'diag'"
            )
        return engine.Config(
            model=model,
            likelihood=self._likelihood(n_outputs),
            family=self.family,
            rank=min(int(self.rank), n_params),  # R ≥ P adds nothing: R = P is exact
            rule=self.rule,
            hessian=self.hessian,
            n_iter=int(self.n_iter),
            mc_samples=int(self.mc_samples),
            backtrack=int(self.backtrack),
            dynamic=bool(self.drift != 1.0 or self.process_noise != 0.0),
            learn_noise=self._learns_noise(),
            noise_discount=self._noise_discount(model) if self._learns_noise() else 1.0,
            evidence=self._is_bank(),
        )

    def _is_bank(self):
        """Whether the prior variance is learned by a bank of filters."""
        return isinstance(self.prior_variance, str)  # "auto"

    def _learns_noise(self):
        """Whether the Gaussian noise variance is learned online (regressor hook)."""
        return False

    def _noise_discount(self, model):
        """δ of the learned noise for this engine model (regressor hook)."""
        return 1.0

    def _prior_variances(self, config, stationary=False):
        """Prior variance of every parameter, (P,) numpy in float64 (the model's fan-in
        scaling of ``prior_variance``; (K, P) for the bank), cached per value.

        Regression intercepts start from their own broad prior,
        :data:`~skbong.engine.models.OUTPUT_BIAS_VARIANCE`; classifiers' logit biases
        keep σ₀². ``stationary=True`` gives the variances the OU drift forgets toward
        (``Hyper.prior_var``): σ₀² for the intercepts too. The broad value is where an
        intercept's uncertainty starts, for raw-scale targets, not a scale on which it
        wanders: as a stationary variance it would add (1 − γ²) · 100 to the intercept's
        variance at every step (90 % intervals covered 97 % of a drifting stream).
        """
        cached = getattr(self, "_prior_var_cache", None)
        key = (repr(self.prior_variance), config.model, config.likelihood)
        if cached is None or cached[0] != key:
            broad = config.likelihood == "gaussian"

            def one(v, wide):
                return config.model.prior_variances(
                    v, engine.models.OUTPUT_BIAS_VARIANCE if wide else v
                )

            grid = PRIOR_GRID if self._is_bank() else [self.prior_variance]
            value = tuple(np.stack([one(v, wide) for v in grid]) for wide in (broad, False))
            if not self._is_bank():
                value = tuple(v[0] for v in value)
            cached = self._prior_var_cache = (key, value)
        return cached[1][1 if stationary else 0]

    def _hyper(self, obs_var, config):
        # numpy values: the jitted engine converts them in its fast C++ path, far cheaper
        # than one jnp.asarray dispatch per hyperparameter
        dt = self._jax_dtype()
        return engine.Hyper(
            prior_var=self._prior_variances(config, stationary=True).astype(dt),
            obs_var=np.asarray(obs_var, dt),
            learning_rate=np.asarray(self.learning_rate, dt),
            drift=np.asarray(self.drift, dt),
            process_noise=np.asarray(self.process_noise, dt),
        )

    # ------------------------------------------------------------ the belief
    def _posterior_family(self):
        return self.family

    def _state_to_jax(self):
        """The belief as an engine state of numpy arrays (the jitted engine converts them)."""
        return self._state_class()(*self._state)

    def _engine_state(self, state, noise):
        """What the stream carries: the belief, paired with the noise posterior when it
        is learned."""
        cls = self._state_class()
        return cls(*state) if noise is None else (cls(*state), engine.NoiseState(*noise))

    def _reset(self, n_features, n_outputs, hidden):
        """Forget everything: draw the seed, build the configuration and the prior."""
        self._seed = int(check_random_state(self.random_state).randint(np.iinfo(np.int32).max))
        config = self._build_config(n_features, n_outputs, hidden)
        with self._x64():
            prior_var = self._prior_variances(config).astype(self._jax_dtype())
            priors = [
                engine.prior(config, self._seed, v, self._jax_dtype())
                for v in np.atleast_2d(prior_var)
            ]
            self._prior_mean = np.asarray(priors[0][0])
            states = [tuple(np.asarray(a) for a in state) for _, state in priors]
        if self._is_bank():  # filters stacked on a leading axis; weights from the evidence
            self._state = tuple(np.stack(parts) for parts in zip(*states))
            self._log_evidence = np.zeros(len(PRIOR_GRID))
        else:
            self._state, self._log_evidence = states[0], None
        self._noise = None
        self._fit_signature = self._signature()
        self._config_cache = (self._checked[0], config)
        self._hidden = hidden
        self.n_observations_ = 0
        self.n_skipped_ = 0
        self._n_steps = 0
        return config

    def _config(self, hidden=None):
        """The engine configuration of the fitted belief; ``hidden``: already-checked layer
        sizes (the parameters are validated here otherwise)."""
        if hidden is None:
            hidden = self._check_params()
        snapshot = self._checked[0]  # the parameters just checked
        cached = getattr(self, "_config_cache", None)
        if cached is not None and cached[0] == snapshot:
            return cached[1]
        signature = self._signature()
        if signature != self._fit_signature:
            changed = [k for (k, v), (_, w) in zip(signature, self._fit_signature) if v != w]
            raise ValueError(
                f"parameter(s) {changed} changed since the estimator was fitted; they fix the shape "
                "of the posterior, so call fit() to start again"
            )
        config = self._build_config(self.n_features_in_, self._n_out, hidden)
        self._config_cache = (snapshot, config)
        return config

    def _learn(self, config, X, Y, sample_weight, obs_var):
        """Stream rows into the belief; commit only if every update was valid.

        The compiled stream keeps the previous belief, and flags the step, wherever an
        update gives a non-finite state or one that fails the family's ``is_valid``. For
        the dense families a positive diagonal does not make Σ positive definite, and a
        Cholesky factorisation on every step would add O(P³) work to the O(P² C) Woodbury
        step; so the belief is checked once, after the call's stream (:func:`_is_sound`:
        Σ positive definite, or the dlr marginal variances positive). Only if that check
        fails is the call replayed from the belief before it (:meth:`_replay`), to reject
        the steps that make it fail.
        """
        dt = self._jax_dtype()
        size, n_rows = int(self.batch_size), X.shape[0]
        w = np.ones(n_rows, dt) if sample_weight is None else np.asarray(sample_weight, dt)
        X, Y = X.astype(dt, copy=False), Y.astype(dt, copy=False)
        hyper = self._hyper(obs_var, config)
        noise = self._noise
        if config.learn_noise and noise is None:  # start learning from the value in use
            lead = (len(PRIOR_GRID),) if self._is_bank() else ()
            a0 = np.full(lead + (len(obs_var),), engine.noise.PRIOR_DOF, dt)
            noise = (a0, (a0 * obs_var).astype(dt))
        elif not config.learn_noise:
            noise = None
        if self._is_bank():
            return self._learn_bank(config, hyper, X, Y, w, noise, obs_var)
        (new_state, new_noise), ok = self._run(
            config, (self._state, noise), hyper, X, Y, w, self._n_steps, self._progress(n_rows)
        )
        not_pd = np.zeros_like(ok)
        if not _is_sound(self.family, new_state):
            (new_state, new_noise), ok, not_pd = self._replay(config, hyper, X, Y, w, noise)
        bad = np.flatnonzero(~ok)
        if bad.size and self.on_error == "raise":
            first = int(bad[0]) * size
            last = min(first + size, n_rows) - 1  # the last step may be padded
            rows = f"row {first}" if first == last else f"rows {first}..{last}"
            what = (
                f"{engine.FAMILIES[self.family].unsound} in {self.dtype}"
                if not_pd[bad[0]]
                else "a non-finite or invalid posterior"
            )
            raise NonFiniteUpdateError(
                f"the update for {rows} of this batch gave {what} (family={self.family!r}, "
                f"rule={self.rule!r}, hessian={self.hessian!r}); nothing from this call was "
                f"applied. {self._diagnosis(X)}"
            )
        if bad.size:
            n_bad = int(np.minimum(size, n_rows - bad * size).sum())
            warnings.warn(
                f"{type(self).__name__} skipped {n_bad} of {n_rows} rows ({n_bad / n_rows:.1%}) "
                f"of this call (on_error='skip'): their updates gave a non-finite or invalid "
                f"posterior, so the model did not learn from them. {self._diagnosis(X)}",
                SkippedRowsWarning,
                stacklevel=4,
            )
        # commit: nothing above changed the estimator
        self._state, self._noise = new_state, new_noise
        self._obs_var = np.asarray(obs_var, np.float64)
        self._n_steps += -(-n_rows // size)
        self.n_skipped_ += int(np.minimum(size, n_rows - bad * size).sum())  # real rows only
        self.n_observations_ += int(n_rows)
        self._publish(config)

    def _learn_bank(self, config, hyper, X, Y, w, noise, obs_var):
        """:meth:`_learn` for the bank of prior variances (``prior_variance="auto"``).

        All K filters learn every row in one compiled program. A filter whose update is
        refused (non-finite, invalid or unsound, as in :meth:`_learn`) is dropped from
        the bank: its weight becomes zero for good (a warning says so). Only when no
        filter is left does the call fail, and then nothing is changed. The weight of a
        filter is proportional to exp of its cumulative log predictive density of the
        rows (the online evidence; the marginal likelihood in the conjugate case),
        discounted per row for networks (:func:`~skbong._bank.evidence_discount`).
        """
        size, n_rows = int(self.batch_size), X.shape[0]
        with self._x64():
            new, log_lik, _, ok = engine.stream(
                config,
                self._engine_state(self._state, noise),
                self._prior_mean,
                hyper,
                X,
                Y,
                w,
                size,
                self._n_steps,
                self._key(1),
                callback=self._progress(n_rows),
                bank=True,
            )
        new_state, new_noise = new if config.learn_noise else (new, None)
        new_state = tuple(np.asarray(a) for a in new_state)
        new_noise = None if new_noise is None else tuple(np.asarray(a) for a in new_noise)
        alive = np.isfinite(self._log_evidence)
        for k in np.flatnonzero(alive):
            state_k = tuple(a[k] for a in new_state)
            alive[k] = bool(ok[k].all()) and _is_sound(self.family, state_k)
        if not alive.any():
            raise NonFiniteUpdateError(
                f"the update of every filter of the prior-variance bank (prior_variance='auto', "
                f"{PRIOR_GRID.tolist()}) gave a non-finite or invalid posterior on this batch "
                f"(family={self.family!r}, rule={self.rule!r}, hessian={self.hessian!r}); "
                f"nothing from this call was applied. {self._diagnosis(X)}"
            )
        dropped = np.isfinite(self._log_evidence) & ~alive
        if dropped.any():
            warnings.warn(
                f"{type(self).__name__}: the prior variance(s) {PRIOR_GRID[dropped].tolist()} "
                "were dropped from the bank (prior_variance='auto'): their updates gave a "
                "non-finite or invalid posterior on this batch. The others learned every row.",
                SkippedRowsWarning,
                stacklevel=4,
            )
        weighted = np.nan_to_num(log_lik.astype(np.float64)) * w[None, :]
        gain, keep = discounted_gain(weighted, evidence_discount(config.model))
        # commit: nothing above changed the estimator
        self._log_evidence = np.where(alive, keep * self._log_evidence + gain, -np.inf)
        self._state, self._noise = new_state, new_noise
        self._obs_var = np.asarray(obs_var, np.float64)
        self._n_steps += -(-n_rows // size)
        self.n_observations_ += int(n_rows)
        self._publish(config)

    def _diagnosis(self, X):
        """What most likely helps, read from the inputs and the settings in use."""
        hints = []
        if X.size and float(np.max(np.abs(X))) > 50:
            hints.append(
                f"the inputs reach |x| = {float(np.max(np.abs(X))):.3g}: standardise them "
                "(e.g. make_streaming_pipeline(StandardScaler(), ...))"
            )
        advice = engine.FAMILIES[self.family].advice
        if advice:
            hints.append(advice)
        if self.rule in ("bog", "bbb"):
            hints.append(
                f"rule={self.rule!r} takes plain-gradient steps of size "
                f"learning_rate={self.learning_rate}: lower it, or use rule='bong' / 'blr'"
            )
        if not self._learns_noise() and getattr(self, "_likelihood", None) and (
            self._likelihood(1) == "gaussian"
        ):
            hints.append("a fixed obs_variance too small for the data: try obs_variance='auto'")
        hints.append(f"a smaller prior_variance (now {self.prior_variance!r})")
        if self.dtype == "float32":
            hints.append("dtype='float64'")
        return "Most likely to help: " + "; ".join(hints) + "."

    def _run(self, config, belief, hyper, X, Y, w, step0, callback=None):
        """Stream rows from ``belief = (state, noise)`` (tuples of numpy arrays; noise
        None when it is not learned) through the compiled engine; return the new belief
        in the same form and the per-step ``ok`` flags."""
        with self._x64():
            new, _, _, ok = engine.stream(
                config,
                self._engine_state(*belief),
                self._prior_mean,
                hyper,
                X,
                Y,
                w,
                int(self.batch_size),
                step0,
                self._key(1),
                callback=callback,
            )
            state, noise = new if config.learn_noise else (new, None)
            state = tuple(np.asarray(a) for a in state)
            noise = None if noise is None else tuple(np.asarray(a) for a in noise)
            return (state, noise), ok

    def _replay(self, config, hyper, X, Y, w, noise):
        """Slow path of a call whose belief failed :func:`_is_sound` at its end.

        Replays the call from the belief before it, chunk by chunk as the stream ran
        (same programs, same keys, so the same states), checking the belief after each
        chunk; a chunk that ends unsound is replayed one step at a time and each step that
        leaves it unsound is rejected like a non-finite one: the belief stays as before
        that step. With ``on_error="raise"`` it stops at the first rejected step.

        Returns
        -------
        belief : (tuple of ndarray, tuple of ndarray or None)
            The belief and noise posterior after the accepted steps; the belief passes
            :func:`_is_sound`.
        ok : ndarray of bool (n_steps,)
            False for rejected steps (non-finite, invalid or unsound).
        not_pd : ndarray of bool (n_steps,)
            True for steps rejected by :func:`_is_sound` (e.g. Σ not positive definite).
        """
        size, n_rows = int(self.batch_size), X.shape[0]
        n_steps = -(-n_rows // size)
        ok, not_pd = np.ones(n_steps, bool), np.zeros(n_steps, bool)
        stop = self.on_error == "raise"
        state, start = (self._state, noise), 0

        def run(state, first, end):  # steps first..end-1 from ``state``
            rows = slice(first * size, min(end * size, n_rows))
            return self._run(
                config, state, hyper, X[rows], Y[rows], w[rows], self._n_steps + first
            )

        for length in engine.chunk_plan(n_steps):
            end = min(start + length, n_steps)
            if start >= end:
                break
            new, ok_chunk = run(state, start, end)
            if _is_sound(self.family, new[0]):
                state, ok[start:end] = new, ok_chunk
            else:
                for t in range(start, end):
                    new, ok_step = run(state, t, t + 1)
                    if not ok_step[0]:
                        ok[t] = False
                    elif not _is_sound(self.family, new[0]):
                        ok[t], not_pd[t] = False, True
                    else:
                        state = new
                    if stop and not ok[t]:
                        return state, ok, not_pd
            if stop and not ok.all():
                return state, ok, not_pd
            start = end
        return state, ok, not_pd

    def _progress(self, n_rows):
        if not self.verbose:
            return None
        try:
            from tqdm.auto import tqdm
        except ImportError:  # pragma: no cover - optional extra
            tqdm = None
        if tqdm is None:
            return lambda done, total: print(f"[{type(self).__name__}] step {done}/{total}")
        bar = tqdm(total=-(-n_rows // int(self.batch_size)), desc=type(self).__name__, unit="step")

        def update(done, total):
            bar.update(done - bar.n)
            if done == total:
                bar.close()

        return update

    # ------------------------------------------------------------- fit paths
    def _fit_rows(self, X, y, sample_weight, reset, **encode_kw):
        _check_not_forked()
        first = reset or not hasattr(self, "_state")
        # Every call is atomic. One that starts afresh rewrites the input checks
        # (n_features_in_, feature_names_in_), the target encoding (classes_,
        # obs_variance_, ...) and the belief; one that continues commits the belief and
        # its counters together at the end of _learn. A shallow copy of the attributes
        # (about a microsecond) restores all of it on any exception, KeyboardInterrupt
        # included; the fitted arrays are never modified in place, only replaced.
        backup = self.__dict__.copy()
        try:
            hidden = self._check_params()
            if first or not self._is_plain_batch(X, y):
                X, y = validate_data(
                    self,
                    X,
                    y,
                    reset=first,
                    dtype=[np.float64, np.float32],
                    multi_output=True,
                    y_numeric=self._y_numeric,
                )
            if sample_weight is not None:
                sample_weight = _check_sample_weight(sample_weight, X, dtype=np.float64)
                if not np.all(np.isfinite(sample_weight)):
                    raise ValueError("sample_weight contains NaN or infinity")
                if np.any(sample_weight < 0):
                    raise ValueError("sample_weight must be non-negative")
            Y, n_out, obs_var = self._encode_y(y, first, **encode_kw)
            if first:
                self._n_out = n_out
                config = self._reset(X.shape[1], n_out, hidden)
            else:
                config = self._config(hidden)
            self._learn(config, X, Y, sample_weight, obs_var)
        except BaseException:
            self.__dict__.clear()
            self.__dict__.update(backup)
            raise
        return self

    def _is_plain_batch(self, X, y):
        """Whether ``validate_data`` would return X and y unchanged (so it can be skipped):
        finite float numpy rows of the fitted width, numeric numpy targets of the same
        length, and no feature names to check. The common case of a stream of
        ``partial_fit`` calls; anything else goes through ``validate_data``."""
        return (
            type(X) is np.ndarray
            and type(y) is np.ndarray
            and X.dtype in (np.float32, np.float64)
            and X.ndim == 2
            and X.shape[0] >= 1
            and X.shape[1] == self.n_features_in_
            and y.ndim in (1, 2)
            and y.shape[0] == X.shape[0]
            and y.dtype.kind in "biuf"
            and not hasattr(self, "feature_names_in_")
            and bool(np.isfinite(X).all())
            and (y.dtype.kind != "f" or bool(np.isfinite(y).all()))
        )


__all__ = ["BongBase", "STRUCTURAL"]
