"""A static bank retires the filters its evidence has left behind, and then costs one
filter (:func:`skbong._online.bank.retires`, :func:`skbong._online.stream._stream_bank`).

The reference is the bank that keeps every filter (``RETIRE_NATS = inf``): its log
evidence at the check steps (64, 256, 1024, …), read after ``partial_fit`` calls that end
there, says which filters must be retired and when; its predictions are what the
retiring bank must give, to the rounding of two programs (one filter alone against the
same filter inside the bank's ``vmap``), in float64."""

import numpy as np
import pytest

from skbong import BongClassifier
from skbong._online import bank

N, D, C = 600, 8, 4
CHECKS = (64, 256)


def _data(seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(N, D))
    logits = X @ (2.0 * rng.normal(size=(D, C)))
    p = np.exp(logits - logits.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    y = np.array([rng.choice(C, p=row) for row in p])
    return X, y


@pytest.fixture(autouse=True)
def small_banks_retire(monkeypatch):
    """These banks' filters have 36 parameters, below the size from which a bank retires
    for speed; the rule is the same at every size."""
    monkeypatch.setattr(bank, "RETIRE_MIN_PARAMS", 0)


def _fit(X, y, cuts=(), **params):
    est = BongClassifier(dtype="float64", random_state=0, **params)
    for rows in np.split(np.arange(len(y)), list(cuts)):
        est.partial_fit(X[rows], y[rows], classes=np.arange(C))
    return est


@pytest.fixture
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
    # the rule, run on the evidence of the bank that keeps every filter: at each check,
    # the active filters more than RETIRE_NATS behind the best active one leave
    active, expected = np.ones(len(kept.log_evidence_), bool), []
    for ev in at_checks:
        active &= ev >= np.max(ev[active]) - bank.RETIRE_NATS
        expected.append(~active)
    assert 1 < np.count_nonzero(~expected[0]) and np.count_nonzero(active) == 1  # by stages
    est = BongClassifier(dtype="float64", random_state=0)
    for rows, retired in zip(np.split(np.arange(N), list(CHECKS))[:-1], expected):
        est.partial_fit(X[rows], y[rows], classes=np.arange(C))
        np.testing.assert_array_equal(np.isneginf(est.log_evidence_), retired)
    est.partial_fit(X[CHECKS[-1] :], y[CHECKS[-1] :])
    survivor = int(np.flatnonzero(active)[0])
    np.testing.assert_array_equal(est.prior_weights_, active.astype(float))
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
    "active, expected",
    [([1, 1, 1, 1, 1, 1, 1], None), ([0, 1, 1, 1, 1, 1, 0], None), ([0, 1, 0, 0, 0, 1, 0], [1, 5]),
     ([0, 0, 1, 0, 0, 0, 0], [2]), ([1, 0, 1, 1, 0, 0, 0], [0, 1, 2, 3])],
)
def test_a_sub_bank_is_the_active_filters_padded(active, expected):
    run = bank.sub_bank(np.asarray(active, bool))
    assert (run is None) if expected is None else run.tolist() == expected


@pytest.mark.parametrize(
    "step0, n_steps, expected",
    [(0, 600, [64, 256]), (0, 64, [64]), (0, 63, []), (64, 64, []), (60, 1000, [4, 196, 964]),
     (300, 2000, [724]), (300, 4000, [724, 3796])],
)
def test_the_checks_fall_on_global_steps(step0, n_steps, expected):
    assert bank.retire_boundaries(step0, n_steps) == expected


def test_a_bank_of_small_filters_keeps_them(monkeypatch):
    """Below RETIRE_MIN_PARAMS the bank keeps every filter (its program calls cost more
    than its arithmetic), however far behind."""
    monkeypatch.setattr(bank, "RETIRE_MIN_PARAMS", (D + 1) * C + 1)
    X, y = _data()
    ev = _fit(X, y).log_evidence_
    assert np.all(np.isfinite(ev)) and ev.max() - ev.min() > bank.RETIRE_NATS


def test_a_retired_filter_learns_no_more_rows(monkeypatch):
    """At a margin that retires two of the seven filters at step 64, the five others stream
    on in the whole bank's program, which also runs the two: their beliefs stay as they
    were retired, and the others' are bitwise those of the bank that keeps every filter."""
    X, y = _data()
    monkeypatch.setattr(bank, "RETIRE_NATS", 1500.0)
    est = _fit(X[:64], y[:64])
    retired = np.isneginf(est.log_evidence_)
    assert np.count_nonzero(retired) == 2
    frozen = [a[retired].copy() for a in est._state]
    est.partial_fit(X[64:200], y[64:200])  # no check until step 256
    np.testing.assert_array_equal(np.isneginf(est.log_evidence_), retired)
    for a, b in zip(est._state, frozen):
        np.testing.assert_array_equal(a[retired], b)
    monkeypatch.setattr(bank, "RETIRE_NATS", np.inf)
    kept = _fit(X[:200], y[:200])
    for a, b in zip(est._state, kept._state):
        np.testing.assert_array_equal(a[~retired], b[~retired])
