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
