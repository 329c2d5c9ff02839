"""The machinery of the batch variational estimators: parameters, the solver's
configuration and rates, and training to convergence one compiled epoch at a time
(:func:`skbong.engine.solvers.epochs.run_epoch`), with early stopping on a validation split."""

import warnings
from numbers import Integral, Real

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import train_test_split
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import _check_sample_weight, validate_data

from .. import engine
from .._core import inputs as _inputs
from .._core import posterior
from .._core.guard import _check_not_forked
from .._core.posterior import BeliefBase, _check_fitted
from .._core.signature import structural_signature
from .._online.observation import AUTO_FULL_MAX
from ..engine import solvers
from ..engine.solvers import epochs
from ..exceptions import SkippedRowsWarning

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


PRIOR_VARIANCE_MIN, PRIOR_VARIANCE_MAX = 1e-3, 1e3
"""The range of σ₀² that ``prior_variance="auto"`` learns in."""

RATE_DROP = 0.1
"""The factor a plateau applies to the learning rate α and the precision rate β (up
to ``rate_drops`` times in a fit)."""


def _drop_rates(hyper):
    """The hyperparameters with α and β multiplied by :data:`RATE_DROP`."""
    return hyper._replace(lr=hyper.lr * RATE_DROP, prec_rate=hyper.prec_rate * RATE_DROP)


def _stalled(curve, window, tol):
    """Whether the loss has stopped improving: for ``window`` epochs its running mean
    over ``window`` epochs has not fallen below its best by more than ``tol``. (The loss
    is a Monte Carlo estimate: the running mean damps its noise, and asking for
    ``window`` failures in a row, not one comparison, keeps a chance fluctuation from
    stopping a fit that still improves.)"""
    if len(curve) < 2 * window:
        return False
    smooth = np.convolve(curve, np.full(window, 1.0 / window), mode="valid")
    best, since = np.inf, 0
    for value in smooth:
        best, since = (value, 0) if value < best - tol else (best, since + 1)
    return since >= window


class VariationalBase(BeliefBase):
    """Parameters, validation and the epoch loop shared by the batch estimators.

    An estimator on this base names its face in its class body (the targets, the
    likelihood, the predictive and ``_learns_noise``: whether the noise variance is
    learned; :mod:`skbong._online.regression_face`,
    :mod:`skbong._online.classification_face`); this base supplies no default for them.
    """

    _parameter_constraints = {
        "hidden_layer_sizes": ["array-like", Interval(Integral, 1, None, closed="left")],
        "activation": [StrOptions(set(engine.models.ACTIVATIONS))],
        "model": "no_validation",
        "fit_intercept": ["boolean"],
        "solver": [StrOptions(set(solvers.SOLVER_NAMES))],
        "family": [StrOptions({"diag", "full", "auto"})],
        "curvature": [StrOptions(set(solvers.CURVATURE_NAMES))],
        "rank": [Interval(Integral, 1, None, closed="left")],
        "learning_rate": [Interval(Real, 0, None, closed="neither"), None],
        "precision_rate": [Interval(Real, 0, 1, closed="right"), None],
        "momentum": [Interval(Real, 0, 1, closed="left"), None],
        "decay": [Interval(Real, 0, None, closed="left")],
        "mc_samples": [Interval(Integral, 1, None, closed="left")],
        "prior_variance": [Interval(Real, 0, None, closed="neither"), StrOptions({"auto"})],
        "init_precision": [Interval(Real, 0, None, closed="neither"), None],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "batch_size": [Interval(Integral, 1, None, closed="left")],
        "shuffle": ["boolean"],
        "tol": [Interval(Real, 0, None, closed="left")],
        "n_iter_no_change": [Interval(Integral, 1, None, closed="left")],
        "rate_drops": [Interval(Integral, 0, None, closed="left")],
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
        family="auto",
        curvature="ef",
        rank=1,
        learning_rate=None,
        precision_rate=None,
        momentum=None,
        decay=0.0,
        mc_samples=1,
        prior_variance="auto",
        init_precision=None,
        max_iter=1000,
        batch_size=32,
        shuffle=True,
        tol=1e-4,
        n_iter_no_change=20,
        rate_drops=1,
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
        self.rate_drops = rate_drops
        self.early_stopping = early_stopping
        self.validation_fraction = validation_fraction
        self.warm_start = warm_start
        self.predictive = predictive
        self.predictive_samples = predictive_samples
        self.dtype = dtype
        self.random_state = random_state
        self.verbose = verbose

    # the belief's public attributes (skbong._core.posterior)
    posterior_ = property(posterior.posterior)
    posterior_var_ = property(posterior.posterior_var)
    dtype_ = property(posterior.dtype)
    predictive_ = property(posterior.predictive)

    # --------------------------------------------------------------- checking
    def _validate_all_params(self):
        self._validate_params()
        hidden = self._model_params()
        if self.family != "auto":
            solvers.check_family(self.solver, self._posterior_family())
        return hidden

    def _posterior_family(self, model=None):
        """The family of the belief: the estimator's ``family``, except that SLANG keeps
        its low-rank-plus-diagonal precision where ``family`` is ``"diag"``; for
        ``"auto"`` (resolved for ``model`` when a fit starts, ``family_`` after):
        ``"full"`` for the linear model up to :data:`~skbong._online.observation.AUTO_FULL_MAX`
        parameters where the solver keeps it, else the solver's first family."""
        if self.family != "auto":
            return solvers.posterior_family(self.solver, self.family, False)
        if model is None:
            return self.family_
        small = engine.models.is_linear(model) and model.n_params() <= AUTO_FULL_MAX
        return solvers.posterior_family(self.solver, "auto", small)

    def _signature(self):
        """The structural parameters by value (:func:`~skbong._core.signature.structural_signature`)."""
        return structural_signature(self, STRUCTURAL)

    def _batch_config(self, n_features, n_outputs, hidden):
        model = self._build_model(n_features, n_outputs, hidden)
        self.family_ = self._posterior_family(model)
        return solvers.BatchConfig(
            model=model,
            likelihood=self._likelihood(n_outputs),
            solver=self.solver,
            family=self.family_,
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
        return solvers.SOLVERS[self.solver].rates[index] if value is None else float(value)

    def _hyper(self, config, n_data, obs_var):
        """The traced hyperparameters: the prior precisions λ (fan-in scaled, a broad
        intercept prior for regression), the starting precision, the rates."""
        dt = self._jax_dtype()
        gaussian = config.impl.likelihood.additive_noise
        lam = 1.0 / self._prior_shape(config, self.prior_variance_) / self._prior_unit
        if self.init_precision is not None:
            init = np.full_like(lam, float(self.init_precision))
        else:  # N + λ (IVON's h₀ = 1) with h₀ in the likelihood's units: 1 / σ² (Gaussian)
            noise = np.exp(np.mean(np.log(obs_var))) if gaussian else 1.0
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

    def _prior_shape(self, config, prior_var):
        """The prior variance of each parameter (P,) for σ₀² = ``prior_var``, in the
        prior's unit: fan-in scaled for networks, a broad intercept prior for regression
        (:meth:`~skbong.engine.models.MLP.prior_variances`)."""
        wide = (
            engine.models.OUTPUT_BIAS_VARIANCE
            if config.impl.likelihood.additive_noise
            else None
        )
        return config.model.prior_variances(prior_var, wide if wide is not None else prior_var)

    def _learns_prior(self):
        """Whether σ₀² is learned (:meth:`_prior_m_step`): ``prior_variance="auto"`` with
        the linear model, whose M-step is the type-II maximum likelihood."""
        return self.prior_variance == "auto" and engine.models.is_linear(self._batch.model)

    def _auto_prior_variance(self):
        """σ₀² under ``"auto"`` when a fit starts: 10 for the built-in networks
        (:data:`~skbong.engine.models.NETWORK_PRIOR_VARIANCE`, as for the online
        estimators), 1 for the linear model (where the M-step takes over) and user models
        (:data:`~skbong.engine.models.USER_MODEL_PRIOR_VARIANCE`). A network takes no M-step: mean-field
        variances are too small, the M-step shrinks σ₀² with them, and the narrower
        prior under-fits (a (50,) regressor on UCI energy: σ₀² learned at 0.8, test RMSE
        1.98; at 10, 0.56)."""
        model = self._batch.model
        if isinstance(model, engine.MLP) and not engine.models.is_linear(model):
            return engine.models.NETWORK_PRIOR_VARIANCE
        return engine.models.USER_MODEL_PRIOR_VARIANCE

    def _prior_m_step(self, config, post, hyper):
        """``prior_variance="auto"``: the ELBO's M-step for σ₀² (empirical Bayes).

        With prior variances σ₀² vⱼ u (vⱼ the shape of :meth:`_prior_shape`, u the unit),
        the ELBO's prior term −KL(q ‖ p) is maximised by
        σ₀² = mean over the scaled parameters of E_q[θⱼ²] / (vⱼ u), E_q[θⱼ²] = μⱼ² + Σⱼⱼ;
        parameters whose prior does not scale with σ₀² (a regression intercept's broad
        prior) keep theirs. σ₀² is kept within [:data:`PRIOR_VARIANCE_MIN`,
        :data:`PRIOR_VARIANCE_MAX`], the evidence bank's range."""
        shape = self._prior_shape(config, 1.0)
        scaled = shape != self._prior_shape(config, 2.0)  # those proportional to σ₀²
        second = np.asarray(solvers.second_moments(post), np.float64)
        value = float(np.mean(second[scaled] / (shape[scaled] * self._prior_unit)))
        if not np.isfinite(value):
            return hyper
        self.prior_variance_ = float(np.clip(value, PRIOR_VARIANCE_MIN, PRIOR_VARIANCE_MAX))
        lam = 1.0 / self._prior_shape(config, self.prior_variance_) / self._prior_unit
        return hyper._replace(prior_prec=lam.astype(hyper.prior_prec.dtype))

    def _publish_inputs(self, X, w):
        """Set ``input_mean_`` / ``input_scale_`` from the fit's rows: the inputs of the
        linear model and of networks are standardised where a column's root mean square
        exceeds :data:`skbong._core.inputs.INPUT_RMS_MAX` (see :mod:`skbong._core.inputs`; a batch
        solver's step also depends on the inputs' scale: without it a linear fit on raw
        UCI inputs ended at 1.4-1.6x the RMSE of standardised ones)."""
        affine = _inputs.standardisation(self._batch.model, X, w, self.fit_intercept)
        _inputs.publish(self, affine, X.shape[1])

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
            self._draws_cache = []  # the sampled predictives' draws (BeliefBase._draws)
            self._n_out = n_out
            self._hidden = hidden
            self._batch = self._batch_config(X.shape[1], n_out, hidden)
            self._fit_signature = self._signature()
            self._steps, self.n_iter_, self.t_ = 0, 0, 0
            self._prior_unit = self._noise_unit(obs_var)
            self.loss_curve_, self.n_skipped_steps_ = [], 0
            self.validation_scores_ = [] if self.early_stopping and not incremental else None
            self._solver_state = None
            self._publish_inputs(X, w)
        if self.prior_variance != "auto" or not cont:  # "auto" continues from its value
            auto = self.prior_variance == "auto"
            self.prior_variance_ = self._auto_prior_variance() if auto else float(self.prior_variance)
        X_val = None
        if self.early_stopping and not incremental:
            X, X_val, Y, Y_val, w, w_val = self._split_validation(X, Y, w)
        X = _inputs.engine_inputs(self, X)  # the validation rows stay raw: score() maps them
        X, Y, w = X.astype(dt), Y.astype(dt), w.astype(dt)
        config = self._batch
        n_data = X.shape[0]
        with self._x64():
            hyper = self._hyper(config, n_data, obs_var)
            if self._solver_state is None:
                state = epochs.prior(config, self._seed, hyper, dt)
            else:
                state = self._solver_kind(*self._solver_state)
            epochs_to_run = 1 if incremental else int(self.max_iter)
            best, stall, best_state, ran, skipped = np.inf, 0, None, 0, 0
            drops, since, converged = 0, len(self.loss_curve_), False
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
                    hyper = hyper._replace(obs_var=np.asarray(obs_var, hyper.obs_var.dtype))
                if self._learns_prior() and np.isfinite(loss):
                    hyper = self._prior_m_step(config, post, hyper)
                if self.verbose:
                    print(f"[{type(self).__name__}] epoch {self.n_iter_}: loss {loss:.6g}")
                if incremental or not np.isfinite(loss):
                    break
                if X_val is not None:
                    self._commit(state, post, obs_var)
                    score = self.score(X_val, self._decode(Y_val), sample_weight=w_val)
                    self.validation_scores_.append(score)
                    if -score < best - self.tol:
                        best, stall, best_state = -score, 0, (state, post, obs_var)
                    else:
                        stall += 1
                    plateau = stall >= self.n_iter_no_change
                else:
                    plateau = _stalled(self.loss_curve_[since:], self.n_iter_no_change, self.tol)
                if plateau and drops == self.rate_drops:
                    converged = True
                    break
                if plateau:  # a lower rate, a lower noise floor of the stochastic iterates
                    drops, stall, since = drops + 1, 0, len(self.loss_curve_)
                    hyper = _drop_rates(hyper)
            if best_state is not None:
                state, post, obs_var = best_state
            self._commit(state, post, obs_var)
        self.t_ = self._steps
        self.n_rate_drops_ = drops
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
        elif not incremental and not converged:
            warnings.warn(
                f"{type(self).__name__}: max_iter={self.max_iter} epochs ran out before the "
                f"stopping rule was met (rate drops taken: {drops} of {self.rate_drops}); "
                "the fit has not converged: raise max_iter, or continue it with "
                "warm_start=True",
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

    def _noise_unit(self, obs_var):
        """The unit of the prior variances, fixed when a fit starts: 1, or with the
        learned noise the starting noise variance, the targets' variance (geometric
        mean over outputs): θ ~ N(0, Var(y) V₀), so that raw-scale targets work.
        (Not the learned noise itself: a prior that tightens as the noise falls pulls
        the fit towards zero, which raises the noise again; with it a (50,) network
        under-fitted every UCI set.)"""
        if not self._learns_noise():
            return 1.0
        return float(np.exp(np.mean(np.log(obs_var))))

    @property
    def n_params_(self):
        """Number of model parameters P."""
        _check_fitted(self)
        return int(self._state[0].shape[0])


__all__ = ["STRUCTURAL", "VariationalBase"]
