"""Shared helpers of the benchmark scripts: cases, timing, machine notes, output.

Timing is min-of-repeats of wall-clock time around a blocked call, which is the
estimate least disturbed by other processes sharing the cores; the load average is
recorded next to every table so that a loaded run can be recognised.
"""

import argparse
import json
import os
import platform
import resource
import sys
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

ROOT = Path(__file__).resolve().parent
# SKBONG_SRC=/path/to/another/checkout compares two versions under the same conditions
sys.path.insert(0, os.environ.get("SKBONG_SRC", str(ROOT.parent)))

from skbong import engine as E  # noqa: E402

RESULTS = ROOT / "results"

# The headline cases (the authors' code's per-step times to beat); the MLPs use ReLU.
CASES = {
    "linreg10": dict(model=dict(n_features=9, n_outputs=1), likelihood="gaussian"),
    "linreg100": dict(model=dict(n_features=99, n_outputs=1), likelihood="gaussian"),
    "mlp881": dict(
        model=dict(n_features=21, n_outputs=1, hidden=(20, 20), activation="relu"),
        likelihood="gaussian",
    ),
    "mlp2410": dict(
        model=dict(n_features=64, n_outputs=10, hidden=(32,), activation="relu"),
        likelihood="categorical",
    ),
}


def parser(description):
    """Argument parser with the options every script shares."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--quick", action="store_true", help="short run (fewer cases and repeats)")
    p.add_argument("--out", type=Path, default=None, help="JSON output path")
    return p


def machine():
    """What the numbers were measured on, including the load at the time."""
    return {
        "platform": platform.platform(),
        "python": platform.python_version(),
        "jax": jax.__version__,
        "devices": [str(d) for d in jax.devices()],
        "cpu_count": os.cpu_count(),
        "load_average": os.getloadavg(),
    }


def load_note():
    la = os.getloadavg()
    return f"load average {la[0]:.2f} {la[1]:.2f} {la[2]:.2f} on {os.cpu_count()} cores"


def block(tree):
    """Wait for every array of a pytree (asynchronous dispatch)."""
    return jax.tree_util.tree_map(lambda a: a.block_until_ready(), tree)


def min_time(fn, repeats, min_total=0.0):
    """Minimum wall time and mean process-CPU time of ``fn()`` over at least ``repeats``
    calls and ``min_total`` seconds. (This VM updates the CPU clock of other threads at
    scheduler ticks, so single short CPU readings are unreliable; their mean is not.)"""
    best, total, cpu, n = float("inf"), 0.0, 0.0, 0
    while n < repeats or total < min_total:
        t0, c0 = time.perf_counter(), time.process_time()
        fn()
        dt, dc = time.perf_counter() - t0, time.process_time() - c0
        best, total, cpu, n = min(best, dt), total + dt, cpu + dc, n + 1
        if n >= 50 * max(repeats, 1):
            break
    return best, cpu / n


def interleaved(calls, budget):
    """Fastest wall time of each compiled call in ``calls`` (name -> function), the
    calls run in turn until ``budget`` seconds are spent, so that every one of them sees
    the same machine load. Compile them (call each once) before."""
    best = dict.fromkeys(calls, float("inf"))
    stop = time.perf_counter() + budget
    while time.perf_counter() < stop:
        for name, fn in calls.items():
            t0 = time.perf_counter()
            block(fn())
            best[name] = min(best[name], time.perf_counter() - t0)
    return best


def peak_rss_mib():
    """Peak resident set size of this process so far (MiB)."""
    kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return kb / 1024.0


def current_rss_mib():
    """Current resident set size (MiB), from /proc."""
    with open("/proc/self/statm") as f:
        pages = int(f.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def teacher(mlp, seed, x):
    """Outputs of a random network of the learner's architecture (a learnable stream)."""
    theta = E.MLP(mlp.n_features, mlp.n_outputs, mlp.hidden or (16,), "tanh").flat_init(
        jax.random.PRNGKey(seed + 1), jnp.float32
    )
    net = E.MLP(mlp.n_features, mlp.n_outputs, mlp.hidden or (16,), "tanh")
    return net.apply(theta, jnp.asarray(x, jnp.float32))


def make_problem(case, family, rule="bong", hessian="lin_hess", rank=10, n_iter=10,
                 mc_samples=10, batch=1, steps=512, dtype=np.float32, seed=0, model=None):
    """Config, prior state and a random ``(steps, batch, ·)`` stream for a case."""
    spec = CASES[case] if model is None else dict(model=model, likelihood=case)
    mlp = E.MLP(**spec["model"])
    cfg = E.Config(mlp, spec["likelihood"], family, rank, rule, hessian, n_iter, mc_samples)
    rng = np.random.default_rng(seed)
    d, c = mlp.n_features, mlp.n_outputs
    xs = (rng.normal(size=(steps, batch, d)) / np.sqrt(d)).astype(dtype)  # unit-norm rows
    f = np.asarray(teacher(mlp, seed, xs.reshape(-1, d))).reshape(steps, batch, c)
    if spec["likelihood"] == "categorical":
        ys = np.eye(c, dtype=dtype)[np.argmax(f, axis=-1)]
    elif spec["likelihood"] == "bernoulli":
        ys = (f > 0).astype(dtype)
    else:
        ys = (f + 0.1 * rng.normal(size=f.shape)).astype(dtype)
    ws = np.ones((steps, batch), dtype)
    # σ₀² = 0.1, R = 0.1, α = 0.1: every family stays finite on these streams
    hyper = E.Hyper(*(jnp.asarray(v, dtype) for v in (0.1, 0.1, 0.1, 1.0, 0.0)))
    mean0, state = E.prior(cfg, seed, hyper.prior_var, np.dtype(dtype))
    data = tuple(jnp.asarray(a) for a in (xs, ys, ws))
    return cfg, state, mean0, hyper, data


def time_stream(cfg, state, mean0, hyper, data, repeats=5, min_total=0.5):
    """First-call and min-of-repeats wall time of one ``run_stream`` call.

    Returns ``(compile_s, best_s, mean_cpu_s, ok_fraction)``: compile_s is the first call
    (trace, compile and one run) less one warm run; best_s the fastest warm call (wall
    time) and mean_cpu_s the mean process-CPU time of a warm call.
    """
    xs, ys, ws = data
    args = (cfg, state, mean0, hyper, xs, ys, ws, 0, jax.random.PRNGKey(0))
    t0 = time.perf_counter()
    out = block(E.run_stream(*args))
    first = time.perf_counter() - t0
    ok = float(np.mean(np.asarray(out[3])))
    best, cpu = min_time(lambda: block(E.run_stream(*args)), repeats, min_total)
    return max(first - best, 0.0), best, cpu, ok


def has_gpu():
    try:
        return any(d.platform == "gpu" for d in jax.devices())
    except RuntimeError:  # pragma: no cover
        return False


def write_json(payload, default_name, out):
    path = Path(out) if out is not None else RESULTS / default_name
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = {"machine": machine(), **payload}
    path.write_text(json.dumps(payload, indent=1, default=str))
    print(f"\nwrote {path}")
    return path


def table(rows, columns, formats=None):
    """Print a list of dicts as an aligned text table."""
    formats = formats or {}

    def fmt(col, v):
        if v is None:
            return "-"
        f = formats.get(col)
        return f.format(v) if f and isinstance(v, (int, float)) else str(v)

    cells = [[fmt(c, r.get(c)) for c in columns] for r in rows]
    widths = [max(len(c), *(len(row[i]) for row in cells)) if cells else len(c)
              for i, c in enumerate(columns)]
    print("  ".join(c.rjust(w) for c, w in zip(columns, widths)))
    for row in cells:
        print("  ".join(v.rjust(w) for v, w in zip(row, widths)))


class Tee:
    """Write to the terminal and keep a copy for ``--out``."""

    def __init__(self, stream):
        self.stream, self.parts = stream, []

    def write(self, text):
        self.stream.write(text)
        self.parts.append(text)

    def flush(self):
        self.stream.flush()

    def text(self):
        return "".join(self.parts)


def expected_calibration_error(proba, y, n_bins=15):
    """ECE of the top-class confidence (Guo et al. 2017): ``n_bins`` equal-width bins
    ((b−1)/B, b/B] of [0, 1], Σ_b (n_b / n) |accuracy_b − mean confidence_b|."""
    conf = proba.max(axis=1)
    correct = proba.argmax(axis=1) == y
    bins = np.clip(np.ceil(conf * n_bins).astype(int) - 1, 0, n_bins - 1)
    ece = 0.0
    for b in range(n_bins):
        sel = bins == b
        if sel.any():
            ece += sel.mean() * abs(correct[sel].mean() - conf[sel].mean())
    return float(ece)
