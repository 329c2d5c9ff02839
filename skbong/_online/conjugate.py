"""The prior bank of the linear-Gaussian model in closed form.

For the linear model with Gaussian noise, BONG-LIN-HESS with the full covariance is the
Kalman filter, exact (section 3 of the BONG paper), and with the learned noise its
belief is the normal–inverse-gamma posterior (:mod:`skbong.engine.filter.noise`). Every filter
of a static bank (no drift) is then the conjugate posterior of its own prior, and its
online evidence, the sum of its one-step-ahead log predictive densities, is the log
marginal likelihood of the rows (the chain rule). Both follow from the rows' sufficient
statistics HᵀH, Hᵀy, shared by the K filters: one pass over the rows instead of K, and
per filter two P × P inverses instead of n rank-one updates.

With prior N(μ, σ² V) and σ² ~ IG(a, b) (the learned noise; the engine keeps Σ = ŝ V,
ŝ = b / a), and m rows H (m, P), y (m,):

    Λ' = V⁻¹ + HᵀH,   μ' = Λ'⁻¹ (V⁻¹ μ + Hᵀy),   a' = a + m / 2,
    b' = b + ½ [‖y − H μ'‖² + (μ' − μ)ᵀ V⁻¹ (μ' − μ)],
    log p(y) = ½ log |V⁻¹| − ½ log |Λ'| + a log b − a' log b' + log Γ(a') − log Γ(a)
               − (m / 2) log 2π

(e.g. Murphy, *Probabilistic Machine Learning: Advanced Topics*, section 15.2.3); with a
fixed noise σ² the same with V = Σ / σ², b / a = σ², and the Gaussian
log p(y) = ½ log |V⁻¹| − ½ log |Λ'| − (m / 2) log 2πσ² − [b' − b] / σ².
The residual form of b' avoids the cancellation of yᵀy against μ'ᵀΛ'μ'.
"""

import functools
from typing import NamedTuple

import numpy as np
import scipy.special
from threadpoolctl import ThreadpoolController


class Update(NamedTuple):
    """The K filters after the rows: means (K, P), covariances (K, P, P), the noise
    posterior ``(a, b)`` of shape (K, 1) each (None with a fixed noise), each filter's
    log marginal likelihood of the rows (K,), and whether its result is usable (K,)."""

    mean: np.ndarray
    cov: np.ndarray
    noise: tuple | None
    log_evidence: np.ndarray
    ok: np.ndarray


def design(X, fit_intercept):
    """The linear model's Jacobian rows H (n, P): the features, then 1 for the intercept,
    the order of its flat parameters (:class:`~skbong.engine.models.MLP` without hidden
    layers, one output)."""
    X = np.asarray(X, np.float64)
    return np.column_stack([X, np.ones(len(X))]) if fit_intercept else X


def update(mean, cov, noise, H, y, obs_var):
    """The conjugate update of K filters by the rows H (m, P), y (m,) (rows of weight
    zero already left out); ``noise``: ``(a, b)`` (K, 1) each, or None for the fixed
    noise variance ``obs_var``. Float64 throughout."""
    # BLAS on one thread: these P × P inverses are too small to share, and beside XLA's
    # threads more BLAS threads contend (2 cores, P = 101, K = 7: 21 ms on one thread
    # against 70 ms on the default two per BLAS library)
    with _blas().limit(limits=1, user_api="blas"):
        return _update(mean, cov, noise, H, y, obs_var)


@functools.cache
def _blas():
    return ThreadpoolController()


def _update(mean, cov, noise, H, y, obs_var):
    H = np.asarray(H, np.float64)
    y = np.asarray(y, np.float64).reshape(-1)
    stats = (H, y, H.T @ H, H.T @ y)
    mean, cov = np.asarray(mean, np.float64), np.asarray(cov, np.float64)
    if noise is None:
        a = b = None
        scale = np.full(len(mean), float(np.reshape(obs_var, -1)[0]))  # one output
    else:
        a, b = (np.asarray(v, np.float64)[:, 0] for v in noise)
        scale = b / a
    try:
        return _filters(mean, cov, a, b, scale, stats)
    except np.linalg.LinAlgError:  # a singular matrix: each filter alone, that one refused
        parts = []
        for k in range(len(mean)):
            one = slice(k, k + 1)
            try:
                parts.append(_filters(mean[one], cov[one], None if a is None else a[one],
                                      None if b is None else b[one], scale[one], stats))
            except np.linalg.LinAlgError:
                parts.append(_refused(mean[one], cov[one], noise is not None))
        mean, cov, *rest = (np.concatenate(v) for v in zip(*[
            (p.mean, p.cov, p.log_evidence, p.ok) for p in parts]))
        new_noise = None if noise is None else tuple(
            np.concatenate([p.noise[i] for p in parts]) for i in range(2))
        return Update(mean, cov, new_noise, *rest)


def _filters(mean, cov, a, b, scale, stats):
    """The update of the filters (K on the leading axis) by the rows' statistics."""
    H, y, gram, cross = stats
    m = len(y)
    prec0 = np.linalg.inv(cov / scale[:, None, None])  # V⁻¹ (K, P, P)
    prec = prec0 + gram  # Λ'
    new = np.linalg.solve(prec, prec0 @ mean[..., None] + cross[:, None])[..., 0]
    resid = y[:, None] - H @ new.T  # (m, K)
    move = new - mean
    half_sq = 0.5 * (np.sum(resid**2, axis=0) + np.einsum("kp,kpq,kq->k", move, prec0, move))
    sign0, logdet0 = np.linalg.slogdet(prec0)
    sign, logdet = np.linalg.slogdet(prec)
    half_logdet = 0.5 * (logdet0 - logdet)  # ½ log |V⁻¹| − ½ log |Λ'|
    if a is None:  # the fixed noise σ² = scale
        new_noise = None
        log_ev = half_logdet - 0.5 * m * np.log(2 * np.pi * scale) - half_sq / scale
        post_scale = scale  # Σ' = σ² V'
    else:
        a_new, b_new = a + 0.5 * m, b + half_sq
        new_noise = (a_new[:, None], b_new[:, None])
        log_ev = (
            half_logdet + a * np.log(b) - a_new * np.log(b_new)
            + scipy.special.gammaln(a_new) - scipy.special.gammaln(a)
            - 0.5 * m * np.log(2 * np.pi)
        )
        post_scale = b_new / a_new  # Σ' = ŝ' V'
    new_cov = post_scale[:, None, None] * np.linalg.inv(prec)
    new_cov = 0.5 * (new_cov + np.swapaxes(new_cov, 1, 2))
    ok = (
        (sign0 > 0) & (sign > 0) & np.isfinite(log_ev)
        & np.all(np.isfinite(new), axis=1) & np.all(np.isfinite(new_cov), axis=(1, 2))
    )
    return Update(new, new_cov, new_noise, np.where(ok, log_ev, -np.inf), ok)


def _refused(mean, cov, learned):
    """A filter whose update failed: refused (its belief is not used)."""
    noise = (np.full((1, 1), np.nan), np.full((1, 1), np.nan)) if learned else None
    return Update(mean, cov, noise, np.full(1, -np.inf), np.zeros(1, bool))
