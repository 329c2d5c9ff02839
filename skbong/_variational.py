"""VariationalRegressor and VariationalClassifier: batch variational learning to
convergence, by the seed papers' solvers (VOGN, VON, Vprop, Vadam, SLANG, BBB) and IVON.

The same model, likelihood, posterior families and predictives as the Bong estimators
(:class:`~skbong._posterior.PosteriorMixin` and the regression / classification faces);
the learning is :mod:`skbong.engine.solvers` driven one compiled epoch at a time by
:func:`skbong.engine.epochs.run_epoch`.
"""

import warnings
from numbers import Integral, Real

import jax
import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import train_test_split
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import _check_sample_weight, check_is_fitted, validate_data

from . import engine
from ._classifier import ClassifierFace
from ._guard import _check_not_forked
from ._posterior import PosteriorMixin
from ._regression_face import RegressorFace
from ._signature import structural_signature
from .engine import epochs, solvers
from .exceptions import SkippedRowsWarning

SOLVER_DEFAULTS = {
    # solver: (learning_rate α, precision_rate β, momentum γ₁)
    "vogn": (0.01, 0.01, 0.0),
    "von": (0.01, 0.01, 0.0),
    "slang": (0.01, 0.01, 0.0),
    "vprop": (0.01, 0.1, 0.0),
    "vadam": (0.01, 0.1, 0.99),
    "bbb": (0.01, 0.001, 0.9),
    "ivon": (0.1, 1e-5, 0.9),
}
"""What ``None`` means for ``learning_rate``, ``precision_rate`` and ``momentum`` per
solver. Vadam's are the paper's UCI settings (α = 0.01,
γ₁ = 0.99, γ₂ = 0.9), BBB's Adam's usual ones, IVON's its package's (α = 0.1, β₁ = 0.9,
β₂ = 0.99999, h₀ = 1: with β₂ = 0.999 its Hessian estimate drifted and the digits
log-loss rose from 0.15 at 20 epochs to 1.12 at 200; at 0.99999 it stays at 0.12); for
vogn, von and slang α = β = 0.01 (one natural-gradient rate) was the best of
{0.1, 0.03, 0.01} on digits (benchmarks/bench_variational.py)."""

STRUCTURAL = (
    "hidden_layer_sizes",
    "activation",
    "model",
    "fit_intercept",
    "solver",
    "family",
    "curvature",
    "rank",
    "mc_samples",
    "batch_size",
    "dtype",
)
"""Parameters that fix the shape of the state or the compiled epoch: changing one of
them requires a new ``fit`` (``warm_start`` and ``partial_fit`` refuse)."""


def _stalled(curve, window, tol):
    """Whether the loss has stopped improving: the mean of its last ``window`` epochs is
    not below the mean of the ``window`` before by more than ``tol``. (The loss is a
    Monte Carlo estimate: comparing window means, not single epochs, keeps its noise
    from stopping a fit that still improves.)"""
    if len(curve) < 2 * window:
        return False
    last, before = np.mean(curve[-window:]), np.mean(curve[-2 * window : -window])
    return not last < before - tol


class VariationalBase(PosteriorMixin, BaseEstimator):
    """Parameters, validation and the epoch loop shared by the batch estimators."""

    _parameter_constraints = {
        "hidden_layer_sizes": ["array-like", Interval(Integral, 1, None, closed="left")],
        "activation": [StrOptions(set(engine.models.ACTIVATIONS))],
        "model": "no_validation",
        "fit_intercept": ["boolean"],
        "solver": [StrOptions(set(solvers.SOLVER_NAMES))],
        "family": [StrOptions({"diag", "full"})],
        "curvature": [StrOptions(set(solvers.CURVATURE_NAMES))],
        "rank": [Interval(Integral, 1, None, closed="left")],
        "learning_rate": [Interval(Real, 0, None, closed="neither"), None],
        "precision_rate": [Interval(Real, 0, 1, closed="right"), None],
        "momentum": [Interval(Real, 0, 1, closed="left"), None],
        "decay": [Interval(Real, 0, None, closed="left")],
        "mc_samples": [Interval(Integral, 1, None, closed="left")],
        "prior_variance": [Interval(Real, 0, None, closed="neither")],
        "init_precision": [Interval(Real, 0, None, closed="neither"), None],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "batch_size": [Interval(Integral, 1, None, closed="left")],
        "shuffle": ["boolean"],
        "tol": [Interval(Real, 0, None, closed="left")],
        "n_iter_no_change": [Interval(Integral, 1, None, closed="left")],
        "early_stopping": ["boolean"],
        "validation_fraction": [Interval(Real, 0, 1, closed="neither")],
        "warm_start": ["boolean"],
        "predictive": [StrOptions(set(engine.PREDICTIVES))],
        "predictive_samples": [Interval(Integral, 1, None, closed="left")],
        "dtype": [StrOptions({"float32", "float64"})],
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
        solver="vogn",
        family="diag",
        curvature="ef",
        rank=1,
        learning_rate=None,
        precision_rate=None,
        momentum=None,
        decay=0.0,
        mc_samples=1,
        prior_variance=1.0,
        init_precision=None,
        max_iter=200,
        batch_size=32,
        shuffle=True,
        tol=1e-4,
        n_iter_no_change=10,
        early_stopping=False,
        validation_fraction=0.1,
        warm_start=False,
        predictive="linmc",
        predictive_samples=100,
        dtype="float32",
        random_state=None,
        verbose=0,
    ):
        self.hidden_layer_sizes = hidden_layer_sizes
        self.activation = activation
        self.model = model
        self.fit_intercept = fit_intercept
        self.solver = solver
        self.family = family
        self.curvature = curvature
        self.rank = rank
        self.learning_rate = learning_rate
        self.precision_rate = precision_rate
        self.momentum = momentum
        self.decay = decay
        self.mc_samples = mc_samples
        self.prior_variance = prior_variance
        self.init_precision = init_precision
        self.max_iter = max_iter
        self.batch_size = batch_size
        self.shuffle = shuffle
        self.tol = tol
        self.n_iter_no_change = n_iter_no_change
        self.early_stopping = early_stopping
        self.validation_fraction = validation_fraction
        self.warm_start = warm_start
        self.predictive = predictive
        self.predictive_samples = predictive_samples
        self.dtype = dtype
        self.random_state = random_state
        self.verbose = verbose

    # --------------------------------------------------------------- checking
    def _validate_all_params(self):
        self._validate_params()
        hidden = self._model_params()
        if self.family == "full" and self.solver not in ("vogn", "von"):
            raise ValueError(
                f"family='full' is available with solver='vogn' or 'von' only; solver="
                f"{self.solver!r} keeps a "
                f"{'diagonal-plus-low-rank' if self.solver == 'slang' else 'diagonal'} "
                "posterior: leave family='diag'"
            )
        return hidden

    def _posterior_family(self):
        return "dlr" if self.solver == "slang" else self.family

    def _signature(self):
        """The structural parameters by value (:func:`~skbong._signature.structural_signature`)."""
        return structural_signature(self, STRUCTURAL)

    def _batch_config(self, n_features, n_outputs, hidden):
        model = self._build_model(n_features, n_outputs, hidden)
        return solvers.BatchConfig(
            model=model,
            likelihood=self._likelihood(n_outputs),
            solver=self.solver,
            family=self._posterior_family(),
            curvature=self.curvature,
            rank=min(int(self.rank), model.n_params()),
            mc_samples=int(self.mc_samples),
            batch_size=int(self.batch_size),
        )

    def _config(self, hidden=None):
        """The engine configuration the predictives read (the fitted one; the structural
        parameters must not have changed since)."""
        if hidden is None:
            self._check_params()
        if self._signature() != self._fit_signature:
            changed = [
                k for (k, v), (_, w) in zip(self._signature(), self._fit_signature) if v != w
            ]
            raise ValueError(
                f"parameter(s) {changed} changed since the estimator was fitted; they fix the "
                "shape of the posterior, so call fit() to start again"
            )
        return self._batch.online()

    def _rate(self, value, index):
        return SOLVER_DEFAULTS[self.solver][index] if value is None else float(value)

    def _hyper(self, config, n_data, obs_var):
        """The traced hyperparameters: the prior precisions λ (fan-in scaled, a broad
        intercept prior for regression), the starting precision, the rates."""
        dt = self._jax_dtype()
        wide = engine.models.OUTPUT_BIAS_VARIANCE if config.likelihood == "gaussian" else None
        prior_var = config.model.prior_variances(
            float(self.prior_variance), wide if wide is not None else float(self.prior_variance)
        )
        lam = 1.0 / prior_var / self._noise_unit(obs_var)
        if self.init_precision is not None:
            init = np.full_like(lam, float(self.init_precision))
        else:  # N + λ (IVON's h₀ = 1) with h₀ in the likelihood's units: 1 / σ² (Gaussian)
            noise = np.exp(np.mean(np.log(obs_var))) if config.likelihood == "gaussian" else 1.0
            init = lam + n_data / noise
        return solvers.BatchHyper(
            prior_prec=lam.astype(dt),
            init_prec=init.astype(dt),
            obs_var=np.asarray(obs_var, dt),
            lr=np.asarray(self._rate(self.learning_rate, 0), dt),
            prec_rate=np.asarray(self._rate(self.precision_rate, 1), dt),
            momentum=np.asarray(self._rate(self.momentum, 2), dt),
            decay=np.asarray(self.decay, dt),
            n_data=np.asarray(n_data, dt),
        )

    # ------------------------------------------------------------- fit paths
    def _fit(self, X, y, sample_weight, incremental, **encode_kw):
        _check_not_forked()
        backup = self.__dict__.copy()
        try:
            return self._fit_epochs(X, y, sample_weight, incremental, **encode_kw)
        except BaseException:
            self.__dict__.clear()
            self.__dict__.update(backup)
            raise

    def _fit_epochs(self, X, y, sample_weight, incremental, **encode_kw):
        hidden = self._check_params()
        fitted = hasattr(self, "_solver_state")
        cont = fitted and (incremental or self.warm_start)
        if cont and self._signature() != self._fit_signature:
            self._config(hidden)  # raises, naming what changed
        X, y = validate_data(
            self,
            X,
            y,
            reset=not cont,
            dtype=[np.float64, np.float32],
            multi_output=True,
            y_numeric=self._y_numeric,
        )
        w = (
            np.ones(X.shape[0])
            if sample_weight is None
            else _check_sample_weight(sample_weight, X, dtype=np.float64)
        )
        if not np.all(np.isfinite(w)) or np.any(w < 0):
            raise ValueError("sample_weight must be finite and non-negative")
        Y, n_out, obs_var = self._encode_y(y, not cont, **encode_kw)
        dt = self._jax_dtype()
        rng = check_random_state(self.random_state) if not cont else None
        if not cont:
            self._seed = int(rng.randint(np.iinfo(np.int32).max))
            self._n_out = n_out
            self._hidden = hidden
            self._batch = self._batch_config(X.shape[1], n_out, hidden)
            self._fit_signature = self._signature()
            self._steps, self.n_iter_, self.t_ = 0, 0, 0
            self.loss_curve_, self.n_skipped_steps_ = [], 0
            self.validation_scores_ = [] if self.early_stopping and not incremental else None
            self._solver_state = None
        X_val = None
        if self.early_stopping and not incremental:
            X, X_val, Y, Y_val, w, w_val = self._split_validation(X, Y, w)
        X, Y, w = X.astype(dt), Y.astype(dt), w.astype(dt)
        config = self._batch
        n_data = X.shape[0]
        with self._x64():
            hyper = self._hyper(config, n_data, obs_var)
            if self._solver_state is None:
                key = jax.random.fold_in(jax.random.PRNGKey(self._seed), 0)
                mean0 = config.model.flat_init(key, dt)
                state = epochs.init_state(config, np.asarray(mean0), hyper)
            else:
                state = self._solver_kind(*self._solver_state)
            epochs_to_run = 1 if incremental else int(self.max_iter)
            best, stall, best_state, ran, skipped = np.inf, 0, None, 0, 0
            key = self._key(1)
            learn_noise = self._learns_noise()
            for _ in range(epochs_to_run):
                new, nll, sq, bad = epochs.run_epoch(
                    config,
                    state,
                    self._steps,
                    X,
                    Y,
                    w,
                    hyper,
                    key,
                    shuffle=bool(self.shuffle),
                    learn_noise=learn_noise,
                )
                state = new
                self._steps += -(-n_data // config.batch_size)
                skipped += int(bad)
                ran += 1
                post, kl = epochs.posterior_and_kl(config, state, hyper)
                loss = (float(nll) + float(kl)) / n_data
                self.loss_curve_.append(loss)
                self.n_iter_ += 1
                if learn_noise:  # the ELBO's M-step for the noise: E_q[(y − f)²]
                    obs_var = np.maximum(np.asarray(sq, np.float64) / np.sum(w), 1e-12)
                    new_hyper = self._hyper(config, n_data, obs_var)
                    hyper = hyper._replace(
                        obs_var=new_hyper.obs_var, prior_prec=new_hyper.prior_prec
                    )
                if self.verbose:
                    print(f"[{type(self).__name__}] epoch {self.n_iter_}: loss {loss:.6g}")
                if incremental:
                    break
                if X_val is not None:
                    self._commit(state, post, obs_var)
                    score = self.score(X_val, self._decode(Y_val), sample_weight=w_val)
                    self.validation_scores_.append(score)
                    if -score < best - self.tol:
                        best, stall, best_state = -score, 0, (state, post, obs_var)
                    else:
                        stall += 1
                elif _stalled(self.loss_curve_, self.n_iter_no_change, self.tol):
                    stall = self.n_iter_no_change
                if not np.isfinite(loss) or stall >= self.n_iter_no_change:
                    break
            if best_state is not None:
                state, post, obs_var = best_state
            self._commit(state, post, obs_var)
        self.t_ = self._steps
        self.n_skipped_steps_ += skipped
        if skipped:
            warnings.warn(
                f"{type(self).__name__}: {skipped} of {ran * -(-n_data // config.batch_size)} "
                "mini-batch steps of this call gave a "
                f"non-finite or invalid state and were not applied (solver={self.solver!r}); "
                "lower learning_rate or precision_rate, or standardise the inputs",
                SkippedRowsWarning,
                stacklevel=3,
            )
        if not np.isfinite(self.loss_curve_[-1]):
            warnings.warn(
                f"{type(self).__name__}: the loss became non-finite at epoch {self.n_iter_}: "
                f"the fit diverged (solver={self.solver!r}); lower learning_rate, or "
                "standardise the inputs",
                ConvergenceWarning,
                stacklevel=3,
            )
        elif not incremental and stall < self.n_iter_no_change and ran >= self.max_iter:
            warnings.warn(
                f"{type(self).__name__}: max_iter={self.max_iter} epochs reached and the "
                "optimisation has not converged yet",
                ConvergenceWarning,
                stacklevel=3,
            )
        return self

    def _commit(self, state, post, obs_var):
        """Store the solver state, the posterior the predictives read, and publish it."""
        self._solver_kind = type(state)
        self._solver_state = tuple(np.asarray(a) for a in state)
        self._state = tuple(np.asarray(a) for a in post)
        self._noise = None
        self._obs_var = np.asarray(obs_var, np.float64)
        self.loss_ = self.loss_curve_[-1] if self.loss_curve_ else None
        self._publish(self._batch.online())

    def _split_validation(self, X, Y, w):
        stratify = Y.argmax(1) if Y.shape[1] > 1 else (Y[:, 0] if not self._y_numeric else None)
        return train_test_split(
            X,
            Y,
            w,
            test_size=self.validation_fraction,
            random_state=self._seed,
            stratify=stratify,
        )

    def _learns_noise(self):
        return False

    def _noise_unit(self, obs_var):
        """The unit of the prior variances: 1, or with the learned noise the noise
        variance (the geometric mean over outputs), as in the normal–inverse-gamma
        model θ | σ² ~ N(0, σ² V₀) of :class:`BongRegressor`: so raw-scale targets
        work and the prior keeps its meaning relative to the noise."""
        if not self._learns_noise():
            return 1.0
        return float(np.exp(np.mean(np.log(obs_var))))

    @property
    def n_params_(self):
        """Number of model parameters P."""
        check_is_fitted(self, "_state")
        return int(self._state[0].shape[0])


class VariationalRegressor(RegressorFace, RegressorMixin, VariationalBase):
    """Batch variational regression: train a Gaussian posterior to convergence with the
    seed papers' natural-gradient and gradient solvers.

    Many epochs of shuffled mini-batches over a fixed data set, a fixed prior
    N(0, σ₀²) and the likelihood y ~ N(f(x, θ), obs_variance) scaled by N/M, as in Khan
    et al. (2018) (VOGN, VON, Vprop, Vadam), Mishkin et al. (2018) (SLANG), Blundell et
    al. (2015) (BBB) and Shen et al. (2024) (IVON). The model, the posterior families
    and the predictives are those of :class:`BongRegressor`; the updates are listed in
    :mod:`skbong.engine.solvers`.

    Parameters
    ----------
    hidden_layer_sizes : int or tuple of int, default=()
        Hidden layer widths of the MLP; ``()`` is linear regression.
    activation : {"relu", "tanh", "gelu", "sigmoid", "identity"}, default="relu"
        Hidden-layer activation.
    model : tuple (init, apply) or object with ``.init`` and ``.apply``, default=None
        A user JAX model (see :class:`BongRegressor`); its ``init`` gives the starting
        mean (the prior mean is zero).
    fit_intercept : bool, default=True
        Learn an intercept (linear models).
    solver : {"vogn", "von", "vprop", "vadam", "slang", "bbb", "ivon"}, default="vogn"
        The update. ``"vogn"``: variational online Gauss–Newton (per-example empirical
        Fisher), scale-invariant, the default; ``"von"``: variational online Newton
        (Hessian; can lose definiteness on a non-convex model); ``"vprop"`` /
        ``"vadam"``: variational RMSprop / Adam (squared mean gradient, diagonal);
        ``"slang"``: SLANG, diagonal-plus-rank-``rank`` precision, for correlations;
        ``"bbb"``: Bayes by Backprop (Adam on (μ, ρ), diagonal); ``"ivon"``: IVON,
        diagonal, cheapest per step, for large networks. See
        :ref:`Choosing a solver <batch-choosing>` and the
        :ref:`table of solvers <batch-solvers>`.
    family : {"diag", "full"}, default="diag"
        Posterior of vogn and von: ``"diag"``, diagonal covariance, O(P); ``"full"``,
        full covariance, O(P²), for a small model (the papers' full-Gaussian baseline is
        full VOGN). slang's posterior is diagonal-plus-low-rank, the other solvers'
        diagonal: they accept only ``"diag"``. See
        :ref:`Choosing a solver <batch-choosing>`.
    curvature : {"ef", "ggn"}, default="ef"
        vogn and slang (ignored by the other solvers): ``"ef"``, the per-example
        empirical Fisher Σᵢ gᵢgᵢᵀ (as published); ``"ggn"``, the generalised
        Gauss–Newton Σᵢ Jᵢᵀ Λ Jᵢ (exact curvature for a linear-Gaussian model). See
        :ref:`the table of solvers <batch-solvers>`.
    rank : int, default=1
        L, the rank of slang's low-rank precision (the papers' UCI setting is 1; ignored
        by the other solvers). See :ref:`the table of solvers <batch-solvers>`.
    learning_rate : float, default=None
        α, the mean step (None: 0.01 for vogn, von, slang, vprop, vadam and bbb; 0.1 for
        ivon).
    precision_rate : float in (0, 1], default=None
        β, the precision step; 1 − β is Adam's γ₂ for vadam and bbb and IVON's β₂ (None:
        0.01 for vogn, von and slang; 0.1 for vprop and vadam; 0.001 for bbb; 1e-5 for
        ivon, its package's β₂ = 0.99999).
    momentum : float in [0, 1), default=None
        γ₁: vadam's and bbb's first moment, IVON's β₁, SLANG's gradient momentum (None:
        0.99 vadam, 0.9 bbb and ivon, 0 slang = Algorithm 1).
    decay : float, default=0.0
        ω of the papers' schedule α_t = α / (1 + t^ω), the same for β; 0 keeps them
        constant (SLANG's experiments used 0.51).
    mc_samples : int, default=1
        S, samples of q per step.
    prior_variance : float, default=1.0
        σ₀², the prior variance of the weights (fan-in scaled for networks, as for
        :class:`BongRegressor`); the intercepts' prior variance is 100. With the learned
        noise these are in units of the noise variance (θ | σ² ~ N(0, σ² V₀), the
        normal–inverse-gamma convention of :class:`BongRegressor`), so raw-scale
        targets work.
    init_precision : float, default=None
        Precision of the starting q (None: λ + N / σ² for every solver, IVON's h₀ = 1 in
        the likelihood's units, with σ² the noise variance of regression and 1 for
        classification: the first samples stay near the mean, and on raw-scale targets
        the start is not tighter than the data can support).
    obs_variance : float or "auto", default="auto"
        Observation noise variance. ``"auto"`` starts at Var(y) and after every epoch
        takes the ELBO's maximiser E_q[(y − f(x, θ))²], estimated from the epoch's
        samples (variational EM); the prior is in its units. A float fixes it and the
        prior is absolute (the papers' setting: they tune the noise by cross-validation).
    max_iter : int, default=200
        Epochs (``fit``).
    batch_size : int, default=32
        M, rows per mini-batch.
    shuffle : bool, default=True
        Shuffle the rows every epoch.
    tol : float, default=1e-4
        Stop when the mean loss of the last ``n_iter_no_change`` epochs is not below
        that of the ``n_iter_no_change`` before by ``tol`` (the loss is a Monte Carlo
        estimate; single epochs are too noisy to compare), or with ``early_stopping``
        when the validation score has not improved by ``tol`` for that many epochs.
    n_iter_no_change : int, default=10
        See ``tol``.
    early_stopping : bool, default=False
        Hold out ``validation_fraction`` of the rows, stop on their R², and keep the
        posterior of the best epoch.
    validation_fraction : float, default=0.1
        See ``early_stopping``.
    warm_start : bool, default=False
        ``fit`` continues from the fitted posterior instead of starting again.
    predictive : {"plugin", "linmc", "mc"}, default="linmc"
        Posterior predictive (as in :class:`BongRegressor`). ``"linmc"``: linearised,
        closed form, parameter uncertainty included, for uncertainty bands; ``"mc"``:
        Monte Carlo over θ ~ q through the model itself; ``"plugin"``: the mean's
        prediction, observation noise only. See
        :ref:`Choosing a configuration <choosing-predictive>` and
        :doc:`/user_guide/predictive`.
    predictive_samples : int, default=100
        Samples of the ``mc`` predictive.
    dtype : {"float32", "float64"}, default="float32"
        Working precision (float64 is enabled locally, never globally).
    random_state : int, RandomState instance or None, default=None
        Seeds the starting mean, the shuffles, the samples and the predictive.
    verbose : int, default=0
        Print the loss after every epoch.

    Attributes
    ----------
    loss_curve_ : list of float
        Negative ELBO per row after each epoch: (Σ −log p(y | θₛ) over the epoch's
        samples + KL(q ‖ prior)) / N, a Monte Carlo estimate.
    loss_ : float
        The last entry of ``loss_curve_``.
    n_iter_ : int
        Epochs run.
    t_ : int
        Mini-batch steps taken.
    n_skipped_steps_ : int
        Steps whose result was non-finite or invalid and not applied.
    validation_scores_ : list of float or None
        R² on the held-out rows per epoch (``early_stopping``).
    obs_variance_ : ndarray of shape (n_outputs,)
        Noise variance in use.
    posterior_mean_, posterior_var_ : ndarray of shape (P,)
        Posterior mean and marginal variances.
    coef_, intercept_ : ndarray, float
        Posterior mean weights and intercept (linear models only).
    n_features_in_ : int
        Number of features seen in ``fit``.

    See Also
    --------
    BongRegressor : One pass, online.
    sklearn.neural_network.MLPRegressor : The point-estimate counterpart.

    Examples
    --------
    >>> import numpy as np
    >>> from skbong import VariationalRegressor
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(200, 3))
    >>> y = X @ [1.0, -2.0, 0.5] + 0.1 * rng.normal(size=200)
    >>> reg = VariationalRegressor(family="full", max_iter=50, random_state=0).fit(X, y)
    >>> np.round(reg.coef_, 1)
    array([ 1. , -2. ,  0.5])
    """

    _parameter_constraints = {
        **VariationalBase._parameter_constraints,
        "obs_variance": [Interval(Real, 0, None, closed="neither"), StrOptions({"auto"})],
    }

    def __init__(
        self,
        *,
        hidden_layer_sizes=(),
        activation="relu",
        model=None,
        fit_intercept=True,
        solver="vogn",
        family="diag",
        curvature="ef",
        rank=1,
        learning_rate=None,
        precision_rate=None,
        momentum=None,
        decay=0.0,
        mc_samples=1,
        prior_variance=1.0,
        init_precision=None,
        obs_variance="auto",
        max_iter=200,
        batch_size=32,
        shuffle=True,
        tol=1e-4,
        n_iter_no_change=10,
        early_stopping=False,
        validation_fraction=0.1,
        warm_start=False,
        predictive="linmc",
        predictive_samples=100,
        dtype="float32",
        random_state=None,
        verbose=0,
    ):
        super().__init__(
            hidden_layer_sizes=hidden_layer_sizes,
            activation=activation,
            model=model,
            fit_intercept=fit_intercept,
            solver=solver,
            family=family,
            curvature=curvature,
            rank=rank,
            learning_rate=learning_rate,
            precision_rate=precision_rate,
            momentum=momentum,
            decay=decay,
            mc_samples=mc_samples,
            prior_variance=prior_variance,
            init_precision=init_precision,
            max_iter=max_iter,
            batch_size=batch_size,
            shuffle=shuffle,
            tol=tol,
            n_iter_no_change=n_iter_no_change,
            early_stopping=early_stopping,
            validation_fraction=validation_fraction,
            warm_start=warm_start,
            predictive=predictive,
            predictive_samples=predictive_samples,
            dtype=dtype,
            random_state=random_state,
            verbose=verbose,
        )
        self.obs_variance = obs_variance

    def _learns_noise(self):
        return isinstance(self.obs_variance, str)

    def _obs_variance_in_use(self, Y, first):
        if not self._learns_noise():
            return np.full(Y.shape[1], float(self.obs_variance))
        if first or not hasattr(self, "_obs_var"):
            var = np.var(Y, axis=0)
            return np.where(var > 0, var, 1.0)
        return self._obs_var

    def _decode(self, Y):
        return Y if self._multi_output else Y[:, 0]

    def fit(self, X, y, sample_weight=None):
        """Train for up to ``max_iter`` epochs (from the fitted posterior with
        ``warm_start``).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Inputs.
        y : array-like of shape (n_samples,) or (n_samples, n_outputs)
            Targets.
        sample_weight : array-like of shape (n_samples,), default=None
            Row weights (a weight w counts as w repeated rows).

        Returns
        -------
        self : VariationalRegressor
            The fitted estimator.
        """
        return self._fit(X, y, sample_weight, incremental=False)

    def partial_fit(self, X, y, sample_weight=None):
        """One epoch over the rows given, from the current posterior (they are the data
        set of this epoch: N is their number).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Inputs.
        y : array-like of shape (n_samples,) or (n_samples, n_outputs)
            Targets.
        sample_weight : array-like of shape (n_samples,), default=None
            Row weights.

        Returns
        -------
        self : VariationalRegressor
            The updated estimator.
        """
        return self._fit(X, y, sample_weight, incremental=True)


class VariationalClassifier(ClassifierFace, ClassifierMixin, VariationalBase):
    """Batch variational classification: train a Gaussian posterior to convergence with
    the seed papers' solvers (VOGN, VON, Vprop, Vadam, SLANG, BBB) or IVON.

    Two classes use a Bernoulli likelihood on one logit, more a categorical one. The
    parameters and attributes are those of :class:`VariationalRegressor` without
    ``obs_variance``; ``validation_scores_`` holds accuracies, and ``classes_`` the labels.

    Parameters
    ----------
    hidden_layer_sizes : int or tuple of int, default=()
        Hidden layer widths; ``()`` is logistic / softmax regression.
    activation : {"relu", "tanh", "gelu", "sigmoid", "identity"}, default="relu"
        Hidden-layer activation.
    model : tuple (init, apply) or object with ``.init`` and ``.apply``, default=None
        A user JAX model.
    fit_intercept : bool, default=True
        Learn an intercept (linear models).
    solver : {"vogn", "von", "vprop", "vadam", "slang", "bbb", "ivon"}, default="vogn"
        The update (as in :class:`VariationalRegressor`). ``"vogn"``: variational online
        Gauss–Newton (per-example empirical Fisher), the default; ``"von"``: variational
        online Newton (Hessian); ``"vprop"`` / ``"vadam"``: variational RMSprop / Adam
        (squared mean gradient, diagonal); ``"slang"``: SLANG,
        diagonal-plus-rank-``rank`` precision, for correlations; ``"bbb"``: Bayes by
        Backprop (Adam on (μ, ρ), diagonal); ``"ivon"``: IVON, diagonal, cheapest per
        step, for large networks. See :ref:`Choosing a solver <batch-choosing>` and the
        :ref:`table of solvers <batch-solvers>`.
    family : {"diag", "full"}, default="diag"
        Posterior of vogn and von: ``"diag"``, diagonal covariance, O(P); ``"full"``,
        full covariance, O(P²), for a small model. The other solvers accept only
        ``"diag"`` (slang's posterior is diagonal-plus-low-rank). See
        :ref:`Choosing a solver <batch-choosing>`.
    curvature : {"ef", "ggn"}, default="ef"
        Curvature of vogn and slang (ignored by the other solvers): ``"ef"``, the
        per-example empirical Fisher Σᵢ gᵢgᵢᵀ (as published); ``"ggn"``, the generalised
        Gauss–Newton Σᵢ Jᵢᵀ Λ Jᵢ. See :ref:`the table of solvers <batch-solvers>`.
    rank : int, default=1
        Rank L of slang's low-rank precision (ignored by the other solvers). See
        :ref:`the table of solvers <batch-solvers>`.
    learning_rate, precision_rate, momentum : float, default=None
        α, β and γ₁ (None: the solver's default, see :class:`VariationalRegressor`).
    decay : float, default=0.0
        ω of the schedule α / (1 + t^ω).
    mc_samples : int, default=1
        Samples of q per step.
    prior_variance : float, default=1.0
        σ₀² (fan-in scaled for networks).
    init_precision : float, default=None
        Precision of the starting q.
    max_iter, batch_size, shuffle, tol, n_iter_no_change : see VariationalRegressor
        The epoch loop.
    early_stopping, validation_fraction, warm_start : see VariationalRegressor
        Stopping on held-out accuracy, and continuing a fit.
    predictive : {"plugin", "linmc", "mc"}, default="linmc"
        Posterior predictive of ``predict_proba`` (as in :class:`BongClassifier`).
        ``"linmc"``: linearised Monte Carlo over ``predictive_samples`` draws, for
        calibrated probabilities; ``"mc"``: Monte Carlo over the network itself;
        ``"plugin"``: p(y | f(x, μ)), no parameter uncertainty, fastest, for point
        predictions. See :ref:`Choosing a configuration <choosing-predictive>` and
        :doc:`/user_guide/predictive`.
    predictive_samples : int, default=100
        Samples of the ``linmc`` and ``mc`` predictives.
    dtype : {"float32", "float64"}, default="float32"
        Working precision.
    random_state : int, RandomState instance or None, default=None
        Seeds everything random.
    verbose : int, default=0
        Print the loss after every epoch.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        Class labels.
    loss_curve_, loss_, n_iter_, t_, n_skipped_steps_, validation_scores_
        As for :class:`VariationalRegressor`.
    posterior_mean_, posterior_var_ : ndarray of shape (P,)
        Posterior mean and marginal variances.
    coef_, intercept_ : ndarray
        Posterior mean weights and intercepts (linear models only).
    n_features_in_ : int
        Number of features seen in ``fit``.

    See Also
    --------
    BongClassifier : One pass, online.
    sklearn.neural_network.MLPClassifier : The point-estimate counterpart.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from skbong import VariationalClassifier
    >>> X, y = load_iris(return_X_y=True)
    >>> clf = VariationalClassifier(max_iter=20, random_state=0).fit(X, y)
    >>> clf.predict_proba(X[:1]).shape
    (1, 3)
    """

    def _decode(self, Y):
        idx = Y.argmax(1) if Y.shape[1] > 1 else Y[:, 0].astype(int)
        return self.classes_[idx]

    def fit(self, X, y, sample_weight=None):
        """Train for up to ``max_iter`` epochs (from the fitted posterior with
        ``warm_start``).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Inputs.
        y : array-like of shape (n_samples,)
            Class labels (at least two distinct).
        sample_weight : array-like of shape (n_samples,), default=None
            Row weights (a weight w counts as w repeated rows).

        Returns
        -------
        self : VariationalClassifier
            The fitted estimator.
        """
        return self._fit(X, y, sample_weight, incremental=False)

    def partial_fit(self, X, y, classes=None, sample_weight=None):
        """One epoch over the rows given, from the current posterior.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Inputs.
        y : array-like of shape (n_samples,)
            Class labels.
        classes : array-like of shape (n_classes,), default=None
            All labels; required on the first call.
        sample_weight : array-like of shape (n_samples,), default=None
            Row weights.

        Returns
        -------
        self : VariationalClassifier
            The updated estimator.
        """
        if not hasattr(self, "_solver_state") and classes is None:
            raise ValueError("classes must be passed on the first call to partial_fit")
        return self._fit(X, y, sample_weight, incremental=True, classes=classes)


__all__ = ["VariationalClassifier", "VariationalRegressor", "SOLVER_DEFAULTS"]
