"""BongRegressor: online Bayesian regression with a Gaussian likelihood."""

from numbers import Real

import jax
import jax.numpy as jnp
import numpy as np
from sklearn.base import RegressorMixin
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from . import engine
from ._base import BongBase, _check_not_forked


class BongRegressor(RegressorMixin, BongBase):
    """Online Bayesian regression by the BONG family (Jones, Chang & Murphy, 2024).

    A Gaussian belief over the parameters θ of a model f(x, θ) (linear by default,
    an MLP with ``hidden_layer_sizes``, or any JAX model) is updated one observation
    (or mini-batch) at a time with the chosen ``rule``, ``hessian`` estimator and
    variational ``family``. The likelihood is y ~ N(f(x, θ), obs_variance).

    Parameters
    ----------
    hidden_layer_sizes : tuple of int, default=()
        Hidden layer widths of the MLP; ``()`` is linear regression.
    activation : {"relu", "tanh", "gelu", "sigmoid", "identity"}, default="relu"
        Hidden-layer activation.
    model : tuple (init, apply) or object with ``.init`` and ``.apply``, default=None
        A user JAX model ``init(key, n_features, n_outputs) -> params`` and
        ``apply(params, X) -> outputs``; overrides ``hidden_layer_sizes`` and
        ``activation``. Must be picklable (module-level functions) to pickle the estimator.
    fit_intercept : bool, default=True
        Learn an intercept (linear models).
    family : {"full", "full_moment", "diag", "diag_moment", "dlr"}, default="dlr"
        Variational family: full covariance or diagonal, in natural or moment
        parameters, or diagonal-plus-low-rank precision of rank ``rank``.
    rank : int, default=10
        Rank R of the low-rank part of the ``dlr`` precision.
    rule : {"bong", "bog", "blr", "bbb"}, default="bong"
        Update rule: one natural-gradient step (bong), one gradient step (bog), or
        ``n_iter`` natural-gradient (blr) or gradient (bbb) steps on the online ELBO.
    hessian : {"lin_hess", "lin_ef", "mc_ef", "mc_hess"}, default="lin_hess"
        Gradient and curvature estimator (``mc_hess`` is not available for ``dlr``).
    learning_rate : float, default=0.1
        Step size α of bog, blr (α ≤ 1) and bbb; bong's rate is 1.
    n_iter : int, default=10
        Inner steps I of blr and bbb.
    mc_samples : int, default=10
        Samples M of the MC estimators.
    prior_variance : float, default=1.0
        Isotropic prior variance σ₀² of the parameters.
    obs_variance : float or "auto", default=1.0
        Observation noise variance R (one value for all outputs); ``"auto"`` uses
        0.1 × Var(y) (per output) of the first batch learned from (the paper's rule).
    drift : float in (0, 1], default=1.0
        Ornstein–Uhlenbeck decay γ toward the prior before each update; 1 is a
        static model.
    process_noise : float, default=0.0
        Isotropic process noise q added before each update.
    batch_size : int, default=1
        Rows treated as one likelihood term per update (1 is the paper's setting).
    predictive : {"plugin", "linmc", "mc"}, default="plugin"
        Posterior predictive used by ``predict(return_std=True)``: plugin (noise
        only), linearised (closed form N(f(μ), JΣJᵀ + R)), or Monte Carlo.
    predictive_samples : int, default=100
        Samples of the ``mc`` predictive.
    dtype : {"float32", "float64"}, default="float32"
        Working precision (float64 is enabled locally, never globally).
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
    n_features_in_ : int
        Number of features seen in ``fit``.
    feature_names_in_ : ndarray of str
        Feature names, when X was a DataFrame with string column names.
    n_observations_ : int
        Rows learned so far.
    n_skipped_ : int
        Rows whose update was skipped (``on_error="skip"``).
    obs_variance_ : ndarray of shape (n_outputs,)
        Observation variance in use.
    posterior_mean_ : ndarray of shape (P,)
        Posterior mean of all parameters.
    posterior_var_ : ndarray of shape (P,)
        Posterior marginal variances.
    coef_ : ndarray of shape (n_features,) or (n_outputs, n_features)
        Posterior mean weights (linear models only).
    intercept_ : float or ndarray of shape (n_outputs,)
        Posterior mean intercept (linear models only).

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
        "obs_variance": [Interval(Real, 0, None, closed="neither"), StrOptions({"auto"})],
    }
    _y_numeric = True

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
        prior_variance=1.0,
        obs_variance=1.0,
        drift=1.0,
        process_noise=0.0,
        batch_size=1,
        predictive="plugin",
        predictive_samples=100,
        dtype="float32",
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
            prior_variance=prior_variance,
            drift=drift,
            process_noise=process_noise,
            batch_size=batch_size,
            predictive=predictive,
            predictive_samples=predictive_samples,
            dtype=dtype,
            on_error=on_error,
            random_state=random_state,
            verbose=verbose,
        )
        self.obs_variance = obs_variance

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.multi_output = True
        return tags

    def _likelihood(self, n_outputs):
        return "gaussian"

    def _encode_y(self, y, first):
        y = np.asarray(y, dtype=np.float64)
        if not first and (y.ndim == 2) != self._multi_output:
            raise ValueError(
                f"y has {y.ndim} dimension(s) but the estimator was fitted with "
                f"{2 if self._multi_output else 1}-dimensional y"
            )
        Y = y.reshape(y.shape[0], -1)
        if not first and Y.shape[1] != self._n_out:
            raise ValueError(
                f"y has {Y.shape[1]} outputs but the estimator was fitted with {self._n_out}"
            )
        if not np.all(np.isfinite(Y)):
            raise ValueError("Input y contains NaN or infinity")
        if first:
            obs_var = self._initial_obs_variance(Y)
        else:
            obs_var = self.obs_variance_
        if first:
            self._multi_output = y.ndim == 2
            self.obs_variance_ = obs_var
        return Y, Y.shape[1], obs_var

    def _initial_obs_variance(self, Y):
        if self.obs_variance != "auto":
            return np.full(Y.shape[1], float(self.obs_variance))
        var = np.var(Y, axis=0)
        if Y.shape[0] < 2 or not np.all(var > 0):
            raise ValueError(
                "obs_variance='auto' sets 0.1 × Var(y) from the first batch, which needs at least "
                "2 rows with non-constant targets; pass a number instead"
            )
        return 0.1 * var

    def _linear_attributes(self, weights, bias):
        if self._multi_output:
            return weights, bias
        return weights[0], float(bias[0])

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
        return self._fit_rows(X, y, sample_weight, reset=True)

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
        return self._fit_rows(X, y, sample_weight, reset=False)

    def _shape_output(self, a):
        return a if self._multi_output else a[:, 0]

    def predict(self, X, return_std=False):
        """Posterior predictive mean (and standard deviation) of y.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Inputs.
        return_std : bool, default=False
            Also return the predictive standard deviation of y, observation noise
            included (the ``BayesianRidge`` convention), under ``predictive``.

        Returns
        -------
        mean : ndarray of shape (n_samples,) or (n_samples, n_outputs)
            Predictive mean.
        std : ndarray, same shape as ``mean``
            Predictive standard deviation; only when ``return_std=True``.
        """
        with self._x64():  # a float64 estimator must not build float32 hyperparameters
            hyper = self._hyper(self.obs_variance_) if hasattr(self, "obs_variance_") else None
        kind = self.predictive if return_std else "plugin"
        mean, var = self._predict_rows(
            X,
            lambda cfg, st, x, key: engine.predict_moments(
                cfg, st, hyper, x, key, kind, int(self.predictive_samples)
            ),
        )
        mean = self._shape_output(mean.astype(np.float64))
        if not return_std:
            return mean
        return mean, self._shape_output(np.sqrt(var.astype(np.float64)))

    def sample_y(self, X, n_samples=1, random_state=None):
        """Draw y from the posterior predictive: θ ~ q, then y ~ N(f(x, θ), R).

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
        y_samples : ndarray of shape (n_samples_X, n_samples) or (n_samples_X, n_outputs, n_samples)
            Draws; one parameter sample is shared by all rows of a draw.
        """
        check_is_fitted(self, "_state")
        _check_not_forked()
        if not isinstance(n_samples, int | np.integer) or n_samples < 1:
            raise ValueError(f"n_samples must be a positive integer, got {n_samples!r}")
        rng = check_random_state(random_state)
        key = jax.random.PRNGKey(int(rng.randint(np.iinfo(np.int32).max)))

        def draw(cfg, st, x, _):
            f = engine.sample_outputs(cfg, st, x, key, "mc", int(n_samples))
            return (jnp.moveaxis(f, 0, -1),)

        (f,) = self._predict_rows(X, draw)
        noise = rng.standard_normal(f.shape) * np.sqrt(self.obs_variance_)[None, :, None]
        samples = f.astype(np.float64) + noise
        return samples if self._multi_output else samples[:, 0, :]
