"""Single-row call latency and the cold first ``fit``.

* Latency: ``partial_fit``, ``predict`` (with and without ``return_std``) and
  ``predict_proba`` of default ``BongRegressor`` / ``BongClassifier`` (linear model,
  ``dlr`` rank 10, float32, 10 features) on one row, warm, each next to the same call of
  ``SGDRegressor`` / ``SGDClassifier(loss="log_loss")``, interleaved call by call so that
  both see the same machine load. Medians of many calls and their ratio.
* Cold fit: a fresh Python process imports skbong and fits a default
  ``BongClassifier`` on 1,000 rows (compilation included); the import is timed
  separately, and the fit again with the persistent compilation cache
  (:func:`skbong.enable_compilation_cache`), in the process that fills it and in the next.
  Fresh processes are needed because JAX caches compiled programs.

* ``--large``: only the one-row ``partial_fit``, ``predict`` and ``predict(return_std=True)``
  of a dlr-10 network regressor with P = 1e6, medians of ``--calls`` (default 12) and the
  minor page faults of a call (a call's 40 MB buffers are fresh pages unless glibc maps
  them as huge pages: ``GLIBC_TUNABLES=glibc.malloc.hugetlb=1``).

Usage: ``python benchmarks/bench_latency.py [--quick] [--calls N] [--latency-only] [--large]
[--out FILE]``;
``SKBONG_SRC=DIR`` times the skbong checkout in DIR instead (an A/B of two revisions:
alternate the two in fresh processes, ideally pinned to one core with ``taskset -c 1``).
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
    import skbong
    tp = time.perf_counter()
    if {cache!r}:
        skbong.enable_compilation_cache({cache!r})
    from skbong import BongClassifier
    t1, c1 = time.perf_counter(), cpu()
    clf = BongClassifier(random_state=0).fit(X, y)
    t2, c2 = time.perf_counter(), cpu()
    clf.fit(X, y)
    t3 = time.perf_counter()
    print(json.dumps(dict(import_pkg_s=tp - t0, import_s=t1 - t0, cold_fit_s=t2 - t1,
                          cold_fit_cpu_s=c2 - c1, warm_fit_s=t3 - t2)))
    """
)

SKLEARN_IMPORT = (
    "import time; t = time.perf_counter(); from sklearn.linear_model import SGDClassifier; "
    "print(time.perf_counter() - t)"
)

COLD_CASES = {
    "binary, 20 features": dict(d=20, labels="(X[:, 0] + 0.5 * X[:, 1] > 0).astype(int)"),
    "10 classes, 64 features": dict(d=64, labels="np.argmax(X[:, :10], axis=1)"),
}


def _fresh(code):
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    return out.stdout.strip().splitlines()[-1]


def cold_fit(repeats):
    """Each case in fresh processes: without a compilation cache; then with
    :func:`skbong.enable_compilation_cache` on a new directory (first process fills it)
    and again (the second process loads every program). Best of ``repeats``."""
    import tempfile

    src = os.environ.get("SKBONG_SRC", str(ROOT.parent))
    rows = []
    sk = min(float(_fresh(SKLEARN_IMPORT)) for _ in range(repeats))
    for name, spec in COLD_CASES.items():
        for mode in ("no cache", "cache, first process", "cache, second process"):
            runs = []
            for _ in range(repeats):
                cache = ""
                if mode != "no cache":
                    if mode == "cache, first process" or not runs:
                        tmp = tempfile.mkdtemp(prefix="skbong-bench-cache-")
                        if mode == "cache, second process":
                            _fresh(COLD.format(src=src, cache=tmp, **spec))  # fill it
                    cache = tmp
                runs.append(json.loads(_fresh(COLD.format(src=src, cache=cache, **spec))))
            best = min(runs, key=lambda r: r["cold_fit_s"])
            rows.append({"case": name, "mode": mode, **best, "sklearn_import_s": sk,
                         "target_s": 2.0, "met": best["cold_fit_s"] <= 2.0})
            print(f"  cold fit {name}, {mode}: {best}", flush=True)
    return rows


def _pairs(rng, d=10):
    """(name, skbong call, scikit-learn call) on one row, both estimators warm."""
    from sklearn.linear_model import SGDClassifier, SGDRegressor

    from skbong import BongClassifier, BongRegressor

    X = rng.normal(size=(200, d))
    y = X @ rng.normal(size=d) + 0.1 * rng.normal(size=len(X))
    c = (X[:, 0] + 0.5 * X[:, 1] > 0).astype(int)
    reg, sreg = BongRegressor(random_state=0), SGDRegressor(random_state=0)
    clf, sclf = BongClassifier(random_state=0), SGDClassifier(loss="log_loss", random_state=0)
    for i in range(20):  # warm-up: compile and settle both
        reg.partial_fit(X[i : i + 1], y[i : i + 1])
        sreg.partial_fit(X[i : i + 1], y[i : i + 1])
        clf.partial_fit(X[i : i + 1], c[i : i + 1], classes=[0, 1])
        sclf.partial_fit(X[i : i + 1], c[i : i + 1], classes=[0, 1])
    row = {"i": 20}

    def nxt():
        row["i"] = 20 + (row["i"] - 19) % 180
        return row["i"]

    def on_row(fn):
        return lambda i: fn(X[i : i + 1], i)

    return X, [
        ("partial_fit, regressor",
         on_row(lambda x, i: reg.partial_fit(x, y[i : i + 1])),
         on_row(lambda x, i: sreg.partial_fit(x, y[i : i + 1]))),
        ("predict, regressor", on_row(lambda x, i: reg.predict(x)),
         on_row(lambda x, i: sreg.predict(x))),
        ("predict(return_std=True), regressor",
         on_row(lambda x, i: reg.predict(x, return_std=True)),
         on_row(lambda x, i: sreg.predict(x))),
        ("partial_fit, classifier",
         on_row(lambda x, i: clf.partial_fit(x, c[i : i + 1])),
         on_row(lambda x, i: sclf.partial_fit(x, c[i : i + 1]))),
        ("predict_proba, classifier", on_row(lambda x, i: clf.predict_proba(x)),
         on_row(lambda x, i: sclf.predict_proba(x))),
        ("predict, classifier", on_row(lambda x, i: clf.predict(x)),
         on_row(lambda x, i: sclf.predict(x))),
    ], nxt


def latency(n_calls):
    """Median µs per single-row call, skbong and its scikit-learn counterpart (SGD)
    interleaved call by call, so that both see the same machine load."""
    rng = np.random.default_rng(0)
    _, pairs, nxt = _pairs(rng)
    rows = []
    for name, ours, theirs in pairs:
        t_ours, t_theirs = [], []
        for _ in range(n_calls):
            i = nxt()
            t0 = time.perf_counter()
            ours(i)
            t1 = time.perf_counter()
            theirs(i)
            t2 = time.perf_counter()
            t_ours.append(t1 - t0)
            t_theirs.append(t2 - t1)
        a, b = np.asarray(t_ours) * 1e6, np.asarray(t_theirs) * 1e6
        ratio = np.median(a) / np.median(b)
        rows.append({"call (one row)": name, "skbong_median_us": np.median(a),
                     "skbong_p10_us": np.percentile(a, 10), "sgd_median_us": np.median(b),
                     "ratio": ratio, "met": ratio <= 1.0})
    return rows


def large_calls(n_calls):
    """Median ms and minor page faults of one-row calls of a dlr-10 network regressor with
    P = 1,000,009 parameters (100 inputs, one hidden layer of 9,804), float32, warm: the
    calls whose programs hold 40 MB buffers, which glibc maps afresh for every call
    (``GLIBC_TUNABLES`` is recorded: with ``glibc.malloc.hugetlb=1`` they are huge pages)."""
    import resource

    from skbong import BongRegressor

    rng = np.random.default_rng(0)
    X = rng.normal(size=(n_calls + 2, 100)).astype(np.float32)
    y = rng.normal(size=n_calls + 2).astype(np.float32)
    est = BongRegressor(hidden_layer_sizes=(9804,), family="dlr", rank=10, prior_variance=0.01,
                        obs_variance=1.0, dtype="float32", random_state=0)
    est.partial_fit(X[:2], y[:2])
    calls = [
        ("partial_fit", lambda i: est.partial_fit(X[i : i + 1], y[i : i + 1])),
        ("predict", lambda i: est.predict(X[i : i + 1])),
        ("predict(return_std=True)", lambda i: est.predict(X[i : i + 1], return_std=True)),
    ]
    rows = []
    for name, call in calls:
        call(2)  # compiled
        times, faults = [], []
        for i in range(2, n_calls + 2):
            f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
            t0 = time.perf_counter()
            call(i)
            times.append(time.perf_counter() - t0)
            faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0)
        rows.append({"call (one row, P = 1e6)": name, "median_ms": 1e3 * np.median(times),
                     "min_ms": 1e3 * np.min(times), "faults": int(np.median(faults)),
                     "glibc_tunables": os.environ.get("GLIBC_TUNABLES", "")})
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
    p.add_argument("--calls", type=int, default=None, help="single-row calls per case")
    p.add_argument("--latency-only", action="store_true",
                   help="the single-row calls only (no profile, no cold fits): for A/B runs "
                        "against another checkout with SKBONG_SRC")
    p.add_argument("--large", action="store_true",
                   help="only the one-row calls of a dlr-10 network with P = 1e6")
    args = p.parse_args()
    if args.large:
        print(f"bench_latency --large: {load_note()}")
        rows = large_calls(args.calls or 12)
        table(rows, list(rows[0]), {"median_ms": "{:.1f}", "min_ms": "{:.1f}"})
        write_json({"large": rows, "load_after": load_note()}, "latency_large.json", args.out)
        return
    n_calls = args.calls or (300 if args.quick else 2000)
    print(f"bench_latency: {load_note()}")
    out = {"load_before": load_note()}
    print("\n== single-row partial_fit (warm) ==")
    out["latency"] = latency(n_calls)
    table(out["latency"], ["call (one row)", "skbong_median_us", "skbong_p10_us",
                           "sgd_median_us", "ratio", "met"],
          {c: "{:.1f}" for c in ("skbong_median_us", "skbong_p10_us", "sgd_median_us")}
          | {"ratio": "{:.2f}"})
    if args.latency_only:
        if args.out is not None:
            write_json(out, "latency_only.json", args.out)
        return
    profile = latency_breakdown(200 if args.quick else 1000)
    out["latency_profile"] = profile
    print("\n== cProfile of BongRegressor.partial_fit (one row) ==")
    print("\n".join(profile.splitlines()[:45]))
    print("\n== cold first fit of a default BongClassifier, 1,000 rows (fresh process) ==")
    out["cold_fit"] = cold_fit(1 if args.quick else 3)
    cols = ["import_pkg_s", "import_s", "sklearn_import_s", "cold_fit_s", "cold_fit_cpu_s",
            "warm_fit_s"]
    print("import_pkg_s: `import skbong`; import_s: `from skbong import BongClassifier`; "
          "sklearn_import_s: `from sklearn.linear_model import SGDClassifier` (fresh process)")
    table(out["cold_fit"], ["case", "mode", *cols, "met"], {c: "{:.3f}" for c in cols})
    if has_gpu():
        print("\n(GPU present: the latency above ran on the default device, "
              f"{__import__('jax').devices()[0]})")
    out["load_after"] = load_note()
    print(f"\n{out['load_after']}")
    write_json(out, "latency_quick.json" if args.quick else "latency.json", args.out)


if __name__ == "__main__":
    main()
