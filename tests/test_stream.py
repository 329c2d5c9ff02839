"""The stream driver: chunking, padding and masking, atomic updates, keys, dtypes.

Everything here is exact: a masked or rejected step must leave the belief bitwise
unchanged, and any chunking of a stream must reproduce the same keys and hence the
same result.
"""

import importlib

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from skbong import engine as E


def _problem(family="diag", hessian="lin_hess", dynamic=False, n=12, b=1, dtype=np.float64):
    model = E.MLP(3, 1, (4,), "tanh")
    cfg = E.Config(model, "gaussian", family, 3, "bong", hessian, 1, 3, dynamic)
    rng = np.random.default_rng(0)
    x = rng.normal(size=(n, 3)).astype(dtype)
    y = (np.sin(x[:, :1]) + 0.1 * rng.normal(size=(n, 1))).astype(dtype)
    w = np.ones(n, dtype)
    hyper = E.Hyper(*(jnp.asarray(v, dtype) for v in (0.5, 0.1, 0.1, 0.9, 0.01)))
    mean0 = model.flat_init(jax.random.PRNGKey(0), dtype)
    state = E.init_state(cfg, mean0, hyper.prior_var)
    return cfg, state, mean0, hyper, x, y, w


def _leaves_equal(a, b):
    return all(np.array_equal(np.asarray(u), np.asarray(v)) for u, v in zip(a, b))


@pytest.mark.parametrize("n", [0, 1, 7, 8, 9, 63, 64, 65, 600, 1000, 1024])
def test_chunk_plan_covers_the_stream_with_few_buffers(n):
    plan = E.chunk_plan(n)
    assert sum(plan) == n and all(length > 0 for length in plan)
    assert plan.count(512) == n // 512 and len(plan) == n // 512 + (n % 512 > 0)
    buffers = {E.buffer_size(length) for length in plan}
    assert buffers <= set(E.CHUNK_SIZES) and len(buffers) <= 2
    for length in plan:  # the smallest buffer that holds the steps
        size = E.buffer_size(length)
        assert size >= length and all(s < length for s in E.CHUNK_SIZES if s < size)


def test_a_short_run_in_a_long_buffer_equals_the_exact_run():
    """``length`` < T runs exactly the first steps: the same belief and outputs as a
    buffer of that many steps, and the steps beyond it are not run."""
    with jax.enable_x64(True):
        cfg, state, mean0, hyper, x, y, w = _problem(hessian="mc_ef", n=8)
        key = jax.random.PRNGKey(5)
        xs, ys, ws = x[:, None], y[:, None], w[:, None]
        exact = E.run_stream(cfg, state, mean0, hyper, xs[:5], ys[:5], ws[:5], 2, key)
        short = E.run_stream(cfg, state, mean0, hyper, xs, ys, ws, 2, key, 5)
        assert _leaves_equal(exact[0], short[0])
        for a, b in zip(exact[1:], short[1:]):
            np.testing.assert_array_equal(np.asarray(b)[:5], np.asarray(a))
        np.testing.assert_array_equal(np.asarray(short[1])[5:], 0.0)
        assert bool(np.all(np.asarray(short[3])[5:]))


def test_chunking_reproduces_the_keys_and_the_result():
    with jax.enable_x64(True):
        cfg, state, mean0, hyper, x, y, w = _problem(hessian="mc_ef", n=10)
        key = jax.random.PRNGKey(3)
        whole, *_ = E.stream(cfg, state, mean0, hyper, x, y, w, 1, 0, key)
        part, *_ = E.stream(cfg, state, mean0, hyper, x[:3], y[:3], w[:3], 1, 0, key)
        part, *_ = E.stream(cfg, part, mean0, hyper, x[3:], y[3:], w[3:], 1, 3, key)
        assert _leaves_equal(whole, part)


@pytest.mark.parametrize("family", ["dlr", "diag", "full"])
def test_a_bank_is_its_filters_each_streamed_alone(family):
    """Filter k of ``run_bank`` (its own prior variance and drift) is the stream of that
    filter alone, whether the bank runs its filters in turn (dlr) or side by side: the
    same belief, log-likelihoods, outputs and flags. float64; rtol 1e-10 allows the two
    programs to group the same arithmetic differently (a sum's order), nothing more."""
    with jax.enable_x64(True):
        cfg, _, mean0, hyper, x, y, w = _problem(family=family, dynamic=True, n=12)
        prior_var = jnp.asarray([0.2, 0.5, 2.0])
        drift = jnp.asarray([1.0, 0.99, 0.9])
        states = [E.init_state(cfg, mean0, v) for v in prior_var]
        stacked = jax.tree_util.tree_map(lambda *a: jnp.stack(a), *states)
        key = jax.random.PRNGKey(1)
        xs, ys, ws = x[:, None], y[:, None], w[:, None]
        bank = E.run_bank(cfg, stacked, mean0, hyper._replace(prior_var=prior_var, drift=drift),
                          xs, ys, ws, 0, key)
        for k, state in enumerate(states):
            alone = E.run_stream(cfg, state, mean0,
                                 hyper._replace(prior_var=prior_var[k], drift=drift[k]),
                                 xs, ys, ws, 0, key)
            for a, b in zip(jax.tree_util.tree_leaves(bank), jax.tree_util.tree_leaves(alone)):
                np.testing.assert_allclose(np.asarray(a)[k], np.asarray(b), rtol=1e-10,
                                           atol=1e-12)


@pytest.mark.parametrize("dynamic", [False, True])
def test_all_padding_step_leaves_the_belief_unchanged(dynamic):
    with jax.enable_x64(True):
        cfg, state, mean0, hyper, x, y, w = _problem(dynamic=dynamic, n=4)
        xs, ys, ws = x[:, None], y[:, None], np.zeros((4, 1))
        out, log_lik, _, ok = E.run_stream(
            cfg, state, mean0, hyper, xs, ys, ws, 0, jax.random.PRNGKey(0)
        )
        assert _leaves_equal(out, state)
        assert bool(np.all(ok))


def test_zero_weight_rows_in_a_minibatch_change_nothing():
    """A padded mini-batch equals the same rows without the padding (float64 rounding)."""
    with jax.enable_x64(True):
        cfg, state, mean0, hyper, x, y, w = _problem(family="full", n=3)
        key = jax.random.PRNGKey(0)
        short = E.update(cfg, state, x, y, w, hyper, key)
        xp = np.concatenate([x, np.full((2, 3), 7.0)])
        yp = np.concatenate([y, np.full((2, 1), -3.0)])
        long = E.update(cfg, state, xp, yp, np.r_[w, 0.0, 0.0], hyper, key)
        for a, b in zip(short, long):
            np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("family", ["full", "diag", "dlr"])
def test_a_nonfinite_update_is_rejected_and_the_stream_goes_on(family):
    with jax.enable_x64(True):
        cfg, state, mean0, hyper, x, y, w = _problem(family=family, n=6)
        x = x.copy()
        x[2] = np.inf
        key = jax.random.PRNGKey(0)
        out, _, _, ok = E.stream(cfg, state, mean0, hyper, x, y, w, 1, 0, key)
        assert ok.tolist() == [True, True, False, True, True, True]
        # rejecting row 2 is the same as never having seen it (keys follow the step index)
        before, *_ = E.stream(cfg, state, mean0, hyper, x[:2], y[:2], w[:2], 1, 0, key)
        after, *_ = E.stream(cfg, before, mean0, hyper, x[3:], y[3:], w[3:], 1, 3, key)
        assert _leaves_equal(out, after)
        assert all(np.all(np.isfinite(np.asarray(a))) for a in out)


def test_minibatch_stream_reports_each_row():
    with jax.enable_x64(True):
        cfg, state, mean0, hyper, x, y, w = _problem(n=10)
        out, log_lik, f, ok = E.stream(
            cfg, state, mean0, hyper, x, y, w, 4, 0, jax.random.PRNGKey(0)
        )
        assert log_lik.shape == (10,) and f.shape == (10, 1) and ok.shape == (3,)
        # the first batch is predicted from the prior mean
        f0 = np.asarray(cfg.model.apply(mean0, x[:4]))
        np.testing.assert_array_equal(f[:4], f0)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_dtypes_without_touching_the_global_flag(dtype):
    flag = jax.config.jax_enable_x64
    with jax.enable_x64(dtype == np.float64):
        cfg, state, mean0, hyper, x, y, w = _problem(family="dlr", dtype=dtype, n=5)
        out, *_ = E.stream(cfg, state, mean0, hyper, x, y, w, 1, 0, jax.random.PRNGKey(0))
        assert all(np.asarray(a).dtype == dtype for a in out)
    assert jax.config.jax_enable_x64 == flag


def test_importing_skbong_leaves_jax_config_alone():
    import subprocess
    import sys

    code = "import jax; before = jax.config.jax_enable_x64; import skbong; print(before, jax.config.jax_enable_x64)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


def test_results_are_fetched_together_off_the_cpu(monkeypatch):
    """On an accelerator every chunk's outputs and soundness flag, and the last chunk's
    belief, start their device-to-host copies before the first conversion waits (seven
    copies in turn were half of a one-row ``partial_fit`` on an H200); on the CPU
    nothing is asked of them. Patched: the backend's name and the arrays'
    ``copy_to_host_async``."""
    from jax._src.array import ArrayImpl

    stream_mod = importlib.import_module("skbong.engine.filter.stream")
    cfg, state, mean0, hyper, x, y, w = _problem(n=600, dtype=np.float32)  # 512 + 88 steps
    fetched = []
    monkeypatch.setattr(ArrayImpl, "copy_to_host_async", lambda a: fetched.append(a))
    args = (cfg, state, mean0, hyper, x, y, w, 1, 0, jax.random.PRNGKey(0))
    monkeypatch.setattr(stream_mod.jax, "default_backend", lambda: "cpu")
    E.stream(*args, checked=True)
    assert fetched == []  # the CPU: a conversion copies nothing
    monkeypatch.setattr(stream_mod.jax, "default_backend", lambda: "gpu")
    new = E.stream(*args, checked=True)[0]
    per_chunk = [(512, 1), (512, 1, 1), (512,), ()]  # log_lik, f, ok of each step; the flag
    belief = jax.tree_util.tree_leaves(new)
    assert [a.shape for a in fetched] == per_chunk * 2 + [a.shape for a in belief]
    assert all(a is b for a, b in zip(fetched[-len(belief):], belief))  # the call's result
