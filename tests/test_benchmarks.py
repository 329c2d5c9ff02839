"""The benchmarks time the computation they claim to.

``benchmarks/bench_profile.py`` removes pieces of the stream step (the validity check,
the prequential outputs) to attribute their cost. On a stream where no update is
refused, removing them must not change the posterior: every variant must end where
``engine.run_stream`` ends (XLA may fuse the variants differently, so equality is to a
few float32 ulps of the state's scale, not bitwise), and the loop-only variant must
leave the belief untouched.

``benchmarks/bench_scaling.py --batch B`` streams B rows per step and counts every row
in its observations per second.
"""

import importlib.util
import sys
from pathlib import Path

import jax
import numpy as np
import pytest

from skbong import engine as E

BENCH = Path(__file__).resolve().parent.parent / "benchmarks"


def _load(name):
    sys.path.insert(0, str(BENCH))
    try:
        spec = importlib.util.spec_from_file_location(name, BENCH / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.path.remove(str(BENCH))


@pytest.fixture(scope="module")
def profile_module():
    yield from _load("bench_profile")


@pytest.fixture(scope="module")
def scaling_module():
    yield from _load("bench_scaling")


def test_profile_variants_compute_the_shipped_update(profile_module):
    bp, E = profile_module, profile_module.E
    cfg, state, mean0, hyper, (xs, ys, ws) = bp.make_problem("linreg10", "full", steps=16)
    key = jax.random.PRNGKey(0)
    shipped, _, _, ok = E.run_stream(cfg, state, mean0, hyper, xs, ys, ws, 0, key)
    assert np.all(np.asarray(ok))  # a clean stream: nothing refused, so nothing to select
    moved = np.max(np.abs(np.asarray(shipped.mean) - np.asarray(mean0)))
    assert moved > 1e-3  # the stream does update the belief
    eps = np.finfo(np.float32).eps
    for name in ("no check", "no outputs", "update only"):
        out, _ = bp.run(cfg, bp.VARIANTS[name], state, mean0, hyper, xs, ys, ws, key)
        for got, want in zip(out, shipped, strict=True):
            want = np.asarray(want)
            scale = max(np.max(np.abs(want)), 1.0)
            # 16 sequential steps, each a few roundings of the state's scale
            np.testing.assert_allclose(np.asarray(got), want, rtol=0, atol=1e3 * eps * scale,
                                       err_msg=name)
    idle, _ = bp.run(cfg, bp.VARIANTS["loop only"], state, mean0, hyper, xs, ys, ws, key)
    for got, want in zip(idle, state, strict=True):
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


def test_scaling_mini_batches_count_every_row(scaling_module):
    steps, batch = 4, 3
    args, n_params = scaling_module.stream_args("dlr", 1e3, steps, batch)
    xs, ys, ws = args[4:7]
    assert xs.shape[:2] == ys.shape[:2] == ws.shape == (steps, batch)
    _, log_lik, _, ok = E.run_stream(*args)
    assert np.asarray(log_lik).shape == (steps, batch) and np.all(np.asarray(ok))
    row = scaling_module.point("dlr", 1e3, steps, 1, batch)
    assert row["batch"] == batch and row["P"] == n_params
    # one step of B rows: observations per second = B / (seconds per step)
    np.testing.assert_allclose(row["obs_per_s"] * row["us_per_step"] * 1e-6, batch, rtol=1e-9)


@pytest.mark.parametrize("argv, steps", [([], 8), (["--steps", "64"], 64)])
def test_scaling_point_takes_its_steps(scaling_module, monkeypatch, capsys, argv, steps):
    """``--point dlr 1e6`` runs 8-step calls unless ``--steps`` says otherwise (the stream
    is not run: ``point`` is replaced by a recorder of its arguments)."""
    calls = []
    monkeypatch.setattr(scaling_module, "point", lambda *a: calls.append(a) or {"ok": 1})
    monkeypatch.setattr(sys, "argv", ["bench_scaling.py", "--point", "dlr", "1e6", *argv])
    scaling_module.main()
    assert calls == [("dlr", 1e6, steps, 3, 1)]
    assert capsys.readouterr().out.strip() == '{"ok": 1}'


# ---------------------------------------------------------------- bench_defaults


@pytest.fixture(scope="module")
def defaults_module():
    yield from _load("bench_defaults")


def _row(model, role, kind, **metrics):
    return {"model": model, "role": role, "kind": kind, "notes": "", **metrics}


def test_defaults_rule_compares_like_with_like(defaults_module):
    """``comparisons`` takes, per metric, the best comparable baseline (linear against
    linear, network against network, forgetting against all), and the relative gap
    (skbong - baseline) / |baseline| against the 2 % rule; a failed fit is a breach."""
    rows = [
        _row("lin", "skbong", "linear", nll=-0.97, rmse=1.01, fit_s=2.0),
        _row("net", "skbong", "network", nll=1.0, rmse=0.9, fit_s=1.0),
        _row("bad", "skbong", "linear", notes="FAILED ValueError"),
        _row("BR", "baseline", "linear", nll=-1.0, rmse=1.0, fit_s=4.0),
        _row("Huber", "baseline", "linear", nll=-0.5, rmse=0.99, fit_s=1.0),
        _row("MLP", "baseline", "network", nll=2.0, rmse=0.95, fit_s=0.5),
    ]
    stream = [
        _row("static", "skbong", "static", logloss=0.5, total_s=3.0),
        _row("forget", "skbong", "forgetting", logloss=0.5, total_s=3.0),
        _row("river", "baseline", "static", logloss=0.6, total_s=1.0),
        _row("river smooth", "baseline", "forgetting", logloss=0.45, total_s=2.0),
    ]
    recs = defaults_module.comparisons([("set", "raw", "reg", rows), ("s", "raw", "clf", stream)])
    got = {(r["skbong"], r["metric"]): r for r in recs}
    assert len(recs) == 3 * 2 + 2
    # lin: nll -0.97 against the best linear -1.0 (not Huber's -0.5): +0.03 / |-1.0| = 3 %
    r = got["lin", "nll"]
    assert (r["baseline"], r["status"]) == ("BR", "LOSS")
    assert r["gap"] == pytest.approx(0.03) and r["rel"] == pytest.approx(0.03)
    assert r["time_x"] == pytest.approx(2.0 / 4.0)
    # lin: rmse 1.01 against Huber's 0.99 (better than BR's 1.0): 0.02 / 0.99 > 2 %
    r = got["lin", "rmse"]
    assert (r["baseline"], r["status"]) == ("Huber", "LOSS")
    assert r["rel"] == pytest.approx(0.02 / 0.99) and r["time_x"] == pytest.approx(2.0)
    # net: only the MLP, though the linear baselines have the better NLL
    assert (got["net", "nll"]["baseline"], got["net", "nll"]["status"]) == ("MLP", "ok")
    assert got["net", "nll"]["rel"] == pytest.approx(-0.5)
    assert got["net", "rmse"]["status"] == "ok"
    assert got["bad", "nll"]["status"] == got["bad", "rmse"]["status"] == "FAILED"
    # static stream learner: the static river model only; forgetting: the best of both
    assert (got["static", "logloss"]["baseline"], got["static", "logloss"]["status"]) == (
        "river", "ok")
    r = got["forget", "logloss"]
    assert (r["baseline"], r["status"]) == ("river smooth", "LOSS")
    assert r["rel"] == pytest.approx(0.05 / 0.45) and r["time_x"] == pytest.approx(1.5)
    # exactly at the rule is not a breach; a hair above is
    at = defaults_module.comparisons([("c", "std", "clf", [
        _row("a", "skbong", "linear", logloss=1.02), _row("b", "baseline", "linear", logloss=1.0)
    ])], rule=0.0200001)
    assert at[0]["status"] == "ok"


def test_defaults_metrics_on_the_original_scale_of_y(defaults_module):
    """A fit on standardised y reports the same RMSE, NLL and coverage as the same fit on
    raw y: least squares is equivariant, so only the back-transform (RMSE times the s.d.,
    NLL plus log s.d.) can make them differ. The plug-in NLL of a point predictor is the
    Gaussian with the training RMS residual, computed here independently."""
    from sklearn.linear_model import LinearRegression

    bd = defaults_module
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 3)) * [1.0, 10.0, 100.0]
    y = 1e3 + 50.0 * (X @ [1.0, 0.1, 0.01]) + 20.0 * rng.normal(size=300)
    ds = bd.DataSet("toy", "reg", X[:200], y[:200], X[200:], y[200:], "")
    raw, std = bd.preparations(ds)
    assert std.y_scale == pytest.approx(y[:200].std()) and std.y_loc == pytest.approx(
        y[:200].mean())
    out = [bd.regression_scores(LinearRegression().fit(p.Xtr, p.ytr), p, ds.yte)
           for p in (raw, std)]
    for key in ("score", "rmse", "nll", "cov90"):
        assert out[1][key] == pytest.approx(out[0][key], rel=1e-9), key
    fit = LinearRegression().fit(X[:200], y[:200])
    resid = y[:200] - fit.predict(X[:200])
    sd = np.sqrt(np.mean(resid**2))
    err = y[200:] - fit.predict(X[200:])
    nll = np.mean(0.5 * np.log(2 * np.pi * sd**2) + 0.5 * (err / sd) ** 2)
    assert out[0]["nll"] == pytest.approx(nll, rel=1e-12)
    assert out[0]["rmse"] == pytest.approx(np.sqrt(np.mean(err**2)), rel=1e-12)
    assert out[0]["cov90"] == np.mean(np.abs(err) <= bd.Z90 * sd)


def test_defaults_synthetic_sets_are_what_they_claim(defaults_module):
    """The synthetic cases: a1a-like sparse binary columns of frequencies 0.1-30 %, 20
    distinct rows repeated 100 times, feature scales 1e2-1e4, y on a scale of 1e3, the
    stated number of gross outliers in the training targets and none in the test's."""
    sets = {ds.name: ds for ds in defaults_module.synthetic_sets(quick=False)}
    sb = sets["sparse binary"]
    X = np.vstack([sb.Xtr, sb.Xte])
    assert X.shape == (3000, 120) and set(np.unique(X)) == {0.0, 1.0}
    freq = X.mean(axis=0)
    assert freq.max() < 0.35 and freq.min() < 0.005 and 0.1 < sb.ytr.mean() < 0.9
    for task in ("reg", "clf"):
        dup = sets[f"duplicated rows ({task})"]
        rows, counts = np.unique(np.column_stack([dup.Xtr, dup.ytr]), axis=0,
                                 return_counts=True)
        assert len(rows) == 20 and np.all(counts == 100)
        assert len(np.unique(dup.Xte, axis=0)) == len(dup.Xte) == 1000
    fs = sets["feature scales 1e2-1e4"]
    np.testing.assert_allclose(fs.Xtr.std(axis=0), np.geomspace(1e2, 1e4, 8), rtol=0.1)
    assert 500 < sets["y scale 1e3"].ytr.std() < 2000
    for frac in (0.01, 0.05):
        ds = sets[f"outliers {frac:.0%}"]
        # the clean targets are x·w + 1 + N(0, 0.5²): refit on the test part, count the
        # training residuals beyond 8 noise s.d. (gross ones are 20-50)
        A = np.column_stack([ds.Xte, np.ones(len(ds.Xte))])
        w = np.linalg.lstsq(A, ds.yte, rcond=None)[0]
        train_res = ds.ytr - np.column_stack([ds.Xtr, np.ones(len(ds.Xtr))]) @ w
        assert np.sum(np.abs(train_res) > 4.0) == int(frac * len(ds.ytr))
        assert np.all(np.abs(ds.yte - A @ w) < 4.0)
    counts = sets["poisson counts"].ytr
    assert np.all(counts == np.round(counts)) and counts.min() >= 0


@pytest.fixture(scope="module")
def blocked_module():
    yield from _load("bench_blocked")


def test_the_blocked_filter_is_the_stream_s_kalman_filter(blocked_module):
    """``benchmarks/bench_blocked.py`` times the linear-Gaussian filter conditioned on
    blocks of rows: it must be the filter the stream runs one row at a time (the same
    posterior, to float32 rounding: 64 updates of unit-scale numbers, each a few ulps,
    so atol 1e-5), and the zero rows that pad a call to whole blocks condition on
    nothing."""
    bb = blocked_module
    cfg, state, mean0, hyper, (xs, ys, ws) = bb.make_problem("linreg10", "full", steps=64)
    shipped, _, _, ok = E.run_stream(cfg, state, mean0, hyper, xs, ys, ws, 0,
                                     jax.random.PRNGKey(0))
    assert np.all(np.asarray(ok))
    h = np.concatenate([np.asarray(xs[:, 0]), np.ones((64, 1), np.float32)], axis=1)
    y, r = np.asarray(ys[:, 0, 0]), hyper.obs_var
    for size in (16, 32):
        mean, cov, _ = bb.blocked(state.mean, state.cov, h, y, r, size)
        np.testing.assert_allclose(mean, shipped.mean, atol=1e-5)
        np.testing.assert_allclose(cov, shipped.cov, atol=1e-5)
    whole = bb.blocked(state.mean, state.cov, h[:32], y[:32], r, 16)
    padded = bb._call((state.mean, state.cov), h[:20], y[:20], r, 16)
    twenty = bb.blocked(state.mean, state.cov, h[:16], y[:16], r, 16)
    twenty = bb._call(twenty, h[16:20], y[16:20], r, 16)
    np.testing.assert_allclose(padded[1], twenty[1], atol=1e-6)
    assert not np.allclose(padded[1], whole[1], atol=1e-6)  # the rows 20–31 did count
