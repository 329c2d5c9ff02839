"""Per-observation cost of the compiled stream, for every rule × family × hessian.

Each configuration streams a fixed chunk of steps (one row each, float32) through
``E.run_stream`` — one compiled ``lax.fori_loop`` — and reports the warm time per step
(min of repeats) and the compile time (first call less a warm call). The headline
table holds the headline cases with the authors' numbers and the targets; the
sweep (not with ``--quick``) covers all 76 valid combinations on each case. Very
expensive combinations (dense P × P inverses or Hessians at large P) run a shorter
chunk, shown in the ``chunk`` column.

Usage: ``python benchmarks/bench_steps.py [--quick] [--out FILE] [--cases mlp881,...]``
"""

import itertools

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

CHUNK = 512

# (case, family, rule, authors' µs, target µs); blr / bbb targets are I × the bong figure.
HEADLINE = [
    ("mlp881", "dlr", "bong", 78.0, 20.0),
    ("mlp2410", "dlr", "bong", 337.0, 85.0),
    ("linreg10", "full", "bong", 1.7, 1.7),
    ("linreg100", "full", "bong", 3.4, 3.4),
    ("mlp881", "diag", "bong", 4.9, 3.5),
]


def n_params(case):
    return E.MLP(**CASES[case]["model"]).n_params()


def chunk_for(case, family, rule, hessian, n_iter):
    """Scan length: 512, or shorter where one step costs O(P³) or P Hessian passes."""
    p = n_params(case)
    dense = family in ("full", "full_moment")
    cubic = dense and (rule in ("blr", "bbb") or hessian == "mc_hess" or rule == "bog")
    if not cubic or p < 100:
        return CHUNK
    return 8 if p < 1000 else 1


def measure(case, family, rule, hessian, n_iter, chunk, repeats, min_total):
    cfg, state, mean0, hyper, data = make_problem(
        case, family, rule, hessian, n_iter=n_iter, steps=chunk
    )
    compile_s, best, cpu, ok = time_stream(cfg, state, mean0, hyper, data, repeats, min_total)
    return {
        "case": case,
        "P": n_params(case),
        "family": family,
        "rule": rule,
        "hessian": hessian,
        "n_iter": n_iter if rule in ("blr", "bbb") else 1,
        "chunk": chunk,
        "us_per_step": best / chunk * 1e6,
        "cpu_mean_us": cpu / chunk * 1e6,
        "compile_s": compile_s,
        "ok": ok,
    }


def headline(n_iter, repeats, device):
    rows, bong = [], {}
    for case, family, rule, authors, target in HEADLINE:
        row = measure(case, family, rule, "lin_hess", n_iter, CHUNK, repeats, 3.0)
        row.update(authors_us=authors, target_us=target, device=device)
        row["met"] = row["us_per_step"] <= target
        bong[(case, family)] = row["us_per_step"]
        rows.append(row)
        progress(row)
    # BLR / BBB: at most I × the bong cost of the same family (and case).
    for (case, family, _, _, _), rule in itertools.product(HEADLINE, ("blr", "bbb")):
        chunk = chunk_for(case, family, rule, "lin_hess", n_iter)
        row = measure(case, family, rule, "lin_hess", n_iter, chunk, repeats, 1.0)
        target = n_iter * bong[(case, family)]
        row.update(target_us=target, device=device, met=row["us_per_step"] <= target)
        rows.append(row)
        progress(row)
    return rows


def sweep(cases, n_iter, repeats):
    rows = []
    for case in cases:
        for rule, family, hessian in itertools.product(
            E.RULE_NAMES, E.FAMILY_NAMES, E.HESSIAN_NAMES
        ):
            if family == "dlr" and hessian == "mc_hess":
                continue
            chunk = chunk_for(case, family, rule, hessian, n_iter)
            row = measure(case, family, rule, hessian, n_iter, chunk,
                          repeats if chunk > 1 else 1, 0.3 if chunk > 1 else 0.0)
            rows.append(row)
            progress(row)
    return rows


COLUMNS = ["case", "P", "family", "rule", "hessian", "n_iter", "chunk", "us_per_step",
           "cpu_mean_us", "compile_s", "ok", "authors_us", "target_us", "met"]
FORMATS = {"us_per_step": "{:.2f}", "cpu_mean_us": "{:.2f}", "compile_s": "{:.2f}", "ok": "{:.2f}",
           "authors_us": "{:.1f}", "target_us": "{:.1f}"}


def progress(r):
    """One line per measurement (long runs show progress; the tables print at the end)."""
    print(f"  {r['case']:>9} {r['family']:>11} {r['rule']:>4} {r['hessian']:>8} "
          f"chunk {r['chunk']:>3}: {r['us_per_step']:10.2f} µs/step "
          f"(cpu mean {r['cpu_mean_us']:.2f}), "
          f"compile {r['compile_s']:.2f} s, ok {r['ok']:.2f}", flush=True)


def main():
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--cases", default=",".join(CASES), help="cases of the sweep")
    p.add_argument("--n-iter", type=int, default=10, help="I of blr / bbb")
    p.add_argument("--repeats", type=int, default=None)
    p.add_argument("--no-sweep", action="store_true")
    args = p.parse_args()
    repeats = args.repeats or (3 if args.quick else 7)
    print(f"bench_steps: float32, {CHUNK}-step chunks, {load_note()}")

    out = {"chunk": CHUNK, "n_iter": args.n_iter, "load_before": load_note()}
    print("\n== headline cases (CPU) ==")
    cpu = jax.devices("cpu")[0]
    with jax.default_device(cpu):
        out["headline"] = headline(args.n_iter, repeats, "cpu")
    if has_gpu():
        print("\n== headline cases (GPU) ==")
        with jax.default_device(jax.devices("gpu")[0]):
            out["headline_gpu"] = headline(args.n_iter, repeats, "gpu")
    if not (args.quick or args.no_sweep):
        print("\n== sweep: rule × family × hessian (CPU) ==")
        with jax.default_device(cpu):
            out["sweep"] = sweep(args.cases.split(","), args.n_iter, repeats)
    out["load_after"] = load_note()

    for name in ("headline", "headline_gpu", "sweep"):
        if name in out:
            print(f"\n== {name} ==  ({out['load_after']})")
            table(out[name], COLUMNS, FORMATS)
    write_json(out, "steps_quick.json" if args.quick else "steps.json", args.out)


if __name__ == "__main__":
    main()
