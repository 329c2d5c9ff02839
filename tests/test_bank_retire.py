"""A static bank retires the filters its evidence has left behind, and then costs one
filter (:func:`skbong._online.bank.retires`, :func:`skbong._online.stream._stream_bank`).

The reference is the bank that keeps every filter (``RETIRE_NATS = inf``): its log
evidence at the check steps (64, 128, 256, …), read after ``partial_fit`` calls that end
there, says which filters must be retired and when; its predictions are what the
retiring bank must give, to the rounding of two programs (one filter alone against the
same filter inside the bank's ``vmap``), in float64."""

import numpy as np
import pytest

from skbong import BongClassifier
from skbong._online import bank

N, D, C = 600, 8, 4
CHECKS = (64, 128, 256, 512)


def _data(seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(N, D))
    logits = X @ (2.0 * rng.normal(size=(D, C)))
    p = np.exp(logits - logits.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    y = np.array([rng.choice(C, p=row) for row in p])
    return X, y


def _fit(X, y, cuts=(), **params):
    est = BongClassifier(dtype="float64", random_state=0, **params)
    for rows in np.split(np.arange(len(y)), list(cuts)):
        est.partial_fit(X[rows], y[rows], classes=np.arange(C))
    return est


@pytest.fixture(scope="module")
def reference():
    """The bank that keeps every filter, and its evidence at each check step."""
    X, y = _data()
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(bank, "RETIRE_NATS", np.inf)
        kept = _fit(X, y, cuts=CHECKS)
        at_checks = []
        probe = BongClassifier(dtype="float64", random_state=0)
        for rows in np.split(np.arange(N), list(CHECKS))[:-1]:
            probe.partial_fit(X[rows], y[rows], classes=np.arange(C))
            at_checks.append(probe.log_evidence_.copy())
    return X, y, kept, at_checks


def test_the_filters_far_behind_at_a_check_are_retired(reference):
    X, y, kept, at_checks = reference
    assert np.all(np.isfinite(kept.log_evidence_))  # nothing is retired without the rule
    # the first check at which one filter alone is within RETIRE_NATS of the best
    first = next(
        i for i, ev in enumerate(at_checks) if np.count_nonzero(ev >= ev.max() - bank.RETIRE_NATS) == 1
    )
    survivor = int(np.argmax(at_checks[first]))
    assert first > 0  # the data make the choice wait for more than the first check
    est = _fit(X, y)
    expected = np.arange(len(est.log_evidence_)) != survivor
    np.testing.assert_array_equal(np.isneginf(est.log_evidence_), expected)
    np.testing.assert_array_equal(est.prior_weights_, (~expected).astype(float))
    # the survivor learned every row, as in the bank that keeps every filter
    np.testing.assert_allclose(est.log_evidence_[survivor], kept.log_evidence_[survivor], rtol=1e-10)
    for a, b in zip(est._state, kept._state):
        np.testing.assert_allclose(a[survivor], b[survivor], rtol=1e-9, atol=1e-12)
    # ... so its predictions are the full bank's (whose other weights vanish)
    np.testing.assert_allclose(est.predict_proba(X[:100]), kept.predict_proba(X[:100]), atol=1e-9)


@pytest.mark.parametrize("cuts", [(1,), (63, 64, 65), (100, 255, 256, 257, 599), (300,)])
def test_any_split_retires_at_the_same_rows_bitwise(cuts):
    X, y = _data()
    whole = _fit(X, y)
    split = _fit(X, y, cuts=cuts)
    np.testing.assert_array_equal(split.log_evidence_, whole.log_evidence_)
    for a, b in zip(split._state, whole._state):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("params", [{"drift": "auto"}, {"process_noise": 1e-4}])
def test_a_dynamic_bank_keeps_every_filter(params):
    """A belief that drifts follows a change, after which a filter behind may lead: no
    filter leaves its bank, however far behind (a prior bank with process noise would
    otherwise be left with one filter, as the static one is)."""
    X, y = _data()
    est = _fit(X, y, **params)
    assert np.all(np.isfinite(est.log_evidence_))
    ev = est.log_evidence_
    assert ev.max() - ev.min() > bank.RETIRE_NATS  # the rule would have retired some


@pytest.mark.parametrize(
    "step0, n_steps, expected",
    [(0, 600, [64, 128, 256, 512]), (0, 64, [64]), (0, 63, []), (64, 64, [64]), (100, 500, [28, 156, 412])],
)
def test_the_checks_fall_on_global_steps(step0, n_steps, expected):
    assert bank.retire_boundaries(step0, n_steps) == expected
