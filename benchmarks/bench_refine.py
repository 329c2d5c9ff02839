"""``fit``'s further passes (``refine``) at the classifier's defaults: one pass against the mode.

For each classification set of ``bench_prior.py`` (iris, wine, breast_cancer and digits
standardised on a 75 / 25 stratified split, seed 0; the synthetic sparse binary
features raw and standardised; with ``--data-dir`` the LIBSVM australian and
breast-cancer presplits): the held-out log-loss of ``BongClassifier()`` at its
defaults (the evidence bank of prior variances) with ``refine=0`` (one pass, the same
as ``partial_fit`` on the rows) and at the default ``refine=10``, under the ``plugin``
and ``linmc`` predictives, the prior variance the bank weighs most after each, the
passes taken, the fit times (a second fit, compiled) and
``LogisticRegressionCV(scoring="neg_log_loss")`` beside them. The digits model (P = 650)
takes the ``dlr`` family, which has no further passes: its two columns agree.

Also ``BongPoissonRegressor()`` on synthetic counts (a linear log-rate; 300 × 5,
2,000 × 5 and 200 × 20 training rows, 1,000 test rows): test mean Poisson deviance
with ``refine=0`` and 10, beside ``PoissonRegressor()``.

And the README's pipeline on its data: ``make_pipeline(StandardScaler(),
BongClassifier(random_state=0))`` on iris (the README's shuffled rows), 5-fold
stratified cross-validated log-loss (seed 0), beside the same pipeline with
``LogisticRegressionCV(scoring="neg_log_loss")``.

Usage: ``python benchmarks/bench_refine.py [--data-dir DIR] [--out FILE]``
"""

import argparse
import time
import warnings
from pathlib import Path

import numpy as np
from bench_prior import classification_sets
from sklearn.datasets import load_iris
from sklearn.linear_model import LogisticRegressionCV, PoissonRegressor
from sklearn.metrics import log_loss, mean_poisson_deviance
from sklearn.model_selection import StratifiedKFold, cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from skbong import BongClassifier, BongPoissonRegressor


def timed(est, X, y):
    est.fit(X, y)  # compiles
    t0 = time.perf_counter()
    est.fit(X, y)
    return est, time.perf_counter() - t0


def classifiers(data_dir, out):
    out(f"{'data':42s} {'plugin 0 → 10':>17s} {'linmc 0 → 10':>17s} {'LRCV':>7s} "
        f"{'σ₀² 0 → 10':>12s} {'passes':>6s} {'fit s 0 → 10':>15s}")
    for name, X, Xt, y, yt in classification_sets(data_dir):
        scores, picks, times = {}, [], []
        for refine in (0, 10):
            est, t = timed(BongClassifier(refine=refine, random_state=0), X, y)
            for kind in ("plugin", "linmc"):
                est.set_params(predictive=kind)
                scores[kind, refine] = log_loss(yt, est.predict_proba(Xt), labels=est.classes_)
            picks.append(est.prior_variance_)
            times.append(t)
        lrcv = LogisticRegressionCV(scoring="neg_log_loss", max_iter=5000).fit(X, y)
        base = log_loss(yt, lrcv.predict_proba(Xt), labels=lrcv.classes_)
        out(f"{name:42s} {scores['plugin', 0]:7.4f} → {scores['plugin', 10]:7.4f} "
            f"{scores['linmc', 0]:7.4f} → {scores['linmc', 10]:7.4f} {base:7.4f} "
            f"{picks[0]:5g} → {picks[1]:<5g} {est.n_refine_passes_:6d} "
            f"{times[0]:6.3f} → {times[1]:6.3f}")


def counts(out):
    out(f"\n{'counts (train rows × features)':42s} {'refine 0 → 10':>17s} {'Poisson':>8s}")
    for n, d in ((300, 5), (2000, 5), (200, 20)):
        rng = np.random.default_rng(n + d)
        X = rng.normal(size=(n + 1000, d))
        coef = rng.normal(size=d) * 0.5 / np.sqrt(d) * 2
        y = rng.poisson(np.exp(X @ coef + 1.0))
        X, Xt, y, yt = X[:n], X[n:], y[:n], y[n:]
        dev = [mean_poisson_deviance(yt, BongPoissonRegressor(refine=r, random_state=0)
                                     .fit(X, y).predict(Xt)) for r in (0, 10)]
        base = mean_poisson_deviance(yt, PoissonRegressor().fit(X, y).predict(Xt))
        out(f"{f'{n} × {d}':42s} {dev[0]:7.4f} → {dev[1]:7.4f} {base:8.4f}")


def readme_pipeline(out):
    X, y = load_iris(return_X_y=True)
    order = np.random.default_rng(0).permutation(len(y))
    X, y = X[order], y[order]
    cv = StratifiedKFold(5, shuffle=True, random_state=0)
    scores = [-cross_val_score(make_pipeline(StandardScaler(), est), X, y, cv=cv,
                               scoring="neg_log_loss").mean()
              for est in (BongClassifier(random_state=0),
                          LogisticRegressionCV(scoring="neg_log_loss", max_iter=5000))]
    out(f"\nREADME pipeline on iris, 5-fold log-loss: BongClassifier {scores[0]:.4f}, "
        f"LogisticRegressionCV {scores[1]:.4f} ({100 * (scores[0] / scores[1] - 1):+.1f} %)")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data-dir", type=Path, default=None)
    p.add_argument("--out", type=Path, default=None, help="also write the printed text here")
    args = p.parse_args()
    lines = []

    def out(text):
        print(text, flush=True)
        lines.append(text)

    warnings.simplefilter("ignore")
    out("command: python benchmarks/bench_refine.py"
        + (f" --data-dir {args.data_dir}" if args.data_dir else ""))
    classifiers(args.data_dir, out)
    counts(out)
    readme_pipeline(out)
    if args.out is not None:
        args.out.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
