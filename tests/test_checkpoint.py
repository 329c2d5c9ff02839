"""Checkpoint and resume: a streaming estimator pickled mid-stream and resumed (here, in
another process, or through joblib) continues exactly as if it had never stopped.

What is tested, and why the tolerances are what they are:

* **Same calls, with a checkpoint between two of them** (pickle, joblib.dump / load to a
  file, ``copy.deepcopy``): bitwise equal posterior, counters and predictions to the
  uninterrupted stream, in float32 and float64, for deterministic and MC rules, both
  estimators, a network and the dlr family. An estimator holds only numpy arrays and
  Python values (test_estimators checks that), pickle round-trips them exactly, and the
  resumed calls run the same compiled programs on the same inputs with the same keys
  (the MC keys are folded from the global step count, which is part of the state): the
  same floating-point operations in the same order, so nothing may differ.
* **Unseeded MC streams** (``random_state=None`` or a ``RandomState`` instance): the
  pickled copy is compared with the same object continuing, not with a deep copy (a
  copy shares any fault of the round trip), so a seed redrawn on unpickling or a step
  count reset on pickling shows.
* **In another process**: the checkpoint is resumed by a fresh Python interpreter
  (``subprocess``) which compiles its own programs; on the same machine and JAX version
  XLA emits the same code, so the results must again be bitwise equal.
* **The classifier's labels**: its stream passes ``classes`` on the first call; ``fit``
  on that call's rows, then the same ``partial_fit`` calls, must be bitwise the
  checkpointed stream (float64), so a label encoding that depended on how the classes
  were given would show.
* **One uninterrupted ``fit``** over all rows versus the checkpointed stream of
  ``partial_fit`` calls: different call boundaries run the steps in programs with other
  loop lengths (step buffers), which XLA may fuse differently. In float32 we allow the
  rounding of a different contraction order: each step rounds inner products of length
  ≤ P + 1, a relative error ≤ (P + 1) u per step (u = 2⁻²⁴) in each of the two runs, and
  the conjugate update (full, bong, lin_hess) does not amplify earlier errors, so after n
  steps the two may differ by 2 n (P + 1) u relative to the largest entry. In float64
  ``fit``'s 40 rows take the linear prior bank's closed form (``skbong._online.conjugate``, a
  call of more than 2P rows) while the calls of 8 stream: both backward stable, they
  may differ by about κ n P u (κ the covariance's condition number, u = 2⁻⁵³); 100
  times that is allowed.
* **An interrupted call**: a KeyboardInterrupt raised while ``partial_fit`` runs (from
  the progress callback, after the stream and before the commit) leaves the estimator
  bitwise as before the call, and sending the same rows again gives the uninterrupted
  result.
"""

import copy
import pickle
import textwrap

import joblib
import numpy as np
import pytest
from _subprocess import run_pickled

from skbong import BongClassifier, BongRegressor
from skbong._online import stream

D, CALL = 3, 8  # every call streams 8 rows: one compiled step buffer per configuration
N_CALLS, CUT = 5, 2  # checkpoint after the 2nd of 5 calls
N = CALL * N_CALLS
RNG = np.random.default_rng(11)
X = RNG.normal(size=(N, D))
Y_REG = np.tanh(X @ [1.0, -0.5, 0.3]) + 0.1 * RNG.normal(size=N)
Y_CLF = np.digitize(X[:, 0] - X[:, 1], [-0.5, 0.5])  # 3 classes
X_EVAL = RNG.normal(size=(CALL, D))

COMMON = dict(rank=2, n_iter=2, mc_samples=2, learning_rate=0.1, random_state=0)
CONFIGS = {
    "full-bong-lin_hess": dict(family="full"),
    "dlr-bong-mc_ef": dict(family="dlr", hessian="mc_ef"),
    "diag-blr-mc_ef-mlp": dict(
        family="diag", rule="blr", hessian="mc_ef", hidden_layer_sizes=(4,), prior_variance=0.1
    ),
}


def _make(kind, name, dtype):
    cls = BongClassifier if kind == "clf" else BongRegressor
    return cls(**CONFIGS[name], **COMMON, dtype=dtype, predictive="mc", predictive_samples=5)


def _target(est):
    return Y_CLF if isinstance(est, BongClassifier) else Y_REG


def _call(est, i):
    rows = slice(i * CALL, (i + 1) * CALL)
    kw = {"classes": [0, 1, 2]} if isinstance(est, BongClassifier) and i == 0 else {}
    return est.partial_fit(X[rows], _target(est)[rows], **kw)


def _result(est):
    """Everything that must survive a checkpoint: the belief, counters, predictions."""
    out = {
        "mean": est.posterior_mean_,
        "var": est.posterior_var_,
        "n_observations": np.array(est.n_observations_),
        "n_skipped": np.array(est.n_skipped_),
        "predict": est.predict(X_EVAL),
    }
    out.update({f"state{i}": a for i, a in enumerate(est._state)})
    if isinstance(est, BongClassifier):
        out["proba"] = est.predict_proba(X_EVAL)
    else:
        out["std"] = est.predict(X_EVAL, return_std=True)[1]
    return out


def _assert_same(a, b):
    assert a.keys() == b.keys()
    for k in a:
        assert a[k].dtype == b[k].dtype and np.array_equal(a[k], b[k]), k


CASES = [
    ("reg", "full-bong-lin_hess", "float32"),
    ("reg", "full-bong-lin_hess", "float64"),
    ("clf", "full-bong-lin_hess", "float64"),
    ("reg", "dlr-bong-mc_ef", "float32"),
    ("clf", "diag-blr-mc_ef-mlp", "float64"),
]
IDS = ["-".join(c) for c in CASES]


@pytest.fixture(scope="module", params=CASES, ids=IDS)
def streams(request):
    """(case, the estimator after CUT calls, the uninterrupted result after all calls)."""
    kind, name, dtype = request.param
    est = _make(kind, name, dtype)
    for i in range(CUT):
        _call(est, i)
    checkpoint = copy.deepcopy(est)
    for i in range(CUT, N_CALLS):
        _call(est, i)
    return request.param, checkpoint, _result(est)


def _resume(est):
    for i in range(CUT, N_CALLS):
        _call(est, i)
    return _result(est)


def test_pickle_resume_is_bitwise(streams):
    _, checkpoint, expected = streams
    blob = pickle.dumps(checkpoint)
    _assert_same(_resume(pickle.loads(blob)), expected)


def test_joblib_resume_is_bitwise(streams, tmp_path):
    _, checkpoint, expected = streams
    for compress in (0, 3):
        path = tmp_path / f"checkpoint_{compress}.joblib"
        joblib.dump(checkpoint, path, compress=compress)
        _assert_same(_resume(joblib.load(path)), expected)


@pytest.mark.parametrize("seeded", [False, True], ids=["random_state=None", "RandomState"])
def test_pickle_resume_of_an_unseeded_mc_stream_is_bitwise(seeded):
    """An MC rule and predictive with ``random_state=None`` or a ``RandomState`` instance,
    pickled mid-stream: the copy continues as the *same* object continues after being
    pickled (not a copy of it, which would share a fault of the round trip). So the seed
    must be kept, not redrawn from ``random_state`` on unpickling, and so must the step
    count the MC keys are folded from. With a ``RandomState`` the stream is also
    reproducible: both equal a stream that was never pickled."""

    def make():
        state = np.random.RandomState(3) if seeded else None
        params = dict(CONFIGS["dlr-bong-mc_ef"], **dict(COMMON, random_state=state))
        return BongRegressor(**params, predictive="mc", predictive_samples=5)

    est = make()
    for i in range(CUT):
        _call(est, i)
    blob = pickle.dumps(est)
    expected = _resume(est)
    _assert_same(_resume(pickle.loads(blob)), expected)
    if seeded:
        never_pickled = make()
        for i in range(CUT):
            _call(never_pickled, i)
        _assert_same(_resume(never_pickled), expected)


RESUME_SCRIPT = textwrap.dedent(
    """
    import pickle, sys
    import numpy as np
    sys.path.insert(0, {tests!r})
    import test_checkpoint as T

    with open(sys.argv[1], "rb") as fh:
        jobs = pickle.load(fh)
    results = {{key: T._resume(est) for key, est in jobs.items()}}
    with open(sys.argv[2], "wb") as fh:
        pickle.dump(results, fh)
    """
)


def test_resume_in_another_process(tmp_path):
    """All checkpoints go to one fresh interpreter (its start-up and compiles are paid once)."""
    jobs, expected = {}, {}
    for kind, name, dtype in (CASES[0], CASES[4]):
        est = _make(kind, name, dtype)
        for i in range(CUT):
            _call(est, i)
        jobs[(kind, name, dtype)] = pickle.loads(pickle.dumps(est))
        expected[(kind, name, dtype)] = _resume(est)
    results = run_pickled(RESUME_SCRIPT, jobs, tmp_path)
    assert results.keys() == expected.keys()
    for key in expected:
        _assert_same(results[key], expected[key])


def test_checkpointed_classifier_stream_equals_fit_then_partial_fit():
    """The stream passes ``classes`` to its first ``partial_fit`` call; ``fit`` on the same
    rows then ``partial_fit`` without ``classes`` runs the same programs on the same rows
    (float64), so the two must be bitwise equal: the labels are encoded alike however
    the classes were given."""
    est = _make("clf", "full-bong-lin_hess", "float64")
    for i in range(CUT):
        _call(est, i)
    resumed = _resume(pickle.loads(pickle.dumps(est)))
    ref = _make("clf", "full-bong-lin_hess", "float64").set_params(refine=0)  # one pass
    ref.fit(X[:CALL], Y_CLF[:CALL])
    for i in range(1, N_CALLS):
        _call(ref, i)
    _assert_same(resumed, _result(ref))


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_checkpointed_stream_equals_one_fit(dtype):
    est = _make("reg", "full-bong-lin_hess", dtype)
    for i in range(CUT):
        _call(est, i)
    resumed = _resume(pickle.loads(pickle.dumps(est)))
    whole = _result(_make("reg", "full-bong-lin_hess", dtype).fit(X, Y_REG))
    p = whole["mean"].shape[0]
    for k in ("n_observations", "n_skipped"):
        assert resumed[k] == whole[k], k
    if dtype == "float64":
        # fit's 40 rows (more than 2P) take the prior bank's closed form, the calls of 8
        # rows stream: the same conjugate posterior, rounded in another order
        kappa = max(np.linalg.cond(c) for c in whole["state1"])
        factor = 100 * kappa * N * p * np.finfo(np.float64).eps / 2
    else:
        factor = 2 * N * (p + 1) * np.finfo(np.float32).eps / 2
    for k in ("mean", "var", "state1", "predict", "std"):
        tol = factor * np.abs(whole[k]).max()
        assert np.abs(resumed[k] - whole[k]).max() <= tol, k


def test_interrupted_call_leaves_the_checkpoint_intact(monkeypatch):
    est = _make("clf", "full-bong-lin_hess", "float64")
    for i in range(CUT):
        _call(est, i)
    before = _result(est)
    twin = copy.deepcopy(est)

    def interrupt(n_rows):
        def callback(done, total):
            raise KeyboardInterrupt("stopped by the test's progress callback")

        return callback

    monkeypatch.setattr(stream, "_progress", lambda est, n: interrupt(n))
    with pytest.raises(KeyboardInterrupt, match="stopped by the test's progress callback"):
        _call(est, CUT)
    monkeypatch.undo()
    _assert_same(_result(est), before)
    _assert_same(_resume(est), _resume(twin))
