"""VariationalClassifier: batch variational learning of a classifier to convergence (the
classification face of :mod:`skbong._online.classification_face` on
:class:`~skbong._batch.base.VariationalBase`; see
:mod:`skbong._batch.regressor` for the regressor)."""

from sklearn.base import ClassifierMixin

from .._online import classification_face as face
from .base import VariationalBase


class VariationalClassifier(ClassifierMixin, VariationalBase):
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
    family : {"auto", "diag", "full"}, default="auto"
        Posterior of vogn and von: ``"diag"``, diagonal covariance, O(P); ``"full"``,
        full covariance, O(P²), for a small model. The other solvers accept only
        ``"diag"`` (slang's posterior is diagonal-plus-low-rank). ``"auto"``: ``"full"``
        for the linear model up to 128 parameters where the solver keeps it, otherwise
        the solver's own family (``family_``). See
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
    prior_variance : float or "auto", default="auto"
        σ₀² (fan-in scaled for networks). ``"auto"``: learned for the linear model (the
        ELBO's maximiser after every epoch, as in :class:`VariationalRegressor`, within
        10⁻³…10³, starting from 1), 10 for the built-in networks, 1 for user models
        (:ref:`batch-defaults`).
    init_precision : float, default=None
        Precision of the starting q.
    max_iter, batch_size, shuffle, tol, n_iter_no_change, rate_drops : see VariationalRegressor
        The epoch loop and its stopping rule (defaults 1000, 32, True, 1e-4, 20, 1).
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
    loss_curve_, loss_, n_iter_, t_, n_rate_drops_, n_skipped_steps_, validation_scores_
        As for :class:`VariationalRegressor`.
    posterior_mean_, posterior_var_ : ndarray of shape (P,)
        Posterior mean and marginal variances.
    coef_, intercept_ : ndarray
        Posterior mean weights and intercepts (linear models only).
    prior_variance_, family_, dtype_, predictive_, input_mean_, input_scale_
        As for :class:`VariationalRegressor`.
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
    >>> clf = VariationalClassifier(random_state=0).fit(X, y)
    >>> clf.predict_proba(X[:1]).shape
    (1, 3)
    """

    # the classification face (skbong._online.classification_face): the labels and the predictive
    _y_numeric = face.Y_NUMERIC
    _likelihood = face.likelihood
    _encode_y = face.encode_y
    _linear_attributes = face.linear_attributes
    _predictive_kind = face.predictive_kind
    _learns_noise = face.learns_noise
    predict = face.predict
    predict_proba = face.predict_proba
    predict_log_proba = face.predict_log_proba
    sample_proba = face.sample_proba

    def __sklearn_tags__(self):
        return face.tags(self, super().__sklearn_tags__())

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


__all__ = ["VariationalClassifier"]
