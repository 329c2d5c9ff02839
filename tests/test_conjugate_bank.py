"""The linear-Gaussian prior bank in closed form (``skbong._online.conjugate``).

Where every filter of the bank is the exact conjugate posterior (the linear model, one
output, Gaussian noise, ``full``, BONG-LIN-HESS, no drift, one row per step, unit
weights, float64), a call of more than 2P rows is computed from the rows' shared
statistics instead of K streamed filters. What must hold, against references from
outside the closed form:

* **The marginal likelihood** of each filter, given its prior, equals an independent
  density of all the rows at once: the multivariate Student-t of the normal–inverse-gamma
  model (``scipy.stats.multivariate_t``: df 2a, shape (b / a)(I + H V Hᵀ), V = Σ a / b)
  with the learned noise, the multivariate normal N(Hμ, H Σ Hᵀ + σ² I)
  (``scipy.stats.multivariate_normal``) with a fixed one: the n × n covariance, not the
  P × P statistics.
* **The posterior** equals the bank streamed row by row (the engine's Kalman filters, the
  path every call of at most 2P rows takes), for a fresh bank and for one continued by
  ``partial_fit``, with and without an intercept.
* **The row checks stay**: an absurd target is refused (``on_error="raise"``) or left out
  (``"skip"``: the result is the fit without that row), as when every filter streams.
* **It is taken only where it is exact**, and not for few rows.

Tolerance: the closed form and the stream compute the same numbers in another order.
Both are backward stable, so in float64 they differ by about κ n P u (u = 2⁻⁵³, κ the
condition number of the posterior covariances, n rows, P parameters); the test computes
that bound from its data and allows 100 times it. An algebraic error (a missing term, the
noise in the wrong unit) is O(1).
"""

import warnings

import numpy as np
import pytest
import scipy.stats
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from skbong import BongRegressor
from skbong._online import conjugate as _conjugate
from skbong._online import stream
from skbong.exceptions import NonFiniteUpdateError, SkippedRowsWarning

U = np.finfo(np.float64).eps / 2


def _data(n=120, d=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = X @ rng.normal(size=d) + 2.0 + 0.5 * rng.normal(size=n)
    return X, y


@pytest.fixture
def calls(monkeypatch):
    """Records the inputs and outputs of every closed-form update."""
    seen = []
    update = _conjugate.update

    def spy(mean, cov, noise, H, y, obs_var):
        out = update(mean, cov, noise, H, y, obs_var)
        seen.append(((mean, cov, noise, H, y, obs_var), out))
        return out

    monkeypatch.setattr(_conjugate, "update", spy)
    return seen


def _streaming(monkeypatch):
    """From here on every bank streams its filters (the closed form is off)."""
    monkeypatch.setattr(stream, "conjugate_bank", lambda est, config, X, w: False)


def _rel(a, b):
    return np.max(np.abs(np.asarray(a) - np.asarray(b))) / np.max(np.abs(b))


def _bound(est, n):
    kappa = max(np.linalg.cond(c) for c in est._state[1])
    return 100 * kappa * n * est._state[0].shape[1] * U


@pytest.mark.parametrize("noise", ["learned", "fixed"])
def test_evidence_is_the_marginal_likelihood_of_all_rows(calls, noise):
    X, y = _data(n=60, d=3)
    est = BongRegressor(**({"obs_variance": 0.3} if noise == "fixed" else {})).fit(X, y)
    assert len(calls) == 1  # one closed form for the whole fit
    (mean, cov, prior_noise, H, rows, obs_var), out = calls[0]
    # the design's columns are the flat parameters' order: the weights, then the intercept
    np.testing.assert_allclose(H @ np.r_[np.arange(3.0), 10.0], X @ np.arange(3.0) + 10.0,
                               rtol=1e-14)
    for k in range(len(mean)):
        if noise == "fixed":
            ref = scipy.stats.multivariate_normal(H @ mean[k], H @ cov[k] @ H.T + 0.3 * np.eye(60))
        else:
            a, b = prior_noise[0][k, 0], prior_noise[1][k, 0]
            v = cov[k] * a / b
            ref = scipy.stats.multivariate_t(H @ mean[k], (b / a) * (H @ v @ H.T + np.eye(60)),
                                             df=2 * a)
        np.testing.assert_allclose(out.log_evidence[k], ref.logpdf(rows), rtol=1e-10)
    # the bank's evidence is the fresh bank's zero plus those values
    np.testing.assert_allclose(est.log_evidence_, out.log_evidence, rtol=1e-12)


@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("noise", ["learned", "fixed"])
def test_closed_form_equals_the_streamed_bank(monkeypatch, calls, fit_intercept, noise):
    """A fresh fit, then a continued partial_fit: the posterior, the noise and the evidence
    of every filter as when the K filters stream the rows one by one."""
    X, y = _data(n=150, d=5, seed=1)
    kw = dict(fit_intercept=fit_intercept, **({"obs_variance": 0.2} if noise == "fixed" else {}))

    def run():
        est = BongRegressor(**kw).fit(X[:100], y[:100])
        return est.partial_fit(X[100:], y[100:])

    closed = run()
    assert len(calls) == 2  # both calls took the closed form (100 and 50 rows > 2P)
    _streaming(monkeypatch)
    streamed = run()
    assert len(calls) == 2
    tol = _bound(streamed, 150)
    assert tol < 1e-6
    for a, b in zip(closed._state, streamed._state):
        assert _rel(a, b) <= tol
    if noise == "learned":
        for a, b in zip(closed._noise, streamed._noise):
            assert _rel(a, b) <= tol
    else:
        assert closed._noise is None and streamed._noise is None
    # the evidences are sums of 150 log densities: compared against their own magnitude
    assert np.max(np.abs(closed.log_evidence_ - streamed.log_evidence_)) <= tol * np.max(
        np.abs(streamed.log_evidence_))
    np.testing.assert_allclose(closed.prior_weights_, streamed.prior_weights_, atol=1e-8)
    np.testing.assert_allclose(closed.predict(X[:5]), streamed.predict(X[:5]), rtol=1e-8)


@pytest.mark.parametrize("on_error", ["raise", "skip"])
def test_an_absurd_target_is_still_caught(calls, on_error):
    """One target of 1e30 among 120 rows: refused by the reference filter's stream
    before any closed form; with "skip" the bank is the fit of the other rows."""
    X, y = _data(n=120, d=3)
    bad = y.copy()
    bad[70] = 1e30
    est = BongRegressor(on_error=on_error)
    if on_error == "raise":
        with pytest.raises(NonFiniteUpdateError, match="row 70 "):
            est.fit(X, bad)
        assert not calls
        return
    with pytest.warns(SkippedRowsWarning):
        est.fit(X, bad)
    assert est.n_skipped_ == 1
    keep = np.arange(120) != 70
    ref = BongRegressor().fit(X[keep], y[keep])
    np.testing.assert_allclose(est.posterior_mean_, ref.posterior_mean_, rtol=1e-9)
    np.testing.assert_allclose(est.log_evidence_, ref.log_evidence_, rtol=1e-9)


@pytest.mark.parametrize(
    "params, n, weights",
    [
        ({}, 12, None),  # P = 5: 12 rows > 2P take the closed form, 10 stream
        ({}, 10, None),
        ({"drift": "auto"}, 120, None),
        ({"family": "dlr"}, 120, None),
        ({"batch_size": 4}, 120, None),
        ({"dtype": "float32"}, 120, None),
        ({"calibration": "prequential"}, 120, None),
        ({"likelihood": "student_t"}, 120, None),
        ({"hessian": "lin_ef"}, 120, None),
        ({}, 120, "half"),
        ({"hidden_layer_sizes": (3,), "prior_variance": "bank"}, 120, None),
    ],
)
def test_taken_only_where_the_bank_is_exact(calls, params, n, weights):
    X, y = _data(n=n, d=4)
    w = None if weights is None else np.full(n, 0.5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = BongRegressor(**params).fit(X, y, sample_weight=w)
    assert est.log_evidence_ is not None  # a bank ran
    expected = not params and weights is None and n > 10
    assert (len(calls) == 1) == expected


def test_the_reference_is_the_most_lenient_then_the_most_probable_filter():
    """On a fresh bank (equal evidence) the rows are judged by the widest prior, whose
    predictive refuses the fewest rows; later by the filter of highest evidence, the one
    that carries the predictions; a dropped filter never."""
    X, y = _data(n=60, d=3)
    est = BongRegressor().fit(X, y)
    fresh = np.zeros(7)
    kept = est._log_evidence
    est._log_evidence = fresh
    assert stream.bank_reference(est, np.ones(7, bool)) == 6  # σ₀² = 1000
    est._log_evidence = kept
    best = int(np.argmax(est.log_evidence_))
    assert best != 6
    assert stream.bank_reference(est, np.isfinite(est.log_evidence_)) == best
    est._log_evidence = np.where(np.arange(7) == best, -np.inf, est._log_evidence)
    second = int(np.argsort(est._log_evidence)[-1])
    assert stream.bank_reference(est, np.isfinite(est._log_evidence)) == second


@settings(max_examples=15, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(
    cuts=st.lists(st.integers(1, 59), max_size=4, unique=True),
    dropped=st.lists(st.integers(0, 59), max_size=5, unique=True),
    seed=st.integers(0, 2**16),
)
def test_any_split_equals_one_fit_to_rounding(cuts, dropped, seed):
    """Any split of 60 rows into partial_fit calls (each call of more than 2P = 8 rows in
    closed form, the others streamed), with some rows at weight 0, equals one fit to
    rounding: the posterior, the noise and the evidence."""
    X, y = _data(n=60, d=3, seed=seed)
    w = np.ones(60)
    w[dropped] = 0.0
    whole = BongRegressor().fit(X, y, sample_weight=w)
    est = BongRegressor()
    for rows in np.split(np.arange(60), sorted(cuts)):
        if not np.any(w[rows] > 0):
            continue
        est.partial_fit(X[rows], y[rows], sample_weight=w[rows])
    if not hasattr(est, "_state"):
        return
    tol = _bound(whole, 60)
    for a, b in zip(est._state + est._noise, whole._state + whole._noise):
        assert _rel(a, b) <= tol
    assert np.max(np.abs(est.log_evidence_ - whole.log_evidence_)) <= tol * np.max(
        np.abs(whole.log_evidence_))


def test_a_filter_whose_update_fails_is_refused_alone():
    """A singular prior covariance in one filter: that filter is refused (ok False,
    evidence −inf) and the others are what they are without it."""
    rng = np.random.default_rng(3)
    H, y = rng.normal(size=(30, 3)), rng.normal(size=30)
    mean = rng.normal(size=(3, 3))
    cov = np.stack([np.eye(3) * v for v in (0.5, 1.0, 2.0)])
    noise = (np.full((3, 1), 3.0), np.full((3, 1), 1.5))
    good = _conjugate.update(mean, cov, noise, H, y, None)
    assert good.ok.all()
    cov[1] = 0.0
    out = _conjugate.update(mean, cov, noise, H, y, None)
    assert out.ok.tolist() == [True, False, True]
    assert out.log_evidence[1] == -np.inf
    for k in (0, 2):
        np.testing.assert_allclose(out.mean[k], good.mean[k], rtol=1e-12)
        np.testing.assert_allclose(out.cov[k], good.cov[k], rtol=1e-12)
        np.testing.assert_allclose(out.log_evidence[k], good.log_evidence[k], rtol=1e-12)
        np.testing.assert_allclose(out.noise[1][k], good.noise[1][k], rtol=1e-12)
