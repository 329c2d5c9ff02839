"""Throughput next to river's ``BayesianLinearRegression.learn_one`` at 10 features.

Both learners do exact conjugate Bayesian linear regression one row at a time. For
skbong the same stream is timed three ways: the compiled scan alone
(``E.run_stream``, full covariance, P = 11), ``BongRegressor.fit`` on the whole
stream (validation, chunking and transfers included) and one ``partial_fit`` call per
row (the latency path). river's ``learn_one`` is timed on the same rows in the same
run. Skipped with a message when river is not installed.

Usage: ``python benchmarks/bench_river.py [--quick] [--out FILE]``
"""

import time

import jax
import numpy as np
from _common import E, block, load_note, min_time, parser, table, write_json

D = 10


def data(n, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, D))
    y = X @ rng.normal(size=D) + 0.5 + 0.1 * rng.normal(size=n)
    return X, y


def river_rate(X, y, repeats):
    from river import linear_model

    rows = [dict(enumerate(x)) for x in X.tolist()]
    targets = y.tolist()

    def run():
        model = linear_model.BayesianLinearRegression()
        for xi, yi in zip(rows, targets):
            model.learn_one(xi, yi)
        return model

    best, _ = min_time(run, repeats)
    return best / len(rows)


def bong_rates(X, y, repeats, n_partial):
    from skbong import BongRegressor

    kw = dict(family="full", prior_variance=1.0, obs_variance=1.0, random_state=0)
    n = len(X)
    # the compiled scan alone: 512-step chunks, as fit would run them
    reg = BongRegressor(**kw).fit(X[:10], y[:10])
    cfg = reg._fitted_config
    steps = (n // 512) * 512
    xs = X[:steps, None, :].astype(np.float32)
    ys = y[:steps, None, None].astype(np.float32)
    ws = np.ones((steps, 1), np.float32)
    state, mean0, hyper = reg._state_to_jax(), reg._prior_mean, reg._hyper(reg.obs_variance_)
    key = reg._key(1)

    def scan():
        s = state
        for start in range(0, steps, 512):
            sl = slice(start, start + 512)
            s, *_ = E.run_stream(cfg, s, mean0, hyper, xs[sl], ys[sl], ws[sl], start, key)
        block(s)

    scan()
    t_scan, _ = min_time(scan, repeats)
    BongRegressor(**kw).fit(X, y)  # compile every chunk size once
    t_fit, _ = min_time(lambda: BongRegressor(**kw).fit(X, y), repeats)
    reg = BongRegressor(**kw).partial_fit(X[:1], y[:1])
    t0 = time.perf_counter()
    for i in range(1, n_partial + 1):
        reg.partial_fit(X[i : i + 1], y[i : i + 1])
    t_partial = (time.perf_counter() - t0) / n_partial
    return t_scan / steps, t_fit / n, t_partial


def main():
    p = parser(__doc__.splitlines()[0])
    args = p.parse_args()
    n = 2048 if args.quick else 8192
    repeats = 3 if args.quick else 5
    print(f"bench_river: {n} rows of {D} features, {load_note()}")
    try:
        import river
    except ImportError:
        print("river is not installed (pip install river): skipped")
        return
    X, y = data(n)
    rows = []
    t_river = river_rate(X, y, repeats)
    rows.append({"learner": f"river {river.__version__} BayesianLinearRegression.learn_one",
                 "us_per_row": t_river * 1e6})
    t_scan, t_fit, t_partial = bong_rates(X, y, repeats, 300 if args.quick else 1000)
    rows.append({"learner": "skbong E.run_stream (full, P = 11)", "us_per_row": t_scan * 1e6})
    rows.append({"learner": "skbong BongRegressor(family='full').fit", "us_per_row": t_fit * 1e6})
    rows.append({"learner": "skbong BongRegressor(family='full').partial_fit, 1 row",
                 "us_per_row": t_partial * 1e6})
    for r in rows:
        r["rows_per_s"] = 1e6 / r["us_per_row"]
        r["vs_river"] = t_river * 1e6 / r["us_per_row"]
    print()
    table(rows, ["learner", "us_per_row", "rows_per_s", "vs_river"],
          {"us_per_row": "{:.2f}", "rows_per_s": "{:.0f}", "vs_river": "{:.2f}x"})
    print(f"\n(devices: {jax.devices()}; {load_note()})")
    write_json({"rows": rows, "n_rows": n, "load_after": load_note()},
               "river_quick.json" if args.quick else "river.json", args.out)


if __name__ == "__main__":
    main()
