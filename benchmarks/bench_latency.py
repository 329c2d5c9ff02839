"""Single-row ``partial_fit`` latency and the cold first ``fit``.

* Latency: ``BongRegressor().partial_fit`` on one row (default configuration: linear
  model, ``dlr`` rank 10, float32), warm, next to ``SGDRegressor.partial_fit`` on one
  row, interleaved in the same run so that both see the same machine load. Per-call
  minimum and median of many calls.
* Cold fit: a fresh Python process imports skbong and fits a default
  ``BongClassifier`` on 1,000 rows (compilation included); the import is timed
  separately. Fresh processes are needed because JAX caches compiled programs.

Usage: ``python benchmarks/bench_latency.py [--quick] [--out FILE]``
"""

import json
import os
import subprocess
import sys
import textwrap
import time

import numpy as np
from _common import ROOT, has_gpu, load_note, parser, table, write_json

COLD = textwrap.dedent(
    """
    import os, sys, time, json, resource
    sys.path.insert(0, {src!r})
    def cpu():
        r = resource.getrusage(resource.RUSAGE_SELF)
        return r.ru_utime + r.ru_stime
    import numpy as np
    rng = np.random.default_rng(0)
    X = rng.normal(size=(1000, {d}))
    y = {labels}
    t0 = time.perf_counter()
    from skbong import BongClassifier
    t1, c1 = time.perf_counter(), cpu()
    clf = BongClassifier(random_state=0).fit(X, y)
    t2, c2 = time.perf_counter(), cpu()
    clf.fit(X, y)
    t3 = time.perf_counter()
    print(json.dumps(dict(import_s=t1 - t0, cold_fit_s=t2 - t1, cold_fit_cpu_s=c2 - c1,
                          warm_fit_s=t3 - t2)))
    """
)

COLD_CASES = {
    "binary, 20 features": dict(d=20, labels="(X[:, 0] + 0.5 * X[:, 1] > 0).astype(int)"),
    "10 classes, 64 features": dict(d=64, labels="np.argmax(X[:, :10], axis=1)"),
}


def cold_fit(repeats):
    src = os.environ.get("SKBONG_SRC", str(ROOT.parent))
    rows = []
    for name, spec in COLD_CASES.items():
        runs = []
        for _ in range(repeats):
            code = COLD.format(src=src, **spec)
            out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                 check=True)
            runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
        best = min(runs, key=lambda r: r["cold_fit_s"])
        rows.append({"case": name, **best, "target_s": 2.0, "met": best["cold_fit_s"] <= 2.0})
        print(f"  cold fit {name}: {best}", flush=True)
    return rows


def latency(n_calls):
    from sklearn.linear_model import SGDRegressor

    from skbong import BongRegressor

    rng = np.random.default_rng(0)
    d = 10
    X = rng.normal(size=(n_calls + 100, d))
    y = X @ rng.normal(size=d) + 0.1 * rng.normal(size=len(X))
    bong, sgd = BongRegressor(random_state=0), SGDRegressor(random_state=0)
    for i in range(20):  # warm-up: compile and settle both
        bong.partial_fit(X[i : i + 1], y[i : i + 1])
        sgd.partial_fit(X[i : i + 1], y[i : i + 1])
    times = {"BongRegressor.partial_fit": [], "SGDRegressor.partial_fit": []}
    for i in range(20, 20 + n_calls):
        xi, yi = X[i : i + 1], y[i : i + 1]
        t0 = time.perf_counter()
        bong.partial_fit(xi, yi)
        t1 = time.perf_counter()
        sgd.partial_fit(xi, yi)
        t2 = time.perf_counter()
        times["BongRegressor.partial_fit"].append(t1 - t0)
        times["SGDRegressor.partial_fit"].append(t2 - t1)
    rows = []
    for name, ts in times.items():
        ts = np.asarray(ts) * 1e6
        rows.append({"what": name, "min_us": ts.min(), "p10_us": np.percentile(ts, 10),
                     "median_us": np.median(ts), "mean_us": ts.mean()})
    ratio = rows[0]["median_us"] / rows[1]["median_us"]
    rows[0]["vs_sgd_median"] = ratio
    rows[0]["met"] = ratio <= 1.0
    return rows


def latency_breakdown(n_calls):
    """Where one partial_fit spends its time (cProfile, cumulative, top entries)."""
    import cProfile
    import io
    import pstats

    from skbong import BongRegressor

    rng = np.random.default_rng(1)
    X = rng.normal(size=(n_calls + 20, 10))
    y = X[:, 0]
    reg = BongRegressor(random_state=0)
    for i in range(20):
        reg.partial_fit(X[i : i + 1], y[i : i + 1])
    prof = cProfile.Profile()
    prof.enable()
    for i in range(20, 20 + n_calls):
        reg.partial_fit(X[i : i + 1], y[i : i + 1])
    prof.disable()
    buf = io.StringIO()
    pstats.Stats(prof, stream=buf).sort_stats("cumulative").print_stats(25)
    return buf.getvalue()


def main():
    p = parser(__doc__.splitlines()[0])
    args = p.parse_args()
    n_calls = 300 if args.quick else 2000
    print(f"bench_latency: {load_note()}")
    out = {"load_before": load_note()}
    print("\n== single-row partial_fit (warm) ==")
    out["latency"] = latency(n_calls)
    table(out["latency"], ["what", "min_us", "p10_us", "median_us", "mean_us", "vs_sgd_median",
                           "met"], {c: "{:.1f}" for c in ("min_us", "p10_us", "median_us",
                                                          "mean_us")} | {"vs_sgd_median": "{:.2f}"})
    profile = latency_breakdown(200 if args.quick else 1000)
    out["latency_profile"] = profile
    print("\n== cProfile of BongRegressor.partial_fit (one row) ==")
    print("\n".join(profile.splitlines()[:45]))
    print("\n== cold first fit of a default BongClassifier, 1,000 rows (fresh process) ==")
    out["cold_fit"] = cold_fit(1 if args.quick else 3)
    table(out["cold_fit"], ["case", "import_s", "cold_fit_s", "cold_fit_cpu_s", "warm_fit_s",
                            "target_s", "met"],
          {c: "{:.3f}" for c in ("import_s", "cold_fit_s", "cold_fit_cpu_s", "warm_fit_s",
                                 "target_s")})
    if has_gpu():
        print("\n(GPU present: the latency above ran on the default device, "
              f"{__import__('jax').devices()[0]})")
    out["load_after"] = load_note()
    print(f"\n{out['load_after']}")
    write_json(out, "latency_quick.json" if args.quick else "latency.json", args.out)


if __name__ == "__main__":
    main()
