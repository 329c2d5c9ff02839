"""Cost per observation against the mini-batch size b.

A mini-batch of b rows is one likelihood term (one update, ``batch_size=b``); the
LIN-HESS factor then has k = bC columns, so the per-step cost grows with b while the
per-row cost first falls (fixed per-step work is shared) and then rises again for the
low-rank and full families (their updates are O(k²P) and O(kP²)). Each point streams
a fixed chunk of steps through ``E.run_stream`` (min of repeats).

Usage: ``python benchmarks/bench_minibatch.py [--quick] [--out FILE]``
"""

import jax
from _common import (
    CASES,
    E,
    has_gpu,
    load_note,
    make_problem,
    parser,
    table,
    time_stream,
    write_json,
)

CONFIGS = [("mlp881", "dlr"), ("mlp881", "diag"), ("linreg100", "full"), ("mlp2410", "dlr")]
SIZES = [1, 2, 4, 8, 16, 32, 64, 128]


def measure(case, family, b, repeats):
    steps = 512 if b <= 8 else 64
    cfg, state, mean0, hyper, data = make_problem(case, family, batch=b, steps=steps)
    compile_s, best, cpu, ok = time_stream(cfg, state, mean0, hyper, data, repeats, 0.3)
    p = E.MLP(**CASES[case]["model"]).n_params()
    return {"case": case, "P": p, "family": family, "b": b, "steps": steps,
            "us_per_step": best / steps * 1e6, "us_per_row": best / steps / b * 1e6,
            "compile_s": compile_s, "ok": ok}


def run(configs, sizes, repeats):
    rows = []
    for case, family in configs:
        for b in sizes:
            r = measure(case, family, b, repeats)
            rows.append(r)
            print(f"  {case:>9} {family:>4} b={b:>3}: {r['us_per_step']:9.1f} µs/step, "
                  f"{r['us_per_row']:8.2f} µs/row", flush=True)
    return rows


def main():
    p = parser(__doc__.splitlines()[0])
    args = p.parse_args()
    sizes = [1, 4, 16, 64] if args.quick else SIZES
    configs = CONFIGS[:3] if args.quick else CONFIGS
    repeats = 3 if args.quick else 5
    print(f"bench_minibatch: float32, {load_note()}")
    out = {}
    with jax.default_device(jax.devices("cpu")[0]):
        out["cpu"] = run(configs, sizes, repeats)
    if has_gpu():
        print("\n== GPU ==")
        with jax.default_device(jax.devices("gpu")[0]):
            out["gpu"] = run(configs, sizes, repeats)
    cols = ["case", "P", "family", "b", "steps", "us_per_step", "us_per_row", "compile_s", "ok"]
    fmts = {"us_per_step": "{:.1f}", "us_per_row": "{:.2f}", "compile_s": "{:.2f}",
            "ok": "{:.2f}"}
    for name, rows in out.items():
        print(f"\n== cost per observation vs batch size ({name}) ==  ({load_note()})")
        table(rows, cols, fmts)
    out["load_after"] = load_note()
    write_json(out, "minibatch_quick.json" if args.quick else "minibatch.json", args.out)


if __name__ == "__main__":
    main()
