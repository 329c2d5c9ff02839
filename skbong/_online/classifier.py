"""BongClassifier: online Bayesian classification (Bernoulli or categorical likelihood)."""

from numbers import Integral

from sklearn.base import ClassifierMixin
from sklearn.utils._param_validation import Interval

from . import classification_face as face
from . import observation, stream
from .base import BongBase


class BongClassifier(ClassifierMixin, BongBase):
    """Online Bayesian classification by the BONG family (Jones, Chang & Murphy, 2024).

    Two classes use a Bernoulli likelihood on one logit; more use a categorical
    (softmax) likelihood on one logit per class. Labels may be integers or strings.
    The belief over the parameters is updated one observation (or mini-batch) at a
    time with the chosen ``rule``, ``hessian`` estimator and ``family``.

    Parameters
    ----------
    hidden_layer_sizes : int or tuple of int, default=()
        Hidden layer widths of the MLP (an int is one layer, as in ``MLPClassifier``);
        ``()`` is logistic / softmax regression.
    activation : {"relu", "tanh", "gelu", "sigmoid", "identity"}, default="relu"
        Hidden-layer activation.
    model : tuple (init, apply) or object with ``.init`` and ``.apply``, default=None
        A user JAX model ``init(key, n_features, n_outputs) -> params`` and
        ``apply(params, X) -> logits`` (n_outputs is 1 for two classes, else the number
        of classes); overrides ``hidden_layer_sizes`` and ``activation``. A flax or
        equinox network is taken through :mod:`skbong.adapters`.
    fit_intercept : bool, default=True
        Learn an intercept (linear models).
    family : {"auto", "full", "full_moment", "diag", "diag_moment", "dlr"}, default="auto"
        Variational family, the structure of the Gaussian belief. ``"auto"`` is
        ``"full"`` for the linear model of at most 128 parameters and ``"dlr"``
        otherwise (``family_`` says which): with the default prior bank, on nine sets
        of 11–121 parameters the full covariance's test log-loss was lower than the
        rank-10 dlr's on six and at most 0.007 higher on the other three, at 2.5–34 times
        less fit time; at 650 parameters (digits) it took 50 times
        the dlr's time (:ref:`defaults`). ``"full"``: full
        covariance in natural parameters, every correlation kept, O(P²) memory, for
        linear models and small networks; ``"full_moment"``: the same in moment
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
        linearised at the mean, deterministic, C backward passes per row (C classes);
        ``"lin_ef"``: the linearised gradient's empirical Fisher, one backward pass, for
        many classes or large mini-batches; ``"mc_ef"``: the empirical Fisher of
        gradients at ``mc_samples`` sampled parameters, noisy, for models whose
        linearisation is poor; ``"mc_hess"``: the Monte Carlo Hessian, small models
        only, not available for ``dlr``. See
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
        Prior variance σ₀² of the parameters. For networks the weights of a layer with
        fan-in n get σ₀² / n (so σ₀² = 1 is the LeCun-normal initialisation distribution
        at any width); biases σ₀². ``"bank"`` runs a bank of filters over
        σ₀² ∈ {10⁻³, …, 10³} weighted by their online evidence (``prior_weights_``;
        discounted by 0.99 per row for networks).
        ``"auto"`` (the default) is ``"bank"`` for the linear model, whose evidence is its
        marginal likelihood (empirical Bayes, as in ``BayesianRidge``; after ``fit``'s
        passes, ``refine``, Laplace's at each filter's mode), and for
        the built-in networks (where the bank costs about ten filters' time) 10, or 3
        where the first rows are learned in one pass (``partial_fit``, ``passes=1``: the
        one-pass step overshoots from a broader prior), and 1 for user models (whose
        parameters it scales by nothing); ``prior_variance_`` says which value is in
        use (:ref:`defaults`).
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
    predictive : {"auto", "plugin", "linmc", "mc"}, default="auto"
        Posterior predictive of ``predict_proba`` and ``predict``. ``"linmc"``:
        linearised Monte Carlo (logits f(x, μ) + J (θ − μ), θ ~ q, probabilities
        averaged over ``predictive_samples`` draws); ``"mc"``: Monte Carlo over the
        network itself; ``"plugin"``: p(y | f(x, μ)) (no parameter uncertainty,
        fastest). ``"auto"`` is ``plugin``, from held-out comparisons
        (:ref:`which-predictive`): for the linear model at its defaults (the evidence
        bank's prior, ``fit``'s refinement to the mode) plugin was better than or within
        0.003 nats of ``linmc`` in log-loss on all 9 data sets and families, and up to
        0.13 nats better on the small ones; with hidden layers, and on the paper's MNIST
        CNN, the posterior is wide in function space after one pass and ``linmc`` is
        under-confident. See
        :ref:`Choosing a configuration <choosing-predictive>` and
        :doc:`/user_guide/predictive`.
    predictive_samples : int, default=100
        Samples S of the ``linmc`` and ``mc`` predictives.
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
        filters are then weighed by Laplace's evidence at their modes (the evidence
        framework: the rows as a set, not the first pass's predictions along their
        order). With
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
        Seeds the network prior mean, the MC estimators and the MC predictives.
    verbose : int, default=0
        Show a progress bar (tqdm if installed) while learning.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        Class labels.
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
    coef_ : ndarray of shape (1, n_features) or (n_classes, n_features)
        Posterior mean weights (linear models only), as in ``LogisticRegression``.
    intercept_ : ndarray of shape (1,) or (n_classes,)
        Posterior mean intercepts (linear models only).
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
        ``log_evidence_`` (K,), each filter's log evidence.

    See Also
    --------
    BongRegressor : The regression counterpart.
    sklearn.linear_model.SGDClassifier : Online linear classification without uncertainty.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from skbong import BongClassifier
    >>> X, y = load_iris(return_X_y=True)
    >>> clf = BongClassifier(family="full", random_state=0).fit(X, y)
    >>> clf.predict_proba(X[:1]).shape
    (1, 3)
    """

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
        backtrack=0,
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

    # the classification face (classification_face.py): the labels and the predictive
    _y_numeric = face.Y_NUMERIC
    _likelihood = face.likelihood
    _encode_y = face.encode_y
    _linear_attributes = face.linear_attributes
    _predictive_kind = face.predictive_kind
    _observation = observation.fixed  # no noise to learn, no interval to calibrate
    predict = face.predict
    predict_proba = face.predict_proba
    predict_log_proba = face.predict_log_proba
    sample_proba = face.sample_proba

    def __sklearn_tags__(self):
        return face.tags(self, super().__sklearn_tags__())

    def fit(self, X, y, sample_weight=None):
        """Forget everything, then learn from the rows of X in order.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Inputs.
        y : array-like of shape (n_samples,)
            Class labels (at least two distinct).
        sample_weight : array-like of shape (n_samples,), default=None
            Multiplies each row's log-likelihood term.

        Returns
        -------
        self : BongClassifier
            The fitted estimator.
        """
        return stream.fit_rows(self, X, y, sample_weight, reset=True)

    def partial_fit(self, X, y, classes=None, sample_weight=None):
        """Continue learning from the current posterior with the rows of X in order.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Inputs; any number of rows, even one.
        y : array-like of shape (n_samples,)
            Class labels, all in ``classes``.
        classes : array-like of shape (n_classes,), default=None
            All labels the stream will contain. Required on the first call (as for
            ``SGDClassifier``); if given later it must match ``classes_``.
        sample_weight : array-like of shape (n_samples,), default=None
            Multiplies each row's log-likelihood term.

        Returns
        -------
        self : BongClassifier
            The updated estimator.
        """
        if not hasattr(self, "_state") and classes is None:
            raise ValueError("classes must be passed on the first call to partial_fit")
        return stream.fit_rows(self, X, y, sample_weight, reset=False, classes=classes)
