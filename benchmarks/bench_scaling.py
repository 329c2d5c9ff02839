"""Per-step cost and memory against the number of parameters P, for diag, dlr and full.

The model is a one-hidden-layer regression MLP on d = 100 inputs (linear regression
for the small full-covariance points) whose width sets P. Every point runs in a fresh
Python process so that its peak memory is its own: the peak resident set size
(``VmHWM``, reset through ``/proc/self/clear_refs`` before the timed runs) is reported
next to the size of the belief (the state), and the warm time per step of a compiled
``E.run_stream`` chunk (min of repeats). The exponent of time ∝ P^e is fitted by least
squares on the log-log points of each family.

Each point also records the minor page faults of one timed call and ``GLIBC_TUNABLES``:
at P = 1e6 a call's buffers are fresh ``mmap`` pages, faulted in 4 KiB at a time, unless
glibc backs them with huge pages (``GLIBC_TUNABLES=glibc.malloc.hugetlb=1``;
doc/performance.rst).

``--batch B`` streams mini-batches of B rows per step (one update per batch, the
estimators' ``batch_size``; default 1, the paper's setting): the time per step grows with
B and the observations per second count every row.

``--point FAMILY P`` measures one point in this process and prints its JSON (what each
child of the grid runs); ``--steps N`` sets the steps of its stream call (by default 8 at
P = 1e6, 64 from P = 1e5 and for full from P = 1,000, else 512: a ``fit`` streams in
calls of 512 steps, so a longer call shows how much of a short call's time per step is
the call's own).

Usage: ``python benchmarks/bench_scaling.py [--quick] [--families F,...] [--batch B]
[--out FILE]`` or ``python benchmarks/bench_scaling.py --point FAMILY P [--steps N]
[--batch B]``
"""

import json
import os
import resource
import subprocess
import sys
import time

import numpy as np
from _common import ROOT, has_gpu, load_note, parser, table, write_json

D = 100
GRID = {
    "diag": [1e3, 1e4, 1e5, 1e6, 1e7],
    "dlr": [1e3, 1e4, 1e5, 1e6],
    "full": [10, 30, 100, 300, 1000],
}
QUICK = {"diag": [1e3, 1e5, 1e6], "dlr": [1e3, 1e5, 1e6], "full": [10, 100, 1000]}


def _status_kib(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise KeyError(field)


def _reset_peak():
    """Reset VmHWM to the current RSS (Linux ≥ 4.0); False where not permitted."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def model_for(family, p):
    """(MLP kwargs, P) with about p parameters."""
    if family == "full" and p <= 1000:
        d = int(p) - 1  # linear regression: d weights and a bias
        return dict(n_features=d, n_outputs=1), d + 1
    width = max(1, round((p - 1) / (D + 2)))
    return (dict(n_features=D, n_outputs=1, hidden=(width,), activation="relu"),
            D * width + width + width + 1)


def stream_args(family, p, steps, batch=1):
    """The arguments of ``E.run_stream`` for ``steps`` steps of ``batch`` rows each of the
    MLP with about ``p`` parameters (:func:`model_for`) from its prior, float32; and P."""
    import jax
    import jax.numpy as jnp

    from skbong import engine as E

    spec, n_params = model_for(family, p)
    mlp = E.MLP(**spec)
    cfg = E.Config(mlp, "gaussian", family, 10, "bong", "lin_hess", 1, 1)
    rng = np.random.default_rng(0)
    d = mlp.n_features
    xs = (rng.normal(size=(steps, batch, d)) / np.sqrt(d)).astype(np.float32)
    ys = rng.normal(size=(steps, batch, 1)).astype(np.float32)
    ws = np.ones((steps, batch), np.float32)
    hyper = E.Hyper(*(jnp.asarray(v, jnp.float32) for v in (0.1, 1.0, 0.1, 1.0, 0.0)))
    mean0, state = E.prior(cfg, 0, hyper.prior_var, np.dtype(np.float32))
    state = jax.block_until_ready(state)
    return (cfg, state, mean0, hyper, xs, ys, ws, 0, jax.random.PRNGKey(0)), n_params


def point(family, p, steps, repeats, batch=1):
    """Measure one (family, P) point of ``batch`` rows per step in this process; returns a
    dict."""
    import jax

    from skbong import engine as E

    kib0 = _status_kib("VmRSS")
    args, n_params = stream_args(family, p, steps, batch)
    state_bytes = sum(a.nbytes for a in jax.tree_util.tree_leaves(args[1]))
    kib_state = _status_kib("VmRSS")
    t0 = time.perf_counter()
    out = jax.block_until_ready(E.run_stream(*args))
    first = time.perf_counter() - t0
    del out
    kib_warm = _status_kib("VmRSS")
    reset = _reset_peak()
    best, faults = float("inf"), []
    for _ in range(repeats):
        f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        t0 = time.perf_counter()
        out = jax.block_until_ready(E.run_stream(*args))
        best = min(best, time.perf_counter() - t0)
        faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0)
        del out
    peak = _status_kib("VmHWM")
    dev = jax.devices()[0]
    stats = dev.memory_stats() if dev.platform == "gpu" else None
    return {
        "device": dev.platform,
        "device_peak_mb": stats["peak_bytes_in_use"] / 2**20 if stats else None,
        "family": family,
        "P": n_params,
        "steps": steps,
        "batch": batch,
        "us_per_step": best / steps * 1e6,
        "obs_per_s": steps * batch / best,
        "first_call_s": first,
        "state_mb": state_bytes / 2**20,
        "rss_state_mb": (kib_state - kib0) / 1024,
        "peak_over_warm_mb": (peak - kib_warm) / 1024 if reset else None,
        "peak_over_start_mb": (peak - kib0) / 1024,
        "peak_reset": reset,
        "minor_faults_per_call": int(np.median(faults)),
        "glibc_tunables": os.environ.get("GLIBC_TUNABLES", ""),
    }


def steps_for(family, p):
    if p >= 1e6:
        return 8
    if p >= 1e5 or (family == "full" and p >= 1000):
        return 64
    return 512


def fit_exponent(rows):
    """Least-squares slope of log(time) on log(P), from the points with P ≥ 1000 for
    diag/dlr (below that, per-step overheads dominate) and P ≥ 100 for full."""
    out = {}
    for fam in {r["family"] for r in rows}:
        lo = 100 if fam == "full" else 1000
        pts = [(r["P"], r["us_per_step"]) for r in rows if r["family"] == fam and r["P"] >= lo]
        if len(pts) >= 2:
            x, y = np.log([p for p, _ in pts]), np.log([t for _, t in pts])
            out[fam] = float(np.polyfit(x, y, 1)[0])
    return out


def main():
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--point", nargs=2, metavar=("FAMILY", "P"),
                   help="measure one point in this process, JSON on stdout")
    p.add_argument("--families", default="diag,dlr,full")
    p.add_argument("--batch", type=int, default=1, help="rows per step (default 1)")
    p.add_argument("--steps", type=int, default=None,
                   help="steps per stream call with --point (default: steps_for's choice)")
    args = p.parse_args()
    if args.point:
        fam, pp = args.point[0], float(args.point[1])
        steps = args.steps or steps_for(fam, pp)
        print(json.dumps(point(fam, pp, steps, 3 if pp >= 1e6 else 5, args.batch)))
        return
    grid = QUICK if args.quick else GRID
    print(f"bench_scaling: float32, {args.batch} row(s) per step, {load_note()}")
    rows = []
    src = os.environ.get("SKBONG_SRC", str(ROOT.parent))
    platforms = ["cpu"] + (["cuda"] if has_gpu() else [])
    for platform, fam in [(pl, f) for pl in platforms for f in args.families.split(",")]:
        for pp in grid[fam]:
            cmd = [sys.executable, str(ROOT / "bench_scaling.py"), "--point", fam, str(pp),
                   "--batch", str(args.batch)]
            env = dict(os.environ, SKBONG_SRC=src, JAX_PLATFORMS=platform)
            res = subprocess.run(cmd, capture_output=True, text=True, env=env)
            if res.returncode != 0:
                print(f"  {fam} P≈{pp:.0e}: failed\n{res.stderr[-2000:]}", flush=True)
                rows.append({"family": fam, "P": int(pp), "error": res.stderr[-500:]})
                continue
            row = json.loads(res.stdout.strip().splitlines()[-1])
            rows.append(row)
            print(f"  {platform:4s} {fam:5s} P={row['P']:>9d}: {row['us_per_step']:10.1f} µs/step "
                  f"({row['obs_per_s']:9.0f} obs/s), state {row['state_mb']:8.1f} MB, "
                  f"peak over start {row['peak_over_start_mb']:8.1f} MB", flush=True)
    ok = [r for r in rows if "error" not in r]
    exps = fit_exponent([r for r in ok if r["device"] == "cpu"])
    print(f"\n== time per step vs P ==  ({load_note()})")
    table(ok, ["device", "family", "P", "steps", "batch", "us_per_step", "obs_per_s", "state_mb", "rss_state_mb",
               "peak_over_warm_mb", "peak_over_start_mb"],
          {c: "{:.1f}" for c in ("us_per_step", "obs_per_s", "state_mb", "rss_state_mb",
                                 "peak_over_warm_mb", "peak_over_start_mb")})
    print("\nfitted exponent e in time ∝ P^e: "
          + ", ".join(f"{k} {v:.2f}" for k, v in sorted(exps.items())))
    big = [r for r in ok if r["family"] == "dlr" and r["P"] >= 1e6 and r["device"] == "cpu"]
    for r in big:
        print(f"dlr-10 at P = {r['P']}: {r['obs_per_s']:.0f} obs/s (memory-bound: the step's "
              f"passes over the {r['state_mb']:.0f} MB belief), peak over start "
              f"{r['peak_over_start_mb']:.0f} MB = {r['peak_over_start_mb'] / r['state_mb']:.1f}× "
              "the state (target ≤ 3×)")
    write_json({"rows": rows, "exponents": exps, "load_after": load_note()},
               "scaling_quick.json" if args.quick else "scaling.json", args.out)


if __name__ == "__main__":
    main()
