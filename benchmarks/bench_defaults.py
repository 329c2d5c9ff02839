"""skbong at its default parameters next to the baselines a user would reach for.

Every skbong estimator is built with no argument but ``random_state=0`` (and
``hidden_layer_sizes`` or ``drift`` where the row's name says so); every baseline with its
own defaults (``random_state=0`` where it takes one). Nothing is tuned. The script runs
whatever defaults the installed skbong has, and checks one rule: **on no data set does a
skbong default lose to its baseline by more than 2 % of the metric**.

Data sets (each run twice, ``raw`` and ``std``)
------------------------------------------------
* scikit-learn's embedded sets: diabetes (regression); iris, wine, breast_cancer, digits
  (classification); make_classification (3,000 rows, 20 features). linnerud is left out
  (20 rows, three outputs).
* ``--data-dir`` (sets absent there are skipped with a note): the 7 UCI regression sets
  (first of the 20 splits; training part capped at 2,000 rows drawn at random, seed 0:
  kin8nm and power-plant are subsampled), libsvm australian_scale and
  breast-cancer_scale (their 50/50 presplit, labels 0/1), MNIST (the first 2,000
  training and 1,000 test images, pixels / 255; linear classifiers only).
* synthetic (seed 0): ``sparse binary`` (a1a-like: 120 binary columns with frequencies
  0.1-30 %, logistic ground truth, 2,000 train / 1,000 test); ``duplicated rows`` (20
  distinct rows of 8 features, each repeated 100 times, tested on 1,000 fresh rows of the
  same law; a regression and a classification version); ``feature scales 1e2-1e4``
  (8 features of standard deviations log-spaced from 1e2 to 1e4 and means of 3 s.d.);
  ``y scale 1e3`` (y of standard deviation about 1e3 around 5e3); ``outliers 1 %`` and
  ``outliers 5 %`` (that fraction of the training targets moved by ±20-50 noise s.d.; the
  test targets are clean; HuberRegressor joins the baselines); ``poisson counts``
  (log-rate linear in 5 features). The regression sets have 8 features, 2,000 train /
  1,000 test rows, y = x·w + 1 + N(0, 0.5²) unless said otherwise.
* river's streams that ship inside the package (no download), evaluated prequentially
  (each row predicted, then learned): the first 500 rows of Phishing, Bananas,
  ImageSegments, TrumpApproval, ChickWeights and SP500Stocks; and a
  drifting linear stream (5 standard-normal features, the weight vector turning once over
  5,000 rows), also with a hand-set ``drift=0.99``. river's other file data sets are time
  stamps only (AirlinePassengers, WaterFlow), multi-output (SolarFlare, Yeast); Shuttle
  (49,097 rows of anomaly detection, 7 %
  positive) is left out for time.

``raw``: the features (and y) as the data set gives them. ``std``: features through a
StandardScaler fitted on the training part; for regression y is standardised too (training
mean and s.d.) and every metric is reported on the original scale of y; count targets stay
raw. For the streams ``std`` is river's online StandardScaler (statistics of the rows before
the current one) and y stays raw; the drifting stream is standard by construction and runs
raw only. Batch sets are split 75 % / 25 % (stratified for classification, seed 0) unless
they come with a split.

Estimators
----------
regression: BongRegressor() and BongRegressor(hidden_layer_sizes=(50,)),
VariationalRegressor() and VariationalRegressor(hidden_layer_sizes=(50,)); baselines
BayesianRidge() (linear), HuberRegressor() (linear, outlier sets), MLPRegressor() (network).
classification: BongClassifier() and BongClassifier(hidden_layer_sizes=(32,)),
VariationalClassifier() and VariationalClassifier(hidden_layer_sizes=(32,)); baselines
LogisticRegressionCV(scoring="neg_log_loss") (linear), MLPClassifier() (network).
counts: BongPoissonRegressor() against PoissonRegressor(). streams: BongClassifier() and
BongRegressor() (and BongRegressor(drift="auto") on the drifting stream) against river's
LogisticRegression (one-vs-rest beyond two classes) and BayesianLinearRegression (and
BayesianLinearRegression(smoothing=0.99) on the drifting stream).

The rule
--------
A linear skbong row is compared with the linear baselines of its case, a network row with
the network baseline, a static stream learner with the static river model, a forgetting one
with both river models; against the best of them on each metric. Metrics (lower is
better): log-loss for classifiers; test NLL and RMSE for regression and counts. relative
gap = (skbong - baseline) / abs(baseline); a row breaks the rule when the gap exceeds 0.02 or
the skbong fit failed. (A relative gap of an NLL near 0 is large for a small absolute
difference: the absolute gap is printed beside it.)

Columns
-------
score: R² (regression, counts) or accuracy. rmse: on the original scale of y. nll: mean
negative log predictive density (nats, original scale of y): ``predict_logpdf`` /
``predict_logpmf`` where the estimator has it, the Gaussian of ``predict(return_std=True)``
for BayesianRidge and river, the Poisson pmf at the predicted mean for PoissonRegressor,
and for point predictors (MLPRegressor, HuberRegressor) a Gaussian with the training
root-mean-square residual as s.d. logloss: mean -log probability of the true class.
cov90: fraction of test targets in the central 90 % interval. ece: expected calibration
error, 15 bins. fit_s: wall seconds of one fit; for skbong that of a second, compiled fit
(the one-off JAX compilation of the first is compile_s) unless the first took over 30 s.
Streams: total_s is the whole prequential pass (for skbong including the one-off
compilation). time x: skbong fit_s (streams: total_s)
over the baseline's. skipped: ``n_skipped_``. notes: warnings raised, or "FAILED
<exception class>" (a failure never stops the run).

Cost: most of the time is the one-off JAX compilation of the skbong programs (one per
feature count and model) and LogisticRegressionCV's 5 x 10 fits: on a 2-core machine at
load average 10-21, 2-5 minutes of wall time per data set (both preparations); MNIST
is run last because it is by far the slowest (BongClassifier()'s first fit on the raw
images had not ended after 22 minutes at load average 11-19).
``--compilation-cache DIR`` keeps the compiled programs for a later run. ``--quick``
(diabetes with networks; iris, breast_cancer, outliers 5 %, poisson counts and UCI yacht
without; a 200-row Phishing and a 300-row drifting stream) took 4.5 minutes at load
average 8-15.
A run interrupted (Ctrl-C, SIGTERM) still prints the comparisons of the cases it finished
(once the running fit hands control back to Python).

Usage: ``python benchmarks/bench_defaults.py [--quick] [--data-dir DIR] [--out FILE]
[--sets NAME,...] [--compilation-cache DIR]``
"""

import argparse
import math
import signal
import sys
import time
import traceback
import warnings
from pathlib import Path
from typing import NamedTuple

import numpy as np
import scipy.special
import sklearn
from _common import DEFAULT_DATA, Tee, cpu_model, git_revision, load_note, machine
from sklearn.datasets import (
    load_breast_cancer,
    load_diabetes,
    load_digits,
    load_iris,
    load_wine,
    make_classification,
)
from sklearn.linear_model import (
    BayesianRidge,
    HuberRegressor,
    LogisticRegressionCV,
    PoissonRegressor,
)
from sklearn.model_selection import train_test_split
from sklearn.neural_network import MLPClassifier, MLPRegressor
from sklearn.preprocessing import StandardScaler

from skbong import (
    BongClassifier,
    BongPoissonRegressor,
    BongRegressor,
    VariationalClassifier,
    VariationalRegressor,
    enable_compilation_cache,
)
from skbong.metrics import expected_calibration_error

Z90 = 1.6448536269514722  # standard normal 95 % quantile: mean ± Z90·std holds 90 %
RULE = 0.02  # largest relative loss of a skbong default against its baseline
UCI = ("bostonHousing", "concrete", "energy", "kin8nm", "power-plant", "wine-quality-red",
       "yacht")
MAX_TRAIN = 2000  # UCI training rows kept (kin8nm and power-plant have more)
REFIT_MAX_S = 30.0  # a skbong fit slower than this is not repeated to time it compiled
COLUMNS = {
    "reg": ["model", "score", "rmse", "nll", "cov90", "fit_s", "compile_s", "skipped",
            "notes"],
    "count": ["model", "score", "rmse", "nll", "fit_s", "compile_s", "skipped", "notes"],
    "clf": ["model", "score", "logloss", "ece", "fit_s", "compile_s", "skipped", "notes"],
}
STREAM_COLUMNS = {
    "reg": ["model", "score", "rmse", "nll", "cov90", "total_s", "skipped", "notes"],
    "clf": ["model", "score", "logloss", "ece", "total_s", "skipped", "notes"],
}
METRICS = {"reg": ("nll", "rmse"), "count": ("nll", "rmse"), "clf": ("logloss",)}
FORMATS = {"score": "{:.4f}", "rmse": "{:.4g}", "nll": "{:.4f}", "logloss": "{:.4f}",
           "cov90": "{:.3f}", "ece": "{:.4f}", "fit_s": "{:.3f}", "compile_s": "{:.2f}",
           "total_s": "{:.1f}"}
SKBONG = (BongRegressor, BongClassifier, BongPoissonRegressor, VariationalRegressor,
          VariationalClassifier)


# ---------------------------------------------------------------- output


def fmt_cell(col, v):
    if v is None:
        return "-"
    if isinstance(v, float) and not math.isfinite(v):
        return str(v)
    f = FORMATS.get(col)
    return f.format(v) if f and isinstance(v, (int, float)) and not isinstance(v, bool) else str(v)


def print_table(rows, columns):
    cells = [[fmt_cell(c, r.get(c)) for c in columns] for r in rows]
    widths = [max(len(c), *(len(row[i]) for row in cells)) for i, c in enumerate(columns)]
    left = {"model", "notes", "set", "prep", "skbong", "baseline", "metric", "status"}
    just = [(str.ljust if c in left else str.rjust) for c in columns]
    print("  ".join(j(c, w) for c, w, j in zip(columns, widths, just)).rstrip())
    for row in cells:
        print("  ".join(j(v, w) for v, w, j in zip(row, widths, just)).rstrip())


def progress(msg):
    print(msg, file=sys.stderr, flush=True)


def case_header(title, detail):
    print(f"\n== {title}\n   {detail}")


# ---------------------------------------------------------------- scores


def r2(y, pred):
    y, pred = np.asarray(y, float), np.asarray(pred, float)
    ss = np.sum((y - y.mean()) ** 2)
    return float(1.0 - np.sum((y - pred) ** 2) / ss) if ss > 0 else float("nan")


def rmse(y, pred):
    return float(np.sqrt(np.mean((np.asarray(y, float) - np.asarray(pred, float)) ** 2)))


def gaussian_nll(y, mean, std):
    z = (y - mean) / std
    return float(np.mean(0.5 * np.log(2 * np.pi) + np.log(std) + 0.5 * z**2))


def poisson_nll(y, rate):
    y, rate = np.asarray(y, float), np.asarray(rate, float)
    return float(-np.mean(scipy.special.xlogy(y, rate) - rate - scipy.special.gammaln(y + 1)))


def log_loss(proba, y_idx):
    p = proba[np.arange(len(y_idx)), y_idx]
    return float(-np.mean(np.log(np.clip(p, 1e-15, 1.0))))


def warning_names(caught):
    return sorted({w.category.__name__ for w in caught})


def failed(name, exc):
    progress(f"  {name}: FAILED\n" + "".join(traceback.format_exception(exc)[-3:]))
    return {"model": name, "notes": f"FAILED {type(exc).__name__}"}


# ---------------------------------------------------------------- data sets


class DataSet(NamedTuple):
    """A batch case: training and test parts as the data set gives them."""

    name: str
    task: str  # "reg", "clf" or "count"
    Xtr: np.ndarray
    ytr: np.ndarray
    Xte: np.ndarray
    yte: np.ndarray
    detail: str
    network: bool = True  # run the network rows
    outliers: bool = False  # add HuberRegressor


def split(name, task, X, y, detail, **kw):
    clf = task == "clf"
    Xtr, Xte, ytr, yte = train_test_split(
        np.asarray(X, float), y if clf else np.asarray(y, float), test_size=0.25,
        random_state=0, stratify=y if clf else None)
    return DataSet(name, task, Xtr, ytr, Xte, yte, detail, **kw)


def sklearn_sets(quick):
    yield split("diabetes", "reg", *load_diabetes(return_X_y=True), "scikit-learn")
    yield split("iris", "clf", *load_iris(return_X_y=True), "scikit-learn")
    if not quick:
        yield split("wine", "clf", *load_wine(return_X_y=True), "scikit-learn")
    yield split("breast_cancer", "clf", *load_breast_cancer(return_X_y=True), "scikit-learn")
    if not quick:
        yield split("digits", "clf", *load_digits(return_X_y=True), "scikit-learn")
        yield split("make_classification", "clf",
                    *make_classification(n_samples=3000, random_state=0),
                    "make_classification(n_samples=3000, random_state=0)")


def missing(path):
    print(f"\n== {path.parent.name}: skipped ({path} not found)")


def uci_sets(data_dir, quick):
    for name in ("yacht",) if quick else UCI:
        path = Path(data_dir) / "uci" / name / f"{name}.npz"
        if not path.exists():
            missing(path)
            continue
        d = np.load(path)
        X, y = d["X"].astype(np.float64), d["y"].astype(np.float64).ravel()
        tr, te = d["train_idx"][0], d["test_idx"][0]
        note = "split 0"
        if len(tr) > MAX_TRAIN:
            tr = np.sort(np.random.default_rng(0).choice(tr, MAX_TRAIN, replace=False))
            note += f", training part subsampled to {MAX_TRAIN} of {len(d['train_idx'][0])}"
        yield DataSet(f"UCI {name}", "reg", X[tr], y[tr], X[te], y[te], note)


def libsvm_sets(data_dir):
    for name in ("australian_scale", "breast-cancer_scale"):
        path = Path(data_dir) / "libsvm" / name / f"{name}.npz"
        if not path.exists():
            missing(path)
            continue
        d = np.load(path)
        X, y = d["X"].astype(np.float64), d["y01"].astype(int)
        tr, te = d["presplit_train_idx"], d["presplit_test_idx"]
        yield DataSet(f"libsvm {name}", "clf", X[tr], y[tr], X[te], y[te],
                      "the 50/50 presplit; features as LIBSVM scaled them to [-1, 1]")


def mnist_set(data_dir, n_train=2_000, n_test=1_000):
    path = Path(data_dir) / "mnist" / "mnist.npz"
    if not path.exists():
        missing(path)
        return
    d = np.load(path)
    X = d["x_train"][:n_train].reshape(n_train, -1) / 255.0
    Xt = d["x_test"][:n_test].reshape(n_test, -1) / 255.0
    yield DataSet("MNIST", "clf", X, d["y_train"][:n_train].astype(int), Xt,
                  d["y_test"][:n_test].astype(int),
                  f"first {n_train} training / {n_test} test images, pixels / 255; "
                  "linear classifiers only", network=False)


def linear_target(rng, X, w, noise=0.5):
    return X @ w + 1.0 + noise * rng.normal(size=len(X))


def sparse_binary(rng, n, d=120):
    """a1a-like features: binary columns with frequencies log-spaced over 0.1-30 %."""
    freq = np.geomspace(0.001, 0.3, d)
    return (rng.random((n, d)) < freq).astype(float), freq


def synthetic_sets(quick):
    """The synthetic cases (seed 0); see the module docstring."""
    rng = np.random.default_rng(0)
    n, m, d = 2000, 1000, 8
    if not quick:
        X, _ = sparse_binary(rng, n + m)
        w = rng.normal(size=X.shape[1])
        p = scipy.special.expit(X @ w - 1.0)
        y = (rng.random(n + m) < p).astype(int)
        yield DataSet("sparse binary", "clf", X[:n], y[:n], X[n:], y[n:],
                      "120 binary columns, frequencies 0.1-30 %, y ~ Bernoulli(σ(x·w - 1)), "
                      "w ~ N(0, I)")
        for task in ("reg", "clf"):
            distinct = rng.normal(size=(20, d))
            w = rng.normal(size=d)
            Xte = rng.normal(size=(m, d))
            if task == "reg":
                yd, yte = linear_target(rng, distinct, w), linear_target(rng, Xte, w)
            else:
                yd = (rng.random(20) < scipy.special.expit(distinct @ w)).astype(int)
                yte = (rng.random(m) < scipy.special.expit(Xte @ w)).astype(int)
            order = rng.permutation(np.repeat(np.arange(20), 100))
            yield DataSet(f"duplicated rows ({task})", task, distinct[order], yd[order], Xte,
                          yte, "20 distinct rows x 100 copies (shuffled); test: 1000 fresh "
                          "rows of the same law" + ("" if task == "reg" else
                                                    ", y ~ Bernoulli(σ(x·w))"))
        scale = np.geomspace(1e2, 1e4, d)
        Z = rng.normal(size=(n + m, d))
        y = linear_target(rng, Z, rng.normal(size=d))
        X = (Z + 3.0) * scale
        yield DataSet("feature scales 1e2-1e4", "reg", X[:n], y[:n], X[n:], y[n:],
                      "x_j = (z_j + 3) s_j, s_j log-spaced 1e2..1e4, y = z·w + 1 + N(0, 0.5²)")
        X = rng.normal(size=(n + m, d))
        y = 5e3 + 1e3 * linear_target(rng, X, rng.normal(size=d) / np.sqrt(d))
        yield DataSet("y scale 1e3", "reg", X[:n], y[:n], X[n:], y[n:],
                      "y = 5e3 + 1e3 (x·w + 1 + N(0, 0.5²)), |w|² ≈ 1")
    for frac in (0.05,) if quick else (0.01, 0.05):
        X = rng.normal(size=(n + m, d))
        y = linear_target(rng, X, rng.normal(size=d))
        k = int(frac * n)
        hit = rng.choice(n, k, replace=False)
        y[hit] += rng.choice([-1.0, 1.0], k) * rng.uniform(20, 50, k) * 0.5
        yield DataSet(f"outliers {frac:.0%}", "reg", X[:n], y[:n], X[n:], y[n:],
                      f"{k} of {n} training targets moved by ±(20-50) noise s.d.; "
                      "test targets clean", outliers=True)
    X = rng.normal(size=(n + m, 5))
    w = rng.normal(size=5) * 0.4
    y = rng.poisson(np.exp(0.5 + X @ w)).astype(float)
    yield DataSet("poisson counts", "count", X[:n], y[:n], X[n:], y[n:],
                  f"y ~ Poisson(exp(0.5 + x·w)), x ~ N(0, I_5), mean count {y.mean():.2f}",
                  network=False)


# ---------------------------------------------------------------- models


def skbong_models(ds):
    """(name, factory, kind) of the skbong rows of a case."""
    rs = {"random_state": 0}
    if ds.task == "count":
        return [("BongPoissonRegressor()", lambda: BongPoissonRegressor(**rs), "linear")]
    if ds.task == "reg":
        bong, var, hidden = BongRegressor, VariationalRegressor, (50,)
    else:
        bong, var, hidden = BongClassifier, VariationalClassifier, (32,)
    rows = [(f"{c.__name__}()", (lambda c=c: c(**rs)), "linear") for c in (bong, var)]
    if ds.network:
        rows += [(f"{c.__name__}(hidden_layer_sizes={hidden})",
                  (lambda c=c: c(hidden_layer_sizes=hidden, **rs)), "network")
                 for c in (bong, var)]
    return rows


def baseline_models(ds):
    if ds.task == "count":
        return [("PoissonRegressor()", PoissonRegressor, "linear")]
    if ds.task == "reg":
        rows = [("BayesianRidge()", BayesianRidge, "linear")]
        if ds.outliers:
            rows.append(("HuberRegressor()", HuberRegressor, "linear"))
        net = ("MLPRegressor()", lambda: MLPRegressor(random_state=0), "network")
    else:
        rows = [('LogisticRegressionCV(scoring="neg_log_loss")',
                 lambda: LogisticRegressionCV(scoring="neg_log_loss"), "linear")]
        net = ("MLPClassifier()", lambda: MLPClassifier(random_state=0), "network")
    return rows + ([net] if ds.network else [])


# ---------------------------------------------------------------- batch evaluation


class Prep(NamedTuple):
    """One preparation of a case: the arrays the models see, and y's affine map back."""

    label: str
    Xtr: np.ndarray
    ytr: np.ndarray
    Xte: np.ndarray
    y_loc: float = 0.0
    y_scale: float = 1.0


def preparations(ds):
    """``raw``, then ``std`` (X standardised on the training part; y too for regression)."""
    yield Prep("raw", ds.Xtr, ds.ytr, ds.Xte)
    sx = StandardScaler().fit(ds.Xtr)
    Xtr, Xte = sx.transform(ds.Xtr), sx.transform(ds.Xte)
    if ds.task != "reg":
        yield Prep("std", Xtr, ds.ytr, Xte)
        return
    loc, scale = float(ds.ytr.mean()), float(ds.ytr.std())
    yield Prep("std", Xtr, (ds.ytr - loc) / scale, Xte, loc, scale)


def timed_fit(make, X, y):
    """Fit a fresh estimator; for skbong fit a second one to separate the compilation
    (unless the first fit took longer than ``REFIT_MAX_S``)."""
    t0 = time.perf_counter()
    est = make().fit(X, y)
    first = time.perf_counter() - t0
    if not isinstance(est, SKBONG) or first > REFIT_MAX_S:
        return est, first, None
    t0 = time.perf_counter()
    est = make().fit(X, y)
    warm = time.perf_counter() - t0
    return est, warm, max(first - warm, 0.0)


def regression_scores(est, prep, yte):
    """rmse, nll, cov90 and R² on the original scale of y."""
    loc, scale = prep.y_loc, prep.y_scale
    t = (yte - loc) / scale  # the test targets on the scale the model learned
    mean = np.asarray(est.predict(prep.Xte), float)
    out = {"score": r2(t, mean), "rmse": scale * rmse(t, mean)}
    if hasattr(est, "predict_logpdf"):
        out["nll"] = -float(np.mean(est.predict_logpdf(prep.Xte, t))) + math.log(scale)
        lo, hi = (np.asarray(a, float) for a in est.predict_interval(prep.Xte, coverage=0.9))
    else:
        if isinstance(est, BayesianRidge):
            mean, std = (np.asarray(a, float) for a in est.predict(prep.Xte, return_std=True))
        else:  # a point predictor: the training root-mean-square residual as s.d.
            std = np.full(len(t), rmse(prep.ytr, est.predict(prep.Xtr)))
        out["nll"] = gaussian_nll(t, mean, std) + math.log(scale)
        lo, hi = mean - Z90 * std, mean + Z90 * std
    out["cov90"] = float(np.mean((t >= lo) & (t <= hi)))
    return out


def count_scores(est, prep, yte):
    rate = np.asarray(est.predict(prep.Xte), float)
    if hasattr(est, "predict_logpmf"):
        nll = -float(np.mean(est.predict_logpmf(prep.Xte, yte)))
    else:
        nll = poisson_nll(yte, rate)
    return {"score": r2(yte, rate), "rmse": rmse(yte, rate), "nll": nll}


def classification_scores(est, prep, yte):
    proba = np.asarray(est.predict_proba(prep.Xte), float)
    y_idx = np.searchsorted(est.classes_, yte)
    return {"score": float(np.mean(proba.argmax(axis=1) == y_idx)),
            "logloss": log_loss(proba, y_idx),
            "ece": expected_calibration_error(y_idx, proba, n_bins=15)}


SCORES = {"reg": regression_scores, "count": count_scores, "clf": classification_scores}


def evaluate(name, make, ds, prep):
    """One row of a batch table; a failure is a row too."""
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            est, fit_s, compile_s = timed_fit(make, prep.Xtr, prep.ytr)
            row = SCORES[ds.task](est, prep, ds.yte)
        return {"model": name, **row, "fit_s": fit_s, "compile_s": compile_s,
                "skipped": getattr(est, "n_skipped_", None),
                "notes": " ".join(warning_names(caught))}
    except Exception as exc:  # noqa: BLE001 - a failure is a result, not the end of the run
        return failed(name, exc)


def batch_case(ds):
    """Both preparations of a case: yields (set, prep, task, rows) with each row's role."""
    models = [(*m, "skbong") for m in skbong_models(ds)]
    models += [(*m, "baseline") for m in baseline_models(ds)]
    n_classes = f" classes={len(np.unique(ds.ytr))}" if ds.task == "clf" else ""
    for prep in preparations(ds):
        what = {"raw": "X raw" + (", y raw" if ds.task != "clf" else ""),
                "std": "X standardised on the training part"
                + {"reg": ", y standardised (metrics on the original scale of y)",
                   "count": ", y raw (counts)", "clf": ""}[ds.task]}[prep.label]
        case_header(f"{ds.name} [{prep.label}]",
                    f"n_train={len(ds.ytr)} n_test={len(ds.yte)} d={ds.Xtr.shape[1]}"
                    f"{n_classes}; {ds.detail}; {what}")
        rows = []
        for name, make, kind, role in models:
            progress(f"{ds.name} [{prep.label}]: {name}")
            row = evaluate(name, make, ds, prep)
            rows.append({**row, "kind": kind, "role": role})
        print_table(rows, COLUMNS[ds.task])
        yield ds.name, prep.label, ds.task, rows


# ---------------------------------------------------------------- prequential streams
#
# A learner of a stream has score(x, y) -> dict (called before learn on the row) and
# learn(x, y); x is one row as a float64 array of shape (d,).


def as_dicts(X):
    return [dict(enumerate(row)) for row in np.asarray(X, float).tolist()]


class BongStreamRegressor:
    def __init__(self, est):
        self.est = est

    def score(self, x, y):
        X, Y = x[None], np.array([y])
        mean = float(self.est.predict(X)[0])
        nll = -float(self.est.predict_logpdf(X, Y)[0])
        lo, hi = self.est.predict_interval(X, coverage=0.9)
        return {"mean": mean, "nll": nll, "covered": bool(lo[0] <= y <= hi[0])}

    def learn(self, x, y):
        self.est.partial_fit(x[None], np.array([y]))

    def skipped(self):
        return getattr(self.est, "n_skipped_", None)


class RiverStreamRegressor:
    def __init__(self, **params):
        from river import linear_model

        self.model = linear_model.BayesianLinearRegression(**params)

    def score(self, x, y):
        d = self.model.predict_one(dict(enumerate(x.tolist())), with_dist=True)
        mean, std = float(d.mu), float(d.sigma)
        return {"mean": mean, "nll": gaussian_nll(y, mean, std),
                "covered": bool(abs(y - mean) <= Z90 * std)}

    def learn(self, x, y):
        self.model.learn_one(dict(enumerate(x.tolist())), float(y))

    def skipped(self):
        return None


class BongStreamClassifier:
    def __init__(self, est, classes):
        self.est, self.classes, self.started = est, np.asarray(classes), False

    def proba(self, x):
        return np.asarray(self.est.predict_proba(x[None])[0], float)

    def learn(self, x, y):
        if self.started:
            self.est.partial_fit(x[None], np.array([y]))
        else:
            self.est.partial_fit(x[None], np.array([y]), classes=self.classes)
            self.started = True

    def skipped(self):
        return getattr(self.est, "n_skipped_", None)


class RiverStreamClassifier:
    """river's LogisticRegression, one-vs-rest beyond two classes."""

    def __init__(self, classes):
        from river import linear_model, multiclass

        self.classes = list(classes)
        self.model = (linear_model.LogisticRegression() if len(classes) == 2
                      else multiclass.OneVsRestClassifier(linear_model.LogisticRegression()))

    def proba(self, x):
        p = self.model.predict_proba_one(dict(enumerate(x.tolist())))
        out = np.array([p.get(c, 0.0) for c in self.classes], float)
        return out / out.sum() if out.sum() > 0 else np.full(len(out), 1.0 / len(out))

    def learn(self, x, y):
        self.model.learn_one(dict(enumerate(x.tolist())), y)

    def skipped(self):
        return None


def online_scaled(X):
    """Rows standardised by river's StandardScaler with the statistics of the rows
    before each one (what the model sees when it predicts the row)."""
    from river import preprocessing

    sc = preprocessing.StandardScaler()
    out = np.empty_like(X)
    for i, x in enumerate(as_dicts(X)):
        z = sc.transform_one(x)
        out[i] = [z[j] for j in range(X.shape[1])]
        sc.learn_one(x)
    return out


def run_stream(name, make, X, y, task):
    """Prequential run: every row is scored before it is learned; the first row is only
    learned (skbong cannot predict before its first update)."""
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            learner = make()
            out = []
            t_start = time.perf_counter()
            for i in range(len(y)):
                if i > 0:
                    out.append(learner.score(X[i], y[i]) if task == "reg"
                               else learner.proba(X[i]))
                learner.learn(X[i], y[i])
            total = time.perf_counter() - t_start
        row = {"model": name, "total_s": total, "skipped": learner.skipped(),
               "notes": " ".join(warning_names(caught))}
        yt = np.asarray(y[1:])
        if task == "reg":
            mean = np.array([o["mean"] for o in out])
            row.update(score=r2(yt, mean), rmse=rmse(yt, mean),
                       nll=float(np.mean([o["nll"] for o in out])),
                       cov90=float(np.mean([o["covered"] for o in out])))
        else:
            proba = np.array(out)
            y_idx = np.searchsorted(np.asarray(learner.classes), yt)
            row.update(score=float(np.mean(proba.argmax(axis=1) == y_idx)),
                       logloss=log_loss(proba, y_idx),
                       ece=expected_calibration_error(y_idx, proba, n_bins=15))
        return row
    except Exception as exc:  # noqa: BLE001
        return failed(name, exc)


def river_arrays(name, n_max):
    """Features (numeric columns, categorical ones as codes) and targets of a river
    data set, its first ``n_max`` rows."""
    from river import datasets

    rows = list(getattr(datasets, name)())[:n_max]
    keys = list(rows[0][0])
    X = np.array([[float(x[k]) for k in keys] for x, _ in rows])
    return X, [t for _, t in rows], len(list(getattr(datasets, name)()))


def drift_stream(n):
    rng = np.random.default_rng(0)
    d = 5
    a, b = np.linalg.qr(rng.normal(size=(d, 2)))[0].T  # orthonormal pair
    X = rng.normal(size=(n, d))
    angle = 2 * np.pi * np.arange(n) / n
    w = 2.0 * (np.cos(angle)[:, None] * a + np.sin(angle)[:, None] * b)  # |w| = 2
    return X, np.sum(X * w, axis=1) + 1.0 + 0.5 * rng.normal(size=n)


def stream_cases(quick, keep=lambda name: True):
    """Yields (set, prep, task, rows) of the prequential cases whose name ``keep``s."""
    n_max = 200 if quick else 500
    specs = [("Phishing", "clf")]
    if not quick:
        specs += [("Bananas", "clf"), ("ImageSegments", "clf"), ("TrumpApproval", "reg"),
                  ("ChickWeights", "reg"), ("SP500Stocks", "reg")]
    for name, task in specs:
        if not keep(f"river {name}"):
            continue
        X, y, total = river_arrays(name, n_max)
        if task == "clf":
            y = np.array(y)
            classes = sorted(set(y.tolist()))
            models = [("BongClassifier()",
                       lambda c=classes: BongStreamClassifier(BongClassifier(random_state=0), c),
                       "static", "skbong"),
                      ("river LogisticRegression()" + ("" if len(classes) == 2
                                                       else " one-vs-rest"),
                       lambda c=classes: RiverStreamClassifier(c), "static", "baseline")]
        else:
            y = np.array(y, float)
            models = [("BongRegressor()",
                       lambda: BongStreamRegressor(BongRegressor(random_state=0)),
                       "static", "skbong"),
                      ("river BayesianLinearRegression()", RiverStreamRegressor, "static",
                       "baseline")]
        for label, Xp in (("raw", X), ("std", online_scaled(X))):
            case_header(f"river {name} [{label}], prequential",
                        f"{len(y)} of {total} rows, d={X.shape[1]}"
                        + (f", classes={len(classes)}" if task == "clf" else
                           f", y raw (mean {y.mean():.3g}, sd {y.std():.3g})")
                        + ("; x raw" if label == "raw" else
                           "; x through river's online StandardScaler")
                        + "; each row predicted, then learned; metrics over rows 2..n")
            rows = []
            for model, make, kind, role in models:
                progress(f"{name} [{label}]: {model}")
                rows.append({**run_stream(model, make, Xp, y, task), "kind": kind,
                             "role": role})
            print_table(rows, STREAM_COLUMNS[task])
            yield f"river {name}", label, task, rows

    if not keep("drifting linear stream"):
        return
    n = 300 if quick else 5000
    X, y = drift_stream(n)
    case_header(f"drifting linear stream [raw], prequential ({n} rows)",
                "d=5, x ~ N(0, I), y = x·w_t + 1 + N(0, 0.5²), w_t (|w_t| = 2) turning once "
                "over the stream; standard by construction (no std run)")
    models = [
        ("BongRegressor()", lambda: BongStreamRegressor(BongRegressor(random_state=0)),
         "static", "skbong"),
        ('BongRegressor(drift="auto")',
         lambda: BongStreamRegressor(BongRegressor(drift="auto", random_state=0)),
         "forgetting", "skbong"),
        ("BongRegressor(drift=0.99)",
         lambda: BongStreamRegressor(BongRegressor(drift=0.99, random_state=0)),
         "forgetting", "skbong"),
        ("river BayesianLinearRegression()", RiverStreamRegressor, "static", "baseline"),
        ("river BayesianLinearRegression(smoothing=0.99)",
         lambda: RiverStreamRegressor(smoothing=0.99), "forgetting", "baseline"),
    ]
    rows = []
    for model, make, kind, role in models:
        progress(f"drift: {model}")
        rows.append({**run_stream(model, make, X, y, "reg"), "kind": kind, "role": role})
    print_table(rows, STREAM_COLUMNS["reg"])
    yield "drifting linear stream", "raw", "reg", rows


# ---------------------------------------------------------------- the rule


def comparable(ours, theirs):
    """The baselines a skbong row is judged against: linear against linear, network
    against network, static against static; a forgetting learner against every one."""
    return ours == "forgetting" or ours == theirs


def comparisons(results, rule=RULE):
    """One record per (case, skbong row, metric): the best comparable baseline on that
    metric, the relative gap (skbong - baseline) / abs(baseline) (lower is better for every
    metric) and the ratio of fit (stream: total) seconds. ``status`` is "LOSS" when the
    gap exceeds ``rule``, "FAILED" when the skbong fit failed, "no baseline" when no
    comparable baseline has a finite value, else "ok"."""
    out = []
    for case, prep, task, rows in results:
        for r in rows:
            if r["role"] != "skbong":
                continue
            base = [b for b in rows if b["role"] == "baseline"
                    and comparable(r["kind"], b["kind"])]
            for metric in METRICS[task]:
                rec = {"set": case, "prep": prep, "skbong": r["model"], "metric": metric,
                       "baseline": None, "ours": r.get(metric), "theirs": None,
                       "gap": None, "rel": None, "time_x": None}
                vals = [(b[metric], b) for b in base
                        if isinstance(b.get(metric), float) and math.isfinite(b[metric])]
                if vals:
                    theirs, b = min(vals, key=lambda v: v[0])
                    rec.update(baseline=b["model"], theirs=theirs)
                    t_ours, t_base = (x.get("fit_s", x.get("total_s")) for x in (r, b))
                    if t_ours is not None and t_base:
                        rec["time_x"] = t_ours / t_base
                ours = rec["ours"]
                if "FAILED" in r.get("notes", "") or ours is None:
                    rec["status"] = "FAILED"
                elif rec["theirs"] is None:
                    rec["status"] = "no baseline"
                else:
                    gap = ours - rec["theirs"] if math.isfinite(ours) else math.inf
                    rel = gap / abs(rec["theirs"]) if rec["theirs"] != 0 else math.copysign(
                        math.inf, gap) if gap else 0.0
                    rec.update(gap=gap, rel=rel, status="LOSS" if rel > rule else "ok")
                out.append(rec)
    return out


def print_comparisons(records, rule=RULE):
    cols = ["set", "prep", "skbong", "metric", "baseline", "ours", "theirs", "gap", "rel %",
            "time x", "status"]
    rows = [{"set": c["set"], "prep": c["prep"], "skbong": c["skbong"], "metric": c["metric"],
             "baseline": c["baseline"] or "-", "status": c["status"],
             "ours": None if c["ours"] is None else f"{c['ours']:.4g}",
             "theirs": None if c["theirs"] is None else f"{c['theirs']:.4g}",
             "gap": None if c["gap"] is None else f"{c['gap']:+.4g}",
             "rel %": None if c["rel"] is None else f"{100 * c['rel']:+.1f}",
             "time x": None if c["time_x"] is None else f"{c['time_x']:.3g}"}
            for c in records]
    print(f"\n== every comparison (rel % = 100 (skbong - baseline) / abs(baseline), lower is "
          f"better; LOSS: rel above {100 * rule:g} %;\n   time x: skbong fit_s (streams "
          "total_s) / the baseline's)")
    print_table(rows, cols)
    bad = [r for r, c in zip(rows, records) if c["status"] in ("LOSS", "FAILED")]
    print(f"\n== cases breaking the {100 * rule:g} % rule ({len(bad)} of {len(records)} "
          "comparisons)")
    if bad:
        print_table(bad, cols)
    else:
        print("(none)")


def interrupt(signum, frame):
    raise KeyboardInterrupt(f"signal {signum}")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data-dir", type=Path, default=DEFAULT_DATA,
                   help="folder holding uci/, libsvm/ and mnist/ (default: ../shared/data "
                        "from the repo root); sets absent there are skipped")
    p.add_argument("--quick", action="store_true", help="a handful of small sets")
    p.add_argument("--sets", default=None,
                   help="comma-separated substrings: run only the sets whose name has one")
    p.add_argument("--out", type=Path, default=None, help="also write the printed text here")
    p.add_argument("--compilation-cache", type=Path, default=None, metavar="DIR",
                   help="keep JAX's compiled programs in DIR (skbong.enable_compilation_cache)"
                        ": a second run skips the compilation of unchanged programs")
    args = p.parse_args()
    wanted = None if args.sets is None else [s.strip() for s in args.sets.split(",")]

    def keep(name):
        return wanted is None or any(w in name for w in wanted)

    tee = Tee(sys.stdout)
    sys.stdout = tee
    t_start = time.perf_counter()
    try:
        import river

        m = machine()
        print("bench_defaults: skbong at default parameters next to the usual baselines"
              + (" (--quick)" if args.quick else ""))
        print(f"skbong revision {git_revision()}; {m['platform']}; {cpu_model()}, "
              f"{m['cpu_count']} cores; python {m['python']}, jax {m['jax']} "
              f"({', '.join(m['devices'])}), numpy {np.__version__}, "
              f"scikit-learn {sklearn.__version__}, river {river.__version__}")
        print(f"start: {load_note()}")
        if args.compilation_cache is not None:
            enable_compilation_cache(args.compilation_cache)
            print(f"JAX compilation cache: {args.compilation_cache} (compile_s is small for "
                  "programs compiled by an earlier run)")
        print("score: R² or accuracy (higher is better); rmse, nll, logloss (nats): lower is "
              "better; cov90: target 0.90; ece: lower is better;\nfit_s: wall seconds "
              "(skbong: compiled call, one-off JAX compilation in compile_s); "
              "'-': not available")
        def batch(source):
            for ds in source:
                if keep(ds.name):
                    if args.quick and ds.name != "diabetes":
                        ds = ds._replace(network=False)  # networks compile slowly
                    yield from batch_case(ds)

        # the costliest set (MNIST: LogisticRegressionCV on 784 features) comes last
        sources = [batch(sklearn_sets(args.quick)), batch(uci_sets(args.data_dir, args.quick))]
        if not args.quick:
            sources.append(batch(libsvm_sets(args.data_dir)))
        sources += [batch(synthetic_sets(args.quick)), stream_cases(args.quick, keep)]
        if not args.quick:
            sources.append(batch(mnist_set(args.data_dir)))
        signal.signal(signal.SIGTERM, interrupt)
        results = []
        try:
            for source in sources:
                try:
                    results.extend(source)
                except Exception as exc:  # noqa: BLE001 - e.g. a data set that will not load
                    print(f"\ncase FAILED {type(exc).__name__}: {exc}")
                    progress(traceback.format_exc())
        except KeyboardInterrupt:  # Ctrl-C or SIGTERM: report what was measured
            print("\n== INTERRUPTED: the comparisons below cover the cases above only")
        print_comparisons(comparisons(results))
        print(f"\nend: {load_note()}; total {time.perf_counter() - t_start:.0f} s")
    finally:
        sys.stdout = tee.stream
        if args.out is not None:
            args.out.parent.mkdir(parents=True, exist_ok=True)
            args.out.write_text(tee.text())
            print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
