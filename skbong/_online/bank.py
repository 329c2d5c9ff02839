"""The bank of filters (a prior bank and/or ``drift="auto"``): its grid, its
weights from the online evidence, and the filters that predictions mix.

The bank runs one filter per pair (prior variance, drift) of the product of the two
grids (:data:`PRIOR_GRID` or the fixed ``prior_variance``, times :data:`DRIFT_GRID` or
the fixed ``drift``), prior-major. Its filters are stacked on a leading axis of
``_state`` (and ``_noise``), and ``_log_evidence`` holds each filter's cumulative log
predictive density (``None`` without a bank); :mod:`skbong._online.stream` runs them.

The functions of the estimator ``est`` below are the bank's face on the estimator:
:class:`~skbong._online.base.BongBase` names them in its class body (``_components``,
``prior_weights_``, ...).
"""

import functools
from dataclasses import dataclass

import numpy as np
import scipy.signal

from .. import engine
from .._core.posterior import _check_fitted

PRIOR_GRID = 10.0 ** np.arange(-3, 4)
"""Prior variances of the bank that ``prior_variance="bank"`` runs, and ``"auto"`` for the linear model (K = 7, 10⁻³ … 10³)."""

DRIFT_GRID = np.array([1.0, 0.999, 0.99])
"""OU drifts γ of the bank that ``drift="auto"`` runs (K = 3): a static model, and models
whose belief forgets toward the prior with a memory of about 1/(1 − γ²) ≈ 500 and 50
rows."""

_BANKS = "prior_variance='bank', 'auto' for the linear model, or drift='auto'"

_MIN_WEIGHT = 1e-9
"""Bank filters with a smaller posterior weight are left out of predictions."""

RETIRE_NATS = 40.0
"""How far a filter's log evidence may fall behind the best's before a static bank
retires it: e⁻⁴⁰ ≈ 4e-18, a weight that vanishes beside the leader's in float64 (and far
below :data:`_MIN_WEIGHT`, under which predictions already leave a filter out)."""

RETIRE_FIRST = 64
"""The first global step count at which a static bank checks for retirement; it checks
again at each :data:`RETIRE_GROWTH`-fold count (256, 1024, …), so that any split of the
rows into calls retires at the same rows, and a long call is cut into few programs."""

RETIRE_GROWTH = 4
"""The factor between a retiring bank's check steps. On digits (P = 650, ten classes,
``dlr``) the bank's fit took 1.39× one filter's with checks at 64, 256, 1024 and 1.44×
at 64, 128, 256, 512 (8.4× keeping every filter); each check cuts the call into one more
program call."""

RETIRE_MIN_PARAMS = 129
"""The fewest parameters of a model whose bank retires: a bank of smaller filters spends
more on its program calls than on their arithmetic (breast cancer, P = 31: 3.6× one
filter's fit time kept whole, 4.2× retiring; counts, P = 6: 2.9× and 3.4×; digits,
P = 650: 8.4× and 1.4×). 129 is where ``family="auto"`` leaves the full covariance for
the classifier."""

NETWORK_EVIDENCE_DISCOUNT = 0.99
"""δ of a network's online evidence per row (about the last 100 rows' predictions)."""


@dataclass(frozen=True)
class Bank:
    """``prior_variance`` and ``drift`` resolved for a model (:meth:`resolve`, the one
    place ``"auto"`` and ``"bank"`` are read): the filters a fit runs.

    Attributes
    ----------
    priors : tuple of float
        :data:`PRIOR_GRID` when a bank learns the prior variance, else the one σ₀².
    drifts : tuple of float
        :data:`DRIFT_GRID` when a bank learns the drift, else the one γ.
    learns_prior, learns_drift : bool
        Whether a bank learns each.
    """

    priors: tuple
    drifts: tuple
    learns_prior: bool
    learns_drift: bool

    @classmethod
    def resolve(cls, prior_variance, drift, auto):
        """The bank of the parameters, ``prior_variance="auto"`` read as ``auto``
        (``"bank"`` for the linear model, a network's σ₀²: :func:`auto_prior`);
        ``drift="auto"`` is a bank of drifts (one object per distinct triple: every call
        of a stream asks)."""
        return _resolved(cls, prior_variance, drift, auto)

    @classmethod
    def _build(cls, prior_variance, drift, auto):
        if isinstance(prior_variance, str) and prior_variance == "auto":
            prior_variance = auto
        learns_prior = isinstance(prior_variance, str)
        learns_drift = isinstance(drift, str)
        priors = tuple(PRIOR_GRID) if learns_prior else (float(prior_variance),)
        drifts = tuple(DRIFT_GRID) if learns_drift else (float(drift),)
        return cls(priors, drifts, learns_prior, learns_drift)

    @property
    def is_bank(self):
        """Whether a bank of filters runs (it learns the prior variance and/or the drift)."""
        return self.learns_prior or self.learns_drift

    @property
    def prior(self):
        """``prior_variance`` as resolved: ``"bank"`` or the one σ₀²."""
        return "bank" if self.learns_prior else self.priors[0]

    def grid(self):
        """The filters as two aligned arrays (K,): the prior variance and the drift of
        each, the product of the two grids, prior-major."""
        priors, drifts = np.asarray(self.priors), np.asarray(self.drifts)
        return np.repeat(priors, len(drifts)), np.tile(drifts, len(priors))

    def describe(self, which):
        """The filters where the mask ``which`` (K,) is true, as a message names them:
        ``"(prior variance, drift) (1, 0.99), (10, 1)"``."""
        priors, drifts = self.grid()
        pairs = [f"({priors[k]:g}, {drifts[k]:g})" for k in np.flatnonzero(which)]
        return f"(prior variance, drift) {', '.join(pairs)}"


@functools.lru_cache(maxsize=64)
def _resolved(cls, prior_variance, drift, auto):
    return cls._build(prior_variance, drift, auto)


def evidence_discount(model):
    """δ by which the bank's evidence forgets per row: 1 for the linear model (the sum
    of one-step-ahead log predictive densities is then exactly the log marginal
    likelihood), :data:`NETWORK_EVIDENCE_DISCOUNT` for networks and user models.

    A network's early predictions were made by a model that has since changed, and a
    broad prior that overshoots on the first rows ends better than a narrow one (on the
    UCI sets, one 50-unit layer, 5 splits: the undiscounted evidence chose σ₀² = 10
    where 100–1000 were best in hindsight, 0.08 nats behind on energy and yacht; with
    δ = 0.99 every set is within 0.05 nats of the best grid value). Forgetting old
    predictive scores is dynamic model averaging (Raftery, Kárný & Ettler, 2010).
    """
    return 1.0 if engine.models.is_linear(model) else NETWORK_EVIDENCE_DISCOUNT


def evidence_path(log_evidence, log_lik, delta):
    """Each filter's log evidence before each of n rows and after the last, (K, n + 1),
    from its value before the first, ``log_evidence`` (K,), and the rows' log densities
    ``log_lik`` (K, n): the recursion L ← δ L + ℓ, row by row (−inf stays −inf). Row by
    row, so that any split of a stream into calls adds the same numbers in the same
    order: the evidence, and the mixture's weights, are bitwise those of one call."""
    alive = np.isfinite(log_evidence)
    start = np.where(alive, log_evidence, 0.0)
    after = scipy.signal.lfilter([1.0], [1.0, -delta], log_lik, axis=1, zi=delta * start[:, None])[0]
    path = np.concatenate([start[:, None], after], axis=1)
    return np.where(alive[:, None], path, -np.inf)


def retires(est, config):
    """Whether the bank retires the filters that fall :data:`RETIRE_NATS` behind the
    best, so that the rows are streamed through the others alone, in a program of
    :data:`SUB_BANKS` filters or as one filter (:func:`skbong._online.stream._stream_bank`):
    a static bank (no drift, no process noise, no drift bank) of the linear model
    (undiscounted evidence, the log marginal likelihood, whose gaps do not close by
    forgetting) with a likelihood that has no closed form (Bernoulli, categorical, Poisson; the Gaussian's conjugate bank is cheap
    already, and keeps every filter for its calibration and checks), of at least
    :data:`RETIRE_MIN_PARAMS` parameters."""
    return (
        not config.dynamic
        and not of(est).learns_drift
        and evidence_discount(config.model) == 1.0
        and not config.impl.likelihood.additive_noise
        and config.model.n_params() >= RETIRE_MIN_PARAMS
    )


SUB_BANKS = (1, 2, 4)
"""The sizes of the programs a retiring bank streams its remaining filters in (padded with
retired ones), so that a configuration compiles at most these besides the whole bank's."""


def sub_bank(active):
    """The filters a retiring bank's program streams: ``None`` for the whole bank, else the
    indices of the active ones (:class:`numpy.ndarray`), padded with retired ones to the
    smallest of :data:`SUB_BANKS` that holds them, where that is smaller than the bank."""
    n = int(np.count_nonzero(active))
    size = next((s for s in SUB_BANKS if s >= n), len(active))
    if size >= len(active):
        return None
    rest = np.flatnonzero(~active)[: size - n]
    return np.sort(np.concatenate([np.flatnonzero(active), rest]))


def retire_boundaries(step0, n_steps):
    """The steps of a call (counted from its first, ``step0`` the global count before
    it) after which a retiring bank checks its evidence: the global counts
    :data:`RETIRE_FIRST` · :data:`RETIRE_GROWTH`ʲ in (step0, step0 + n_steps], the call's
    last step included, so that a split of the rows at one of them checks at the end of
    the first call what one call checks at that step."""
    checks, b = [], RETIRE_FIRST
    while b <= step0 + n_steps:
        if b > step0:
            checks.append(b - step0)
        b *= RETIRE_GROWTH
    return checks


def of(est):
    """The :class:`Bank` of the current parameters for the estimator's model."""
    return Bank.resolve(est.prior_variance, est.drift, auto_prior(est))


def auto_prior(est):
    """What ``prior_variance="auto"`` means for the estimator's model: ``"bank"`` for
    the linear model; :data:`~skbong.engine.models.USER_MODEL_PRIOR_VARIANCE` for a
    user model; for a built-in network
    :data:`~skbong.engine.models.NETWORK_PRIOR_VARIANCE`, or
    :data:`~skbong.engine.models.ONE_PASS_NETWORK_PRIOR_VARIANCE` where the belief was
    built for a non-Gaussian likelihood's first rows learned in one pass."""
    models = engine.models
    if est.model is not None:
        return models.USER_MODEL_PRIOR_VARIANCE
    if not est._model_params():
        return "bank"
    one_pass = getattr(est, "_one_pass_prior", False)
    return models.ONE_PASS_NETWORK_PRIOR_VARIANCE if one_pass else models.NETWORK_PRIOR_VARIANCE


def laplace_evidence(log_joint, prior_var, cov):
    """Each filter's log marginal likelihood of the rows of ``fit`` by Laplace's method at
    its fitted posterior N(μ, Σ), (K,):

        log p(D) ≈ log p(D | μ) + log N(μ; μ₀, diag σ₀²) + ½ log |2π Σ|,

    exact for a Gaussian log posterior and, at the mode with Σ the inverse Hessian, the
    evidence approximation of MacKay ("The evidence framework applied to classification
    networks", Neural Computation 4, 1992; Bishop, *Pattern Recognition and Machine
    Learning*, eq. 4.137). ``log_joint`` (K,) is log p(D | μ) − ½ Σⱼ (μⱼ − μ₀ⱼ)² / σ₀ⱼ²
    (:func:`~skbong.engine.filter.curvature.log_joint`), ``prior_var`` the σ₀² (K, P)
    and ``cov`` the Σ (K, P, P); the (P/2) log 2π of the prior's normaliser and of |2π Σ|
    cancel. −inf where Σ is not positive definite."""
    sign, logdet = np.linalg.slogdet(np.asarray(cov, np.float64))
    value = np.asarray(log_joint, np.float64) - 0.5 * np.sum(np.log(prior_var), axis=-1)
    return np.where(sign > 0, value + 0.5 * logdet, -np.inf)


def filter_weights(est):
    """Posterior weight of every filter of the bank, (K,): the softmax of the log
    evidence (zero for a dropped filter)."""
    log_w = est._log_evidence - np.max(est._log_evidence)
    weights = np.exp(log_w)
    return weights / weights.sum()


def components(est, static_only=False):
    """The filters that predictions use: ``(weight, state, noise)`` with the state
    and noise as tuples of numpy arrays (noise None when it is fixed). One filter of
    weight 1, or the bank's filters of weight ≥ :data:`_MIN_WEIGHT` (renormalised);
    ``static_only``: the bank's filters of drift 1 only (``drift="auto"``)."""
    if est._log_evidence is None:
        return [(1.0, est._state, est._noise)]
    weights = filter_weights(est)
    if static_only:
        weights = np.where(of(est).grid()[1] == 1.0, weights, 0.0)
        weights = weights / weights.sum()
    keep = np.flatnonzero(weights >= _MIN_WEIGHT)
    total = weights[keep].sum()
    return [
        (
            weights[k] / total,
            tuple(a[k] for a in est._state),
            None if est._noise is None else tuple(a[k] for a in est._noise),
        )
        for k in keep
    ]


def _require_bank(est, name, param=None):
    """Refuse the bank attribute ``name`` unless fitted with a bank (over ``param``
    if given: ``"prior_variance"`` or ``"drift"``)."""
    _check_fitted(est)
    if param is None and est._log_evidence is None:
        raise AttributeError(f"{name} exists only with a bank of filters ({_BANKS})")
    if param is None:
        return
    spec = of(est)
    banked = spec.learns_prior if param == "prior_variance" else spec.learns_drift
    if est._log_evidence is None or not banked:
        how = "'bank', or 'auto' for the linear model" if param == "prior_variance" else "'auto'"
        raise AttributeError(f"{name} exists only when a bank learns {param} ({param}={how})")


def _weight_table(est):
    """The filters' weights as a (priors, drifts) table (the bank's product grid)."""
    return filter_weights(est).reshape(-1, len(of(est).drifts))


def prior_weights(est):
    """Posterior weights of the bank's prior variances (a prior bank),
    shape (7,), aligned with ``prior_grid_``: the filters' weights, each proportional
    to the exp of the filter's cumulative log predictive density (zero for a dropped
    or retired filter, see ``log_evidence_``), summed over the drifts of
    ``drift="auto"``."""
    _require_bank(est, "prior_weights_", "prior_variance")
    return _weight_table(est).sum(axis=1)


def drift_weights(est):
    """Posterior weights of the bank's drifts (``drift="auto"``), shape (3,), aligned
    with ``drift_grid_``: the filters' weights summed over the prior variances of
    a prior bank."""
    _require_bank(est, "drift_weights_", "drift")
    return _weight_table(est).sum(axis=0)


def log_evidence(est):
    """Cumulative log predictive density of every row learned, per filter of the
    bank (a prior bank and/or ``drift="auto"``), shape (K,), aligned
    with the rows of ``bank_grid_``: Σₜ wₜ log p(yₜ | xₜ, past), the online evidence
    (for the linear-Gaussian model, the log marginal likelihood of that filter's
    state-space model; for networks each row's term is discounted by 0.99 per later
    row, see :func:`evidence_discount`); ``-inf`` for a dropped filter, and for a
    retired one: at the steps 64, 256, 1024, … a static bank of the linear classifier or
    count model (of at least :data:`RETIRE_MIN_PARAMS` parameters) retires the filters
    more than :data:`RETIRE_NATS` (40) behind the best evidence (:func:`retires`). After
    ``fit``'s further passes (``refine``: the linear classifier and count model with the
    full covariance) the rows of ``fit`` are scored instead by Laplace's evidence at each
    filter's fitted mode (:func:`laplace_evidence`), and the rows of later
    ``partial_fit`` calls add their one-step predictive densities to it (the chain
    rule)."""
    _require_bank(est, "log_evidence_")
    return est._log_evidence.copy()


def bank_grid(est):
    """The bank's filters (a prior bank and/or ``drift="auto"``), shape
    (K, 2): the prior variance and the drift of each, aligned with ``log_evidence_``."""
    _require_bank(est, "bank_grid_")
    return np.stack(of(est).grid(), axis=1)


def prior_grid(est):
    """The bank's prior variances (a prior bank), shape (7,)."""
    _require_bank(est, "prior_grid_", "prior_variance")
    return PRIOR_GRID.copy()


def drift_grid(est):
    """The bank's drifts (``drift="auto"``), shape (3,)."""
    _require_bank(est, "drift_grid_", "drift")
    return DRIFT_GRID.copy()


def prior_variance(est):
    """The prior variance in use: ``prior_variance``, or with ``"auto"`` the bank's
    value of largest weight (``prior_weights_``)."""
    _check_fitted(est)
    spec = of(est)
    if est._log_evidence is None or not spec.learns_prior:
        return float(spec.priors[0])
    return float(PRIOR_GRID[np.argmax(_weight_table(est).sum(axis=1))])


def drift(est):
    """The drift in use: ``drift``, or with ``"auto"`` the bank's value of largest
    weight (``drift_weights_``)."""
    _check_fitted(est)
    spec = of(est)
    if est._log_evidence is None or not spec.learns_drift:
        return float(spec.drifts[0])
    return float(DRIFT_GRID[np.argmax(_weight_table(est).sum(axis=0))])


__all__ = [
    "Bank",
    "DRIFT_GRID",
    "PRIOR_GRID",
    "evidence_path",
    "evidence_discount",
]
