"""BongRegressor: online Bayesian regression with a Gaussian likelihood."""

import math
import warnings
from numbers import Integral, Real

import numpy as np
from sklearn.base import RegressorMixin
from sklearn.utils._param_validation import Interval, StrOptions

from .. import engine
from .._core import copies as _copies
from .._core.posterior import _check_fitted
from . import regression_face as face
from . import stream
from .base import BongBase
from .calibration import WINDOW_ROWS
from .observation import Observation

AUTO_FLOAT64_MAX = 101
"""The most parameters of a linear model that ``dtype="auto"`` computes in float64 (100
features and an intercept). With the full covariance (the ``family="auto"`` of these
sizes) float64 cost 1.18× float32's fit time at P = 51, 1.64× at P = 101, 2.98× at
P = 129 and 3.25× at P = 201 (2,500 rows, fastest of three fits, one run)."""

AUTO_FULL_MAX = 1024
"""The most parameters of a linear model for which ``family="auto"`` takes the full
covariance. At P = 1001 (2,500 rows) a full fit took 1.8 s against BayesianRidge's
0.61 s and matched its test RMSE (0.123); the rank-10 ``dlr`` took 0.14 s at a 3.4× larger
RMSE (``benchmarks/bench_family.py``, doc/results/family.txt)."""

RAW_SCALE = 10.0
"""The largest absolute target beyond which a network with the factorised learned noise warns (standardised
targets almost never reach it)."""


class BongRegressor(RegressorMixin, BongBase):
    """Online Bayesian regression by the BONG family (Jones, Chang & Murphy, 2024).

    A Gaussian belief over the parameters θ of a model f(x, θ) (linear by default,
    an MLP with ``hidden_layer_sizes``, or any JAX model) is updated one observation
    (or mini-batch) at a time with the chosen ``rule``, ``hessian`` estimator and
    variational ``family``. The likelihood is y ~ N(f(x, θ), obs_variance), or with
    ``likelihood="student_t"`` a heavy-tailed Student-t of ``dof`` degrees of freedom,
    robust to outliers in y.

    Parameters
    ----------
    hidden_layer_sizes : int or tuple of int, default=()
        Hidden layer widths of the MLP (an int is one layer, as in ``MLPRegressor``);
        ``()`` is linear regression.
    activation : {"relu", "tanh", "gelu", "sigmoid", "identity"}, default="relu"
        Hidden-layer activation.
    model : tuple (init, apply) or object with ``.init`` and ``.apply``, default=None
        A user JAX model ``init(key, n_features, n_outputs) -> params`` and
        ``apply(params, X) -> outputs``; overrides ``hidden_layer_sizes`` and
        ``activation``. Must be picklable (module-level functions) to pickle the estimator.
        A flax or equinox network is taken through :mod:`skbong.adapters`.
    fit_intercept : bool, default=True
        Learn an intercept (linear models).
    family : {"auto", "full", "full_moment", "diag", "diag_moment", "dlr"}, default="auto"
        Variational family, the structure of the Gaussian belief. ``"auto"``: ``"full"``
        for the linear model with at most :data:`~skbong._online.regressor.AUTO_FULL_MAX`
        parameters (the exact conjugate posterior, BayesianRidge's, at O(P²) per row),
        ``"dlr"`` otherwise (networks, user models, wider linear models); the choice is
        ``family_``. On a linear stream with P = 201 parameters a rank-10 ``"dlr"`` had a
        test RMSE 1.35× and an NLL 0.52 nats above the exact posterior's (P = 1001: 3.4×),
        and in float32 a ``"dlr"`` whose rank covers every parameter can cancel its
        variances to zero on low-noise data (:ref:`the defaults <defaults>`). ``"full"``: full
        covariance in natural parameters, every correlation kept, exact for the linear
        model (the Kalman filter), O(P²) memory; ``"full_moment"``: the same in moment
        parameters (mean and covariance), less stable; ``"diag"``: diagonal, in natural
        parameters, O(P), no correlations; ``"diag_moment"``: diagonal in moment
        parameters; ``"dlr"``: diagonal-plus-low-rank precision of rank ``rank``, linear
        in P, keeps the main correlations. See
        :ref:`Choosing a configuration <choosing-family>` and
        :doc:`/user_guide/families`.
    rank : int, default=10
        Rank R of the low-rank part of the ``dlr`` precision (ignored by the other
        families); a rank above the number of parameters P is clamped to P (rank P is
        already exact). 5–20 is the usual range: memory and time grow linearly in R. See
        :ref:`Choosing a configuration <choosing-family>`.
    rule : {"bong", "bog", "blr", "bbb"}, default="bong"
        Update rule. ``"bong"``: one natural-gradient step on the expected
        log-likelihood, no rate to tune, the first choice; ``"blr"``: ``n_iter``
        natural-gradient steps of rate ``learning_rate`` on the online ELBO, closer on a
        strongly non-linear likelihood at ``n_iter`` times the cost; ``"bog"``: one
        plain-gradient step; ``"bbb"``: ``n_iter`` plain-gradient steps on the online
        ELBO. The plain-gradient rules need a tuned ``learning_rate`` and are mostly for
        comparisons. See :ref:`Choosing a configuration <choosing-rule>` and
        :doc:`/user_guide/rules`.
    hessian : {"lin_hess", "lin_ef", "mc_ef", "mc_hess"}, default="lin_hess"
        Gradient and curvature estimator. ``"lin_hess"``: the Hessian of the model
        linearised at the mean, deterministic, exact for the linear model, one backward
        pass per output; ``"lin_ef"``: the linearised gradient's empirical Fisher, one
        backward pass, for many outputs or large mini-batches; ``"mc_ef"``: the
        empirical Fisher of gradients at ``mc_samples`` sampled parameters, noisy, for
        models whose linearisation is poor; ``"mc_hess"``: the Monte Carlo Hessian,
        small models only, not available for ``dlr``. See
        :ref:`Choosing a configuration <choosing-hessian>` and
        :doc:`/user_guide/estimators`.
    learning_rate : float, default=0.1
        Step size α of bog, blr (α ≤ 1) and bbb; bong's rate is 1.
    n_iter : int, default=10
        Inner steps I of blr and bbb.
    mc_samples : int, default=10
        Samples M of the MC estimators.
    backtrack : int, default=0
        Step halvings allowed per (inner) step: a step that would leave an invalid
        belief (non-finite, a non-positive variance, or a dense covariance that is not
        positive definite) is retaken with half the rate, up to ``backtrack`` times,
        before the row is refused. 0 runs the published algorithms exactly; a positive
        value (e.g. 20) is the stabilised variant of the moment families with ``bong``
        and ``blr`` (doc: "Which combination survives"); it does not rescue ``bog`` and
        ``bbb``, whose failures are a diverging mean. It costs a check per step (a
        Cholesky factorisation, O(P³), for the dense families).
    prior_variance : float, "auto" or "bank", default="auto"
        Prior variance σ₀² of the weights. For networks the weights of a layer with
        fan-in n get σ₀² / n (so σ₀² = 1 is the LeCun-normal initialisation
        distribution at any width) and hidden biases σ₀²; output biases (intercepts)
        get a broad prior of their own, variance 100 (in units of the noise variance
        when it is learned with ``noise_posterior="conjugate"``, the linear model's
        default, so raw-scale targets work). ``"bank"`` runs a bank of
        filters over σ₀² ∈ {10⁻³, …, 10³} in one compiled program, weighted by their
        online evidence (for the linear model, the exact marginal likelihood; for networks
        discounted by 0.99 per row, so that it follows the model as it is now), and
        predicts with their mixture (``prior_weights_``, ``prior_variance_``).
        ``"auto"`` (the default) is ``"bank"`` for the linear model, whose evidence is its
        exact marginal likelihood (empirical Bayes, as in ``BayesianRidge``), and 10 for
        the built-in networks (the bank costs about ten filters' time there) and 1 for
        user models (whose parameters it scales by nothing); ``prior_variance_`` says
        which value is in use (:ref:`defaults`).
    likelihood : {"gaussian", "student_t"}, default="gaussian"
        Observation model. ``"gaussian"``: y = f(x, θ) + ε, ε ~ N(0, R), conjugate for
        the linear model. ``"student_t"``: ε ~ t_ν(0, R) with ν = ``dof`` degrees of
        freedom (R is then the squared scale, the variance ν R / (ν − 2) for ν > 2):
        every row's step is bounded whatever its target, so a stream with a
        few gross outliers in y is learned without them dominating; the update uses the
        Student-t's Fisher information (:mod:`skbong.engine.student_t`), the learned R
        weights each row by E[λ | r] of its scale mixture (:mod:`skbong.engine.filter.noise`),
        and the predictive is a Student-t of at most ν degrees of freedom. Not
        conjugate: no interval calibration (``calibration`` must be ``"auto"``, which
        is then None, or None), and the learned noise and a prior bank do not merge.
        See :ref:`outliers`.
    dof : float, default=4.0
        Degrees of freedom ν of ``likelihood="student_t"``, any positive finite value
        (:data:`skbong.engine.student_t.DOF` by default). A smaller ν has heavier tails:
        a row's step in the output is bounded by (ν + 1) / (2 √(ν R)) and gross outliers
        weigh less. With 0–5 % gross outliers on three sets, ν = 4 had the best test NLL
        at 5 %, ν = 6 was better than ν = 4 on clean data and at 1–2 % (:ref:`outliers`). As ν grows the
        model tends to the Gaussian; ``inf`` is refused: that is
        ``likelihood="gaussian"``, which keeps the conjugate model's calibration and
        merging. Used only with ``likelihood="student_t"``: with another likelihood a
        value other than 4.0 raises at fit. ``set_params`` after a fit takes effect from
        the next update and prediction (as a change of ``likelihood`` does).
    obs_variance : float or "auto", default="auto"
        Observation noise variance R. ``"auto"`` learns it from the stream, per output,
        at every step from the first row on: a conjugate inverse-gamma posterior
        IG(a, b) (the normal–inverse-gamma update, exact for the linear model; see
        :mod:`skbong.engine.filter.noise`), starting from a weak IG(1, 1) (unit noise, worth two
        observations); the update uses b / a and the predictive is a Student-t.
        A float fixes R for all outputs. ``set_params`` after a fit takes effect from
        the next update (switching to ``"auto"`` starts from the value in use).
    noise_discount : float in (0, 1] or "auto", default="auto"
        Discount δ of the learned noise's old evidence at each update (West & Harrison's
        variance discounting; used only with ``obs_variance="auto"``): the noise
        estimate then follows about the last 1 / (1 − δ) rows. 1 keeps everything, the
        exact normal–inverse-gamma posterior. ``"auto"`` is 1 for the linear model and
        0.99 for networks, whose residuals shrink while they learn (on the UCI sets,
        one pass, 20 splits, this lowers the test NLL on all 7 and brings the 90 %
        intervals closer to 90 %; see :ref:`defaults`). ``set_params`` after a fit
        takes effect from the next update.
    noise_posterior : {"auto", "conjugate", "factorised"}, default="auto"
        How the learned noise and the weights' belief are joined (used only with
        ``obs_variance="auto"``). ``"conjugate"``: the normal–inverse-gamma coupling
        θ | σ² ~ N(μ, σ² V), the covariance rescaled with the noise after each update,
        so the prior too is in units of the noise — exact for the linear model, and
        equivariant to the scale of y. ``"factorised"``: independent q(θ) q(σ²), the
        variational-Bayes adaptive Kalman filter (Särkkä & Nummenmaa, 2009): the update
        uses the same b / a but the noise never rescales the covariance, so the prior
        stays at ``prior_variance`` in the units of y (standardise y). ``"auto"`` is
        ``"conjugate"`` for the linear model and ``"factorised"`` for networks and user
        models: as a network's learned noise falls from 1 to a few hundredths on
        standardised targets, the coupling shrinks its prior by as much and one pass
        under-fits (UCI, one 50-unit layer, 5 splits: test NLL 0.18 and 0.34 nats lower
        on energy and yacht, lower on all 7 sets; see :ref:`defaults`). Merging
        (:func:`skbong.merge`) needs ``"conjugate"``. ``set_params`` after a fit takes
        effect from the next update.
    calibration : {"auto", "loo", "prequential"} or None, default="auto"
        How :meth:`predict_interval` places its ends: at the predictive quantiles of the
        levels where the distribution of the probability integral transforms u = F(y) of
        a calibration set reaches the interval's tail probabilities (Kuleshov et al.,
        2018). Where the model is right the u's are uniform and the intervals are the
        model's, up to sampling error; where it is not (heteroscedastic or heavy-tailed
        noise, a misfit mean) they cover what they claim. ``"auto"``: ``"loo"`` for the
        static linear model, ``"prequential"`` for a linear model with ``drift`` < 1 or
        ``process_noise`` (whose rows are not exchangeable: on a drifting stream the
        one-step-ahead errors are the ones to calibrate on), ``None`` for networks,
        user models and ``likelihood="student_t"``. With ``drift="auto"`` (and no
        process noise) the linear model keeps
        both and its evidence chooses: ``"loo"`` under the static filters while
        ``drift_`` is 1, ``"prequential"`` otherwise. ``"loo"`` (linear model
        only): the calibration set is the last ``calibration_rows`` learned rows under
        the leave-one-out predictive of the current belief, exact in closed form for the
        conjugate model: the final model's own out-of-sample errors. The rows are kept
        in the estimator (and its pickle), and the first :meth:`predict_interval` after
        an update costs one predictive pass over them. ``"prequential"``: before it
        learns a row the stream predicts it and keeps the u of that out-of-sample
        predictive; nothing is kept but a histogram (which forgets at 0.99 per row for a
        network or a drifting model, whose early predictions came from a model that has
        since changed), and it suits networks (one 50-unit
        layer: 65 against 48 µs per row, since every row's linearised predictive is a
        second pass over the belief). ``None``: the model's own quantiles.
        ``predict(return_std=True)``, :meth:`predict_logpdf` and the samples are the
        model's either way. A change by ``set_params`` applies from the next update.
        See :ref:`defaults`.
    calibration_rows : int, default=1000
        How many of the last learned rows ``calibration="loo"`` keeps.
    drift : float in (0, 1] or "auto", default=1.0
        Ornstein–Uhlenbeck decay γ toward the prior before each update. 1 (with
        ``process_noise=0``): a static model, for stationary data; below 1: the belief
        relaxes toward the prior and old rows are forgotten, for a stream whose relation
        between X and y changes. ``"auto"`` runs a bank of filters over
        γ ∈ {1, 0.999, 0.99} (with a bank over the prior too, over every pair) in one
        compiled program, weighted by their online evidence (for the linear model, the
        exact marginal likelihood of each state-space model), and predicts with their
        mixture (``drift_weights_``, ``drift_``): for a stream that may or may not
        drift, at about 1.8× the fit time of one static filter (the linear model) or
        5× (a network). Not the default: a static model's posterior does not depend on
        the order of the rows (so shards merge and weights equal repeated rows). See
        :ref:`Choosing a configuration <choosing-hyperparameters>` and
        :doc:`/user_guide/drift`.
    process_noise : float, default=0.0
        Isotropic process noise q added before each update.
    batch_size : int, default=1
        Rows treated as one likelihood term per update (1 is the paper's setting).
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
    predictive : {"linmc", "plugin", "mc", "auto"}, default="linmc"
        Posterior predictive of ``predict(return_std=True)``, ``predict_interval`` and
        ``predict_logpdf``. ``"linmc"``: linearised (closed form: variance J Σ Jᵀ + R,
        parameter uncertainty included; exact for the linear model), for uncertainty
        bands; ``"mc"``: Monte Carlo over θ ~ q through the model itself; ``"plugin"``:
        the mean's prediction, observation noise only (drops parameter uncertainty), for
        point predictions. ``"auto"`` is ``"linmc"`` here (it exists for symmetry with
        ``BongClassifier``, where it depends on the model). See
        :ref:`Choosing a configuration <choosing-predictive>` and
        :doc:`/user_guide/predictive`.
    predictive_samples : int, default=100
        Samples of the ``mc`` predictive.
    dtype : {"auto", "float32", "float64"}, default="auto"
        Working precision (float64 is enabled locally, never globally). ``"auto"`` is
        float64 for the linear model of at most 101 parameters (100 features and an
        intercept; :data:`~skbong._online.regressor.AUTO_FLOAT64_MAX`), whose update is exact
        (the Kalman filter) and whose few parameters make double precision cheap (1.2×
        float32's fit time at P = 51, 1.6× at P = 101, 3× from P = 129), and float32 for
        larger linear models, networks and user models. In float32 the Kalman update
        cancels on raw-scale features: river's TrumpApproval stream, with a date column
        near 7.4e5, was refused at row 0 in float32 and learned in float64 (prequential
        R² 0.845, river's BayesianLinearRegression 0.845).
    on_error : {"raise", "skip"}, default="raise"
        What to do with an update that would give a non-finite posterior: raise
        (leaving the posterior as before the call) or skip the row and count it in
        ``n_skipped_``.
    random_state : int, RandomState instance or None, default=None
        Seeds the network prior mean, the MC estimators and the MC predictive.
    verbose : int, default=0
        Show a progress bar (tqdm if installed) while learning.

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
    calibration_ : str or None
        The interval calibration: ``calibration``, or what ``"auto"`` chose for the
        model.
    noise_posterior_, noise_discount_ : str, float or None
        The learned noise's posterior and discount: the parameters, or what ``"auto"``
        chose for the model (``None`` where the noise is fixed).
    feature_names_in_ : ndarray of str
        Feature names, when X was a DataFrame with string column names.
    n_observations_ : int
        Rows learned so far.
    passes_ : int
        The tempered passes the last ``fit`` made (``passes``, or what ``"auto"`` chose;
        1 where it fell back to one pass, and after ``partial_fit`` alone).
    n_skipped_ : int
        Rows whose update was skipped (``on_error="skip"``).
    obs_variance_ : ndarray of shape (n_outputs,)
        Observation variance in use (the learned b / a with ``obs_variance="auto"``).
    noise_dof_ : ndarray of shape (n_outputs,)
        Degrees of freedom of the Student-t predictive (``inf`` for a fixed noise).
    posterior_mean_ : ndarray of shape (P,)
        Posterior mean of all parameters.
    posterior_var_ : ndarray of shape (P,)
        Posterior marginal variances.
    posterior_ : MeanCov or DLRState
        The Gaussian belief itself (mean and covariance, or the dlr precision's
        factors), as read-only numpy arrays.
    coef_ : ndarray of shape (n_features,) or (n_outputs, n_features)
        Posterior mean weights (linear models only).
    intercept_ : float or ndarray of shape (n_outputs,)
        Posterior mean intercept (linear models only).
    prior_variance_ : float
        The prior variance in use (with a bank, ``prior_variance="bank"`` or ``"auto"``
        for the linear model, the bank's value of largest weight).
    drift_ : float
        The drift in use (with ``drift="auto"``, the bank's value of largest weight).
    prior_grid_, prior_weights_ : ndarray of shape (7,)
        The bank's prior variances and their posterior weights (when a bank learns the prior).
    drift_grid_, drift_weights_ : ndarray of shape (3,)
        The bank's drifts and their posterior weights (``drift="auto"``).
    bank_grid_ : ndarray of shape (K, 2)
        Prior variance and drift of each filter of the bank, aligned with
        ``log_evidence_`` (K,), each filter's online evidence.

    See Also
    --------
    BongClassifier : The classification counterpart.
    sklearn.linear_model.BayesianRidge : Batch Bayesian linear regression.

    References
    ----------
    M. Jones, P. Chang, K. Murphy. Bayesian online natural gradient (BONG). 2024.

    Examples
    --------
    >>> import numpy as np
    >>> from skbong import BongRegressor
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(200, 3))
    >>> y = X @ [1.0, -2.0, 0.5] + 0.1 * rng.normal(size=200)
    >>> reg = BongRegressor(family="full", obs_variance=0.01).fit(X, y)
    >>> np.round(reg.coef_, 1)
    array([ 1. , -2. ,  0.5])
    >>> mean, std = reg.predict(X[:2], return_std=True)
    """

    _parameter_constraints = {
        **BongBase._parameter_constraints,
        # every registered likelihood of additive noise on real-valued targets
        "likelihood": [StrOptions({n for n, lik in engine.LIKELIHOODS.items() if lik.additive_noise})],
        "dof": [Interval(Real, 0, None, closed="neither")],
        "obs_variance": [Interval(Real, 0, None, closed="neither"), StrOptions({"auto"})],
        "noise_discount": [Interval(Real, 0, 1, closed="right"), StrOptions({"auto"})],
        "noise_posterior": [StrOptions({"auto", "conjugate", "factorised"})],
        "calibration": [StrOptions({"auto", "loo", "prequential"}), None],
        "calibration_rows": [Interval(Integral, 1, None, closed="left")],
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
        backtrack=0,
        prior_variance="auto",
        likelihood="gaussian",
        dof=engine.student_t.DOF,
        obs_variance="auto",
        noise_discount="auto",
        noise_posterior="auto",
        calibration="auto",
        calibration_rows=WINDOW_ROWS,
        drift=1.0,
        process_noise=0.0,
        batch_size=1,
        passes="auto",
        predictive="linmc",
        predictive_samples=100,
        dtype="auto",
        on_error="raise",
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
        self.likelihood = likelihood
        self.dof = dof
        self.obs_variance = obs_variance
        self.noise_discount = noise_discount
        self.noise_posterior = noise_posterior
        self.calibration = calibration
        self.calibration_rows = calibration_rows

    # the regression face (regression_face.py): the targets and the predictive of y
    _y_numeric = face.Y_NUMERIC
    _encode_y = face.encode_y
    _linear_attributes = face.linear_attributes
    _predictive_kind = face.predictive_kind
    _learns_noise = face.learns_noise
    predict = face.predict
    predict_interval = face.predict_interval
    predict_logpdf = face.predict_logpdf
    sample_y = face.sample_y
    sample_f = face.sample_f
    obs_variance_ = property(face.obs_variance)
    noise_dof_ = property(face.noise_dof)

    def __sklearn_tags__(self):
        return face.tags(self, super().__sklearn_tags__())

    def _likelihood(self, n_outputs):
        return self.likelihood

    def _observation(self, model):
        """The observation model's choices for this engine model
        (:class:`~skbong._online.observation.Observation`): the learned noise's discount
        and posterior (``noise_discount``, ``noise_posterior``; ``"auto"``: 1 and the
        conjugate belief for the linear model, :data:`~skbong.engine.filter.noise.NETWORK_DISCOUNT`
        and the factorised one otherwise), the calibration's PITs and window
        (:meth:`_calibration_kind`), ν (``dof``, for the Student-t) and
        :data:`AUTO_FULL_MAX`, the linear model's largest full covariance (the Kalman
        filter, the exact normal–inverse-gamma posterior)."""
        linear = engine.models.is_linear(model)
        learn = self._learns_noise()
        if isinstance(self.noise_discount, str):
            discount = 1.0 if linear else engine.filter.noise.NETWORK_DISCOUNT
        else:
            discount = float(self.noise_discount)
        if self.noise_posterior == "auto":
            coupled = linear
        else:
            coupled = self.noise_posterior == "conjugate"
        calibration = self._calibration_kind(model)
        pit = None
        if calibration in ("prequential", "evidence"):
            pit = "plugin" if self._predictive_kind() == "plugin" else "linmc"
        lik = engine.likelihoods.LIKELIHOODS[self.likelihood]
        return Observation(
            learn_noise=learn,
            noise_discount=discount if learn else 1.0,
            noise_coupled=coupled if learn else True,
            obs_dof=float(self.dof) if lik.takes_dof else None,
            pit=pit,
            window_rows=int(self.calibration_rows) if calibration in ("loo", "evidence") else 0,
            full_max=AUTO_FULL_MAX,
        )

    def _validate_all_params(self):
        """The shared checks, and ``dof``: a positive finite number (ν = ∞ refused with a
        pointer to the Gaussian, which scikit-learn's interval check would not give; a bool,
        which it lets through), other than 4 only with ``likelihood="student_t"``."""
        dof = self.dof
        if isinstance(dof, Real) and not isinstance(dof, bool) and dof == math.inf:
            engine.student_t.check_dof(dof)
        hidden = super()._validate_all_params()
        engine.student_t.check_dof(dof)
        takes_dof = engine.likelihoods.LIKELIHOODS[self.likelihood].takes_dof
        if not takes_dof and self.dof != engine.student_t.DOF:
            raise ValueError(
                f"dof={self.dof!r} is the degrees of freedom of likelihood='student_t' and "
                f"does not apply to likelihood={self.likelihood!r}: pass "
                f"likelihood='student_t', or leave dof at {engine.student_t.DOF}"
            )
        return hidden

    def _auto_dtype(self):
        """``"float64"`` for the linear model (no hidden layers, no user model) of at most
        :data:`AUTO_FLOAT64_MAX` parameters, whose update is exact and cancels in
        float32; ``"float32"`` otherwise. The width is the fitted one (set at the start
        of a fit, before the belief is built); unfitted, the small case."""
        hidden = self.hidden_layer_sizes
        empty = not hidden if type(hidden) is tuple else np.size(hidden) == 0
        if self.model is not None or not empty:
            return "float32"
        width = getattr(self, "n_features_in_", None)
        if width is None:
            return "float64"
        n_params = (width + bool(self.fit_intercept)) * getattr(self, "_n_out", 1)
        return "float64" if n_params <= AUTO_FLOAT64_MAX else "float32"

    def _calibration_kind(self, model):
        """``calibration`` resolved for this engine model: ``"auto"`` is ``"loo"`` for the
        static linear model, ``"prequential"`` for a drifting one, ``"evidence"`` (both
        kept, :func:`~skbong._online.regression_face.calibration_counts` chooses) for the linear model with
        ``drift="auto"`` and no process noise, and ``None`` otherwise; ``"loo"`` needs the
        linear model."""
        linear = engine.models.is_linear(model)
        conjugate = engine.likelihoods.LIKELIHOODS[self.likelihood].conjugate
        if not conjugate and self.calibration is not None:
            if self.calibration != "auto":
                raise ValueError(
                    f"calibration={self.calibration!r} needs likelihood='gaussian': the "
                    f"calibration's PITs and leave-one-out predictive are those of the "
                    f"conjugate Gaussian model; use calibration=None (or 'auto', which is None "
                    f"for likelihood={self.likelihood!r})"
                )
            return None
        if self.calibration == "auto":
            if not linear:
                return None
            if self._bank_spec().learns_drift and self.process_noise == 0:
                return "evidence"  # both; the drift bank's evidence chooses
            return "prequential" if self._is_dynamic() else "loo"
        if self.calibration == "loo" and not linear:
            raise ValueError(
                "calibration='loo' needs the linear model (hidden_layer_sizes=() and no user "
                "model): its leave-one-out predictive is exact in closed form, a network's "
                "linearised one is not (on UCI it covered 0.90-1.00 at 90 %). Use "
                "calibration='prequential' for networks."
            )
        return self.calibration

    @property
    def calibration_(self):
        """The interval calibration in use: ``calibration``, or what ``"auto"`` chose for
        the fitted model (``"loo"`` for the static linear model, ``"prequential"`` for a
        drifting one, ``"evidence"`` with ``drift="auto"``, ``None`` for networks and
        user models)."""
        _check_fitted(self)
        return self._calibration_kind(self._fitted_config.model)

    @property
    def noise_posterior_(self):
        """The learned noise's posterior, ``"conjugate"`` (normal–inverse-gamma, coupled
        with the belief) or ``"factorised"``: ``noise_posterior``, or what ``"auto"`` chose
        for the fitted model; ``None`` where the noise is fixed."""
        _check_fitted(self)
        config = self._fitted_config
        if not config.learn_noise:
            return None
        return "conjugate" if config.noise_coupled else "factorised"

    @property
    def noise_discount_(self):
        """δ of the learned noise per row: ``noise_discount``, or what ``"auto"`` chose for
        the fitted model (1 for the linear model, 0.99 for networks); ``None`` where the
        noise is fixed."""
        _check_fitted(self)
        config = self._fitted_config
        return float(config.noise_discount) if config.learn_noise else None

    def _warn_raw_scale(self, Y):
        """Warn where a network's learned, factorised noise meets targets on a raw scale:
        its prior is then in the units of y (no rescaling by ŝ), so targets far beyond
        ten are slow to reach (diabetes, one 50-unit layer: held-out R² −0.01 with raw y,
        0.42 standardised, doc/user_guide/defaults.rst)."""
        network = self.model is not None or bool(self._checked[1])
        factorised = self.noise_posterior == "factorised" or (
            self.noise_posterior == "auto" and network
        )
        if factorised and Y.size and float(np.max(np.abs(Y))) > RAW_SCALE:
            warnings.warn(
                f"targets reach |y| = {float(np.max(np.abs(Y))):.3g} on the first call: with "
                f"noise_posterior={self.noise_posterior!r} a network's prior is in the units of "
                "y, so raw-scale targets fit poorly; standardise y (e.g. "
                "TransformedTargetRegressor(..., transformer=StandardScaler())), or pass "
                "noise_posterior='conjugate', whose belief scales with the learned noise",
                UserWarning,
                stacklevel=6,
            )

    def _obs_variance_in_use(self, Y, first):
        """The noise variance R of this call's update, (C,) float64: a fixed value, or the
        learned plug-in b / a (its starting value ŝ₀ = 1 on a fresh fit; the last value
        in use when learning is switched on after a fit with a fixed value)."""
        if not self._learns_noise():
            return np.full(Y.shape[1], float(self.obs_variance))
        if first:
            self._warn_raw_scale(Y)
            return np.ones(Y.shape[1])
        return self.obs_variance_

    def fit(self, X, y, sample_weight=None):
        """Forget everything, then learn from the rows of X in order.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Inputs.
        y : array-like of shape (n_samples,) or (n_samples, n_outputs)
            Targets.
        sample_weight : array-like of shape (n_samples,), default=None
            Multiplies each row's log-likelihood term.

        Returns
        -------
        self : BongRegressor
            The fitted estimator.
        """
        if _copies.is_network(self):
            _copies.warn_if_mostly_copies(X, y)
        return stream.fit_rows(self, X, y, sample_weight, reset=True)

    def partial_fit(self, X, y, sample_weight=None):
        """Continue learning from the current posterior with the rows of X in order.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Inputs; any number of rows, even one.
        y : array-like of shape (n_samples,) or (n_samples, n_outputs)
            Targets.
        sample_weight : array-like of shape (n_samples,), default=None
            Multiplies each row's log-likelihood term.

        Returns
        -------
        self : BongRegressor
            The updated estimator.
        """
        return stream.fit_rows(self, X, y, sample_weight, reset=False)
