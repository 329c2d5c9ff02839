"""Before / after: two versions of the engine timed in one process, interleaved.

On a shared machine the load changes from minute to minute, so two separate runs of
``bench_steps.py`` can differ by more than the change being measured. This script
imports a second checkout of skbong under another name (``--before``: a directory
holding ``skbong/``, e.g. made with ``git archive <rev> skbong | tar -x -C DIR``),
builds the same problems for both, and alternates their compiled streams until the
time budget is spent, keeping the fastest run of each. It also checks that both give
the same posterior mean (to float32 rounding).

Usage: ``python benchmarks/bench_compare.py --before DIR [--quick] [--out FILE] [SPEC ...]``
with SPEC ``case:family[:rule]`` (default: the headline cases of bench_steps).
"""

import importlib
import shutil
import sys
import tempfile
import time
from functools import partial
from pathlib import Path

import jax
import numpy as np
from _common import E, block, interleaved, load_note, make_problem, parser, table, write_json

DEFAULT = ["mlp881:dlr", "mlp2410:dlr", "linreg10:full", "linreg100:full", "mlp881:diag"]


def import_copy(src):
    """Import ``src/skbong`` as the package ``skbong_before``."""
    tmp = Path(tempfile.mkdtemp(prefix="skbong_before_"))
    shutil.copytree(Path(src) / "skbong", tmp / "skbong_before")
    sys.path.insert(0, str(tmp))
    return importlib.import_module("skbong_before.engine")


def problem(engine, spec, steps):
    parts = spec.split(":")
    case, family = parts[0], parts[1]
    rule = parts[2] if len(parts) > 2 else "bong"
    cfg, state, mean0, hyper, (xs, ys, ws) = make_problem(case, family, rule, steps=steps)
    if engine is not E:  # rebuild the configuration and state with the other engine's types
        fields = ("likelihood", "family", "rank", "rule", "hessian", "n_iter", "mc_samples",
                  "dynamic")
        cfg = engine.Config(engine.MLP(**vars(cfg.model)), *(getattr(cfg, f) for f in fields))
        state = (engine.DLRState if family == "dlr" else engine.MeanCov)(*state)
        hyper = engine.Hyper(*hyper)
    return (cfg, state, mean0, hyper, xs, ys, ws, 0, jax.random.PRNGKey(0))


def main():
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--before", required=True, help="directory holding the old skbong/")
    p.add_argument("--steps", type=int, default=512)
    p.add_argument("--seconds", type=float, default=None, help="time budget per spec")
    p.add_argument("specs", nargs="*", default=DEFAULT)
    args = p.parse_args()
    budget = args.seconds or (5.0 if args.quick else 20.0)
    old = import_copy(args.before)
    print(f"bench_compare: {args.steps}-step chunks, {budget:.0f} s per case, {load_note()}")
    rows = []
    for spec in args.specs:
        runs = {}
        for tag, engine in (("before", old), ("after", E)):
            a = problem(engine, spec, args.steps)
            t0 = time.perf_counter()
            out = block(engine.run_stream(*a))
            runs[tag] = (a, engine, time.perf_counter() - t0, out)
        diff = float(np.max(np.abs(np.asarray(runs["before"][3][0].mean)
                                   - np.asarray(runs["after"][3][0].mean))))
        best = interleaved({tag: partial(engine.run_stream, *a)
                            for tag, (a, engine, _, _) in runs.items()}, budget)
        row = {"spec": spec,
               "before_us": best["before"] / args.steps * 1e6,
               "after_us": best["after"] / args.steps * 1e6,
               "speedup": best["before"] / best["after"],
               "first_call_before_s": runs["before"][2],
               "first_call_after_s": runs["after"][2],
               "max_abs_mean_diff": diff}
        rows.append(row)
        print(f"  {spec:20s} {row['before_us']:10.2f} -> {row['after_us']:10.2f} µs/step "
              f"(x{row['speedup']:.2f}), |Δμ| ≤ {diff:.1e}", flush=True)
    print(f"\n== before / after, min over {budget:.0f} s interleaved ==  ({load_note()})")
    table(rows, ["spec", "before_us", "after_us", "speedup", "first_call_before_s",
                 "first_call_after_s", "max_abs_mean_diff"],
          {"before_us": "{:.2f}", "after_us": "{:.2f}", "speedup": "{:.2f}",
           "first_call_before_s": "{:.2f}", "first_call_after_s": "{:.2f}",
           "max_abs_mean_diff": "{:.1e}"})
    write_json({"rows": rows, "before": args.before, "load_after": load_note()},
               "compare_quick.json" if args.quick else "compare.json", args.out)


if __name__ == "__main__":
    main()
