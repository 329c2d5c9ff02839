"""Gross outliers in the training targets: the Student-t likelihood against the Gaussian.

A fraction p ∈ {0, 1 %, 2 %, 5 %} of the *training* rows get y += 50 σ with a random
sign (σ the noise standard deviation of the synthetic set; for a real set the robust
spread 1.4826 · MAD of its training targets); the test targets stay clean. Each method
sees the training rows once, in order (one ``fit``). Scores on the clean test targets, in
the units of y: RMSE, median absolute error (MedAE) and the mean negative log predictive
density (NLL, nats; ``predict_logpdf``, or the Gaussian of ``predict(return_std=True)``
for BayesianRidge; HuberRegressor has no predictive) and the coverage of the central
90 % predictive interval (cov90; ``predict_interval``, for BayesianRidge the Gaussian's).

Sets: ``synthetic`` (y = x·β + 0.5 + N(0, 1), x ~ N(0, I₅), 1,000 training and 1,000
test rows, a fresh draw per split); sklearn's ``diabetes`` (442 rows, random 80/20
splits); and with ``--data-dir`` the UCI sets of ``--uci`` (``uci/<name>/<name>.npz``,
the 20 splits of Hernandez-Lobato & Adams, 2015; a missing set is skipped). X is
standardised with the training part's mean and standard deviation, y with its median
and 1.4826 · MAD (a scale the outliers do not move, the same for every method); the
scores are back on the original scale.

Methods: ``BongRegressor()`` (Gaussian; the linear model's defaults: full covariance,
learned noise, prior bank), ``BongRegressor(likelihood="student_t")``, the same two with
``hidden_layer_sizes=(50,)`` (``random_state=0``; skipped with ``--no-network``),
``HuberRegressor()`` and ``BayesianRidge()`` at their defaults. ``--dofs 3 6`` adds the
Student-t with those degrees of freedom ν (``dof``) instead of its ν = 4 (linear and
network). Means over ``--splits``
splits.

Usage: ``python benchmarks/bench_outliers.py [--splits 5] [--data-dir DIR] [--uci concrete]
[--dofs 2 3 6 10] [--no-network] [--quick] [--out FILE]``. ``--quick``: the synthetic set, one split, 400 training rows,
no network.
"""

import sys
import warnings
from pathlib import Path

import numpy as np
import scipy.stats
from sklearn.datasets import load_diabetes
from sklearn.linear_model import BayesianRidge, HuberRegressor

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import parser, table, write_json  # noqa: E402

from skbong import BongRegressor  # noqa: E402

FRACTIONS = (0.0, 0.01, 0.02, 0.05)
SHIFT = 50.0
BETA = np.array([1.0, -2.0, 0.5, 0.0, 1.5])


def methods(network, dofs=()):
    out = {
        "bong gaussian": lambda: BongRegressor(),
        "bong student_t": lambda: BongRegressor(likelihood="student_t"),
    }
    for nu in dofs:
        out[f"bong student_t nu={nu:g}"] = lambda nu=nu: BongRegressor(likelihood="student_t", dof=nu)
    if network:
        out["bong (50,) gaussian"] = lambda: BongRegressor(
            hidden_layer_sizes=(50,), passes=1, random_state=0
        )
        out["bong (50,) student_t"] = lambda: BongRegressor(
            hidden_layer_sizes=(50,), likelihood="student_t", passes=1, random_state=0
        )
        for nu in dofs:
            out[f"bong (50,) student_t nu={nu:g}"] = lambda nu=nu: BongRegressor(
                hidden_layer_sizes=(50,), likelihood="student_t", dof=nu, passes=1, random_state=0
            )
    out["HuberRegressor"] = HuberRegressor
    out["BayesianRidge"] = BayesianRidge
    return out


def synthetic(split, n_train):
    rng = np.random.default_rng(100 + split)
    X = rng.normal(size=(n_train + 1000, len(BETA)))
    y = X @ BETA + 0.5 + rng.normal(size=len(X))
    return X[:n_train], y[:n_train], X[n_train:], y[n_train:], 1.0


def real(X, y, train, test):
    y_train = y[train]
    spread = 1.4826 * np.median(np.abs(y_train - np.median(y_train)))
    return X[train], y_train, X[test], y[test], spread


def contaminate(y, fraction, scale, seed):
    rng = np.random.default_rng(seed)
    hit = rng.permutation(len(y))[: int(round(fraction * len(y)))]
    y = y.copy()
    y[hit] += SHIFT * scale * rng.choice([-1.0, 1.0], len(hit))
    return y


def scores(est, X, y, loc, scale):
    """RMSE, MedAE, NLL and 90 % coverage on the original scale of y (standardised
    inputs X)."""
    z = (y - loc) / scale
    nll = cov = None
    if isinstance(est, BongRegressor):
        nll = -np.mean(est.predict_logpdf(X, z)) + np.log(scale)
        lo, hi = est.predict_interval(X, coverage=0.9)
        pred = est.predict(X)
    elif isinstance(est, BayesianRidge):
        pred, std = est.predict(X, return_std=True)
        nll = -np.mean(scipy.stats.norm.logpdf(z, pred, std)) + np.log(scale)
        lo, hi = pred - 1.6448536 * std, pred + 1.6448536 * std
    else:
        pred = est.predict(X)
    if nll is not None:
        cov = np.mean((lo <= z) & (z <= hi))
    err = loc + scale * pred - y
    return np.sqrt(np.mean(err**2)), np.median(np.abs(err)), nll, cov


def run(sets, network, n_splits, dofs=()):
    rows = []
    for name, make_split in sets:
        for fraction in FRACTIONS:
            for label, make in methods(network, dofs).items():
                res = []
                for split in range(n_splits):
                    Xtr, ytr, Xte, yte, noise = make_split(split)
                    ytr = contaminate(ytr, fraction, noise, seed=split)
                    mu, sd = Xtr.mean(0), Xtr.std(0)
                    sd = np.where(sd > 0, sd, 1.0)
                    loc = np.median(ytr)
                    scale = 1.4826 * np.median(np.abs(ytr - loc))
                    est = make().fit((Xtr - mu) / sd, (ytr - loc) / scale)
                    res.append(scores(est, (Xte - mu) / sd, yte, loc, scale))
                rmse, medae, nll, cov = (
                    None if any(r[i] is None for r in res) else float(np.mean([r[i] for r in res]))
                    for i in range(4)
                )
                rows.append({"set": name, "outliers": f"{fraction:.0%}", "method": label,
                             "RMSE": rmse, "MedAE": medae, "NLL": nll, "cov90": cov})
                print(f"{name:>10} {fraction:4.0%} {label:>22}  rmse {rmse:.4g}  medae "
                      f"{medae:.4g}  nll {nll}  cov90 {cov}", flush=True)
    return rows


def main():
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--splits", type=int, default=5)
    p.add_argument("--data-dir", type=Path, default=None)
    p.add_argument("--uci", nargs="*", default=["concrete"])
    p.add_argument("--no-network", action="store_true")
    p.add_argument("--dofs", type=float, nargs="*", default=[])
    args = p.parse_args()
    warnings.simplefilter("ignore")
    n_train = 400 if args.quick else 1000
    sets = [("synthetic", lambda s: synthetic(s, n_train))]
    if not args.quick:
        X, y = load_diabetes(return_X_y=True)

        def diabetes(split):
            order = np.random.default_rng(split).permutation(len(y))
            cut = int(0.8 * len(y))
            return real(X, y, order[:cut], order[cut:])

        sets.append(("diabetes", diabetes))
        for name in args.uci if args.data_dir is not None else ():
            path = args.data_dir / "uci" / name / f"{name}.npz"
            if not path.exists():
                print(f"skipping {name}: {path} not found")
                continue
            d = np.load(path)
            Xu, yu = d["X"].astype(np.float64), d["y"].astype(np.float64)
            tr, te = d["train_idx"], d["test_idx"]
            sets.append((name, lambda s, Xu=Xu, yu=yu, tr=tr, te=te: real(Xu, yu, tr[s], te[s])))
    n_splits = 1 if args.quick else args.splits
    rows = run(sets, network=not (args.quick or args.no_network), n_splits=n_splits,
               dofs=args.dofs)
    print()
    table(rows, ["set", "outliers", "method", "RMSE", "MedAE", "NLL", "cov90"],
          {c: "{:.4f}" for c in ("RMSE", "MedAE", "NLL")} | {"cov90": "{:.3f}"})
    write_json({"settings": vars(args) | {"out": str(args.out)}, "rows": rows},
               "bench_outliers.json", args.out)
    return rows


if __name__ == "__main__":
    main()
