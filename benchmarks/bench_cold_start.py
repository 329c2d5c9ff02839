"""A new process's first ``fit`` and ``predict``, with skbong's program cache and without.

Each case runs in a fresh Python process (JAX keeps compiled programs in memory only),
which imports the estimator first and then times its first ``fit`` and ``predict``: a
default ``BongRegressor`` on diabetes (442 × 10), a default ``BongClassifier`` on digits
(1,797 × 64, 10 classes) and ``BongRegressor(hidden_layer_sizes=(50,))`` on diabetes.
Three processes per case: the first with an empty cache folder (it compiles and writes
the programs), the next with the folder it filled, and one with ``SKBONG_CACHE=0`` (no
cache: what every process paid before). ``again_s`` is the same ``fit`` and ``predict``
repeated in the process, every program in memory: the computation alone, the floor of a
first call. The table also gives the programs compiled for the cache and those loaded
from disk (:func:`skbong.engine.program.cache_info`).

Then ``GridSearchCV(BongClassifier(), n_jobs=2)`` over 4 values of ``prior_variance`` ×
2 of ``rank`` (3-fold, digits), run twice in a row, each in a fresh process with
the same cache folder: the first run's two worker processes compile (each program once
per worker), the second run's load everything; then the same search with ``n_jobs=1``
from the filled folder, the serial time the two workers are measured against. Each of
these processes searches twice: ``total_s`` is its first search (its workers start and
import), ``again_s`` the second, which finds joblib's workers running (their executor is
kept between calls), as a session's next search does.

Usage: ``python benchmarks/bench_cold_start.py [--repeats N] [--out FILE]`` (the figures:
the median of ``--repeats`` fresh rounds, default 3; each round uses a new empty folder).
``SKBONG_SRC=DIR`` times the skbong checkout in DIR instead: the cache's key holds a hash
of skbong's source, so a checkout edited while the benchmark runs misses, as it should.
"""

import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap

from _common import ROOT, parser, table, write_json

FIT = textwrap.dedent(
    """
    import json, sys, time
    sys.path.insert(0, {src!r})
    from sklearn.datasets import load_diabetes, load_digits
    import skbong
    from skbong import BongClassifier, BongRegressor
    from skbong.engine.program import cache_info
    X, y = {data}
    est = {estimator}
    t0 = time.perf_counter()
    est.fit(X, y)
    t1 = time.perf_counter()
    est.predict(X)
    t2 = time.perf_counter()
    info = cache_info()
    est.fit(X, y).predict(X)  # again: the computation alone, every program in memory
    t3 = time.perf_counter()
    print(json.dumps(dict(fit_s=t1 - t0, predict_s=t2 - t1, total_s=t2 - t0,
                          again_s=t3 - t2, **info)))
    """
)

GRID = textwrap.dedent(
    """
    import json, sys, time
    sys.path.insert(0, {src!r})
    from sklearn.datasets import load_digits
    from sklearn.model_selection import GridSearchCV
    from skbong import BongClassifier
    X, y = load_digits(return_X_y=True)
    grid = dict(prior_variance=[0.1, 1.0, 10.0, 100.0], rank=[5, 10])
    times = []
    for _ in range(2):  # the second search finds joblib's workers started
        t0 = time.perf_counter()
        GridSearchCV(BongClassifier(random_state=0), grid, cv=3, n_jobs={n_jobs}).fit(X, y)
        times.append(time.perf_counter() - t0)
    print(json.dumps(dict(total_s=times[0], again_s=times[1])))
    """
)

CASES = {
    "BongRegressor() diabetes": ("load_diabetes(return_X_y=True)", "BongRegressor()"),
    "BongClassifier() digits": ("load_digits(return_X_y=True)", "BongClassifier()"),
    "BongRegressor((50,)) diabetes": (
        "load_diabetes(return_X_y=True)", "BongRegressor(hidden_layer_sizes=(50,))"
    ),
}

SRC = os.environ.get("SKBONG_SRC") or str(ROOT.parent)


def fresh(code, cache, **env):
    """Run ``code`` in a new interpreter with the program cache in ``cache``; its JSON."""
    full = {k: v for k, v in os.environ.items() if not k.startswith(("JAX_", "SKBONG_"))}
    full.update(SKBONG_CACHE_DIR=cache, **env)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=full)
    if out.returncode:
        sys.exit(f"a timed process failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def one_round():
    """Every case once, each in its own new folder; the grid search in another."""
    runs = {}
    for name, (data, estimator) in CASES.items():
        code = FIT.format(src=SRC, data=data, estimator=estimator)
        with tempfile.TemporaryDirectory() as cache:
            runs[name, "empty cache"] = fresh(code, cache)
            runs[name, "warm cache"] = fresh(code, cache)
            runs[name, "SKBONG_CACHE=0"] = fresh(code, cache, SKBONG_CACHE="0")
    with tempfile.TemporaryDirectory() as cache:
        code = GRID.format(src=SRC, n_jobs=2)
        runs["GridSearchCV n_jobs=2", "empty cache"] = fresh(code, cache)
        runs["GridSearchCV n_jobs=2", "warm cache"] = fresh(code, cache)
        runs["GridSearchCV n_jobs=2", "SKBONG_CACHE=0"] = fresh(code, cache, SKBONG_CACHE="0")
        runs["GridSearchCV n_jobs=1", "warm cache"] = fresh(GRID.format(src=SRC, n_jobs=1), cache)
    return runs


def main():
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=3, help="fresh rounds (median reported)")
    args = p.parse_args()
    rounds = [one_round() for _ in range(1 if args.quick else args.repeats)]
    rows = []
    for key in rounds[0]:
        runs = [r[key] for r in rounds]
        row = {"case": key[0], "process": key[1]}
        for col in ("fit_s", "predict_s", "total_s", "again_s"):
            if col in runs[0]:
                row[col] = statistics.median(r[col] for r in runs)
        for col in ("compiles", "disk_hits"):
            if col in runs[0]:
                row[col] = runs[0][col]
        rows.append(row)
    table(rows, ["case", "process", "fit_s", "predict_s", "total_s", "again_s", "compiles",
                 "disk_hits"],
          {c: "{:.3f}" for c in ("fit_s", "predict_s", "total_s", "again_s")})
    write_json({"rows": rows, "rounds": len(rounds)}, "cold_start.json", args.out,
               settings={"repeats": len(rounds)})


if __name__ == "__main__":
    main()
