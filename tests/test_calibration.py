"""Intervals calibrated on PITs: the kept rows' leave-one-out PITs (``calibration="loo"``,
the static linear model's default) and the stream's prequential ones
(``calibration="prequential"``).

For ``"loo"`` the reference is the posterior of the other rows, computed afresh in numpy
for every row: the textbook normal–inverse-gamma predictive of the rows but one, or the
Gaussian one at a fixed noise. For ``"prequential"`` the stream reports, for every row, u = F(y) under the one-step predictive of the belief
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

from skbong import BongRegressor, SkippedRowsWarning
from skbong._online import calibration as cal
from skbong._online import regression_face
from skbong._online.bank import PRIOR_GRID
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
    params = dict(family="full", prior_variance=PRIOR_VAR, dtype="float64", random_state=0,
                  calibration="prequential")
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
    est = BongRegressor(family="full", prior_variance="auto", dtype="float64", random_state=0,
                        calibration="prequential")
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


@pytest.mark.parametrize("kind", ["loo", "prequential"])
def test_calibrated_intervals_cover_what_they_claim_under_misspecified_noise(kind):
    # heavy-tailed, heteroscedastic noise: the Student-t of a homoscedastic model misses
    # its 50 %, 80 % and 90 % levels by far more than the sampling error
    X, y = _heteroscedastic(4000, 0)
    Xte, yte = _heteroscedastic(8000, 1)
    model = BongRegressor(calibration=None, random_state=0).fit(X, y)
    calibrated = BongRegressor(calibration=kind, calibration_rows=4000, random_state=0)
    calibrated.fit(X, y)

    def coverage(est, level):
        lo, hi = est.predict_interval(Xte, coverage=level)
        return np.mean((yte >= lo) & (yte <= hi))

    for level in (0.5, 0.8, 0.9):
        # sd of a coverage estimate ≤ 0.006 (8,000 test points) and ≤ 0.008 from the
        # histogram of 4,000 rows; the model is off by 0.05–0.35
        assert abs(coverage(model, level) - level) > 0.05
        assert abs(coverage(calibrated, level) - level) < 0.03


@pytest.mark.parametrize("kind", ["loo", "prequential"])
def test_well_specified_intervals_stay_the_models(kind):
    X, y = _data(n=3000, noise=0.5, seed=3)
    a = _reg(calibration=None).fit(X, y)
    b = _reg(calibration=kind, calibration_rows=3000).fit(X, y)
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
    linear = BongRegressor(calibration="prequential", random_state=0).fit(X, y)
    assert linear._pit_counts.sum() == 30
    # so does a drifting linear model's: its early predictions came from a model since changed
    drifting = BongRegressor(drift=0.999, calibration="prequential", random_state=0).fit(X, y)
    assert drifting._pit_counts.sum() == pytest.approx(np.sum(0.99 ** np.arange(30)), rel=1e-12)


def test_a_drifting_models_pits_are_under_the_predictive_it_serves():
    # the histogram calibrates predict_interval's predictive: the belief after the last
    # update, before the next drift step (not the drifted one the update starts from)
    X, y = _data(n=40)
    est = _reg(drift=0.9, obs_variance=0.3)
    bins = []
    for t in range(len(y)):
        if t:
            before = est._pit_counts.copy()
            mean, std = est.predict(X[t : t + 1], return_std=True)
            bins.append(int(scipy.stats.norm.cdf(y[t], mean[0], std[0]) * cal.N_BINS))
        est.partial_fit(X[t : t + 1], y[t : t + 1])
        if t:
            assert np.flatnonzero(est._pit_counts[0] - 0.99 * before[0] > 0.5).tolist() == [bins[-1]]


def test_auto_calibrates_the_linear_model_only():
    X, y = _data(n=20)
    static = BongRegressor(random_state=0).fit(X, y)  # leave-one-out on the kept rows
    assert static._pit_counts is None and static._config().pit is None
    assert len(cal.kept_rows(static._window, static.calibration_rows)[0]) == 20
    drifting = BongRegressor(drift=0.99, random_state=0).fit(X, y)  # one step ahead
    assert drifting._pit_counts is not None and drifting._window is None
    net = BongRegressor(hidden_layer_sizes=(3,), random_state=0).fit(X, y)
    assert net._pit_counts is None and net._window is None and net._config().pit is None
    lo, hi = net.predict_interval(X[:4])
    ref = BongRegressor(hidden_layer_sizes=(3,), calibration=None, random_state=0).fit(X, y)
    np.testing.assert_array_equal(lo, ref.predict_interval(X[:4])[0])


# ---------------------------------------------------------------- leave-one-out


def _loo_pits(X, y, w=None, obs_var=None, prior_var=PRIOR_VAR):
    """u_i = F₋ᵢ(y_i) under the predictive of the posterior of every row but i (a new
    unit-weight observation at x_i): NIG Student-t, or Gaussian at a fixed noise."""
    w = np.ones(len(y)) if w is None else w
    H = np.column_stack([X, np.ones(len(y))])
    pits = []
    for i in range(len(y)):
        others = np.arange(len(y)) != i
        if obs_var is None:
            mean, V, a, b = nig_posterior(X[others], y[others], w[others], prior_var)
            scale = np.sqrt(b / a * (1 + H[i] @ V @ H[i]))
            pits.append(scipy.stats.t.cdf(y[i], 2 * a, H[i] @ mean, scale))
        else:
            prec = np.diag(1 / np.r_[np.full(X.shape[1], prior_var), OUTPUT_BIAS_VARIANCE])
            cov = np.linalg.inv(prec + H[others].T @ (w[others, None] * H[others]) / obs_var)
            mean = cov @ H[others].T @ (w[others] * y[others]) / obs_var
            pits.append(scipy.stats.norm.cdf(y[i], H[i] @ mean, np.sqrt(H[i] @ cov @ H[i] + obs_var)))
    return np.array(pits)


@pytest.mark.parametrize("obs_variance", ["auto", 0.3])
def test_loo_pits_are_the_predictives_of_the_other_rows(obs_variance):
    X, y = _data(n=40)
    w = np.random.default_rng(5).uniform(0.5, 2.0, size=40)
    for weights in (None, w):
        est = _reg(calibration="loo", obs_variance=obs_variance).fit(X, y, sample_weight=weights)
        ref = _loo_pits(X, y, weights, None if obs_variance == "auto" else obs_variance)
        expected = _histogram(ref, weights)
        np.testing.assert_array_equal(regression_face.calibration_counts(est), expected)


def test_the_banks_loo_pit_is_the_mixture_under_its_weights():
    # each filter's leave-one-out predictive, mixed under the bank's weights after all the
    # rows (the weights are not recomputed without the row: documented approximation)
    X, y = _data(n=25)
    est = BongRegressor(family="full", prior_variance="auto", dtype="float64", random_state=0,
                        calibration="loo").fit(X, y)
    weights = scipy.special.softmax([nig_log_evidence(X, y, v) for v in PRIOR_GRID])
    keep = weights >= 1e-9  # the bank leaves out filters of smaller weight
    ref = sum(wk * _loo_pits(X, y, prior_var=v) for wk, v in zip(weights[keep], PRIOR_GRID[keep]))
    ref /= weights[keep].sum()
    np.testing.assert_array_equal(regression_face.calibration_counts(est), _histogram(ref))


def test_loo_keeps_the_last_rows_it_learned():
    X, y = _data(n=50)
    w = np.ones(50)
    w[[3, 47]] = 0.0  # taught nothing: not kept
    est = _reg(calibration="loo", calibration_rows=30)
    est.partial_fit(X[:7], y[:7], sample_weight=w[:7])
    est = pickle.loads(pickle.dumps(est))
    for t in range(7, 50, 9):
        est.partial_fit(X[t : t + 9], y[t : t + 9], sample_weight=w[t : t + 9])
    learned = np.flatnonzero(w > 0)[-30:]
    kept_x, kept_y, _ = cal.kept_rows(est._window, 30)
    np.testing.assert_array_equal(kept_x, X[learned])
    np.testing.assert_array_equal(kept_y[:, 0], y[learned])
    # the histogram follows the belief: after another update it is recomputed
    before = regression_face.calibration_counts(est).copy()
    est.partial_fit(X[:5], y[:5] + 3.0)
    assert not np.array_equal(regression_face.calibration_counts(est), before)
    fresh = _reg(calibration="loo", calibration_rows=30).fit(X[learned[-25:]], y[learned[-25:]])
    assert regression_face.calibration_counts(fresh).sum() == 25


def test_window_keeps_the_last_rows_and_never_changes_a_shared_one():
    """The window of kept rows against a plain list of every row added: after calls of
    0 to 101 rows (into a window of 100) it keeps exactly the last 100, in order, in at
    most WINDOW_BLOCKS blocks of fewer than 200 rows in all; a window held elsewhere (a
    copy of the estimator, the rollback of a failed call) is never changed by later
    additions; and its blocks are copies, not views of the caller's rows."""
    rng = np.random.default_rng(0)
    size, added, window, held = 100, [], None, []
    for n in [1] * 70 + [3, 40, 0, 7, 1, 100, 101, 2]:
        X, Y, w = rng.normal(size=(n, 2)), rng.normal(size=(n, 1)), rng.random(n)
        added.extend(zip(X.copy(), Y.copy(), w.copy()))
        window = cal.window_add(window, X, Y, w, size)
        X[:], Y[:], w[:] = np.nan, np.nan, np.nan  # the caller reuses its buffers
        expected = [np.array(a) for a in zip(*added[-size:])]
        for got, want in zip(cal.kept_rows(window, size), expected):
            np.testing.assert_array_equal(got, want)
        assert 1 <= len(window) <= cal.WINDOW_BLOCKS
        assert sum(len(block[2]) for block in window) < 2 * size
        held.append((window, expected))
    for kept, expected in held:  # every window ever returned is as it was
        for got, want in zip(cal.kept_rows(kept, size), expected):
            np.testing.assert_array_equal(got, want)
    assert cal.window_add(None, X[:0], Y[:0], w[:0], size) is None
    legacy = tuple(np.ones((3,) + s) for s in ((2,), (1,), ()))  # a window pickled before blocks
    assert len(cal.kept_rows(cal.window_add(legacy, X[:1], Y[:1], w[:1], size), size)[0]) == 4


def test_loo_leaves_refused_rows_out():
    X, y = _data(n=12)
    X[5] = 1e30  # an update that overflows in float32: refused with on_error="skip"
    est = BongRegressor(family="full", calibration="loo", on_error="skip", dtype="float32")
    with pytest.warns(SkippedRowsWarning):
        est.fit(X, y)
    assert est.n_skipped_ == 1
    kept = cal.kept_rows(est._window, 30)[0]
    np.testing.assert_array_equal(kept, X[np.arange(12) != 5].astype(np.float32))


def test_loo_merges_the_shards_rows_and_refuses_networks():
    from sklearn.base import clone

    from skbong import merge_posteriors

    X, y = _data(n=60)
    shards = [clone(_reg(calibration="loo")).fit(X[i::3], y[i::3]) for i in range(3)]
    merged = merge_posteriors(shards)
    kept = cal.kept_rows(merged._window, merged.calibration_rows)[0]
    np.testing.assert_array_equal(kept, np.concatenate([X[i::3] for i in range(3)]))
    assert regression_face.calibration_counts(merged).sum() == 60
    net = BongRegressor(hidden_layer_sizes=(3,), random_state=0).fit(X, y)
    with pytest.raises(ValueError, match="calibration='prequential'"):
        net.set_params(calibration="loo").partial_fit(X[:5], y[:5])
    assert net.n_observations_ == 60  # nothing from the refused call
