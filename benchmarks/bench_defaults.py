"""skbong at its default parameters next to the baselines a user would reach for.

Every skbong estimator here is built with no argument but ``random_state=0`` (and
``hidden_layer_sizes`` or ``drift`` where the row's name says so); every baseline is
built with its own defaults (``random_state=0`` where it takes one). Nothing is tuned.
The point is a table a user can read: are the defaults trustworthy?

Cases
-----
* diabetes (sklearn): y raw, and y * 100 + 1000; X as sklearn gives it (BongRegressor,
  BayesianRidge and river's BayesianLinearRegression see it unscaled; SGDRegressor and
  MLPRegressor sit in a StandardScaler pipeline, as their documentation asks).
* breast_cancer, wine, digits (linear and a 32-unit network) and
  make_classification(n_samples=20000): BongClassifier against LogisticRegression,
  SGDClassifier(loss="log_loss"), MLPClassifier and river's LogisticRegression
  (one-vs-rest for more than two classes).
* the 7 UCI regression sets of ``--data-dir`` (first split of each; skipped when
  absent): BongRegressor linear and with one hidden layer of 50 units against
  BayesianRidge, SGDRegressor and MLPRegressor. X and y standardised with the training
  part's statistics; the NLL is reported on the original scale of y.
* river's Phishing (classification) and TrumpApproval (regression), shipped inside the
  river package, evaluated prequentially: each row is predicted, then learned, one row
  at a time (``partial_fit`` for skbong and SGD, ``learn_one`` for river). Features pass
  through river's online ``StandardScaler`` (statistics of the rows before the current
  one), as a river user would write it; y stays raw. BongRegressor and river's
  BayesianLinearRegression are also run on the raw features (river's documentation runs
  it so on this data set).
* a drifting synthetic regression stream (5 standard-normal features, the weight vector
  rotating once over the stream, intercept 1, noise s.d. 0.5), prequential, with
  BongRegressor(), BongRegressor(drift="auto") (the drift learned by a bank of filters)
  and BongRegressor(drift=0.99) side by side; no scaling (the features are standard by
  construction).

Outside the diabetes and stream cases the features are standardised by a scaler fitted
on the training part (75 % / 25 % split, stratified for classification, seed 0).

Columns
-------
score: R² (regression) or accuracy (classification), on the test part or the
prequential predictions. nll: mean negative log predictive density in nats (regression;
``predict_logpdf`` where the estimator has it, e.g. skbong's Student-t, otherwise the
Gaussian of ``predict(X, return_std=True)``; "-" when there is no predictive spread).
logloss: mean negative log-probability of the true class. cov90: fraction of targets in
the central 90 % predictive interval (``predict_interval(X, coverage=0.9)`` where it
exists, otherwise mean ± 1.6449 std); target 0.90. ece: expected calibration error, 15
equal-width bins of top-class confidence. fit_s / predict_s: wall seconds of one fit and
one predict on the test part; for skbong the time of a second, compiled, call, with the
one-off JAX compilation of the first calls in compile_s. For streams, learn_ms and
pred_ms are median milliseconds per row (pred_ms includes computing every score of the
row). skipped: ``n_skipped_`` of skbong estimators. notes: the warnings raised, or
"FAILED <exception class>" (a failure never stops the run).

Usage: ``python benchmarks/bench_defaults.py [--quick] [--data-dir DIR] [--out FILE]``
"""

import argparse
import math
import sys
import time
import traceback
import warnings
from pathlib import Path

import numpy as np
import sklearn
from _common import Tee, load_note, machine
from paper._shared import DEFAULT_DATA, cpu_model, git_revision
from sklearn.base import clone
from sklearn.datasets import (
    load_breast_cancer,
    load_diabetes,
    load_digits,
    load_wine,
    make_classification,
)
from sklearn.linear_model import BayesianRidge, LogisticRegression, SGDClassifier, SGDRegressor
from sklearn.model_selection import train_test_split
from sklearn.neural_network import MLPClassifier, MLPRegressor
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from skbong import BongClassifier, BongRegressor

Z90 = 1.6448536269514722  # standard normal 95 % quantile: mean ± Z90·std holds 90 %
UCI = ("bostonHousing", "concrete", "energy", "kin8nm", "power-plant", "wine-quality-red",
       "yacht")
UCI_QUICK = ("yacht", "energy")
REG_COLUMNS = ["model", "score", "nll", "cov90", "fit_s", "compile_s", "predict_s", "skipped",
               "notes"]
CLF_COLUMNS = ["model", "score", "logloss", "ece", "fit_s", "compile_s", "predict_s", "skipped",
               "notes"]
FORMATS = {"score": "{:.4f}", "nll": "{:.4f}", "logloss": "{:.4f}", "cov90": "{:.3f}",
           "ece": "{:.4f}", "fit_s": "{:.3f}", "compile_s": "{:.2f}", "predict_s": "{:.4f}",
           "learn_ms": "{:.3f}", "pred_ms": "{:.3f}", "mae": "{:.4f}", "total_s": "{:.1f}"}


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
    left = {"model", "notes"}
    just = [(str.ljust if c in left else str.rjust) for c in columns]
    print("  ".join(j(c, w) for c, w, j in zip(columns, widths, just)).rstrip())
    for row in cells:
        print("  ".join(j(v, w) for v, w, j in zip(row, widths, just)).rstrip())


def progress(msg):
    print(msg, file=sys.stderr, flush=True)


# ---------------------------------------------------------------- scores


def r2(y, pred):
    y, pred = np.asarray(y, float), np.asarray(pred, float)
    ss = np.sum((y - y.mean()) ** 2)
    return float(1.0 - np.sum((y - pred) ** 2) / ss) if ss > 0 else float("nan")


def gaussian_nll(y, mean, std):
    z = (y - mean) / std
    return float(np.mean(0.5 * np.log(2 * np.pi) + np.log(std) + 0.5 * z**2))


def ece(proba, y_idx, n_bins=15):
    conf, correct = proba.max(axis=1), proba.argmax(axis=1) == y_idx
    bins = np.clip(np.ceil(conf * n_bins).astype(int) - 1, 0, n_bins - 1)
    total = 0.0
    for b in range(n_bins):
        m = bins == b
        if m.any():
            total += m.sum() * abs(correct[m].mean() - conf[m].mean())
    return float(total / len(conf))


def log_loss(proba, y_idx):
    p = proba[np.arange(len(y_idx)), y_idx]
    return float(-np.mean(np.log(np.clip(p, 1e-15, 1.0))))


def is_bong(est):
    return isinstance(est, (BongRegressor, BongClassifier))


def has_return_std(est):
    return is_bong(est) or isinstance(est, (BayesianRidge, RiverBLR))


def warning_names(caught):
    return sorted({w.category.__name__ for w in caught})


def failed(name, exc):
    progress(f"  {name}: FAILED\n" + "".join(traceback.format_exception(exc)[-3:]))
    return {"model": name, "notes": f"FAILED {type(exc).__name__}"}


# ---------------------------------------------------------------- river adapters


def as_dicts(X):
    return [dict(enumerate(row)) for row in np.asarray(X, float).tolist()]


class RiverBLR:
    """river's BayesianLinearRegression behind fit / predict(return_std): one pass of
    ``learn_one`` over the training rows in order."""

    def __init__(self, **params):
        self.params = params

    def fit(self, X, y):
        from river import linear_model

        self.model_ = linear_model.BayesianLinearRegression(**self.params)
        for x, t in zip(as_dicts(X), np.asarray(y, float).tolist()):
            self.model_.learn_one(x, t)
        return self

    def predict(self, X, return_std=False):
        dists = [self.model_.predict_one(x, with_dist=True) for x in as_dicts(X)]
        mean = np.array([d.mu for d in dists], float)
        if not return_std:
            return mean
        return mean, np.array([d.sigma for d in dists], float)


class RiverLogReg:
    """river's LogisticRegression (one-vs-rest beyond two classes) behind fit /
    predict_proba: one pass of ``learn_one`` over the training rows in order."""

    def fit(self, X, y):
        from river import linear_model, multiclass

        self.classes_ = np.unique(y)
        if len(self.classes_) == 2:
            self.model_ = linear_model.LogisticRegression()
            targets = (np.asarray(y) == self.classes_[1]).tolist()
        else:
            self.model_ = multiclass.OneVsRestClassifier(linear_model.LogisticRegression())
            targets = np.searchsorted(self.classes_, y).tolist()
        for x, t in zip(as_dicts(X), targets):
            self.model_.learn_one(x, t)
        return self

    def predict_proba(self, X):
        binary = len(self.classes_) == 2
        keys = [False, True] if binary else list(range(len(self.classes_)))
        out = np.zeros((len(X), len(self.classes_)))
        for i, x in enumerate(as_dicts(X)):
            p = self.model_.predict_proba_one(x)
            out[i] = [p.get(k, 0.0) for k in keys]
        s = out.sum(axis=1, keepdims=True)
        return np.where(s > 0, out / np.where(s > 0, s, 1.0), 1.0 / len(self.classes_))


# ---------------------------------------------------------------- batch cases


def timed_fit(make, X, y):
    """Fit a fresh estimator; for skbong fit a second one to separate the compilation."""
    t0 = time.perf_counter()
    est = make().fit(X, y)
    first = time.perf_counter() - t0
    if not is_bong(est):
        return est, first, None
    t0 = time.perf_counter()
    est = make().fit(X, y)
    warm = time.perf_counter() - t0
    return est, warm, max(first - warm, 0.0)


def timed_call(est, fn):
    """Result and wall time of fn(); for skbong the time of a second call (compiled)."""
    t0 = time.perf_counter()
    out = fn()
    first = time.perf_counter() - t0
    if not is_bong(est):
        return out, first, 0.0
    t0 = time.perf_counter()
    out = fn()
    warm = time.perf_counter() - t0
    return out, warm, max(first - warm, 0.0)


def eval_regressor(name, make, Xtr, ytr, Xte, yte, log_y_scale=0.0):
    """One row of a regression table. ``log_y_scale`` is added to the NLL (y was
    standardised; the density is reported on the original scale)."""
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            est, fit_s, compile_s = timed_fit(make, Xtr, ytr)
            pred, predict_s, c2 = timed_call(est, lambda: est.predict(Xte))
            pred = np.asarray(pred, float)
            nll = cov = None
            std = None
            if has_return_std(est):
                mean, std = (np.asarray(a, float) for a in est.predict(Xte, return_std=True))
            if hasattr(est, "predict_logpdf"):
                nll = -float(np.mean(est.predict_logpdf(Xte, yte))) + log_y_scale
            elif std is not None:
                nll = gaussian_nll(yte, mean, std) + log_y_scale
            if hasattr(est, "predict_interval"):
                lo, hi = (np.asarray(a, float) for a in est.predict_interval(Xte, coverage=0.9))
                cov = float(np.mean((yte >= lo) & (yte <= hi)))
            elif std is not None:
                cov = float(np.mean(np.abs(yte - mean) <= Z90 * std))
        return {
            "model": name,
            "score": r2(yte, pred),
            "nll": nll,
            "cov90": cov,
            "fit_s": fit_s,
            "compile_s": None if compile_s is None else compile_s + c2,
            "predict_s": predict_s,
            "skipped": getattr(est, "n_skipped_", None),
            "notes": " ".join(warning_names(caught)),
        }
    except Exception as exc:  # noqa: BLE001 - a failure is a result, not the end of the run
        return failed(name, exc)


def eval_classifier(name, make, Xtr, ytr, Xte, yte):
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            est, fit_s, compile_s = timed_fit(make, Xtr, ytr)
            proba, predict_s, c2 = timed_call(est, lambda: est.predict_proba(Xte))
            proba = np.asarray(proba, float)
            y_idx = np.searchsorted(est.classes_, yte)
        return {
            "model": name,
            "score": float(np.mean(proba.argmax(axis=1) == y_idx)),
            "logloss": log_loss(proba, y_idx),
            "ece": ece(proba, y_idx),
            "fit_s": fit_s,
            "compile_s": None if compile_s is None else compile_s + c2,
            "predict_s": predict_s,
            "skipped": getattr(est, "n_skipped_", None),
            "notes": " ".join(warning_names(caught)),
        }
    except Exception as exc:  # noqa: BLE001
        return failed(name, exc)


def scaled(est):
    return lambda: make_pipeline(StandardScaler(), clone(est))


def regression_baselines(scale_inside=False):
    """The sklearn / river regressors (fresh each call). With ``scale_inside`` SGD and
    the MLP get their own StandardScaler (the diabetes case, whose X is not scaled)."""
    wrap = scaled if scale_inside else (lambda est: lambda: clone(est))
    return [
        ("BayesianRidge()", lambda: BayesianRidge()),
        ("SGDRegressor()" + (" [scaled]" if scale_inside else ""),
         wrap(SGDRegressor(random_state=0))),
        ("MLPRegressor()" + (" [scaled]" if scale_inside else ""),
         wrap(MLPRegressor(random_state=0))),
    ]


def split_scale(X, y, stratify):
    Xtr, Xte, ytr, yte = train_test_split(
        X, y, test_size=0.25, random_state=0, stratify=y if stratify else None
    )
    sc = StandardScaler().fit(Xtr)
    return sc.transform(Xtr), sc.transform(Xte), ytr, yte


def case_header(title, detail):
    print(f"\n== {title}\n   {detail}")


def diabetes_cases():
    X, y = load_diabetes(return_X_y=True)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.25, random_state=0)
    for label, a, b in (("raw y", 1.0, 0.0), ("y*100 + 1000", 100.0, 1000.0)):
        t_tr, t_te = a * ytr + b, a * yte + b
        case_header(
            f"diabetes, {label}",
            f"n_train={len(Xtr)} n_test={len(Xte)} d={X.shape[1]}; X as sklearn gives it, "
            f"y raw (mean {t_tr.mean():.0f}, sd {t_tr.std():.0f}); score = R²",
        )
        models = [("BongRegressor()", lambda: BongRegressor(random_state=0))]
        models += regression_baselines(scale_inside=True)
        models += [("river BayesianLinearRegression()", lambda: RiverBLR())]
        rows = []
        for name, make in models:
            progress(f"diabetes {label}: {name}")
            rows.append(eval_regressor(name, make, Xtr, t_tr, Xte, t_te))
        print_table(rows, REG_COLUMNS)
        yield f"diabetes, {label}", "reg", rows


def classification_cases(quick):
    n_mc = 4000 if quick else 20000
    sets = [
        ("breast_cancer", *load_breast_cancer(return_X_y=True), False),
        ("wine", *load_wine(return_X_y=True), False),
        ("digits", *load_digits(return_X_y=True), True),
        (f"make_classification(n_samples={n_mc})",
         *make_classification(n_samples=n_mc, random_state=0), False),
    ]
    for title, X, y, network in sets:
        Xtr, Xte, ytr, yte = split_scale(X, y, stratify=True)
        case_header(
            title,
            f"n_train={len(Xtr)} n_test={len(Xte)} d={X.shape[1]} classes={len(np.unique(y))}"
            "; X standardised on the training part; score = accuracy",
        )
        models = [("BongClassifier()", lambda: BongClassifier(random_state=0))]
        if network:
            models.append(("BongClassifier(hidden_layer_sizes=(32,))",
                           lambda: BongClassifier(hidden_layer_sizes=(32,), random_state=0)))
        models += [
            ("LogisticRegression()", lambda: LogisticRegression()),
            ('SGDClassifier(loss="log_loss")',
             lambda: SGDClassifier(loss="log_loss", random_state=0)),
            ("MLPClassifier()", lambda: MLPClassifier(random_state=0)),
            ("river LogisticRegression()" + ("" if len(np.unique(y)) == 2 else " one-vs-rest"),
             lambda: RiverLogReg()),
        ]
        rows = []
        for name, make in models:
            progress(f"{title}: {name}")
            rows.append(eval_classifier(name, make, Xtr, ytr, Xte, yte))
        print_table(rows, CLF_COLUMNS)
        yield title, "clf", rows


def uci_cases(data_dir, quick):
    names = UCI_QUICK if quick else UCI
    for name in names:
        path = Path(data_dir) / "uci" / name / f"{name}.npz"
        if not path.exists():
            print(f"\n== UCI {name}: skipped ({path} not found)")
            continue
        d = np.load(path)
        X, y = d["X"].astype(np.float64), d["y"].astype(np.float64).ravel()
        tr, te = d["train_idx"][0], d["test_idx"][0]
        sx = StandardScaler().fit(X[tr])
        y_mean, y_sd = y[tr].mean(), y[tr].std()
        Xtr, Xte = sx.transform(X[tr]), sx.transform(X[te])
        ytr, yte = (y[tr] - y_mean) / y_sd, (y[te] - y_mean) / y_sd
        case_header(
            f"UCI {name} (split 0)",
            f"n_train={len(tr)} n_test={len(te)} d={X.shape[1]}; X and y standardised on the "
            "training part; score = R², nll on the original scale of y",
        )
        models = [
            ("BongRegressor()", lambda: BongRegressor(random_state=0)),
            ("BongRegressor(hidden_layer_sizes=(50,))",
             lambda: BongRegressor(hidden_layer_sizes=(50,), random_state=0)),
            *regression_baselines(),
        ]
        rows = []
        for label, make in models:
            progress(f"UCI {name}: {label}")
            rows.append(eval_regressor(label, make, Xtr, ytr, Xte, yte, math.log(y_sd)))
        print_table(rows, REG_COLUMNS)
        yield f"UCI {name}", "reg", rows


# ---------------------------------------------------------------- prequential streams
#
# A learner of a stream has score(x, y) -> dict (called before learn on the row) and
# learn(x, y); x is one row as a float64 array of shape (d,).


class BongStreamRegressor:
    def __init__(self, est):
        self.est = est

    def score(self, x, y):
        X, Y = x[None], np.array([y])
        mean = float(self.est.predict(X)[0])
        if hasattr(self.est, "predict_logpdf"):
            nll = -float(self.est.predict_logpdf(X, Y)[0])
        else:
            m, s = self.est.predict(X, return_std=True)
            nll = gaussian_nll(Y, m, s)
        lo, hi = self.est.predict_interval(X, coverage=0.9)
        return {"mean": mean, "nll": nll, "covered": bool(lo[0] <= y <= hi[0])}

    def learn(self, x, y):
        self.est.partial_fit(x[None], np.array([y]))

    def skipped(self):
        return getattr(self.est, "n_skipped_", None)


class SGDStreamRegressor:
    def __init__(self):
        self.est = SGDRegressor(random_state=0)

    def score(self, x, y):
        return {"mean": float(self.est.predict(x[None])[0]), "nll": None, "covered": None}

    def learn(self, x, y):
        self.est.partial_fit(x[None], np.array([y]))

    def skipped(self):
        return None


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


class SGDStreamClassifier(BongStreamClassifier):
    def __init__(self, classes):
        super().__init__(SGDClassifier(loss="log_loss", random_state=0), classes)

    def skipped(self):
        return None


class RiverStreamClassifier:
    def __init__(self, classes):
        from river import linear_model

        self.classes = list(classes)
        self.model = linear_model.LogisticRegression()

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
    learned (skbong and SGD cannot predict before their first update)."""
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            learner = make()
            learn_t, pred_t, out = [], [], []
            t_start = time.perf_counter()
            for i in range(len(y)):
                x = X[i]
                if i > 0:
                    t0 = time.perf_counter()
                    if task == "reg":
                        out.append(learner.score(x, y[i]))
                    else:
                        out.append(learner.proba(x))
                    pred_t.append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                learner.learn(x, y[i])
                learn_t.append(time.perf_counter() - t0)
            total = time.perf_counter() - t_start
        row = {
            "model": name,
            "learn_ms": 1e3 * float(np.median(learn_t)),
            "pred_ms": 1e3 * float(np.median(pred_t)),
            "total_s": total,
            "skipped": learner.skipped(),
            "notes": " ".join(warning_names(caught)),
        }
        yt = np.asarray(y[1:])
        if task == "reg":
            mean = np.array([o["mean"] for o in out])
            nll = [o["nll"] for o in out]
            cov = [o["covered"] for o in out]
            row.update(
                score=r2(yt, mean),
                mae=float(np.mean(np.abs(yt - mean))),
                nll=None if nll[0] is None else float(np.mean(nll)),
                cov90=None if cov[0] is None else float(np.mean(cov)),
            )
        else:
            proba = np.array(out)
            y_idx = np.searchsorted(np.asarray(learner.classes), yt)
            row.update(
                score=float(np.mean(proba.argmax(axis=1) == y_idx)),
                logloss=log_loss(proba, y_idx),
                ece=ece(proba, y_idx),
            )
        return row
    except Exception as exc:  # noqa: BLE001
        return failed(name, exc)


def stream_cases(quick):
    from river import datasets

    n_stream = 500 if quick else None
    reg_cols = ["model", "score", "mae", "nll", "cov90", "learn_ms", "pred_ms", "total_s",
                "skipped", "notes"]
    clf_cols = ["model", "score", "logloss", "ece", "learn_ms", "pred_ms", "total_s",
                "skipped", "notes"]

    # Phishing
    ds = datasets.Phishing()
    rows = list(ds)[:n_stream]
    keys = list(rows[0][0])
    X = np.array([[float(x[k]) for k in keys] for x, _ in rows])
    y = np.array([bool(t) for _, t in rows])
    Xs = online_scaled(X)
    classes = [False, True]
    case_header(
        f"river Phishing, prequential ({len(y)} rows)",
        f"d={X.shape[1]}; river online StandardScaler on x; predict each row, then learn it; "
        "score = accuracy over rows 2..n",
    )
    models = [
        ("BongClassifier()", lambda: BongStreamClassifier(BongClassifier(random_state=0),
                                                          classes)),
        ('SGDClassifier(loss="log_loss") partial_fit', lambda: SGDStreamClassifier(classes)),
        ("river LogisticRegression() learn_one", lambda: RiverStreamClassifier(classes)),
    ]
    out = []
    for name, make in models:
        progress(f"Phishing: {name}")
        out.append(run_stream(name, make, Xs, y, "clf"))
    print_table(out, clf_cols)
    yield "river Phishing (prequential)", "clf", out

    # TrumpApproval
    ds = datasets.TrumpApproval()
    rows = list(ds)[:n_stream]
    keys = list(rows[0][0])
    X = np.array([[float(x[k]) for k in keys] for x, _ in rows])
    y = np.array([float(t) for _, t in rows])
    Xs = online_scaled(X)
    case_header(
        f"river TrumpApproval, prequential ({len(y)} rows)",
        f"d={X.shape[1]}; river online StandardScaler on x, y raw (mean {y.mean():.1f}, "
        f"sd {y.std():.2f}); score = R² of the prequential predictions over rows 2..n",
    )
    models = [
        ("BongRegressor()", lambda: BongStreamRegressor(BongRegressor(random_state=0))),
        ("SGDRegressor() partial_fit", SGDStreamRegressor),
        ("river BayesianLinearRegression() learn_one", RiverStreamRegressor),
    ]
    out = []
    for name, make in models:
        progress(f"TrumpApproval: {name}")
        out.append(run_stream(name, make, Xs, y, "reg"))
    raw = [
        ("BongRegressor(), raw x", lambda: BongStreamRegressor(BongRegressor(random_state=0))),
        ("river BayesianLinearRegression() learn_one, raw x", RiverStreamRegressor),
    ]
    for name, make in raw:
        progress(f"TrumpApproval: {name}")
        out.append(run_stream(name, make, X, y, "reg"))
    print_table(out, reg_cols)
    yield "river TrumpApproval (prequential)", "reg", out

    # drifting linear stream
    n = 1500 if quick else 5000
    rng = np.random.default_rng(0)
    d = 5
    a, b = np.linalg.qr(rng.normal(size=(d, 2)))[0].T  # orthonormal pair
    X = rng.normal(size=(n, d))
    angle = 2 * np.pi * np.arange(n) / n
    w = 2.0 * (np.cos(angle)[:, None] * a + np.sin(angle)[:, None] * b)  # |w| = 2
    y = np.sum(X * w, axis=1) + 1.0 + 0.5 * rng.normal(size=n)
    case_header(
        f"drifting linear stream, prequential ({n} rows)",
        f"d={d}, x ~ N(0, I), y = x·w_t + 1 + N(0, 0.5²), w_t (|w_t| = 2) turning once over "
        "the stream; no scaling; score = R² of the prequential predictions",
    )
    models = [
        ("BongRegressor()", lambda: BongStreamRegressor(BongRegressor(random_state=0))),
        ('BongRegressor(drift="auto")',
         lambda: BongStreamRegressor(BongRegressor(drift="auto", random_state=0))),
        ("BongRegressor(drift=0.99)",
         lambda: BongStreamRegressor(BongRegressor(drift=0.99, random_state=0))),
        ("SGDRegressor() partial_fit", SGDStreamRegressor),
        ("river BayesianLinearRegression() learn_one", RiverStreamRegressor),
        ("river BayesianLinearRegression(smoothing=0.99)",
         lambda: RiverStreamRegressor(smoothing=0.99)),
    ]
    out = []
    for name, make in models:
        progress(f"drift: {name}")
        out.append(run_stream(name, make, X, y, "reg"))
    print_table(out, reg_cols)
    yield "drifting linear stream (prequential)", "reg", out


# ---------------------------------------------------------------- summary


def is_network(model):
    return "hidden_layer_sizes" in model or model.startswith("MLP")


def forgets(model):
    return "drift=" in model or "smoothing=" in model


def comparable(ours, theirs):
    """A linear skbong row is judged against linear baselines, a static one against
    static baselines; a network or forgetting row against all of its case."""
    return all(f(ours) or not f(theirs) for f in (is_network, forgets))


def best_baseline(rows, key, pick):
    """Best finite value of ``key`` among ``rows`` and the model that has it."""
    vals = [(r[key], r["model"]) for r in rows
            if isinstance(r.get(key), float) and math.isfinite(r[key])]
    if not vals:
        return None, None
    return pick(vals, key=lambda v: v[0])


def flags(results):
    """Rows where a skbong estimator is clearly behind the best comparable baseline of its
    case (see ``comparable``): score lower by more than 0.02, NLL / log-loss higher by
    more than 0.1 nats, 90 % coverage outside [0.85, 0.95] and further from 0.90 than the
    best baseline's by more than 0.02 (regression), ECE above the best baseline's by more
    than 0.03 (classification); failures and skipped rows."""
    lines = []
    for case, task, rows in results:
        loss_key = "nll" if task == "reg" else "logloss"
        for r in rows:
            if not r["model"].startswith("Bong"):
                continue
            base = [b for b in rows if not b["model"].startswith("Bong")
                    and comparable(r["model"], b["model"])]
            name = f"{case}: {r['model']}"
            if "FAILED" in r.get("notes", ""):
                lines.append(f"{name} {r['notes']}")
                continue
            if r.get("skipped"):
                lines.append(f"{name} skipped {r['skipped']} rows")
            s, who = best_baseline(base, "score", max)
            if s is not None and not r["score"] >= s - 0.02:
                lines.append(f"{name} score {r['score']:.4f} vs {s:.4f} ({who})")
            v, who = best_baseline(base, loss_key, min)
            mine = r.get(loss_key)
            if v is not None and mine is not None and not mine <= v + 0.1:
                lines.append(f"{name} {loss_key} {mine:.4f} vs {v:.4f} ({who})")
            if task == "reg" and r.get("cov90") is not None and not 0.85 <= r["cov90"] <= 0.95:
                devs = [(abs(b["cov90"] - 0.9), b["cov90"], b["model"]) for b in base
                        if isinstance(b.get("cov90"), float)]
                d, c, who = min(devs) if devs else (None, None, None)
                if d is None:
                    lines.append(f"{name} cov90 {r['cov90']:.3f} (target 0.90; no baseline)")
                elif abs(r["cov90"] - 0.9) > d + 0.02:
                    lines.append(f"{name} cov90 {r['cov90']:.3f} vs {c:.3f} ({who}; target 0.90)")
            e, who = best_baseline(base, "ece", min)
            if task == "clf" and e is not None and not r["ece"] <= e + 0.03:
                lines.append(f"{name} ece {r['ece']:.4f} vs {e:.4f} ({who})")
    return lines


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data-dir", type=Path, default=DEFAULT_DATA,
                   help="folder holding uci/ (default: ../shared/data from the repo root)")
    p.add_argument("--quick", action="store_true",
                   help="smaller make_classification, 2 UCI sets, 500-row streams")
    p.add_argument("--out", type=Path, default=None, help="also write the printed tables here")
    args = p.parse_args()

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
        print("score: R² or accuracy (higher is better); nll, logloss: nats (lower is "
              "better); cov90: target 0.90; ece: lower is better;\nfit_s, predict_s: wall "
              "seconds (skbong: compiled call, one-off JAX compilation in compile_s); "
              "'-': not available")
        results = []
        for gen in (diabetes_cases(), classification_cases(args.quick),
                    uci_cases(args.data_dir, args.quick), stream_cases(args.quick)):
            try:
                results.extend(gen)
            except Exception as exc:  # noqa: BLE001 - e.g. a data set that will not load
                print(f"\ncase FAILED {type(exc).__name__}: {exc}")
                progress(traceback.format_exc())
        print("\n== where skbong at defaults is clearly behind the best baseline of its case")
        print("   (linear rows against linear baselines, static against static, networks and "
              "forgetting rows against all;\n   score -0.02, nll/logloss +0.1 nats, cov90 "
              "outside [0.85, 0.95] and 0.02 further from 0.90 than the best baseline's,\n"
              "   ece +0.03; failures; skipped rows)")
        for line in flags(results) or ["(none)"]:
            print(f"   {line}")
        print(f"\nend: {load_note()}; total {time.perf_counter() - t_start:.0f} s")
    finally:
        sys.stdout = tee.stream
        if args.out is not None:
            args.out.parent.mkdir(parents=True, exist_ok=True)
            args.out.write_text(tee.text())
            print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
