"""Which family the regressor's ``family="auto"`` should take for the linear model.

A linear-Gaussian stream with P = d + 1 parameters (d ∈ {10, 50, 200, 1000}, standard
normal features, weights N(0, 1/d), noise standard deviation 0.1, 2,500 training rows
and 500 test rows) is fitted at otherwise default settings with ``family="dlr"``
(rank 10) and ``family="full"``, and by scikit-learn's BayesianRidge. The table gives
the test RMSE, the test NLL of the predictive (Student-t of the learned noise for skbong,
BayesianRidge's Gaussian), the fit time (fastest of three fits after a first one that compiles)
and what ``family="auto"`` chose. With ``--data-dir`` it also fits the UCI kin8nm split
0 at a fixed ``obs_variance=0.01``, the case where a rank-10 ``dlr`` covering all 9
parameters cancels its variances in float32 and refuses a row, in float32 and at the
default ``dtype="auto"`` (float64 for the linear model).

Usage: ``python benchmarks/bench_family.py [--quick] [--data-dir DIR] [--out FILE]``
"""

import sys
import time
import warnings
from pathlib import Path

import numpy as np
import scipy.stats
from _common import Tee, load_note, parser, table
from sklearn.linear_model import BayesianRidge

from skbong import BongRegressor
from skbong.exceptions import NonFiniteUpdateError


def synthetic(d, seed=0, n_train=2500, n_test=500):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_train + n_test, d))
    y = X @ rng.normal(size=d) / np.sqrt(d) + 0.1 * rng.normal(size=n_train + n_test)
    return X[:n_train], y[:n_train], X[n_train:], y[n_train:]


def fit_timed(est, X, y):
    est.fit(X, y)  # compile (the program depends on the stream length)
    best = np.inf
    for _ in range(3):
        t0 = time.perf_counter()
        est.fit(X, y)
        best = min(best, time.perf_counter() - t0)
    return best


def score(est, Xte, yte):
    mean, std = est.predict(Xte, return_std=True)
    rmse = float(np.sqrt(np.mean((mean - yte) ** 2)))
    if hasattr(est, "predict_logpdf"):
        nll = -float(np.mean(est.predict_logpdf(Xte, yte)))
    else:
        nll = -float(np.mean(scipy.stats.norm.logpdf(yte, mean, std)))
    return rmse, nll


def synthetic_rows(dims):
    rows = []
    for d in dims:
        Xtr, ytr, Xte, yte = synthetic(d)
        row = {"d": d, "P": d + 1}
        for name, est in [("dlr", BongRegressor(family="dlr", random_state=0)),
                          ("full", BongRegressor(family="full", random_state=0)),
                          ("BayesianRidge", BayesianRidge())]:
            row[f"{name}_s"] = fit_timed(est, Xtr, ytr)
            row[f"{name}_rmse"], row[f"{name}_nll"] = score(est, Xte, yte)
        row["auto"] = BongRegressor(random_state=0).fit(Xtr[:20], ytr[:20]).family_
        print(f"d={d}: " + ", ".join(f"{k} {v:.4g}" for k, v in row.items()
                                     if isinstance(v, float)), flush=True)
        rows.append(row)
    return rows


def kin8nm_rows(data_dir):
    from bench_learned import splits

    data = splits(data_dir, "kin8nm", 1)
    if data is None:
        return []
    Xtr, ytr, Xte, yte, _ = data[0]
    rows = []
    for dtype in ["float32", "auto"]:
        for family in ["dlr", "full", "auto"]:
            est = BongRegressor(family=family, obs_variance=0.01, dtype=dtype, random_state=0)
            row = {"dtype": dtype, "family": family}
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    est.fit(Xtr, ytr)
                rmse, nll = score(est, Xte, yte)
                rows.append({**row, "chosen": est.family_, "result": "ok", "rmse": rmse, "nll": nll})
            except NonFiniteUpdateError as exc:
                rows.append({**row, "chosen": "-", "result": str(exc).split(";")[0][:60],
                             "rmse": np.nan, "nll": np.nan})
    return rows


def main():
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--data-dir", default=None, help="../shared/data (for kin8nm)")
    args = p.parse_args()
    tee = sys.stdout = Tee(sys.stdout)
    from bench_learned import git_revision

    print(__doc__.splitlines()[0])
    print(f"command: python {' '.join(sys.argv)}; skbong revision {git_revision()}")
    dims = [10, 50, 200] if args.quick else [10, 50, 200, 1000]
    rows = synthetic_rows(dims)
    print(f"\n== linear-Gaussian stream, 2,500 rows, test on 500  ({load_note()})")
    cols = ["d", "P", "auto"] + [f"{n}_{m}" for m in ("rmse", "nll", "s")
                                 for n in ("dlr", "full", "BayesianRidge")]
    table(rows, cols, {c: "{:.4f}" for c in cols[3:]})
    if args.data_dir:
        print("\n== UCI kin8nm split 0, obs_variance=0.01 fixed, prior_variance=1")
        table(kin8nm_rows(args.data_dir), ["dtype", "family", "chosen", "result", "rmse", "nll"],
              {"rmse": "{:.4f}", "nll": "{:.4f}"})
    sys.stdout = tee.stream
    if args.out:
        Path(args.out).write_text(tee.text())


if __name__ == "__main__":
    main()
