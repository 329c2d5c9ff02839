"""BongPoissonRegressor against scikit-learn's PoissonRegressor on count data.

Synthetic counts y ~ Poisson(exp(b + x·w)), x ~ N(0, I₅), w = (0.3, −0.2, 0.1, 0, 0.25),
at three count scales b ∈ {0.5, 2, 4.6} (mean counts about 2, 8 and 110), 2,000
training and 1,000 test rows; and linnerud's chin-up counts (20 rows, standardised
physiological features) by leave-one-out. ``BongPoissonRegressor`` at its defaults
(dlr, bong, lin_hess, linmc predictive) and with ``family="full"``, one pass in a
shuffled order, row by row as one ``fit``; ``PoissonRegressor(alpha=0)`` (the MLE) and
``alpha=1`` (sklearn's default); ``SGDRegressor`` has no Poisson loss. Held-out D² (fraction of Poisson deviance
explained), mean log predictive pmf (nats; sklearn's plug-in at its prediction) and
fit time. Mean over ``--seeds`` seeds.

The second table streams counts near 110 (b = 4.6) one row at a time for the first 100
rows, after a first count of 0, 20 or 300 (or a typical one), and reports the held-out
D² after 100, 500 and 2,000 rows with ``backtrack`` 0 (the published algorithm, "refused"
where it raises) and 20 (the default overshoot guard), families dlr (the default), full
and diag.

Usage: ``python benchmarks/bench_poisson.py [--seeds 3] [--out FILE]``. About a minute.
"""

import sys
import time
import warnings
from pathlib import Path

import numpy as np
import scipy.stats
from sklearn.datasets import load_linnerud
from sklearn.linear_model import PoissonRegressor
from sklearn.metrics import d2_tweedie_score
from sklearn.preprocessing import StandardScaler

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import parser, table, write_json  # noqa: E402

from skbong import BongPoissonRegressor, NonFiniteUpdateError  # noqa: E402

WEIGHTS = np.array([0.3, -0.2, 0.1, 0.0, 0.25])


def synthetic(base, seed):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(3000, 5))
    y = rng.poisson(np.exp(base + X @ WEIGHTS)).astype(float)
    return X[:2000], y[:2000], X[2000:], y[2000:]


def methods():
    return {
        "Bong (defaults: dlr)": lambda s: BongPoissonRegressor(random_state=s),
        "Bong full": lambda s: BongPoissonRegressor(family="full", random_state=s),
        "PoissonRegressor alpha=0": lambda s: PoissonRegressor(alpha=0.0, max_iter=1000),
        "PoissonRegressor alpha=1": lambda s: PoissonRegressor(),
    }


def scores(est, Xte, yte):
    lpmf = [_lpmf(est, x, t) for x, t in zip(Xte, yte)] if len(yte) < 2 else (
        est.predict_logpmf(Xte, yte) if isinstance(est, BongPoissonRegressor)
        else scipy.stats.poisson.logpmf(yte, est.predict(Xte))
    )
    return est.score(Xte, yte), float(np.mean(lpmf))


def run_split(make, Xtr, ytr, Xte, yte, seed):
    order = np.random.default_rng(seed).permutation(len(ytr))
    t0 = time.perf_counter()
    est = make(seed).fit(Xtr[order], ytr[order])
    return (*scores(est, Xte, yte), time.perf_counter() - t0)


def linnerud_loo(make, seed):
    """Leave-one-out D² over the pooled predictions, mean log pmf and total fit time."""
    data = load_linnerud()
    X, y = StandardScaler().fit_transform(data.target), data.data[:, 0]
    preds, lpmfs, t = [], [], 0.0
    for i in range(len(y)):
        keep = np.arange(len(y)) != i
        t0 = time.perf_counter()
        est = make(seed).fit(X[keep], y[keep])
        t += time.perf_counter() - t0
        preds.append(est.predict(X[i : i + 1])[0])
        lpmfs.append(_lpmf(est, X[i], y[i]))
    return d2_tweedie_score(y, np.array(preds), power=1), float(np.mean(lpmfs)), t


def _lpmf(est, x, y):
    if isinstance(est, BongPoissonRegressor):
        return float(est.predict_logpmf(x[None], [y])[0])
    return float(scipy.stats.poisson.logpmf(y, est.predict(x[None])[0]))


def main():
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--seeds", type=int, default=3)
    args = p.parse_args()
    warnings.simplefilter("ignore")
    rows = []
    cases = [(f"synthetic b={b}", b) for b in (0.5, 2.0, 4.6)] + [("linnerud (LOO)", None)]
    for label, base in cases:
        for name, make in methods().items():
            res = []
            for seed in range(args.seeds):
                if base is None:
                    res.append(linnerud_loo(make, seed))
                else:
                    res.append(run_split(make, *synthetic(base, seed), seed))
            d2, lp, t = np.mean(res, axis=0)
            rows.append({"data": label, "method": name, "D2": d2, "log pmf": lp, "fit s": t})
    table(rows, ["data", "method", "D2", "log pmf", "fit s"],
          {"D2": "{:.4f}", "log pmf": "{:.4f}", "fit s": "{:.2f}"})
    first_rows = first_count_table()
    write_json({"settings": vars(args) | {"out": str(args.out)}, "rows": rows,
                "first_count": first_rows}, "bench_poisson.json", args.out)


def first_count_table():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(2400, 5))
    y = rng.poisson(np.exp(4.6 + X @ WEIGHTS)).astype(float)
    Xte, yte = X[2000:], y[2000:]
    rows = []
    for first in (0.0, 20.0, 300.0, None):
        Xs = X[:2000] if first is None else np.vstack([X[:1], X[:1999]])
        ys = y[:2000] if first is None else np.concatenate([[first], y[:1999]])
        for family in ("dlr", "full", "diag"):
            for backtrack in (0, 20):
                est = BongPoissonRegressor(family=family, backtrack=backtrack)
                row = {"first count": "typical" if first is None else first,
                       "family": family, "backtrack": backtrack}
                try:
                    for i in range(100):
                        est.partial_fit(Xs[i : i + 1], ys[i : i + 1])
                    row["D2 @100"] = est.score(Xte, yte)
                    est.partial_fit(Xs[100:500], ys[100:500])
                    row["D2 @500"] = est.score(Xte, yte)
                    est.partial_fit(Xs[500:], ys[500:])
                    row["D2 @2000"] = est.score(Xte, yte)
                except NonFiniteUpdateError:
                    row["D2 @100"] = "refused"
                rows.append(row)
    ref = PoissonRegressor(alpha=0.0).fit(X[:2000], y[:2000]).score(Xte, yte)
    rows.append({"first count": "PoissonRegressor (2000 rows)", "D2 @2000": ref})
    print()
    table(rows, ["first count", "family", "backtrack", "D2 @100", "D2 @500", "D2 @2000"],
          {c: "{:.3f}" for c in ("D2 @100", "D2 @500", "D2 @2000")})
    return rows


if __name__ == "__main__":
    main()
