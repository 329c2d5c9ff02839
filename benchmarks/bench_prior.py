"""The linear models' default prior: a fixed σ₀² = 1 against the evidence bank.

``prior_variance="auto"`` is a bank of filters over σ₀² ∈ {10⁻³, …, 10³} for the linear
model (and σ₀² = 1 for networks). This script measures that choice: for each data set,
the linear ``BongRegressor``, ``BongClassifier`` or ``BongPoissonRegressor`` at
``prior_variance=1.0`` and at the default, beside the baseline a user would fit instead
(``BayesianRidge``, ``LogisticRegressionCV(scoring="neg_log_loss")``,
``PoissonRegressor``), and the fit time of each.

Data: scikit-learn's diabetes (raw features and y; 5-fold R²), iris, wine,
breast_cancer and digits (standardised by a scaler fitted on the training part, 75 / 25
stratified split, seed 0); synthetic sparse binary features (120 columns present in
0.1–30 % of rows, logistic ground truth, 2,000 training and 1,000 test rows), raw and
standardised, two seeds; a synthetic Poisson set (5 standard-normal features, 2,000 /
1,000 rows); and with ``--data-dir`` the LIBSVM australian and breast-cancer presplits
and the first split of the seven UCI regression sets (X and y standardised on the
training part). Metric: test log-loss (classifiers), test R² (regressors; higher is
better), mean Poisson deviance (counts). fit_s: wall seconds of a second fit (compiled).

``--families`` adds the classifier at the default prior with ``family="full"`` and
``"diag"`` (its default is ``"dlr"``).

``--grid`` adds, under each classification set, the held-out log-loss of one filter at
each σ₀² of the bank's grid (``prior_variance=v`` for v in ``PRIOR_GRID``), the value the
bank weighs most (its evidence, the cumulative one-step-ahead log predictive density),
and the value the held-out rows would have chosen: where the two differ, the evidence and
the test set disagree, and the bank cannot do better than its own evidence.

Usage: ``python benchmarks/bench_prior.py [--data-dir DIR] [--families] [--grid]``
"""

import argparse
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.datasets import load_breast_cancer, load_diabetes, load_digits, load_iris, load_wine
from sklearn.linear_model import BayesianRidge, LogisticRegressionCV, PoissonRegressor
from sklearn.metrics import log_loss, mean_poisson_deviance, r2_score
from sklearn.model_selection import KFold, train_test_split
from sklearn.preprocessing import StandardScaler

from skbong import BongClassifier, BongPoissonRegressor, BongRegressor
from skbong._online.bank import PRIOR_GRID

UCI = ("bostonHousing", "concrete", "energy", "kin8nm", "power-plant", "wine-quality-red", "yacht")


def sparse_binary(seed, n_train=2000, n_test=1000, n_features=120):
    """Binary features present in 0.1–30 % of rows; a logistic ground truth."""
    rng = np.random.default_rng(seed)
    freq = np.exp(rng.uniform(np.log(0.001), np.log(0.3), n_features))
    X = (rng.random((n_train + n_test, n_features)) < freq).astype(float)
    w = rng.normal(size=n_features) * 1.5
    logit = X @ w - X.mean(0) @ w
    y = (rng.random(len(X)) < 1 / (1 + np.exp(-logit))).astype(int)
    return X[:n_train], y[:n_train], X[n_train:], y[n_train:]


def standardise(X, Xt):
    scaler = StandardScaler().fit(X)
    return scaler.transform(X), scaler.transform(Xt)


def classification_sets(data_dir):
    for name, loader in (("iris", load_iris), ("wine", load_wine),
                         ("breast_cancer", load_breast_cancer), ("digits", load_digits)):
        X, y = loader(return_X_y=True)
        X, Xt, y, yt = train_test_split(X, y, test_size=0.25, stratify=y, random_state=0)
        yield (f"{name} (standardised)", *standardise(X, Xt), y, yt)
    for seed in (0, 1):
        X, y, Xt, yt = sparse_binary(seed)
        yield f"sparse binary, seed {seed} (raw)", X, Xt, y, yt
        yield (f"sparse binary, seed {seed} (standardised)", *standardise(X, Xt), y, yt)
    for name in ("australian_scale", "breast-cancer_scale"):
        path = Path(data_dir or "") / "libsvm" / name / f"{name}.npz"
        if data_dir and path.exists():
            d = np.load(path)
            tr, te = d["presplit_train_idx"], d["presplit_test_idx"]
            yield f"libsvm {name}", d["X"][tr], d["X"][te], d["y01"][tr], d["y01"][te]


def regression_sets(data_dir):
    for name in UCI:
        path = Path(data_dir or "") / "uci" / name / f"{name}.npz"
        if data_dir and path.exists():
            d = np.load(path)
            X, y = d["X"].astype(float), d["y"].astype(float).ravel()
            tr, te = d["train_idx"][0], d["test_idx"][0]
            mu, sd = y[tr].mean(), y[tr].std()
            yield (f"UCI {name} (standardised)", *standardise(X[tr], X[te]),
                   (y[tr] - mu) / sd, (y[te] - mu) / sd)


def timed_fit(est, X, y):
    est.fit(X, y)  # compiles
    t0 = time.perf_counter()
    est.fit(X, y)
    return time.perf_counter() - t0


def row(name, metric, values, times, better):
    fixed, auto, base = values
    gap = (auto - base) / abs(base) * (1 if better == "lower" else -1)
    print(f"{name:42s} {metric:9s} {fixed:9.4f} {auto:9.4f} {base:9.4f} {100 * gap:+8.1f}% "
          f"{times[1] / times[0]:6.2f} {times[1]:7.3f}")


def grid_row(bank, X, Xt, y, yt):
    """The held-out log-loss of one filter at each σ₀² of the grid, the bank's choice
    (largest posterior weight) and the held-out rows' choice."""
    losses = []
    for v in PRIOR_GRID:
        est = BongClassifier(prior_variance=float(v), random_state=0).fit(X, y)
        losses.append(log_loss(yt, est.predict_proba(Xt), labels=est.classes_))
    cells = " ".join(f"{v:g}:{loss:.4f}" for v, loss in zip(PRIOR_GRID, losses))
    best = PRIOR_GRID[int(np.argmin(losses))]
    print(f"{'':42s} grid      {cells}  evidence picks {bank.prior_variance_:g}, "
          f"held-out rows {best:g}")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data-dir", default=None)
    p.add_argument("--families", action="store_true",
                   help="also the classifier's default with family='full' and 'diag'")
    p.add_argument("--grid", action="store_true",
                   help="also the held-out log-loss at each σ₀² of the bank's grid")
    args = p.parse_args()
    warnings.simplefilter("ignore")
    print(f"{'data':42s} {'metric':9s} {'σ₀²=1':>9s} {'auto':>9s} {'baseline':>9s} "
          f"{'auto gap':>9s} {'t auto/1':>6s} {'fit_s':>7s}")

    X, y = load_diabetes(return_X_y=True)
    scores, times = {k: [] for k in "fab"}, {k: [] for k in "fa"}
    for tr, te in KFold(5, shuffle=True, random_state=0).split(X):
        for key, est in (("f", BongRegressor(prior_variance=1.0, random_state=0)),
                         ("a", BongRegressor(random_state=0)), ("b", BayesianRidge())):
            t = timed_fit(est, X[tr], y[tr])
            scores[key].append(r2_score(y[te], est.predict(X[te])))
            if key in times:
                times[key].append(t)
    row("diabetes (raw, 5-fold)", "R²", [np.mean(scores[k]) for k in "fab"],
        [np.sum(times[k]) for k in "fa"], "higher")

    for name, X, Xt, y, yt in regression_sets(args.data_dir):
        fits = [BongRegressor(prior_variance=1.0, random_state=0), BongRegressor(random_state=0)]
        times = [timed_fit(e, X, y) for e in fits]
        base = BayesianRidge().fit(X, y)
        row(name, "R²", [r2_score(yt, e.predict(Xt)) for e in (*fits, base)], times, "higher")

    for name, X, Xt, y, yt in classification_sets(args.data_dir):
        fits = [BongClassifier(prior_variance=1.0, random_state=0), BongClassifier(random_state=0)]
        times = [timed_fit(e, X, y) for e in fits]
        base = LogisticRegressionCV(scoring="neg_log_loss", max_iter=5000).fit(X, y)
        losses = [log_loss(yt, e.predict_proba(Xt), labels=e.classes_) for e in (*fits, base)]
        row(name, "log-loss", losses, times, "lower")
        if args.families:
            for family in ("full", "diag"):
                est = BongClassifier(family=family, random_state=0)
                t = timed_fit(est, X, y)
                print(f"{'':42s} {family:9s} {log_loss(yt, est.predict_proba(Xt), labels=est.classes_):9.4f}"
                      f" (fit {t:.3f} s)")
        if args.grid:
            grid_row(fits[1], X, Xt, y, yt)

    rng = np.random.default_rng(0)
    X = rng.normal(size=(3000, 5))
    y = rng.poisson(np.exp(0.5 + X @ np.array([0.5, -0.3, 0.2, 0.0, 0.1])))
    X, Xt, y, yt = X[:2000], X[2000:], y[:2000], y[2000:]
    fits = [BongPoissonRegressor(prior_variance=1.0, random_state=0), BongPoissonRegressor(random_state=0)]
    times = [timed_fit(e, X, y) for e in fits]
    base = PoissonRegressor(alpha=0.0).fit(X, y)
    row("synthetic Poisson", "deviance",
        [mean_poisson_deviance(yt, e.predict(Xt)) for e in (*fits, base)], times, "lower")


if __name__ == "__main__":
    main()
