"""GPU against CPU: the MNIST CNN stream (P = 57,722, dlr-10) and dlr-10 / diag at P = 1e6.

Each (platform, matmul precision) runs in a fresh process (``JAX_PLATFORMS`` and
``JAX_DEFAULT_MATMUL_PRECISION`` set for that child only; nothing here changes the
configuration of a process that imports skbong). In each:

* **CNN** (the BONG paper's MNIST network, ``benchmarks/paper/mnist_cnn.py``; BONG,
  LIN-HESS, dlr-10, σ₀² = 0.01, float32): ``BongClassifier.fit`` on the first
  ``--n-cnn`` training images, once to compile and once warm (µs per image of the warm
  fit: the compiled stream, one image per step), the median of 50 one-row
  ``partial_fit`` calls after a warm-up (``bench_gpu_calls.py``), and the plugin
  accuracy on 1,000 test images.
  The fitted posterior mean is written out, and the parent reports its largest
  difference between the processes, relative to the CPU's (the same stream, so only
  rounding separates them).
* **P = 1e6** (``bench_scaling.py``'s one-hidden-layer regression MLP): warm µs per step of
  the compiled stream, min of repeats, for dlr-10 and diag, and dlr-10 at P = 1e5.

``--precisions`` are values of ``JAX_DEFAULT_MATMUL_PRECISION``; ``default`` leaves it
unset, which since :func:`skbong.engine.program` means full float32 products in
skbong's programs (before it: XLA's default, TensorFloat-32 on the H200).

Usage: ``python benchmarks/bench_gpu.py [--data-dir DIR] [--platforms cuda,cpu]
[--precisions default,highest] [--profile FILE] [--trace DIR] [--out FILE]``. Without a GPU it measures the CPU alone.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from _common import ROOT, has_gpu, load_note, parser, table, write_json

sys.path.insert(0, str(ROOT / "paper"))
DATA = (ROOT.parent / ".." / "shared" / "data").resolve()


def _cnn(n_train, out_dir):
    """Fit the paper's CNN with dlr-10 on this process's platform; dict of figures (the
    one-image ``partial_fit`` as ``bench_gpu_calls.py`` times it)."""
    import jax
    from bench_gpu_calls import cnn_calls, cnn_estimator
    from mnist_cnn import load

    mnist = load(Path(os.environ["BENCH_DATA"]))
    Xtr, ytr, Xte, yte = mnist
    X, y = Xtr[:n_train], ytr[:n_train]
    est = cnn_estimator()
    t0 = time.perf_counter()
    est.fit(X, y)
    first = time.perf_counter() - t0
    t0 = time.perf_counter()
    est.fit(X, y)
    warm = time.perf_counter() - t0
    _trace("cnn", lambda: est.fit(X, y))
    acc = float(np.mean(est.predict(Xte[:1000]) == yte[:1000]))
    np.save(out_dir / "cnn_mean.npy", np.asarray(est.posterior_mean_, np.float64))
    gpu = jax.devices()[0].platform == "gpu"
    calls = cnn_calls(mnist, os.environ.get("BENCH_PROFILE") if gpu else None)
    return {"n_train": n_train, "fit_first_s": first, "fit_warm_s": warm,
            "us_per_image_fit": warm / n_train * 1e6,
            "us_per_partial_fit": calls["cnn_partial_fit_us"],
            "accuracy_1000": acc, "device": str(jax.devices()[0])}


def _trace(name, run):
    """With ``BENCH_TRACE`` set: a ``jax.profiler`` trace of ``run()`` (already compiled),
    its Perfetto JSON copied there as ``trace_<name>.json.gz`` (per-kernel device times)."""
    if not os.environ.get("BENCH_TRACE"):
        return
    import shutil

    import jax

    with tempfile.TemporaryDirectory() as tmp:
        with jax.profiler.trace(tmp, create_perfetto_trace=True):
            jax.block_until_ready(run())
        for f in Path(tmp).rglob("perfetto_trace.json.gz"):
            shutil.copy(f, Path(os.environ["BENCH_TRACE"]) / f"trace_{name}.json.gz")


def _trace_dlr(p, steps=16):
    """Trace ``steps`` one-row steps of bench_scaling's dlr-10 stream at P ≈ ``p``."""
    import jax
    from bench_scaling import stream_args

    from skbong import engine as E

    args, _ = stream_args("dlr", p, steps)
    jax.block_until_ready(E.run_stream(*args))
    _trace(f"dlr_{int(p)}", lambda: E.run_stream(*args))


def child(n_cnn, out_dir):
    """Every measurement of one process; prints one JSON line."""
    import jax
    from bench_scaling import point

    res = {"platform": jax.devices()[0].platform,
           "precision": os.environ.get("JAX_DEFAULT_MATMUL_PRECISION", "default")}
    gpu = res["platform"] == "gpu"
    try:
        res["cnn"] = _cnn(n_cnn, out_dir)
    except Exception as e:  # report and go on to the other points
        res["cnn"] = {"error": repr(e)[-500:]}
    print(f"   cnn: {res['cnn']}", file=sys.stderr, flush=True)
    res["scaling"] = []
    for fam, p in (("dlr", 1e5), ("dlr", 1e6), ("diag", 1e6)):
        steps = 64 if gpu or p < 1e6 else 8
        try:
            row = point(fam, p, steps, 5 if gpu else 3)
        except Exception as e:
            row = {"family": fam, "P": int(p), "error": repr(e)[-500:]}
        res["scaling"].append(row)
        print(f"   {fam} {p:.0e}: {row.get('us_per_step', row.get('error'))}",
              file=sys.stderr, flush=True)
    if gpu:
        _trace_dlr(1e6)
    print(json.dumps(res))


def main():
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--data-dir", type=Path, default=DATA)
    p.add_argument("--n-cnn", type=int, default=256, help="images streamed by the CNN fit")
    p.add_argument("--platforms", default=None, help="default: cuda,cpu with a GPU, else cpu")
    p.add_argument("--precisions", default="default,highest",
                   help="JAX_DEFAULT_MATMUL_PRECISION values tried on the GPU")
    p.add_argument("--profile", type=Path, default=None,
                   help="write a cProfile of 30 one-row partial_fit calls on the GPU here")
    p.add_argument("--trace", type=Path, default=None,
                   help="write jax.profiler traces (Perfetto JSON) of the GPU runs here")
    p.add_argument("--child", type=Path, default=None, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        return child(args.n_cnn, args.child)
    platforms = (args.platforms or ("cuda,cpu" if has_gpu() else "cpu")).split(",")
    runs = [(pl, pr) for pl in platforms
            for pr in (args.precisions.split(",") if pl != "cpu" else ["default"])]
    print(f"bench_gpu: float32, {load_note()}", flush=True)
    rows, means = [], {}
    with tempfile.TemporaryDirectory() as tmp:
        for pl, pr in runs:
            d = Path(tmp) / f"{pl}-{pr}"
            d.mkdir()
            env = dict(os.environ, JAX_PLATFORMS=pl, BENCH_DATA=str(args.data_dir),
                       BENCH_PROFILE=str(args.profile or ""), BENCH_TRACE=str(args.trace or ""))
            if pr != "default":
                env["JAX_DEFAULT_MATMUL_PRECISION"] = pr
            else:
                env.pop("JAX_DEFAULT_MATMUL_PRECISION", None)
            t0 = time.perf_counter()
            res = subprocess.run([sys.executable, str(ROOT / "bench_gpu.py"), "--child", str(d),
                                  "--n-cnn", str(args.n_cnn)],
                                 capture_output=True, text=True, env=env)
            print(f"-- {pl} / {pr}: {time.perf_counter() - t0:.0f} s\n{res.stderr[-3000:]}",
                  flush=True)
            if res.returncode != 0:
                rows.append({"platform": pl, "precision": pr, "error": res.stderr[-1000:]})
                continue
            rows.append(json.loads(res.stdout.strip().splitlines()[-1]))
            if (d / "cnn_mean.npy").exists():
                means[f"{pl}/{pr}"] = np.load(d / "cnn_mean.npy")
    ref = means.get("cpu/default")
    out = []
    for r in rows:
        if "error" in r:
            continue
        key = f"{'cpu' if r['platform'] == 'cpu' else 'cuda'}/{r['precision']}"
        c = r["cnn"]
        if key in means and ref is not None:
            c["mean_rel_diff_to_cpu"] = float(np.max(np.abs(means[key] - ref))
                                              / np.max(np.abs(ref)))
        out.append({"run": key, "case": "cnn dlr-10 fit", "us_per_step": c.get("us_per_image_fit"),
                    "extra": f"partial_fit {c.get('us_per_partial_fit', float('nan')):.0f} µs, "
                             f"acc {c.get('accuracy_1000', float('nan')):.3f}, "
                             f"Δmean {c.get('mean_rel_diff_to_cpu', float('nan')):.1e}, "
                             f"first fit {c.get('fit_first_s', float('nan')):.1f} s"})
        for s in r["scaling"]:
            out.append({"run": key, "case": f"{s['family']} P={s['P']}",
                        "us_per_step": s.get("us_per_step"),
                        "extra": f"{s['obs_per_s']:.0f} obs/s, first {s['first_call_s']:.1f} s"
                        if "us_per_step" in s else s.get("error", "")[-80:]})
    cpu = {o["case"]: o["us_per_step"] for o in out if o["run"] == "cpu/default"}
    for o in out:
        base = cpu.get(o["case"])
        o["cpu/this"] = f"{base / o['us_per_step']:.1f}×" if base and o["us_per_step"] else "-"
    print(f"\n== µs per step, {load_note()}")
    table(out, ["run", "case", "us_per_step", "cpu/this", "extra"], {"us_per_step": "{:.1f}"})
    write_json({"runs": rows, "table": out}, "gpu.json", args.out)


if __name__ == "__main__":
    main()
