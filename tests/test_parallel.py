"""Parallel and distributed use: dask, fork-based pools, threads.

* **dask.distributed**: GridSearchCV and cross_validate with ``n_jobs=2`` inside
  ``joblib.parallel_backend("dask")`` on a LocalCluster (two thread workers in this
  process, ``processes=False``: the point is the dask scheduling path, which pickles the
  estimators, and it starts in about a second) return the same scores, the same best
  parameters and the same fitted estimators as ``n_jobs=1``. The workers run the same
  compiled programs on the same inputs, so the results are bitwise equal.
* **Fork after JAX**: JAX's runtime is multithreaded, and a child created by ``os.fork``
  after the parent used JAX deadlocks on its first computation. The estimators detect
  this (a fork handler records that the parent had started JAX) and raise a RuntimeError
  naming the cause and the fix from fit / partial_fit / predict / posterior_var_. Tested
  in a fresh interpreter (so that this process's JAX state does not matter) run with a
  timeout, so a regression fails instead of hanging CI: a ``multiprocessing`` "fork" pool
  and joblib's "multiprocessing" backend must fail fast with that message, and a pool
  forked *before* the parent used JAX must still work (no false alarm).
* **Threads**: concurrent predict / predict_proba / predict(return_std=True) calls on one
  fitted estimator from 8 threads, including the first calls on a freshly unpickled
  estimator (cold caches, lazily computed ``posterior_var_``), give exactly the serial
  answers.
"""

import os
import pickle
import signal
import subprocess
import sys
import textwrap
from concurrent.futures import ThreadPoolExecutor

import joblib
import numpy as np
import pytest
from numpy.testing import assert_array_equal
from sklearn.model_selection import GridSearchCV, StratifiedKFold, cross_validate
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

import skbong._core.guard as guard
from skbong import BongClassifier, BongRegressor

N, D = 48, 3
RNG = np.random.default_rng(5)
X = RNG.normal(size=(N, D)) * [1.0, 3.0, 0.3]
Y_BIN = (X[:, 0] - 0.3 * X[:, 1] + 0.5 * RNG.normal(size=N) > 0).astype(int)
Y_REG = X @ [1.0, 0.5, -2.0] + 0.2 * RNG.normal(size=N)
CV = StratifiedKFold(3, shuffle=True, random_state=0)
CLF = dict(family="full", dtype="float64", random_state=0)


def _pipe(**kw):
    return make_pipeline(StandardScaler(), BongClassifier(**{**CLF, **kw}))


# --------------------------------------------------------------------------- dask
@pytest.fixture(scope="module")
def dask_client():
    distributed = pytest.importorskip("distributed", reason="the 'dask' extra is not installed")
    cluster = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None
    )
    client = distributed.Client(cluster)
    yield client
    client.close()
    cluster.close()


def test_grid_search_on_dask(dask_client):
    grid = {"bongclassifier__prior_variance": [0.3, 3.0]}
    one = GridSearchCV(_pipe(), grid, cv=CV, scoring="neg_log_loss").fit(X, Y_BIN)
    with joblib.parallel_backend("dask"):
        two = GridSearchCV(_pipe(), grid, cv=CV, scoring="neg_log_loss", n_jobs=2).fit(X, Y_BIN)
    for key in ("mean_test_score", "split0_test_score", "split2_test_score"):
        assert_array_equal(two.cv_results_[key], one.cv_results_[key])
    assert two.best_params_ == one.best_params_
    assert_array_equal(two.best_estimator_[-1].posterior_mean_, one.best_estimator_[-1].posterior_mean_)
    assert_array_equal(two.predict_proba(X), one.predict_proba(X))


def test_cross_validate_on_dask(dask_client):
    kw = dict(cv=CV, scoring=["neg_log_loss", "accuracy"], return_estimator=True)
    one = cross_validate(_pipe(), X, Y_BIN, **kw)
    with joblib.parallel_backend("dask"):
        two = cross_validate(_pipe(), X, Y_BIN, n_jobs=2, **kw)
    for key in ("test_neg_log_loss", "test_accuracy"):
        assert_array_equal(two[key], one[key])
    for (train, _), a, b in zip(CV.split(X, Y_BIN), one["estimator"], two["estimator"]):
        assert b[-1].n_observations_ == len(train)
        assert_array_equal(b[-1].posterior_mean_, a[-1].posterior_mean_)
        assert_array_equal(b[-1].posterior_var_, a[-1].posterior_var_)


# ------------------------------------------------------------------ fork after JAX
def test_forked_child_refuses_every_entry_point(monkeypatch):
    """What the fork handler's flag does, in this process (no fork needed)."""
    reg = BongRegressor(family="diag").fit(X, Y_REG)
    monkeypatch.setattr(guard, "_FORKED_AFTER_JAX", True)
    calls = {
        "fit": lambda: BongRegressor().fit(X, Y_REG),
        "partial_fit": lambda: reg.partial_fit(X[:2], Y_REG[:2]),
        "predict": lambda: reg.predict(X),
        "posterior_var_": lambda: BongRegressor(family="diag").fit(X, Y_REG).posterior_var_,
    }
    for name, call in calls.items():
        with pytest.raises(RuntimeError, match=r"os\.fork\(\).*'loky'.*spawn") as info:
            call()
        assert "deadlock" in str(info.value), name


def test_fork_handler_records_a_started_runtime(monkeypatch):
    monkeypatch.setattr(guard, "_FORKED_AFTER_JAX", False)
    BongRegressor(family="diag").fit(X, Y_REG)  # JAX has certainly started now
    assert guard._jax_started()
    guard._after_fork_in_child()
    assert guard._FORKED_AFTER_JAX


CHILD = textwrap.dedent(
    """
    import faulthandler, multiprocessing as mp, sys, warnings
    # if anything hangs, print every thread's stack and exit before the test's timeout
    faulthandler.dump_traceback_later(float(sys.argv[2]), exit=True)
    import joblib, numpy as np
    from skbong import BongRegressor
    warnings.simplefilter("ignore")  # JAX's own os.fork() warning
    X = np.random.default_rng(0).normal(size=(16, 3))
    y = X @ [1.0, -1.0, 0.5]

    def predict(est):
        return est.predict(X)

    def fit(_):
        return BongRegressor(family="diag").fit(X, y).predict(X)

    def expect_refusal(run):
        try:
            run()
        except RuntimeError as err:
            assert "os.fork()" in str(err) and "loky" in str(err), err
            return
        raise AssertionError("no RuntimeError in the forked child")

    ctx = mp.get_context("fork")
    if sys.argv[1] == "before":  # fork before the parent uses JAX: must work
        with ctx.Pool(1) as pool:
            child = pool.apply_async(fit, (0,)).get(timeout=120)
        parent = BongRegressor(family="diag").fit(X, y).predict(X)
        assert np.array_equal(child, parent)
    else:
        est = BongRegressor(family="diag").fit(X, y)  # JAX starts in the parent
        with ctx.Pool(1) as pool:
            expect_refusal(lambda: pool.apply_async(predict, (est,)).get(timeout=60))
            expect_refusal(lambda: pool.apply_async(fit, (0,)).get(timeout=60))
        # one task: with two, the first refusal makes joblib terminate the pool while its
        # task handler may still be writing the second task, a stdlib Pool race that hung
        # once (CI, 2 busy cores) in multiprocessing's own terminate, outside skbong
        expect_refusal(
            lambda: joblib.Parallel(n_jobs=2, backend="multiprocessing", timeout=60)(
                joblib.delayed(predict)(est) for _ in range(1)
            )
        )
    print("OK")
    """
)


def _run_isolated(arg, timeout=240):
    """Run CHILD in a fresh interpreter and its own process group; kill the group (the
    forked children included) if it hangs."""
    proc = subprocess.Popen(
        [sys.executable, "-c", CHILD, arg, str(timeout - 30)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        pytest.fail(f"a forked child hung (no answer in {timeout} s)\n{out[-2000:]}\n{err[-6000:]}")
    assert proc.returncode == 0 and out.strip().endswith("OK"), err[-3000:]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork does not exist on this platform")
def test_fork_after_jax_fails_fast():
    _run_isolated("after")


@pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork does not exist on this platform")
def test_fork_before_jax_still_works():
    _run_isolated("before")


# ------------------------------------------------------------------------ threads
def _blocks():
    rng = np.random.default_rng(9)
    return [rng.normal(size=(n, D)) for n in (1, 7, 8, 9, 100, 129, 1100, 3, 50, 2)]


def _hammer(calls, n_threads=8, repeat=3):
    """Run every call ``repeat`` times from ``n_threads`` threads, interleaved."""
    jobs = [c for _ in range(repeat) for c in calls]
    with ThreadPoolExecutor(n_threads) as pool:
        futures = [pool.submit(call) for _, call in jobs]
        return [(name, f.result()) for (name, _), f in zip(jobs, futures)]


def _calls(est):
    calls = []
    for i, block in enumerate(_blocks()):
        calls.append((f"predict{i}", lambda b=block: est.predict(b)))
        if isinstance(est, BongClassifier):
            calls.append((f"proba{i}", lambda b=block: est.predict_proba(b)))
        else:
            calls.append((f"std{i}", lambda b=block: est.predict(b, return_std=True)))
    calls.append(("var", lambda: est.posterior_var_))
    return calls


def _serial(est):
    return {name: call() for name, call in _calls(est)}


def _assert_same(results, serial):
    for name, value in results:
        expected = serial[name]
        if isinstance(expected, tuple):
            assert all(np.array_equal(a, b) for a, b in zip(value, expected)), name
        else:
            assert np.array_equal(value, expected), name


@pytest.mark.parametrize(
    "make",
    [
        lambda: BongRegressor(family="full", predictive="linmc", random_state=0).fit(X, Y_REG),
        lambda: BongRegressor(
            family="dlr", rank=2, predictive="mc", predictive_samples=20, random_state=0
        ).fit(X, Y_REG),
        lambda: BongClassifier(
            family="diag", hidden_layer_sizes=(4,), predictive="mc", predictive_samples=20
        ).fit(X, Y_BIN),
    ],
    ids=["reg-full-linmc", "reg-dlr-mc", "clf-mlp-mc"],
)
def test_concurrent_predictions_equal_serial(make):
    est = make()
    serial = _serial(est)
    _assert_same(_hammer(_calls(est)), serial)
    cold = pickle.loads(pickle.dumps(est))  # fresh caches, posterior_var_ not yet computed
    cold._posterior_var = None
    _assert_same(_hammer(_calls(cold)), serial)
