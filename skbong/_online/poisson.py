"""BongPoissonRegressor: online Bayesian regression of counts (Poisson likelihood, log link)."""

from numbers import Integral

import numpy as np
import scipy.special
from sklearn.base import RegressorMixin
from sklearn.metrics import d2_tweedie_score
from sklearn.utils._param_validation import Interval
from sklearn.utils.validation import column_or_1d

from .. import engine
from .._core.posterior import _check_fitted
from . import observation, stream
from .base import BongBase

_HERMITE_NODES = 40
"""Gauss–Hermite nodes of the ``linmc`` predictive pmf (exact for polynomials of degree
79 in the standardised log-rate; the log-normal–Poisson integrand is smooth)."""


class BongPoissonRegressor(RegressorMixin, BongBase):
    """Online Bayesian Poisson regression by the BONG family (Jones, Chang & Murphy, 2024).

    Counts y ∈ {0, 1, 2, …} with y ~ Poisson(λ), log λ = f(x, θ) (the canonical log
    link of ``sklearn.linear_model.PoissonRegressor``; f is linear by default, an MLP
    with ``hidden_layer_sizes``, or any JAX model). A Gaussian belief over θ is updated
    one observation (or mini-batch) at a time with the chosen ``rule``, ``hessian``
    estimator and variational ``family``; with the linear model, ``family="full"`` and
    ``hessian="lin_hess"`` each step is one Newton step of the log posterior from the
    prior mean of the step (the CM-EKF / conditional-moments update of a GLM).

    Parameters
    ----------
    hidden_layer_sizes : int or tuple of int, default=()
        Hidden layer widths of the MLP giving the log-rate; ``()`` is the log-linear
        model of ``PoissonRegressor``.
    activation : {"relu", "tanh", "gelu", "sigmoid", "identity"}, default="relu"
        Hidden-layer activation.
    model : tuple (init, apply) or object with ``.init`` and ``.apply``, default=None
        A user JAX model of the log-rate (see :class:`BongRegressor`).
    fit_intercept : bool, default=True
        Learn an intercept (linear models).
    family : {"auto", "full", "full_moment", "diag", "diag_moment", "dlr"}, default="auto"
        Variational family (see :class:`BongRegressor` and
        :ref:`Choosing a configuration <choosing-family>`); ``"auto"`` is ``"full"``
        for the linear model of at most 128 parameters (for the linear model with
        ``hessian="lin_hess"``, each row one Newton step of the log posterior) and
        ``"dlr"`` otherwise; ``family_`` says which.
    rank : int, default=10
        Rank of the ``dlr`` precision's low-rank part (clamped to the number of
        parameters).
    rule : {"bong", "bog", "blr", "bbb"}, default="bong"
        Update rule (see :class:`BongRegressor` and :doc:`/user_guide/rules`).
    hessian : {"lin_hess", "lin_ef", "mc_ef", "mc_hess"}, default="lin_hess"
        Gradient and curvature estimator (see :doc:`/user_guide/estimators`).
    learning_rate : float, default=0.1
        Step size α of bog, blr (α ≤ 1) and bbb.
    n_iter : int, default=10
        Inner steps of blr and bbb.
    mc_samples : int, default=10
        Samples of the MC estimators.
    backtrack : int, default=20
        Step halvings allowed per (inner) step. A step is retaken at half the rate while
        it would leave an invalid belief or, for ``bong`` and ``bog``, while it lowers
        the row's log-likelihood below its value at the current mean: the log link's
        Newton step from far below log y lands far above it (e^f overflows), which
        this rejects. A step that does neither is the published algorithm's, unchanged;
        0 runs the published algorithm everywhere (:ref:`counts`).
    prior_variance : float, "auto" or "bank", default="auto"
        Prior variance σ₀² of the weights of the log-rate (fan-in scaled for networks,
        as in :class:`BongRegressor`; the intercept keeps σ₀², since it is a
        log-rate), or ``"bank"`` for a bank of prior variances weighted by their
        one-step-ahead (plug-in) predictive log-likelihood.
        ``"auto"`` (the default) is ``"bank"`` for the linear model, whose evidence is its
        marginal likelihood (empirical Bayes, as in ``BayesianRidge``; after ``fit``'s
        passes, ``refine``, Laplace's at each filter's mode), and for
        the built-in networks (where the bank costs about ten filters' time) 10, or 3
        where the first rows are learned in one pass (``partial_fit``, ``passes=1``: the
        one-pass step overshoots from a broader prior), and 1 for user models (whose
        parameters it scales by nothing); ``prior_variance_`` says which value is in
        use (:ref:`defaults`).
    drift : float in (0, 1], default=1.0
        Ornstein–Uhlenbeck decay γ toward the prior before each update (non-stationary
        rates).
    process_noise : float, default=0.0
        Isotropic process noise q added before each update.
    batch_size : int, default=1
        Rows treated as one likelihood term per update.
    passes : int or "auto", default="auto"
        Passes ``fit`` makes over its rows, each learning every row at weight
        1 / ``passes`` (tempered passes: the rows' total weight stays one, so the
        posterior is that of the data seen once; for the linear-Gaussian model it is the
        one-pass posterior exactly). The first pass takes the rows in order, the others
        in an order drawn from ``random_state``. Later passes linearise the likelihood at
        better means, which one pass of a network lacks. ``"auto"``: 10 for networks and
        user models, 1 for the linear model, where a bank of filters runs and under the
        prequential calibration (``passes_`` says which). More than one pass needs ``drift=1``,
        ``process_noise=0`` and a single filter (a fixed ``prior_variance``; networks'
        ``"auto"`` is one). If a pass refuses a row or diverges, ``fit`` keeps one
        pass at full weight and warns. ``partial_fit`` is always one pass.
    predictive : {"linmc", "plugin", "mc", "auto"}, default="auto"
        Posterior predictive of ``predict``, ``predict_logpmf`` and the returned
        standard deviation. ``"linmc"`` (``"auto"``): the log-rate linearised,
        f ~ N(f(x, μ), J Σ Jᵀ), in closed form: E[y] = exp(m + v/2) and
        Var[y] = E[y] + (eᵛ − 1) E[y]² (exact for the linear model); ``"mc"``:
        Monte Carlo over θ ~ q; ``"plugin"``: exp f(x, μ), no parameter uncertainty
        (``PoissonRegressor``'s prediction).
    predictive_samples : int, default=100
        Samples of the ``mc`` predictive.
    dtype : {"auto", "float32", "float64"}, default="auto"
        Working precision (float64 is enabled locally, never globally). ``"auto"`` is
        float32: this update is not exact, and one pass is decided by approximations far
        larger than float32's rounding (``BongRegressor``'s linear model, whose update
        is exact, takes float64). Pass ``"float64"`` for raw-scale features, whose
        squares cancel in float32.
    on_error : {"raise", "skip"}, default="raise"
        What to do with an update that would give a non-finite posterior.
    refine : int, default=10
        Further passes ``fit`` may take over its rows (the iterated filter): each starts
        again from the prior and linearises the likelihood at the previous pass's mean,
        one Newton (IRLS) step on the log posterior, until the mean stops moving; a pass
        that would lower the log posterior is shortened (halved up to ten times) or not
        kept; the first pass runs from the one-pass mean and from the prior mean, and
        each filter goes on from the better result (a bank's one pass is its widest
        prior's filter's alone). A bank's
        filters are then weighed by Laplace's evidence at their modes. With
        ``refine`` > 0 a linear model whose fitted mean explains the rows worse than the
        prior mean warns
        (``DivergenceWarning``; a bank drops such filters).
        Where they converge the
        posterior is the Laplace approximation at the mode, which one pass of the
        filter is not. Only for the linear model with the full covariance (the
        ``"auto"`` family up to 128 parameters), ``rule="bong"``,
        ``hessian="lin_hess"`` and no drift; ``partial_fit`` is always one pass. 0: one
        pass. See :ref:`Defaults <defaults-refine>`.
    random_state : int, RandomState instance or None, default=None
        Seeds the network prior mean, the MC estimators and the MC predictive.
    verbose : int, default=0
        Show a progress bar while learning.

    Attributes
    ----------
    input_mean_, input_scale_ : ndarray of shape (n_features,)
        The input standardisation of the built-in models: where a column of the first
        call's inputs has a root mean square above 3, the model learns and predicts on
        (x − ``input_mean_``) / ``input_scale_``, that call's column means and standard
        deviations (without an intercept, 0 and the root mean squares); 0 and 1 where
        the inputs are used as given (user models, inputs on the prior's scale).
        ``coef_`` and ``intercept_`` are on the user's scale.
    n_features_in_ : int
        Number of features seen in ``fit``.
    family_ : str
        The family of the belief: ``family``, or what ``"auto"`` chose.
    dtype_ : str
        The working precision: ``dtype``, or what ``"auto"`` chose for the model.
    predictive_ : str
        The default predictive: ``predictive``, or what ``"auto"`` means.
    feature_names_in_ : ndarray of str
        Feature names, when X was a DataFrame with string column names.
    n_observations_ : int
        Rows learned so far.
    passes_ : int
        The tempered passes the last ``fit`` made (``passes``, or what ``"auto"`` chose;
        1 where it fell back to one pass, and after ``partial_fit`` alone).
    n_refine_passes_ : int
        Further passes the last ``fit`` kept (``refine``; 0 after ``partial_fit`` alone).
    n_skipped_ : int
        Rows whose update was skipped (``on_error="skip"``).
    posterior_mean_ : ndarray of shape (P,)
        Posterior mean of all parameters.
    posterior_var_ : ndarray of shape (P,)
        Posterior marginal variances.
    posterior_ : MeanCov or DLRState
        The Gaussian belief itself (mean and covariance, or the dlr precision's
        factors), as read-only numpy arrays.
    coef_ : ndarray of shape (n_features,)
        Posterior mean weights of the log-rate (linear models only).
    intercept_ : float
        Posterior mean intercept of the log-rate (linear models only).

    See Also
    --------
    BongRegressor : Gaussian regression.
    sklearn.linear_model.PoissonRegressor : Batch (MAP) Poisson regression.

    Examples
    --------
    >>> import numpy as np
    >>> from skbong import BongPoissonRegressor
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(500, 2))
    >>> y = rng.poisson(np.exp(0.5 + X @ [0.3, -0.2]))
    >>> reg = BongPoissonRegressor(family="full").fit(X, y)
    >>> np.round(reg.coef_, 1)
    array([ 0.3, -0.2])
    >>> mean, std = reg.predict(X[:2], return_std=True)
    """

    _y_numeric = True
    _observation = observation.fixed  # no noise to learn, no interval to calibrate

    _parameter_constraints = {
        **BongBase._parameter_constraints,
        "refine": [Interval(Integral, 0, None, closed="left")],
    }

    def __init__(
        self,
        *,
        hidden_layer_sizes=(),
        activation="relu",
        model=None,
        fit_intercept=True,
        family="auto",
        rank=10,
        rule="bong",
        hessian="lin_hess",
        learning_rate=0.1,
        n_iter=10,
        mc_samples=10,
        backtrack=20,
        prior_variance="auto",
        drift=1.0,
        process_noise=0.0,
        batch_size=1,
        passes="auto",
        predictive="auto",
        predictive_samples=100,
        dtype="auto",
        on_error="raise",
        refine=10,
        random_state=None,
        verbose=0,
    ):
        super().__init__(
            hidden_layer_sizes=hidden_layer_sizes,
            activation=activation,
            model=model,
            fit_intercept=fit_intercept,
            family=family,
            rank=rank,
            rule=rule,
            hessian=hessian,
            learning_rate=learning_rate,
            n_iter=n_iter,
            mc_samples=mc_samples,
            backtrack=backtrack,
            prior_variance=prior_variance,
            drift=drift,
            process_noise=process_noise,
            batch_size=batch_size,
            passes=passes,
            predictive=predictive,
            predictive_samples=predictive_samples,
            dtype=dtype,
            on_error=on_error,
            random_state=random_state,
            verbose=verbose,
        )
        self.refine = refine

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.positive_only = True  # counts
        tags.regressor_tags.poor_score = True  # counts: the checks' R² 0.5 is not promised
        return tags

    def _likelihood(self, n_outputs):
        return "poisson"

    def _predictive_kind(self):
        """The predictive in use: ``"auto"`` is ``"linmc"`` (closed form)."""
        return "linmc" if self.predictive == "auto" else self.predictive

    def _encode_y(self, y, first):
        y = column_or_1d(y, warn=True).astype(np.float64)
        if not np.all(np.isfinite(y)):
            raise ValueError("Input y contains NaN or infinity")
        if np.any(y < 0):
            raise ValueError(
                f"BongPoissonRegressor needs non-negative counts y; got a minimum of {y.min():g}"
            )
        if first:  # log of the mean count, kept finite for all-zero counts
            self.prior_intercept_ = float(np.log((y.sum() + 0.5) / len(y)))
        return y[:, None], 1, 1.0

    def _init_prior(self, config, passes):
        """The prior of :class:`BongBase`, with the output bias (the intercept of the
        log-rate) centred at ``prior_intercept_``."""
        super()._init_prior(config, passes)
        model = config.model
        if isinstance(model, engine.MLP) and (model.fit_intercept or model.hidden):
            shift = np.zeros(self._prior_mean.shape[-1], self._prior_mean.dtype)
            shift[-1] = self.prior_intercept_  # the output bias is the last parameter
            self._prior_mean = self._prior_mean + shift
            self._state = (self._state[0] + shift, *self._state[1:])

    def _linear_attributes(self, weights, bias):
        return weights[0], float(bias[0])

    def _moments(self, X, kind):
        """Predictive mean and variance of y at X under ``kind``, float64 (n,): the
        mixture over the bank with a prior bank."""
        _check_fitted(self)
        hyper = engine.Hyper(None, np.asarray(1.0, self._jax_dtype()), None, None, None)
        n_samples = int(self.predictive_samples)
        mean = second = 0.0
        for wt, state, _ in self._components():
            m, v = self._predict_rows(
                X,
                lambda cfg, st, x, key, thetas=None: engine.predict_moments(
                    cfg, st, hyper, x, key, kind, n_samples, thetas
                ),
                state=state,
                sampled=kind == "mc",
                jacobians=int(kind == "linmc"),
            )
            m, v = m[:, 0].astype(np.float64), v[:, 0].astype(np.float64)
            mean, second = mean + wt * m, second + wt * (v + m * m)
        return mean, np.maximum(second - mean * mean, 0.0)

    def predict(self, X, return_std=False):
        """Posterior predictive mean of the count y (and its standard deviation).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Inputs.
        return_std : bool, default=False
            Also return the predictive standard deviation of y (Poisson noise and
            parameter uncertainty, by the law of total variance).

        Returns
        -------
        mean : ndarray of shape (n_samples,)
            E[y | x, data] under ``predictive``; ``exp f(x, μ)`` for ``"plugin"``.
        std : ndarray of shape (n_samples,)
            Predictive standard deviation; only when ``return_std=True``.
        """
        mean, var = self._moments(X, self._predictive_kind())
        return (mean, np.sqrt(var)) if return_std else mean

    def predict_logpmf(self, X, y):
        """Log posterior predictive probability of each count, log p(y | x, data).

        ``linmc``: the Poisson–log-normal integral over f ~ N(f(x, μ), J Σ Jᵀ) by
        Gauss–Hermite quadrature; ``mc``: the mean over parameter samples; ``plugin``:
        the Poisson pmf at exp f(x, μ).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Inputs.
        y : array-like of shape (n_samples,)
            Counts.

        Returns
        -------
        logpmf : ndarray of shape (n_samples,)
            Log probabilities (nats).
        """
        _check_fitted(self)
        y = column_or_1d(y).astype(np.float64)
        kind = self._predictive_kind()
        per, log_w = [], []
        for wt, state, _ in self._components():
            f = self._log_rate_samples(X, kind, state)  # (S, n) with log-weights (S,)
            if f[0].shape[1] != len(y):
                raise ValueError(f"y has {len(y)} rows, X {f[0].shape[1]}")
            log_pmf = y * f[0] - np.exp(f[0]) - scipy.special.gammaln(y + 1.0)
            per.append(scipy.special.logsumexp(log_pmf + f[1][:, None], axis=0))
            log_w.append(np.log(wt))
        return scipy.special.logsumexp(np.array(per) + np.array(log_w)[:, None], axis=0)

    def _log_rate_samples(self, X, kind, state):
        """Log-rates f (S, n) and their log-weights (S,) that represent the predictive
        over f: Gauss–Hermite nodes for ``linmc``, parameter samples for ``mc``, the
        single plug-in value for ``plugin``."""
        if kind == "linmc":
            m, v = self._predict_rows(
                X, engine.predictive.predict_output_moments, state=state, jacobians=1
            )
            t, w = np.polynomial.hermite.hermgauss(_HERMITE_NODES)
            f = m[:, 0].astype(np.float64) + np.sqrt(2.0 * v[:, 0].astype(np.float64)) * t[:, None]
            return f, np.log(w / np.sqrt(np.pi))
        n = 1 if kind == "plugin" else int(self.predictive_samples)
        (f,) = self._predict_rows(
            X,
            lambda cfg, st, x, key, thetas=None: (
                engine.sample_outputs(cfg, st, x, key, kind, n, thetas)[..., 0].T,
            ),
            state=state,
            sampled=kind == "mc",
        )
        return f.astype(np.float64).T, np.full(n, -np.log(n))

    def sample_y(self, X, n_samples=1, random_state=None):
        """Draw counts from the posterior predictive: θ ~ q, then y ~ Poisson(exp f(x, θ)).
        With the same ``random_state``, Poisson draws at the rates of :meth:`sample_f`.

        Parameters
        ----------
        X : array-like of shape (n_samples_X, n_features)
            Inputs.
        n_samples : int, default=1
            Draws per row.
        random_state : int, RandomState instance or None, default=None
            Seed of the draws.

        Returns
        -------
        y_samples : ndarray of shape (n_samples_X, n_samples)
            Counts (float64); one parameter sample is shared by all rows of a draw.
        """
        rng, draws = self._draw_outputs(X, n_samples, random_state)
        rate = np.exp(np.concatenate([f for _, f in draws], axis=-1)[:, 0, :])
        return rng.poisson(rate).astype(np.float64)

    def sample_f(self, X, n_samples=1, random_state=None):
        """Draw noise-free rates λ(x, θ) = exp f(x, θ), θ ~ q, from the posterior.

        Parameters
        ----------
        X : array-like of shape (n_samples_X, n_features)
            Inputs.
        n_samples : int, default=1
            Draws per row.
        random_state : int, RandomState instance or None, default=None
            Seed of the draws.

        Returns
        -------
        rate_samples : ndarray of shape (n_samples_X, n_samples)
            Rates; one parameter sample is shared by all rows of a draw.
        """
        _, draws = self._draw_outputs(X, n_samples, random_state)
        return np.exp(np.concatenate([f for _, f in draws], axis=-1)[:, 0, :])

    def score(self, X, y, sample_weight=None):
        """D², the fraction of Poisson deviance explained (``PoissonRegressor.score``).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Inputs.
        y : array-like of shape (n_samples,)
            Counts.
        sample_weight : array-like of shape (n_samples,), default=None
            Row weights.

        Returns
        -------
        score : float
            1 − D(y, ŷ) / D(y, ȳ) with the Poisson deviance D and ŷ = ``predict(X)``.
        """
        return d2_tweedie_score(y, self.predict(X), sample_weight=sample_weight, power=1)

    def fit(self, X, y, sample_weight=None):
        """Forget everything, then learn from the rows of X in order.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Inputs.
        y : array-like of shape (n_samples,)
            Non-negative counts.
        sample_weight : array-like of shape (n_samples,), default=None
            Multiplies each row's log-likelihood term.

        Returns
        -------
        self : BongPoissonRegressor
            The fitted estimator.
        """
        return stream.fit_rows(self, X, y, sample_weight, reset=True)

    def partial_fit(self, X, y, sample_weight=None):
        """Continue learning from the current posterior with the rows of X in order.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Inputs; any number of rows, even one.
        y : array-like of shape (n_samples,)
            Non-negative counts.
        sample_weight : array-like of shape (n_samples,), default=None
            Multiplies each row's log-likelihood term.

        Returns
        -------
        self : BongPoissonRegressor
            The updated estimator.
        """
        return stream.fit_rows(self, X, y, sample_weight, reset=False)


__all__ = ["BongPoissonRegressor"]
