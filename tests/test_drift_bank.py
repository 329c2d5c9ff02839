"""The drift bank (``drift="auto"``) against an independent Kalman filter of each
Ornstein–Uhlenbeck state-space model.

For the linear-Gaussian model at a fixed noise, the filter of drift γ is the Kalman
filter of θₜ = γ θₜ₋₁ + (1 − γ) μ₀ + N(0, (1 − γ²) diag(v∞)), yₜ = hₜᵀ θₜ + N(0, R),
started at N(μ₀, diag(v₀)), with v₀ = (σ₀², …, σ₀², 100) (the intercept's broad start)
and v∞ = σ₀² for every parameter (what the drift forgets toward). Its one-step-ahead
log predictive densities sum to that model's log marginal likelihood, which is what
the bank weights by. The reference is written here in numpy from the textbook
recursion; agreement is to float64 rounding (relative 1e-9).
"""

import numpy as np
import pytest
import scipy.stats

from skbong import BongRegressor, merge_posteriors
from skbong._online import regression_face
from skbong._online.bank import DRIFT_GRID, PRIOR_GRID, Bank
from skbong.engine.models import OUTPUT_BIAS_VARIANCE

OBS_VAR = 0.3
PRIOR_VAR = 0.5


def _reg(**kw):
    params = dict(family="full", prior_variance=PRIOR_VAR, obs_variance=OBS_VAR, dtype="float64",
                  calibration=None, random_state=0)
    return BongRegressor(**{**params, **kw})


def _static(n=30, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    y = X @ np.array([1.0, -2.0, 0.5]) + 3.0 + np.sqrt(OBS_VAR) * rng.normal(size=n)
    return X, y


def _turning(n, seed=1):
    """A weight vector of norm 2 turning once over the stream (bench_defaults' stream)."""
    rng = np.random.default_rng(seed)
    a, b = np.linalg.qr(rng.normal(size=(3, 2)))[0].T
    angle = 2 * np.pi * np.arange(n) / n
    w = 2.0 * (np.cos(angle)[:, None] * a + np.sin(angle)[:, None] * b)
    X = rng.normal(size=(n, 3))
    return X, np.sum(X * w, axis=1) + 1.0 + 0.5 * rng.normal(size=n)


def ou_kalman(X, y, prior_var, drift, obs_var=OBS_VAR):
    """Final mean and log marginal likelihood of the OU state-space model (see above)."""
    H = np.column_stack([X, np.ones(len(y))])
    p = H.shape[1]
    v_start = np.r_[np.full(p - 1, prior_var), OUTPUT_BIAS_VARIANCE]
    mean, cov = np.zeros(p), np.diag(v_start)
    log_ev = 0.0
    for h, target in zip(H, y):
        mean = drift * mean
        cov = drift**2 * cov + (1 - drift**2) * prior_var * np.eye(p)
        s = h @ cov @ h + obs_var
        log_ev += scipy.stats.norm.logpdf(target, h @ mean, np.sqrt(s))
        gain = cov @ h / s
        mean = mean + gain * (target - h @ mean)
        cov = cov - np.outer(gain, h @ cov)
    return mean, log_ev


@pytest.mark.parametrize("prior_variance", [PRIOR_VAR, "auto"])
def test_drift_bank_is_the_ou_kalman_filters_weighted_by_their_evidence(prior_variance):
    X, y = _static()
    est = _reg(drift="auto", prior_variance=prior_variance)
    est.fit(X[:11], y[:11]).partial_fit(X[11:], y[11:])  # any split of the stream
    priors = PRIOR_GRID if prior_variance == "auto" else [PRIOR_VAR]
    pairs = [(s, g) for s in priors for g in DRIFT_GRID]  # prior-major
    np.testing.assert_array_equal(est.bank_grid_, pairs)
    refs = [ou_kalman(X, y, s, g) for s, g in pairs]
    ref_ev = np.array([ev for _, ev in refs])
    np.testing.assert_allclose(est.log_evidence_, ref_ev, rtol=1e-9)
    for k, (mean, _) in enumerate(refs):  # each filter is its model's exact posterior
        np.testing.assert_allclose(est._state[0][k], mean, rtol=1e-8, atol=1e-10)
    weights = np.exp(ref_ev - ref_ev.max())
    table = (weights / weights.sum()).reshape(len(priors), len(DRIFT_GRID))
    np.testing.assert_allclose(est.drift_weights_, table.sum(axis=0), atol=1e-12)
    assert est.drift_ == DRIFT_GRID[np.argmax(table.sum(axis=0))]
    if prior_variance == "auto":
        np.testing.assert_allclose(est.prior_weights_, table.sum(axis=1), atol=1e-12)
        assert est.prior_variance_ == PRIOR_GRID[np.argmax(table.sum(axis=1))]
    else:
        assert est.prior_variance_ == PRIOR_VAR
        with pytest.raises(AttributeError, match="a bank learns prior_variance"):
            _ = est.prior_weights_
    # the prediction is the weighted mixture of the filters' means
    H = np.column_stack([X[:4], np.ones(4)])
    mixed = sum(w * (H @ m) for w, (m, _) in zip(weights / weights.sum(), refs))
    np.testing.assert_allclose(est.predict(X[:4]), mixed, rtol=1e-8)


def test_the_evidence_finds_the_drift():
    """Static rows: the static filter wins; a turning weight vector: a drifting one."""
    X, y = _static(n=400, seed=3)
    assert _reg(drift="auto").fit(X, y).drift_ == 1.0
    X, y = _turning(2000)
    est = _reg(drift="auto").fit(X, y)
    assert est.drift_ < 1.0
    with pytest.raises(AttributeError, match="drift='auto'"):
        _ = _reg().fit(X, y).drift_weights_
    assert _reg(drift=0.99).fit(X[:5], y[:5]).drift_ == 0.99


def test_calibration_follows_the_evidence():
    """``calibration="auto"`` with ``drift="auto"``: the leave-one-out PITs of the static
    filter while the evidence says static, the prequential ones once it says drift."""
    X, y = _static(n=50, seed=4)
    auto = _reg(drift="auto", calibration="auto").fit(X, y)
    static = _reg(calibration="auto").fit(X, y)  # calibration "loo"
    assert auto.drift_ == 1.0 and auto._pit_counts is not None
    assert auto.drift_weights_[0] < 0.9  # the drifting filters count in the mixture
    np.testing.assert_allclose(regression_face.calibration_counts(auto), regression_face.calibration_counts(static), atol=1e-9)
    X, y = _turning(2000)
    auto = _reg(drift="auto", calibration="auto").fit(X, y)
    assert auto.drift_ < 1.0
    assert regression_face.calibration_counts(auto) is auto._pit_counts
    # an explicit "loo" keeps leave-one-out (of the whole mixture), whatever the evidence
    loo = _reg(drift="auto", calibration="loo").fit(X, y)
    assert loo._pit_counts is None and regression_face.calibration_counts(loo).sum() > 0


def test_drifting_stream_intervals_at_the_learned_drift():
    """Prequential 90 % intervals on the turning stream, in calls of 30 rows after the
    first 100: inside 0.90 ± 0.025 (about 3 binomial standard deviations for 2,900 rows),
    where the static model's are not and its R² is near 0."""
    X, y = _turning(3000, seed=5)
    result = {}
    for drift in (1.0, "auto"):
        est = BongRegressor(drift=drift, random_state=0).fit(X[:100], y[:100])
        inside, preds = [], []
        for i in range(100, 3000, 30):
            rows = slice(i, i + 30)
            lo, hi = est.predict_interval(X[rows])
            inside.append((lo <= y[rows]) & (y[rows] <= hi))
            preds.append(est.predict(X[rows]))
            est.partial_fit(X[rows], y[rows])
        r2 = 1 - np.mean((np.concatenate(preds) - y[100:]) ** 2) / np.var(y[100:])
        result[drift] = np.mean(np.concatenate(inside)), r2
    assert abs(result["auto"][0] - 0.90) < 0.025, result
    assert result[1.0][0] < 0.85, result
    assert result["auto"][1] > 0.7 and result[1.0][1] < 0.3, result


def test_auto_cannot_be_swapped_for_a_number_after_a_fit():
    X, y = _static()
    for name in ("drift", "prior_variance"):
        est = _reg(**{name: "auto"}).fit(X, y)
        state = [a.copy() for a in est._state]
        est.set_params(**{name: 0.9})
        with pytest.raises(ValueError, match=f"'{name}'"):
            est.partial_fit(X[:3], y[:3])
        for a, b in zip(est._state, state):
            np.testing.assert_array_equal(a, b)
    # a number for a number is applied from the next update (drift stays a model setting)
    est = _reg(drift=0.99).fit(X, y)
    est.set_params(drift=0.9).partial_fit(X[:3], y[:3])


def test_drift_bank_is_not_merged():
    X, y = _static()
    shards = [_reg(drift="auto").fit(X[:15], y[:15]), _reg(drift="auto").fit(X[15:], y[15:])]
    with pytest.raises(ValueError, match="drift"):
        merge_posteriors(shards)


def test_bank_resolves_auto_once_for_the_model():
    # "auto" is read as the model's meaning of it (a prior bank for the linear model, a
    # network's fixed σ₀²); drift="auto" banks the drifts; the filters are the product,
    # prior-major
    linear = Bank.resolve("auto", 1.0, "bank")
    assert linear.learns_prior and not linear.learns_drift and linear.is_bank
    assert linear.priors == tuple(PRIOR_GRID) and linear.prior == "bank"
    net = Bank.resolve("auto", 1.0, 10.0)
    assert not net.is_bank and net.prior == 10.0
    both = Bank.resolve("bank", "auto", 10.0)
    priors, drifts = both.grid()
    assert len(priors) == len(PRIOR_GRID) * len(DRIFT_GRID)
    np.testing.assert_array_equal(priors[: len(DRIFT_GRID)], PRIOR_GRID[0])
    np.testing.assert_array_equal(drifts[: len(DRIFT_GRID)], DRIFT_GRID)
    fixed = Bank.resolve(0.5, 0.99, "bank")
    assert not fixed.is_bank and fixed.grid()[0].tolist() == [0.5]
    assert fixed.grid()[1].tolist() == [0.99]
