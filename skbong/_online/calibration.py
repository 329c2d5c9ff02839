"""Intervals calibrated on probability integral transforms (``calibration``): of the
rows learned last under the current model's leave-one-out predictive (``"loo"``), or of
every row under the stream's one-step predictive before it (``"prequential"``).

``"loo"``, the linear model's default. The estimator keeps its last :data:`WINDOW_ROWS`
learned rows; the calibration set is their PITs under the leave-one-out predictive of
the current belief, which for the conjugate linear model is exact in closed form
(:func:`loo_pit`): the final model's own out-of-sample errors. Under a misspecified
linear model the prequential PITs are not those of the final model — its posterior
narrows as it learns while its misfit stays — so on UCI energy the prequential
calibration covered 0.862 of the test points at 90 % and the leave-one-out one 0.886.

``"prequential"``, for networks (where the linearised leave-one-out correction is far
off) and for streams whose rows must not be kept. Before the stream learns a row it
predicts it: the probability integral transform
u = F(y) of the row's target under that one-step predictive (``Config.pit``) is an
out-of-sample check of the predictive, free in an online learner. Where the model is
right, u is uniform (exactly so for the conjugate linear-Gaussian model: the
prequential predictive is the exact Bayesian one). Where it is not — heteroscedastic or
heavy-tailed noise, a network still learning — the distribution of u says by how much
the predictive quantiles are off, and inverting it recalibrates them: the end of a
central interval at level q is the predictive quantile at level H⁻¹(q), H the empirical
distribution of the u's (Kuleshov, Fenner & Ermon, "Accurate uncertainties for deep
learning using calibrated regression", ICML 2018, with the prequential u's of the stream
in place of a held-out calibration set).

Either way, H is a histogram of :data:`N_BINS` equal bins of [0, 1] per output, weighted by the
rows' sample weights, plus :data:`PRIOR_ROWS` rows spread uniformly: with few rows the
map stays close to the identity, and uniform u's leave it there up to sampling error.
"""

import numpy as np
import scipy.special

from .bank import NETWORK_EVIDENCE_DISCOUNT, evidence_discount

N_BINS = 200
"""Bins of the PIT histogram (quantiles interpolate linearly inside a bin)."""

PRIOR_ROWS = 10.0
"""Weight of the uniform distribution the histogram starts from (a prior of ten rows)."""

WINDOW_ROWS = 1000
"""Default ``calibration_rows``: the learned rows ``calibration="loo"`` keeps (the 5 %
and 95 % levels of their histogram are then known to about ±0.007)."""


def add(counts, pit, w, n_outputs, delta=1.0):
    """The histogram ``counts`` (C, N_BINS) after rows of PITs ``pit`` (n, C) with weights
    ``w`` (n,); ``None`` counts start empty. Rows of zero weight and non-finite PITs
    (a refused row's prediction stays valid; NaN comes only from a non-finite
    predictive) are left out. With ``delta`` δ < 1 every row's weight is multiplied
    by δ for each row after it (:func:`discount`)."""
    n = len(w)
    counts = np.zeros((n_outputs, N_BINS)) if counts is None else counts * delta**n
    pit = np.asarray(pit, np.float64).reshape(n, n_outputs)
    w = np.asarray(w, np.float64) * delta ** np.arange(n - 1, -1, -1.0)
    for c in range(n_outputs):
        keep = (w > 0) & np.isfinite(pit[:, c])
        bins = np.clip((pit[keep, c] * N_BINS).astype(np.int64), 0, N_BINS - 1)
        counts[c] += np.bincount(bins, weights=w[keep], minlength=N_BINS)
    return counts


def discount(config):
    """δ of the prequential PIT histogram per row: 1 for the static linear model, whose
    prequential predictions follow the law of the final model's; otherwise the bank's
    evidence discount for networks (:func:`~skbong._online.bank.evidence_discount`, 0.99), since
    a network's early predictions were made by a model that has since changed, and the
    same for a linear model with ``drift`` < 1 or ``process_noise`` (a drifting stream,
    ``drift=0.99``: the PITs of all rows calibrated 90 % intervals to 0.878 prequential
    coverage, the last hundred or so rows' to 0.892)."""
    return NETWORK_EVIDENCE_DISCOUNT if config.dynamic else evidence_discount(config.model)


def step_dof(a0, w, batch_size, ok, delta):
    """The noise posterior's shape a before each step of a call, (T, C): from its value
    ``a0`` (C,) at the start, the stream's recursion a ← δ a + Σ w / 2 over the rows of
    every step the stream applied: accepted (``ok`` (T,)) and not all padding (the
    weights are non-negative, so a step of zero total weight is padding); a refused or
    padding step leaves a as it was. It depends on the weights alone."""
    n_steps = len(ok)
    pad = n_steps * batch_size - len(w)
    half = 0.5 * np.concatenate([np.asarray(w, np.float64), np.zeros(pad)]).reshape(n_steps, -1).sum(1)
    applied = ok & (half > 0)
    a0 = np.asarray(a0, np.float64)
    if delta == 1.0:
        after = a0 + np.cumsum(np.where(applied, half, 0.0))[:, None]
        return np.concatenate([a0[None], after[:-1]])
    out, a = np.empty((n_steps, len(a0))), a0
    for t in range(n_steps):
        out[t] = a
        if applied[t]:
            a = delta * a + half[t]
    return out


def pit(z, dof, batch_size):
    """u = F(z) of standardised residuals ``z`` (n, C): the Student-t CDF with ``2 a`` degrees
    of freedom of each row's step (``dof`` = a (T, C) of :func:`step_dof`), or the
    standard normal CDF when the noise is fixed (``dof`` None)."""
    z = np.asarray(z, np.float64)  # the ufuncs, not scipy.stats: a one-row call stays cheap
    if dof is None:
        return scipy.special.ndtr(z)
    per_row = np.repeat(dof, batch_size, axis=0)[: len(z)]
    return scipy.special.stdtr(2.0 * per_row, z)


def levels(counts, q):
    """H⁻¹(q) for each output, (C,): the predictive level whose quantile is the
    calibrated quantile at probability ``q`` (H piecewise linear between bin edges)."""
    prior = PRIOR_ROWS / N_BINS
    cdf = np.cumsum(counts + prior, axis=1)
    cdf = np.concatenate([np.zeros((len(cdf), 1)), cdf / cdf[:, -1:]], axis=1)
    edges = np.linspace(0.0, 1.0, N_BINS + 1)
    return np.array([np.interp(q, row, edges) for row in cdf])


def loo_pit(y, weights, locs, scales, noise_var, dofs, w):
    """The mixture PIT of each row, (n, C), under its leave-one-out predictive.

    ``y`` (n, C) are rows the belief has learned with weights ``w`` (n,); ``locs`` and
    ``scales`` (K, n, C) the location and squared scale of each component's predictive
    at them (:func:`~skbong._online.regression_face.mixture`), ``noise_var``
    ŝ (K, C) its noise variance and ``dofs`` 2a (K, C) its degrees of freedom (``inf`` at
    a fixed noise); ``weights`` (K,) the components' weights.

    In units of the noise, the row's leverage is h = w q with q = (scale² − ŝ) / ŝ the
    parameters' share of the predictive. Removing the row (Sherman–Morrison) moves the
    residual r = y − loc to r / (1 − h) and the parameters' share to q / (1 − h); the
    learned noise loses its half-count and its share of the residual sum of squares,
    a ← a − w/2 and b ← b − w r² / (2 (1 − h)) (the ridge identity
    SSE₋ᵢ = SSE − w rᵢ² / (1 − hᵢ)). For the conjugate linear-Gaussian model at a fixed
    prior variance this is exactly the predictive of the posterior of the other rows;
    for ``drift`` < 1, ``dlr`` and the bank (whose weights are kept) a first-order
    approximation. A row whose removal leaves no noise information (a ≤ w/2) gives NaN
    and is left out of the histogram (:func:`add`).
    """
    y = np.asarray(y, np.float64)[None]
    w = np.asarray(w, np.float64)[None, :, None]
    s = np.asarray(noise_var, np.float64)[:, None, :]
    a = 0.5 * np.asarray(dofs, np.float64)[:, None, :]
    q = np.maximum(np.asarray(scales, np.float64) - s, 0.0) / s
    keep = w * q < 1.0
    h = np.where(keep, w * q, 0.0)
    r = y - locs
    a_loo = a - 0.5 * w
    with np.errstate(divide="ignore", invalid="ignore"):
        s_loo = np.where(np.isinf(a), s, (a * s - 0.5 * w * r**2 / (1 - h)) / a_loo)
        z = r / (1 - h) / np.sqrt(s_loo * (1 + q / (1 - h)))
        u = np.where(np.isinf(a), scipy.special.ndtr(z), scipy.special.stdtr(2 * a_loo, z))
    u = np.where(keep & (a_loo > 0) & (s_loo > 0), u, np.nan)
    return np.einsum("k,knc->nc", np.asarray(weights, np.float64), u)


WINDOW_BLOCKS = 32
"""Blocks a calibration window holds at most: :func:`window_add` then joins them."""


def window_add(window, X, Y, w, size):
    """The window of learned rows after a call's rows ``X``, ``Y``, ``w``; the last
    ``size`` of them are the ones kept (:func:`kept_rows`).

    A window is ``None`` or a tuple of row blocks ``(X, Y, w)``, oldest first. A call adds
    one block, a copy of its last ``size`` rows (never a view of the caller's arrays).
    The blocks are joined, and cut to their last ``size`` rows, when there are
    :data:`WINDOW_BLOCKS` of them or when the new block is not small (``size /
    WINDOW_BLOCKS`` rows or more), so a window holds at most about ``2 size`` rows and a
    one-row call costs O(1) amortised, not a copy of the whole window. No block is
    written after it is made: a window shared with a copy of the estimator (or the
    backup that a failed call restores) never changes under it.
    """
    block = tuple(np.array(a[-size:]) for a in (X, Y, w))
    if not len(block[2]):
        return window
    blocks = _blocks(window) + (block,)
    if len(blocks) < WINDOW_BLOCKS and len(block[2]) * WINDOW_BLOCKS < size:
        return blocks
    return (tuple(np.array(a) for a in kept_rows(blocks, size)),)


def kept_rows(window, size):
    """The last ``size`` rows ``(X, Y, w)`` of a window of :func:`window_add`, oldest first."""
    blocks = _blocks(window)
    rows = blocks[0] if len(blocks) == 1 else tuple(np.concatenate(a) for a in zip(*blocks))
    return tuple(a[-size:] for a in rows)


def _blocks(window):
    if window is None:
        return ()
    # one (X, Y, w): a window pickled before it had blocks
    return (window,) if isinstance(window[0], np.ndarray) else window


def mixture_pit(pits, log_evidence_before):
    """The bank's PIT of each row, (n, C): its filters' PITs ``pits`` (K, n, C) weighted
    by each filter's posterior weight before the row, softmax of
    ``log_evidence_before`` (K, n) (−inf for a filter out of the bank)."""
    top = np.max(log_evidence_before, axis=0, keepdims=True)
    weights = np.exp(log_evidence_before - np.where(np.isfinite(top), top, 0.0))
    weights /= weights.sum(axis=0, keepdims=True)
    return np.einsum("kn,knc->nc", weights, np.nan_to_num(pits, nan=0.5))


__all__ = [
    "N_BINS",
    "PRIOR_ROWS",
    "WINDOW_ROWS",
    "add",
    "discount",
    "levels",
    "loo_pit",
    "mixture_pit",
    "pit",
    "step_dof",
    "window_add",
    "kept_rows",
]
