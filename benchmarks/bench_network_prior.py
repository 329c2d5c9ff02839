"""The prior variance of the online estimators' networks under ``prior_variance="auto"``.

A built-in network's prior scales each weight of a layer with fan-in n by σ₀² / n.
This script fits ``BongClassifier(hidden_layer_sizes=(32,))`` or
``BongRegressor(hidden_layer_sizes=(50,))`` at each σ₀² of ``--grid`` on every data set
of ``bench_defaults.py`` that has a network row, and on a few more of scikit-learn's
generators (moons, circles, Hastie's 10.2, Gaussian quantiles, a 4-class
make_classification with 5 % flipped labels; Friedman 1-3, make_regression), each raw
and standardised (``bench_defaults``'s preparations: for regression y is standardised
too and the metrics are on the original scale of y), with ``MLPClassifier()`` /
``MLPRegressor()`` beside. ``count``: ``BongPoissonRegressor(hidden_layer_sizes=(32,))``
on ``bench_defaults``'s linear log-rate counts and on three draws of a nonlinear
log-rate (5 standard-normal features, log λ = 0.5 + sin 2x₁ + x₂x₃ / 2 − abs(x₄) / 2,
2,000 training and 1,000 test rows), with
``HistGradientBoostingRegressor(loss="poisson")`` beside. ``--passes`` sets ``passes`` (``auto``: ``fit``'s ten
tempered passes; ``1``: one pass, as ``partial_fit`` learns).

Cells: test log-loss (classification), or test NLL / RMSE (regression and counts);
lower is better. The summary counts, for each σ₀² against the first of the grid, the cases where
it is lower, and the cases that lose to the MLP by more than 2 %.

Usage: ``python benchmarks/bench_network_prior.py clf|reg|count [--grid 1,3,10,30]
[--passes auto|1] [--data-dir DIR]``
"""

import argparse
import warnings

import bench_defaults as B
import numpy as np
from _common import DEFAULT_DATA, git_revision
from sklearn import datasets as D
from sklearn.ensemble import HistGradientBoostingRegressor
from sklearn.neural_network import MLPClassifier, MLPRegressor

from skbong import BongClassifier, BongPoissonRegressor, BongRegressor

RULE = 0.02


def generated(task):
    """The generators' sets of ``task`` beyond ``bench_defaults``'s."""
    split = B.split
    if task == "clf":
        yield split("moons", "clf", *D.make_moons(1000, noise=0.3, random_state=0), "")
        yield split("circles", "clf",
                    *D.make_circles(1000, noise=0.2, factor=0.5, random_state=0), "")
        yield split("hastie", "clf", *D.make_hastie_10_2(2000, random_state=0), "")
        yield split("gaussian quantiles", "clf", *D.make_gaussian_quantiles(
            n_samples=1000, n_features=4, n_classes=3, random_state=0), "")
        yield split("4 classes, flipped", "clf", *D.make_classification(
            600, n_features=20, n_informative=5, n_classes=4, n_clusters_per_class=2,
            flip_y=0.05, random_state=1), "")
    elif task == "count":
        for seed in range(3):
            rng = np.random.default_rng(seed)
            X = rng.normal(size=(3000, 5))
            log_rate = 0.5 + np.sin(2 * X[:, 0]) + X[:, 1] * X[:, 2] / 2 - np.abs(X[:, 3]) / 2
            y = rng.poisson(np.exp(log_rate)).astype(float)
            yield B.DataSet(f"nonlinear counts, seed {seed}", "count", X[:2000], y[:2000],
                            X[2000:], y[2000:], "")
    else:
        yield split("friedman1", "reg", *D.make_friedman1(1000, noise=1.0, random_state=0), "")
        yield split("friedman2", "reg", *D.make_friedman2(1000, noise=10.0, random_state=0), "")
        yield split("friedman3", "reg", *D.make_friedman3(1000, noise=0.1, random_state=0), "")
        yield split("make_regression", "reg", *D.make_regression(
            800, 10, n_informative=5, noise=10, random_state=0), "")


def data_sets(task, data_dir):
    yield from (s for s in B.sklearn_sets(False) if s.task == task)
    if task != "count":
        yield from B.libsvm_sets(data_dir) if task == "clf" else B.uci_sets(data_dir, False)
    yield from (s for s in B.synthetic_sets(False)
                if s.task == task and (s.network or task == "count"))
    yield from generated(task)


def score(est, ds, prep, metric):
    s = B.SCORES[ds.task](est, prep, ds.yte)
    return s[metric], s.get("rmse")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("task", choices=["clf", "reg", "count"])
    p.add_argument("--grid", default="1,3,10,30")
    p.add_argument("--passes", default="auto")
    p.add_argument("--data-dir", default=DEFAULT_DATA)
    args = p.parse_args()
    grid = [float(v) for v in args.grid.split(",")]
    passes = args.passes if args.passes == "auto" else int(args.passes)
    clf = args.task == "clf"
    est, hidden, mlp = {
        "clf": (BongClassifier, (32,), MLPClassifier),
        "reg": (BongRegressor, (50,), MLPRegressor),
        "count": (BongPoissonRegressor, (32,),
                  lambda random_state: HistGradientBoostingRegressor(
                      loss="poisson", random_state=random_state)),
    }[args.task]
    metric = "logloss" if clf else "nll"
    print(f"# recorded with the code of skbong revision {git_revision()}")
    print(f"# bench_network_prior {args.task} --grid {args.grid} --passes {args.passes}: "
          f"{est.__name__}(hidden_layer_sizes={hidden}); cells: test {metric}"
          + ("" if clf else " / RMSE"))
    print(f"{'data':26s} prep " + " ".join(f"{f'σ₀²={v:g}':>16s}" for v in grid)
          + f" {'baseline':>16s}")
    table = []
    warnings.simplefilter("ignore")
    for ds in data_sets(args.task, args.data_dir):
        for prep in B.preparations(ds):
            cells = []
            for v in grid:
                try:
                    fitted = est(hidden_layer_sizes=hidden, prior_variance=v, passes=passes,
                                 random_state=0).fit(prep.Xtr, prep.ytr)
                    cells.append(score(fitted, ds, prep, metric))
                except Exception:  # noqa: BLE001 - a failure is a result
                    cells.append((np.inf, np.inf))
            cells.append(score(mlp(random_state=0).fit(prep.Xtr, prep.ytr), ds, prep, metric))
            table.append(cells)
            text = [f"{m:9.4f}" + ("" if clf else f"/{r:<6.4g}") for m, r in cells]
            print(f"{ds.name[:26]:26s} {prep.label:4s} "
                  + " ".join(f"{t:>16s}" for t in text), flush=True)
    first = np.array([row[0][0] for row in table])
    base = np.array([row[-1][0] for row in table])
    print(f"\n{len(table)} cases; against σ₀²={grid[0]:g}: lower {metric} on how many; "
          f"loses to the baseline by more than {RULE:.0%}")
    for k, v in enumerate(grid):
        ours = np.array([row[k][0] for row in table])
        print(f"  σ₀²={v:<6g} lower in {np.sum(ours < first):2d}   "
              f"loses in {np.sum(ours - base > RULE * np.abs(base)):2d}")


if __name__ == "__main__":
    main()
