"""Networks' ``fit``: one pass against tempered passes (``passes``), beside the MLP.

``fit`` of a network under ``passes="auto"`` takes 10 passes over its rows, each row at
weight 1/10 in each. This script measures that choice against one pass (``passes=1``)
and 3 and 30 passes, with ``MLPRegressor`` / ``MLPClassifier`` at their defaults beside.

Regression: ``BongRegressor(hidden_layer_sizes=(50,))`` on the seven UCI sets (``--data-dir``;
the first ``--splits`` splits, up to 2,000 training rows, X and y standardised on the
training part, metrics on the original scale of y): test log-likelihood per row (LL,
higher is better) and RMSE. The MLP's LL is that of a Gaussian whose s.d. is its
training root-mean-square residual. Classification: ``BongClassifier(hidden_layer_sizes=(32,))``
on scikit-learn's iris, wine, breast_cancer, digits and make_classification (3,000 rows,
20 features), standardised, 75 / 25 stratified split (seed 0): test log-loss. fit_s: wall
seconds of the fit (the first fit of a configuration includes its compilation).

Usage: ``python benchmarks/bench_passes.py [--data-dir DIR] [--splits N] [--passes 1,3,10,30]``
"""

import argparse
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.datasets import (
    load_breast_cancer,
    load_digits,
    load_iris,
    load_wine,
    make_classification,
)
from sklearn.metrics import log_loss
from sklearn.model_selection import train_test_split
from sklearn.neural_network import MLPClassifier, MLPRegressor
from sklearn.preprocessing import StandardScaler

from skbong import BongClassifier, BongRegressor

UCI = ("bostonHousing", "concrete", "energy", "kin8nm", "power-plant", "wine-quality-red", "yacht")


def uci_split(data_dir, name, split, max_rows=2000):
    """Standardised train / test rows of one split, and y's training mean and s.d."""
    d = np.load(Path(data_dir) / "uci" / name / f"{name}.npz")
    X, y = d["X"].astype(float), d["y"].astype(float).ravel()
    tr, te = d["train_idx"][split], d["test_idx"][split]
    if len(tr) > max_rows:
        tr = np.sort(np.random.default_rng(0).choice(tr, max_rows, replace=False))
    mx, sx = X[tr].mean(0), X[tr].std(0)
    sx[sx == 0] = 1.0
    my, sy = y[tr].mean(), y[tr].std()
    return (X[tr] - mx) / sx, (y[tr] - my) / sy, (X[te] - mx) / sx, y[te], my, sy


def regression(data_dir, splits, passes):
    rows = []
    for name in UCI:
        for split in range(splits):
            Xtr, ytr, Xte, yte, my, sy = uci_split(data_dir, name, split)
            for p in passes:
                start = time.perf_counter()
                est = BongRegressor(hidden_layer_sizes=(50,), passes=p, random_state=0).fit(Xtr, ytr)
                seconds = time.perf_counter() - start
                ll = float(np.mean(est.predict_logpdf(Xte, (yte - my) / sy))) - np.log(sy)
                rmse = float(np.sqrt(np.mean((est.predict(Xte) * sy + my - yte) ** 2)))
                rows.append((name, split, f"passes={p}", ll, rmse, seconds))
            start = time.perf_counter()
            mlp = MLPRegressor(hidden_layer_sizes=(50,), random_state=0).fit(Xtr, ytr)
            seconds = time.perf_counter() - start
            var = np.mean((ytr - mlp.predict(Xtr)) ** 2) * sy**2
            res = mlp.predict(Xte) * sy + my - yte
            ll = float(np.mean(-0.5 * np.log(2 * np.pi * var) - 0.5 * res**2 / var))
            rows.append((name, split, "MLPRegressor", ll, float(np.sqrt(np.mean(res**2))), seconds))
            for r in rows[-len(passes) - 1 :]:
                print(f"{r[0]:18s} {r[1]:5d} {r[2]:14s} {r[3]:9.4f} {r[4]:9.4f} {r[5]:7.2f}", flush=True)
    return rows


def classification(passes):
    sets = {
        "iris": load_iris(return_X_y=True),
        "wine": load_wine(return_X_y=True),
        "breast_cancer": load_breast_cancer(return_X_y=True),
        "digits": load_digits(return_X_y=True),
        "make_classification": make_classification(3000, 20, n_informative=10, random_state=0),
    }
    rows = []
    for name, (X, y) in sets.items():
        Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.25, random_state=0, stratify=y)
        scaler = StandardScaler().fit(Xtr)
        Xtr, Xte = scaler.transform(Xtr), scaler.transform(Xte)
        for label, make in [(f"passes={p}", lambda p=p: BongClassifier(
                hidden_layer_sizes=(32,), passes=p, random_state=0)) for p in passes] + [
                ("MLPClassifier", lambda: MLPClassifier(hidden_layer_sizes=(32,), random_state=0))]:
            start = time.perf_counter()
            est = make().fit(Xtr, ytr)
            seconds = time.perf_counter() - start
            loss = log_loss(yte, est.predict_proba(Xte), labels=est.classes_)
            rows.append((name, label, loss, seconds))
            print(f"{name:20s} {label:14s} {loss:9.4f} {seconds:7.2f}", flush=True)
    return rows


def summary(reg, passes):
    """Per setting: mean LL and RMSE over the set-splits, and on how many set-splits the
    setting beats one pass."""
    print("\nmean over the set-splits; against passes=1: LL higher / RMSE lower on how many")
    base = {(r[0], r[1]): r for r in reg if r[2] == "passes=1"}
    for label in [f"passes={p}" for p in passes] + ["MLPRegressor"]:
        mine = [r for r in reg if r[2] == label]
        better_ll = sum(r[3] > base[(r[0], r[1])][3] for r in mine)
        better_rmse = sum(r[4] < base[(r[0], r[1])][4] for r in mine)
        print(f"  {label:14s} LL {np.mean([r[3] for r in mine]):8.4f} (ahead on {better_ll} of "
              f"{len(mine)})   RMSE ahead on {better_rmse} of {len(mine)}")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data-dir", type=Path, default=Path(__file__).resolve().parents[1].parent / "shared" / "data")
    p.add_argument("--splits", type=int, default=3)
    p.add_argument("--passes", default="1,3,10,30")
    args = p.parse_args()
    passes = [int(v) for v in args.passes.split(",")]
    warnings.simplefilter("ignore")
    print("# bench_passes: networks' fit, one pass against tempered passes")
    print(f"# command: python benchmarks/bench_passes.py --splits {args.splits} --passes {args.passes}\n")
    if (args.data_dir / "uci").is_dir():
        print(f"{'data':18s} {'split':>5s} {'fit':14s} {'LL':>9s} {'RMSE':>9s} {'fit_s':>7s}")
        reg = regression(args.data_dir, args.splits, passes)
        summary(reg, passes)
    else:
        print(f"(no UCI data under {args.data_dir}: regression skipped)")
    print(f"\n{'data':20s} {'fit':14s} {'log-loss':>9s} {'fit_s':>7s}")
    classification(passes)


if __name__ == "__main__":
    main()
