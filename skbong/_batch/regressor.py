"""VariationalRegressor: batch variational learning to
convergence, by the seed papers' solvers (VOGN, VON, Vprop, Vadam, SLANG, BBB) and IVON.

The same model, likelihood, posterior families and predictives as the Bong estimators
(:class:`~skbong._core.posterior.BeliefBase` and the faces of
:mod:`skbong._online.regression_face` and :mod:`skbong._online.classification_face`);
the learning is :mod:`skbong.engine.solvers` driven one compiled epoch at a time by
:func:`skbong.engine.solvers.epochs.run_epoch`.
"""

from numbers import Real

import numpy as np
from sklearn.base import RegressorMixin
from sklearn.utils._param_validation import Interval, StrOptions

from .._core import copies as _copies
from .._online import regression_face as face
from .base import VariationalBase


class VariationalRegressor(RegressorMixin, VariationalBase):
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
    family : {"auto", "diag", "full"}, default="auto"
        Posterior of vogn and von: ``"diag"``, diagonal covariance, O(P); ``"full"``,
        full covariance, O(P²), for a small model (the papers' full-Gaussian baseline is
        full VOGN). slang's posterior is diagonal-plus-low-rank, the other solvers'
        diagonal: they accept only ``"diag"``. ``"auto"``: ``"full"`` for the linear
        model up to 128 parameters where the solver keeps it, otherwise the solver's
        own family (``family_`` says which). See
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
    prior_variance : float or "auto", default="auto"
        σ₀², the prior variance of the weights (fan-in scaled for networks, as for
        :class:`BongRegressor`); the intercepts' prior variance is 100. ``"auto"``: for
        the linear model σ₀² is learned, the ELBO's maximiser after every epoch
        (variational EM, empirical Bayes as in ``BayesianRidge``, within 10⁻³…10³),
        starting from 1; the built-in networks take σ₀² = 10 (the M-step shrinks it
        with the mean-field variances and under-fits: :ref:`batch-defaults`), user
        models 1. ``prior_variance_`` is the value in use. With the learned
        noise these are in units of the targets' variance Var(y), fixed when the fit
        starts (θ ~ N(0, Var(y) V₀)), so raw-scale targets work; not in units of the
        noise learned since, which tightens the prior as the fit improves and made a
        50-unit network under-fit every UCI set.
    init_precision : float, default=None
        Precision of the starting q (None: λ + N / σ² for every solver, IVON's h₀ = 1 in
        the likelihood's units, with σ² the noise variance the fit starts from, Var(y)
        or the fixed ``obs_variance``, and 1 for classification: the first samples stay
        near the mean, and on raw-scale targets the start is not tighter than the data
        can support).
    obs_variance : float or "auto", default="auto"
        Observation noise variance. ``"auto"`` starts at Var(y) and after every epoch
        takes the ELBO's maximiser E_q[(y − f(x, θ))²], estimated from the epoch's
        samples (variational EM); the prior is in units of Var(y). A float fixes it and
        the prior is absolute (the papers' setting: they tune the noise by
        cross-validation).
    max_iter : int, default=1000
        Most epochs of ``fit``. A fit that reaches it before its stopping rule (``tol``,
        ``n_iter_no_change``, ``rate_drops``) is met warns (``ConvergenceWarning``); on
        the UCI regression sets the default (50,) network stopped by the rule after
        128–920 epochs over their 20 published splits (see :ref:`batch-defaults`).
    batch_size : int, default=32
        M, rows per mini-batch.
    shuffle : bool, default=True
        Shuffle the rows every epoch.
    tol : float, default=1e-4
        A plateau: for ``n_iter_no_change`` epochs in a row the running mean of the loss
        over ``n_iter_no_change`` epochs has not fallen below its best by more than
        ``tol`` (the loss is a Monte Carlo estimate: single epochs are too noisy to
        compare), or with ``early_stopping`` the validation score has not risen above
        its best by ``tol`` for that many epochs. A plateau divides both rates by 10
        (``rate_drops`` times); the next one stops the fit, converged.
    n_iter_no_change : int, default=20
        See ``tol``. (With 10 the rule stopped fits that were still improving, a slow
        fall hidden in the loss's noise: the (50,) network beat one BONG pass on 8 of 14
        UCI set-splits, against 12 of 14 with 20.)
    rate_drops : int, default=1
        How many plateaus divide the learning and precision rates α and β by 10 before
        the next one stops the fit; 0 stops at the first plateau at constant rates. At
        constant rates the mean keeps moving from step to step and the test
        log-likelihood with it (by up to 0.3 nats per row between epochs on power-plant);
        a last phase at a tenth of the rates settles it. Each ``fit`` starts the
        schedule again at α and β (``partial_fit`` runs at α and β).
    early_stopping : bool, default=False
        Hold out ``validation_fraction`` of the rows and watch their R² instead of the
        loss; the fit keeps the posterior (and noise) of the epoch with the best R² (the
        first of equal ones), whichever phase it came in.
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
        Epochs run (over all ``fit`` calls with ``warm_start``).
    n_rate_drops_ : int
        Rate drops taken by the last ``fit``.
    t_ : int
        Mini-batch steps taken.
    n_skipped_steps_ : int
        Steps whose result was non-finite or invalid and not applied.
    validation_scores_ : list of float or None
        R² on the held-out rows per epoch (``early_stopping``).
    obs_variance_ : ndarray of shape (n_outputs,)
        Noise variance in use.
    prior_variance_ : float
        σ₀² in use (learned with ``prior_variance="auto"`` for the linear model).
    family_ : str
        The posterior family in use (``family`` with ``"auto"`` resolved).
    dtype_ : str
        The working precision (``dtype``).
    predictive_ : str
        The default predictive (``predictive``).
    input_mean_, input_scale_ : ndarray of shape (n_features,)
        The standardisation the solver learns under, x̃ = (x − ``input_mean_``) /
        ``input_scale_``, from the first fit's column statistics where a column's root
        mean square exceeds 3 (0 and 1 where the inputs are used as given); ``coef_``
        and ``intercept_`` are on the scale of x.
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
    >>> reg = VariationalRegressor(family="full", random_state=0).fit(X, y)
    >>> np.round(reg.coef_, 1).tolist()
    [1.0, -2.0, 0.5]
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
        obs_variance="auto",
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
            rate_drops=rate_drops,
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

    # the regression face (skbong._online.regression_face): the targets and the predictive of y
    _y_numeric = face.Y_NUMERIC
    _likelihood = face.likelihood
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
        if _copies.is_network(self):
            _copies.warn_if_mostly_copies(X, y)
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


__all__ = ["VariationalRegressor"]
