"""Which eigensolver and loop form the dlr step should use on a GPU: µs per step, one variant per process.

Variants (each child is a fresh process):

* ``shipped``: skbong as it is (:func:`skbong.engine.linalg.eigh`: cuSOLVER's QR-based
  ``syevd`` on NVIDIA GPUs);
* ``jacobi``: ``linalg.eigh`` replaced by ``jnp.linalg.eigh``, which leaves the solver
  to JAX (cuSOLVER's Jacobi solver for small matrices), the solver skbong does not use;
* ``cmdbuf``: shipped, with XLA's command buffers (CUDA graphs) for loops and branches
  too (``XLA_FLAGS``, set for that child only).

Each child times ``bench_scaling.py``'s dlr-10 MLP stream (64 one-row steps, min of 5)
at P ≈ 1e4, 1e5 and 1e6, with a static trip count (``E.run_stream``, as
``bench_scaling.py`` times it) and with a traced one (``length=``, as the estimators
call it); and with ``--data-dir``, the MNIST CNN (``bench_gpu.py``'s) fitted on 512
images (min of 3 warm fits). On a CPU the solver has no choice, so ``shipped`` and
``jacobi`` are the same program there.

Usage: ``python benchmarks/bench_gpu_eigh.py [--data-dir DIR] [--variants shipped,jacobi,cmdbuf]
[--points 1e4,1e5,1e6] [--out FILE]``
"""

import argparse
import json
import os
import subprocess
import sys
from functools import partial
from pathlib import Path

from _common import ROOT, load_note, min_time, parser, table, write_json

FLAGS = {"cmdbuf": "--xla_gpu_enable_command_buffer=FUSION,CUBLAS,CUBLASLT,CUSTOM_CALL,"
                   "CUDNN,WHILE,CONDITIONAL --xla_gpu_graph_min_graph_size=1"}


def _best(run, repeats=5):
    """Fastest of ``repeats`` warm calls of ``run`` (its first call compiles)."""
    import jax

    jax.block_until_ready(run())
    return min_time(lambda: jax.block_until_ready(run()), repeats)[0]


def child(variant, data_dir, points):
    """Every measurement of one variant in this process; prints one JSON line."""
    import jax
    import jax.numpy as jnp

    from skbong import engine as E
    from skbong.engine import linalg

    if variant == "jacobi":
        from skbong.engine.families import dlr

        linalg.eigh = dlr.eigh = lambda a: tuple(jnp.linalg.eigh(a))
    from bench_scaling import stream_args

    res = {"variant": variant, "device": str(jax.devices()[0]), "rows": []}
    steps = 64
    for p in points:
        args, n_params = stream_args("dlr", p, steps)
        length = jnp.int32(steps)
        res["rows"].append({
            "case": f"dlr-10 P={n_params}",
            "static_us": _best(partial(E.run_stream, *args)) / steps * 1e6,
            "traced_us": _best(partial(E.run_stream, *args, length=length)) / steps * 1e6,
        })
    if data_dir is not None:
        sys.path.insert(0, str(ROOT / "paper"))
        from mnist_cnn import cnn_apply, cnn_init, load

        from skbong import BongClassifier

        Xtr, ytr, _, _ = load(Path(data_dir))
        est = BongClassifier(model=(cnn_init, cnn_apply), family="dlr", rank=10,
                             hessian="lin_hess", rule="bong", prior_variance=0.01,
                             dtype="float32", random_state=0)
        fit = lambda: est.fit(Xtr[:512], ytr[:512])  # noqa: E731
        res["rows"].append({"case": "MNIST CNN dlr-10 fit",
                            "traced_us": _best(fit, 3) / 512 * 1e6, "static_us": float("nan")})
    print(json.dumps(res))


def main():
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--data-dir", type=Path, default=None)
    p.add_argument("--variants", default="shipped,jacobi,cmdbuf")
    p.add_argument("--points", default="1e4,1e5,1e6", help="approximate P of the dlr streams")
    p.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        return child(args.child, args.data_dir, [float(v) for v in args.points.split(",")])
    print(f"bench_gpu_eigh: float32, {load_note()}", flush=True)
    out = []
    for variant in args.variants.split(","):
        env = dict(os.environ)
        if variant in FLAGS:
            env["XLA_FLAGS"] = (env.get("XLA_FLAGS", "") + " " + FLAGS[variant]).strip()
        cmd = [sys.executable, str(ROOT / "bench_gpu_eigh.py"), "--child", variant,
               "--points", args.points]
        if args.data_dir is not None:
            cmd += ["--data-dir", str(args.data_dir)]
        res = subprocess.run(cmd, capture_output=True, text=True, env=env)
        if res.returncode != 0:
            print(f"-- {variant}: failed\n{res.stderr[-2000:]}", flush=True)
            continue
        rows = json.loads(res.stdout.strip().splitlines()[-1])
        out += [dict(row, variant=variant, device=rows["device"]) for row in rows["rows"]]
    base = {r["case"]: r["traced_us"] for r in out if r["variant"] == "shipped"}
    for r in out:
        b = base.get(r["case"])
        r["vs_shipped"] = f"{r['traced_us'] / b:.2f}×" if b else "-"
    print(f"\n== µs per step, {load_note()}")
    table(out, ["variant", "device", "case", "static_us", "traced_us", "vs_shipped"],
          {"static_us": "{:.1f}", "traced_us": "{:.1f}"})
    write_json({"rows": out}, "gpu_eigh.json", args.out)


if __name__ == "__main__":
    main()
