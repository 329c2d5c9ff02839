"""Intervals calibrated on the prequential PITs (``calibration="prequential"``).

The stream reports, for every row, u = F(y) under the one-step predictive of the belief
before the row. The references: the textbook normal–inverse-gamma predictive
Student-t(2a, hᵀμ, (b / a)(1 + hᵀ V h)) of the rows before (test_noise's numpy
``nig_posterior``), the Gaussian predictive at a fixed noise, and for the bank the
mixture of those under the weights its evidence (``nig_log_evidence``) gives before the
row. The calibration then inverts the histogram of the u's; where the noise model is
wrong (heteroscedastic noise) the calibrated intervals cover what they claim on fresh
data from the same law, and where it is right they stay the model's.
"""

import pickle

import numpy as np
import pytest
import scipy.special
import scipy.stats
from test_noise import PRIOR_VAR, _data, nig_log_evidence, nig_posterior

from skbong import BongRegressor
from skbong import _calibration as cal
from skbong._bank import PRIOR_GRID
from skbong.engine.models import OUTPUT_BIAS_VARIANCE


def _nig_pits(X, y, prior_var=PRIOR_VAR):
    """u_t = F_t(y_t) under the NIG predictive of rows < t (rows ≥ 1; row 0 under the prior)."""
    H = np.column_stack([X, np.ones(len(y))])
    pits = []
    for t in range(len(y)):
        if t == 0:
            mean = np.zeros(H.shape[1])
            V = np.diag(np.r_[np.full(X.shape[1], prior_var), OUTPUT_BIAS_VARIANCE])
            a, b = 1.0, 1.0
        else:
            mean, V, a, b = nig_posterior(X[:t], y[:t], prior_var=prior_var)
        scale = np.sqrt(b / a * (1 + H[t] @ V @ H[t]))
        pits.append(scipy.stats.t.cdf(y[t], 2 * a, H[t] @ mean, scale))
    return np.array(pits)


def _histogram(pits, w=None):
    w = np.ones(len(pits)) if w is None else w
    counts = np.bincount(np.minimum((pits * cal.N_BINS).astype(int), cal.N_BINS - 1),
                         weights=w, minlength=cal.N_BINS)
    return counts[None, :]


def _reg(**kw):
    params = dict(family="full", prior_variance=PRIOR_VAR, dtype="float64", random_state=0)
    return BongRegressor(**{**params, **kw})


def test_pits_are_the_nig_predictive_cdfs():
    X, y = _data(n=40)
    est = _reg().fit(X, y)
    pits = _nig_pits(X, y)
    np.testing.assert_array_equal(est._pit_counts, _histogram(pits))
    # row by row, chunked, and across a pickle: the same predictions
    est2 = _reg().partial_fit(X[:1], y[:1])
    est2 = pickle.loads(pickle.dumps(est2)).partial_fit(X[1:17], y[1:17])
    for t in range(17, 40):
        est2.partial_fit(X[t : t + 1], y[t : t + 1])
    np.testing.assert_array_equal(est2._pit_counts, est._pit_counts)


def test_pits_at_a_fixed_noise_are_gaussian_cdfs():
    X, y = _data(n=30)
    est = _reg(obs_variance=0.3).fit(X, y)
    H = np.column_stack([X, np.ones(len(y))])
    prec = np.diag(1 / np.r_[np.full(3, PRIOR_VAR), OUTPUT_BIAS_VARIANCE])
    pits = []
    for t in range(len(y)):
        cov = np.linalg.inv(prec + H[:t].T @ H[:t] / 0.3)
        mean = cov @ H[:t].T @ y[:t] / 0.3
        pits.append(scipy.stats.norm.cdf(y[t], H[t] @ mean, np.sqrt(H[t] @ cov @ H[t] + 0.3)))
    np.testing.assert_array_equal(est._pit_counts, _histogram(np.array(pits)))


def test_weights_scale_a_row_and_zero_weight_rows_do_not_count():
    X, y = _data(n=30)
    w = np.r_[np.full(10, 2.0), np.zeros(5), np.ones(15)]
    est = _reg(obs_variance=0.3).fit(X, y, sample_weight=w)
    assert est._pit_counts.sum() == pytest.approx(w.sum())
    np.testing.assert_array_equal(np.nonzero(est._pit_counts)[1].size > 0, True)


def test_bank_pit_is_the_mixture_under_the_weights_before_the_row():
    X, y = _data(n=25)
    est = BongRegressor(family="full", prior_variance="auto", dtype="float64", random_state=0)
    est.fit(X, y)
    pits = []
    for t in range(len(y)):
        log_ev = np.array([nig_log_evidence(X[:t], y[:t], v) if t else 0.0 for v in PRIOR_GRID])
        weights = scipy.special.softmax(log_ev)
        pits.append(sum(wk * _nig_pits(X[: t + 1], y[: t + 1], v)[t]
                        for wk, v in zip(weights, PRIOR_GRID)))
    np.testing.assert_array_equal(est._pit_counts, _histogram(np.array(pits)))


def test_levels_invert_the_histogram():
    counts = np.zeros((2, cal.N_BINS))
    assert cal.levels(counts, 0.05) == pytest.approx([0.05, 0.05])  # the uniform prior alone
    # all mass in [0.4, 0.6) for output 0, uniform for output 1: the 5 % level moves inward
    counts[0, int(0.4 * cal.N_BINS) : int(0.6 * cal.N_BINS)] = 1e6
    counts[1] = 1e6 / cal.N_BINS * 40
    lo, hi = cal.levels(counts, 0.05), cal.levels(counts, 0.95)
    assert lo[0] == pytest.approx(0.41, abs=2e-3) and hi[0] == pytest.approx(0.59, abs=2e-3)
    assert lo[1] == pytest.approx(0.05, abs=1e-9) and hi[1] == pytest.approx(0.95, abs=1e-9)


def _heteroscedastic(n, seed):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    y = X @ np.array([1.0, -1.0, 0.5]) + (0.1 + np.abs(X[:, 0]) ** 2) * rng.standard_t(3, size=n)
    return X, y


def test_calibrated_intervals_cover_what_they_claim_under_misspecified_noise():
    # heavy-tailed, heteroscedastic noise: the Student-t of a homoscedastic model misses
    # its 50 %, 80 % and 90 % levels by far more than the sampling error
    X, y = _heteroscedastic(4000, 0)
    Xte, yte = _heteroscedastic(8000, 1)
    model = BongRegressor(calibration=None, random_state=0).fit(X, y)
    calibrated = BongRegressor(random_state=0).fit(X, y)

    def coverage(est, level):
        lo, hi = est.predict_interval(Xte, coverage=level)
        return np.mean((yte >= lo) & (yte <= hi))

    for level in (0.5, 0.8, 0.9):
        # sd of a coverage estimate ≤ 0.006 (8,000 test points) and ≤ 0.008 from the
        # histogram of 4,000 rows; the model is off by 0.05–0.35
        assert abs(coverage(model, level) - level) > 0.05
        assert abs(coverage(calibrated, level) - level) < 0.03


def test_well_specified_intervals_stay_the_models():
    X, y = _data(n=3000, noise=0.5, seed=3)
    a = _reg(calibration=None).fit(X, y)
    b = _reg().fit(X, y)
    Xte = np.random.default_rng(4).normal(size=(200, 3))
    lo_a, hi_a = a.predict_interval(Xte)
    lo_b, hi_b = b.predict_interval(Xte)
    # the 5 % and 95 % PIT quantiles of 3,000 uniforms: sd 0.004, i.e. 0.04 in units of
    # the predictive scale at the 1.645 quantile (density 0.10); 5 sd
    scale = (hi_a - lo_a) / (2 * 1.645)
    np.testing.assert_array_less(np.abs(lo_b - lo_a), 0.2 * scale)
    np.testing.assert_array_less(np.abs(hi_b - hi_a), 0.2 * scale)


def test_calibration_none_keeps_no_histogram_and_set_params_switches():
    X, y = _data(n=20)
    est = _reg(calibration=None).fit(X, y)
    assert est._pit_counts is None
    lo, hi = est.predict_interval(X[:3])
    est.set_params(calibration="prequential").partial_fit(X[:5], y[:5])
    assert est._pit_counts.sum() == 5  # from the switch on
    with pytest.raises(ValueError, match="calibration"):
        BongRegressor(calibration="isotonic").fit(X, y)
    assert BongRegressor().calibration == "auto"


def test_merge_pools_the_shards_pit_histograms():
    from sklearn.base import clone

    from skbong import merge_posteriors

    X, y = _data(n=60)
    est = _reg()
    shards = [clone(est).fit(X[i::3], y[i::3]) for i in range(3)]
    merged = merge_posteriors(shards)
    np.testing.assert_array_equal(merged._pit_counts, sum(s._pit_counts for s in shards))
    assert merged._pit_counts.sum() == 60


def test_a_networks_histogram_forgets_its_early_rows():
    # each row's weight is multiplied by δ = 0.99 for every row after it, across calls
    X, y = _data(n=30)
    est = BongRegressor(hidden_layer_sizes=(3,), calibration="prequential", random_state=0)
    est.fit(X[:20], y[:20]).partial_fit(X[20:], y[20:])
    assert est._pit_counts.sum() == pytest.approx(np.sum(0.99 ** np.arange(30)), rel=1e-12)
    linear = BongRegressor(random_state=0).fit(X, y)
    assert linear._pit_counts.sum() == 30


def test_auto_calibrates_the_linear_model_only():
    X, y = _data(n=20)
    assert BongRegressor(random_state=0).fit(X, y)._pit_counts is not None
    net = BongRegressor(hidden_layer_sizes=(3,), random_state=0).fit(X, y)
    assert net._pit_counts is None and net._config().pit is None
    lo, hi = net.predict_interval(X[:4])
    ref = BongRegressor(hidden_layer_sizes=(3,), calibration=None, random_state=0).fit(X, y)
    np.testing.assert_array_equal(lo, ref.predict_interval(X[:4])[0])
