"""Non-stationary streams: Ornstein–Uhlenbeck drift γ < 1 against the static model γ = 1.

Two streams, each scored prequentially (predict the next row, then learn it), the mean
log predictive density over the whole stream:

* **drifting linear regression**: y_t = x_tᵀ w_t + ε, x_t ~ N(0, I_10), ε ~ N(0, 0.25),
  with the weights an OU process w_{t+1} = γ* w_t + √(1 − γ*²) η_t, η_t ~ N(0, I),
  w_0 ~ N(0, I), γ* = 0.999, T = 2,000. ``BongRegressor(family="full")`` with the prior
  N(0, I), R = 0.25 and the drift γ: at γ = γ* it is exactly the Kalman filter of the
  generating model (the conjugate case, Prop. 4.1 of the paper, with the predict step),
  so it is the Bayes-optimal forecaster. Its predictive is the closed-form
  N(xᵀμ, xᵀΣx + R) (``predictive="linmc"``). Compared with river's
  ``BayesianLinearRegression`` (alpha = 1 prior precision, beta = 4 noise precision)
  without and with its ``smoothing`` (exponential forgetting) parameter.
* **rotating digits**: scikit-learn's embedded 8×8 digits (pixels / 16), streamed in
  random order (cycling through a fresh permutation each pass) for T = 2,000 rows, each
  image rotated by an angle that grows linearly from 0° to 180° over the stream
  (``scipy.ndimage.rotate``, bilinear). ``BongClassifier`` with softmax regression
  (P = 650), family ``full``, prior variance 1, float64, plugin predictive, and the drift
  γ. Beside it scikit-learn's ``SGDClassifier(loss="log_loss")`` learning with
  ``partial_fit`` one row at a time (a non-Bayesian online baseline). river's Bayesian
  linear regression does not apply to classification.

Forecasts are one step ahead: the filtered posterior that ``predict`` uses is moved
through the drift step first (exact for these zero-mean linear models; see
``prequential_regressor`` and ``prequential_classifier``).

Mean ± s.e. over ``--seeds`` streams (default 3). Run:
``python benchmarks/paper/nonstationary.py`` (a few minutes); ``--quick`` for less.
"""

import os

# The full-covariance estimators check Σ with numpy's (OpenBLAS) Cholesky after every
# partial_fit call; on an oversubscribed machine OpenBLAS's threads make that 50-100×
# slower for P = 650 (seconds per row). One BLAS thread keeps this per-row stream fast.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
from scipy.ndimage import rotate  # noqa: E402
from scipy.stats import norm  # noqa: E402
from sklearn.datasets import load_digits  # noqa: E402
from sklearn.linear_model import SGDClassifier  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/, for _common
from _common import (  # noqa: E402
    header,
    mean_se,
    parser,
    pm,
    pyplot,
    table,
    write_json,
)

from skbong import BongClassifier, BongRegressor  # noqa: E402

GAMMA_TRUE = 0.999
REG_GAMMAS = (1.0, 0.9999, 0.999, 0.99)
RIVER_SMOOTHING = (None, 0.999, 0.99)
DIGIT_GAMMAS = (1.0, 0.999, 0.99, 0.98)
NOISE_VAR = 0.25
PROBA_FLOOR = 1e-15
"""Probabilities are clipped below at 1e-15 (as scikit-learn's ``log_loss`` used to), so
that one overconfident mistake of the SGD baseline costs at most 34.5 nats."""


def drifting_regression(seed, n, d=10):
    rng = np.random.default_rng(seed)
    w = rng.normal(size=d)
    X = rng.normal(size=(n, d))
    y = np.empty(n)
    for t in range(n):
        y[t] = X[t] @ w + np.sqrt(NOISE_VAR) * rng.normal()
        w = GAMMA_TRUE * w + np.sqrt(1 - GAMMA_TRUE**2) * rng.normal(size=d)
    return X, y


def rotating_digits(seed, n, max_angle=180.0):
    digits = load_digits()
    images, labels = digits.images / 16.0, digits.target
    rng = np.random.default_rng(seed)
    order = np.concatenate([rng.permutation(len(labels)) for _ in range(-(-n // len(labels)))])
    order = order[:n]
    angles = max_angle * np.arange(n) / n
    X = np.stack([rotate(images[i], a, reshape=False, order=1, mode="constant")
                  for i, a in zip(order, angles)]).reshape(n, -1)
    return X, labels[order]


def prequential_regressor(est, X, y):
    """Log one-step-ahead predictive density of each row before learning it.

    ``predict`` scores the current (filtered) posterior N(μ, Σ); the forecast of the
    next row is under the predicted belief after the drift step, N(γμ, γ²Σ + (1−γ²)σ₀²I)
    for this zero-mean prior, i.e. mean γ xᵀμ and variance γ² xᵀΣx + (1−γ²)σ₀²|x|² + R.
    """
    gamma, prior_var = est.drift, est.prior_variance
    out = np.empty(len(y))
    for t in range(len(y)):
        sq = X[t] @ X[t]
        if t == 0:
            mean, var = 0.0, prior_var * sq + NOISE_VAR
        else:
            m, s = est.predict(X[t : t + 1], return_std=True)
            var_f = s[0] ** 2 - NOISE_VAR
            mean = gamma * m[0]
            var = gamma**2 * var_f + (1 - gamma**2) * prior_var * sq + NOISE_VAR
        out[t] = norm.logpdf(y[t], mean, np.sqrt(var))
        est.partial_fit(X[t : t + 1], y[t : t + 1])
    return out


def prequential_river(model, X, y):
    out = np.empty(len(y))
    for t in range(len(y)):
        x = {i: float(v) for i, v in enumerate(X[t])}
        dist = model.predict_one(x, with_dist=True)
        out[t] = norm.logpdf(y[t], dist.mu, dist.sigma)
        model.learn_one(x, float(y[t]))
    return out


def prequential_classifier(est, X, y, classes):
    """Log one-step-ahead plugin probability of each row before learning it.

    For the drifting BongClassifier the plugin forecast is at the predicted mean γμ (the
    prior mean is zero): the logits scale by γ, so p = softmax(γ · log p_filtered).
    """
    gamma = getattr(est, "drift", 1.0)
    out = np.empty(len(y))
    for t in range(len(y)):
        if t == 0:
            out[t] = -np.log(len(classes))  # no model yet: uniform
            est.partial_fit(X[:1], y[:1], classes=classes)
            continue
        proba = est.predict_proba(X[t : t + 1])[0]
        if gamma != 1.0:
            z = gamma * np.log(np.maximum(proba, 1e-300))  # the logits, up to a constant
            proba = np.exp(z - np.logaddexp.reduce(z))
        out[t] = np.log(max(proba[np.searchsorted(classes, y[t])], PROBA_FLOOR))
        est.partial_fit(X[t : t + 1], y[t : t + 1])
    return out


def run_regression(seeds, n):
    from river.linear_model import BayesianLinearRegression

    curves = {}
    for seed in range(seeds):
        X, y = drifting_regression(seed, n)
        for g in REG_GAMMAS:
            est = BongRegressor(family="full", fit_intercept=False, prior_variance=1.0,
                                obs_variance=NOISE_VAR, drift=g, predictive="linmc",
                                dtype="float64", random_state=seed)
            curves.setdefault(f"skbong bong full, γ={g:g}", []).append(
                prequential_regressor(est, X, y))
        for s in RIVER_SMOOTHING:
            model = BayesianLinearRegression(alpha=1.0, beta=1.0 / NOISE_VAR, smoothing=s)
            label = "river BayesianLinearRegression" + (f", smoothing={s:g}" if s else "")
            curves.setdefault(label, []).append(prequential_river(model, X, y))
    return curves


def run_digits(seeds, n):
    curves = {}
    classes = np.arange(10)
    for seed in range(seeds):
        X, y = rotating_digits(seed, n)
        for g in DIGIT_GAMMAS:
            est = BongClassifier(family="full", prior_variance=1.0, drift=g,
                                 predictive="plugin", dtype="float64", random_state=seed)
            curves.setdefault(f"skbong bong full, γ={g:g}", []).append(
                prequential_classifier(est, X, y, classes))
        sgd = SGDClassifier(loss="log_loss", random_state=seed)
        curves.setdefault("sklearn SGDClassifier (log loss)", []).append(
            prequential_classifier(sgd, X, y, classes))
    return curves


def summarise(title, curves, n):
    print(f"\n--- {title}: mean prequential log predictive density over T = {n} rows "
          "(mean ± s.e. over seeds; higher is better)")
    rows = []
    thirds = [(0, n // 3), (n // 3, 2 * n // 3), (2 * n // 3, n)]
    for label, runs in curves.items():
        runs = np.asarray(runs)
        row = {"method": label, "all rows": pm(runs.mean(axis=1), 3)}
        for a, b in thirds:
            row[f"rows {a}-{b - 1}"] = pm(runs[:, a:b].mean(axis=1), 3)
        rows.append(row)
    table(rows, ["method", "all rows", *[f"rows {a}-{b - 1}" for a, b in thirds]])


def main():
    p = parser(__doc__.splitlines()[0], seeds=3)
    p.add_argument("--n", type=int, default=2000, help="stream length")
    p.add_argument("--streams", nargs="+", default=["regression", "digits"],
                   choices=["regression", "digits"])
    args = p.parse_args()
    seeds, n = (1, 300) if args.quick else (args.seeds, args.n)
    settings = header(
        "Non-stationary streams: OU drift γ < 1 vs γ = 1, prequential log-likelihood",
        {
            "streams": args.streams,
            "seeds": seeds,
            "T": n,
            "regression": f"d = 10, R = {NOISE_VAR}, OU weights γ* = {GAMMA_TRUE}; "
            f"skbong γ ∈ {REG_GAMMAS}; river smoothing ∈ {RIVER_SMOOTHING}",
            "digits": f"0→180° rotation, softmax regression, γ ∈ {DIGIT_GAMMAS}",
        },
    )
    results = {}
    if "regression" in args.streams:
        t0 = time.perf_counter()
        curves = run_regression(seeds, n)
        summarise(f"drifting linear regression ({time.perf_counter() - t0:.0f} s)", curves, n)
        results["regression"] = curves
    if "digits" in args.streams:
        t0 = time.perf_counter()
        curves = run_digits(seeds, n)
        summarise(f"rotating digits ({time.perf_counter() - t0:.0f} s)", curves, n)
        results["digits"] = curves
    payload = {
        name: {label: {"mean_log_lik_per_seed": np.asarray(runs).mean(axis=1).tolist(),
                       "curve_mean_over_seeds_window100": _smooth(np.mean(runs, axis=0)).tolist()}
               for label, runs in curves.items()}
        for name, curves in results.items()
    }
    write_json({"results": payload}, "paper/nonstationary.json", args.out, settings)
    if args.figure:
        figure(results, args.figure)


def _smooth(x, window=100):
    kernel = np.ones(window) / window
    return np.convolve(x, kernel, mode="valid")


def figure(results, path):
    plt = pyplot()
    fig, axes = plt.subplots(1, len(results), figsize=(6.5 * len(results), 4), squeeze=False)
    for ax, (name, curves) in zip(axes[0], results.items()):
        for i, (label, runs) in enumerate(curves.items()):
            c = _smooth(np.mean(runs, axis=0))
            m, s, _ = mean_se(np.asarray(runs).mean(axis=1))
            ax.plot(np.arange(len(c)) + 100, c, lw=1, color=f"C{i % 10}",
                    ls="-" if label.startswith("skbong") else "--",
                    label=f"{label} ({m:.3f})")
        ax.set_xlabel("t")
        ax.set_ylabel("prequential log-lik (window 100, mean over seeds)")
        ax.set_title("drifting linear regression" if name == "regression"
                     else "rotating digits (0→180°)")
        lo = np.percentile(np.concatenate([_smooth(np.mean(r, axis=0))
                                           for r in curves.values()]), 2)
        ax.set_ylim(bottom=lo)
        ax.legend(fontsize=6)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
