"""UCI regression with a one-hidden-layer MLP (SLANG Table 2, Vadam Table 1).

The protocol of Gal & Ghahramani (2016) as used by SLANG and Vadam: the 20 fixed
train/test splits, an MLP with one hidden layer of 50 ReLU units, inputs and targets
standardised with the training split's mean and standard deviation, test RMSE and test
log-likelihood on the original scale, mean ± s.e. over splits.

What differs: skbong's ``BongRegressor`` (BONG-LIN-HESS, batch size 1) sees each
training example exactly once, in the split's (random) order; the published methods
train for 40 epochs or more. Families: ``dlr`` of rank 10 and ``diag``. The posterior
predictive is the linearised Gaussian N(f(x, μ), J Σ Jᵀ + R) (``predictive="linmc"``).

Hyperparameters per split: ``prior_variance`` and ``obs_variance`` (in standardised
units) from a small grid by the validation log-likelihood of a fit on the first 80 % of
the training split, scored on the last 20 %; then refitted on the whole training split.
Updates that would give a non-finite posterior are skipped (``on_error="skip"``, counted
in the JSON); a grid point whose validation score is not finite is not chosen. The prior
grid is (0.01, 0.1, 1, 10): a network's ``prior_variance`` is divided by each layer's
fan-in, so 1 is the LeCun initialisation distribution.

A third row, ``defaults``, is what a user gets with nothing tuned:
``BongRegressor(hidden_layer_sizes=(50,))`` (dlr-10, σ₀² = 1, the noise learned online,
the Student-t linearised predictive, ``on_error="raise"``), fitted on the whole training
split. The test log-likelihood of every row is the estimator's ``predict_logpdf``.

The naval dataset of the papers' tables is not in the shared data, so it is not run.

Run: ``python benchmarks/paper/uci_regression.py`` (all 7 datasets × 20 splits); less:
``--seeds 5``, ``--datasets yacht bostonHousing``, ``--quick`` (3 splits, small grid).
"""

import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/, for _common
from _common import (  # noqa: E402
    check_data,
    header,
    mean_se,
    parser,
    pm,
    pyplot,
    table,
    write_json,
)

from skbong import BongRegressor  # noqa: E402

DATASETS = {
    # file name → name in the papers' tables
    "bostonHousing": "Boston",
    "concrete": "Concrete",
    "energy": "Energy",
    "kin8nm": "Kin8nm",
    "power-plant": "Power",
    "wine-quality-red": "Wine",
    "yacht": "Yacht",
}

PRIOR_GRID = (0.01, 0.1, 1.0, 10.0)  # a network's σ₀² is fan-in scaled: 1 = LeCun init
OBS_GRID = (0.03, 0.1, 0.3)
QUICK_PRIOR_GRID = (0.1,)
QUICK_OBS_GRID = (0.01, 0.1)

FAMILIES = {
    "bong dlr-10": dict(family="dlr", rank=10),
    "bong diag": dict(family="diag"),
    "defaults": None,  # BongRegressor(hidden_layer_sizes=(50,), passes=1), nothing tuned
}

PUBLISHED = {
    # (RMSE mean, s.e., test log-likelihood mean, s.e.)
    # SLANG: Mishkin et al. (2018), Table 2 (BBB, Dropout, SLANG with L = 1).
    # Vadam: Khan et al. (2018), Table 1 (BBVI, Vadam; MC-Dropout is the same as Dropout).
    "Boston": {
        "BBB [SLANG T2]": (3.43, 0.20, -2.66, 0.06),
        "Dropout [SLANG T2]": (2.97, 0.19, -2.46, 0.06),
        "SLANG L=1 [SLANG T2]": (3.21, 0.19, -2.58, 0.05),
        "BBVI [Vadam T1]": (3.58, 0.21, -2.73, 0.05),
        "Vadam [Vadam T1]": (3.93, 0.26, -2.85, 0.07),
    },
    "Concrete": {
        "BBB [SLANG T2]": (6.16, 0.13, -3.25, 0.02),
        "Dropout [SLANG T2]": (5.23, 0.12, -3.04, 0.02),
        "SLANG L=1 [SLANG T2]": (5.58, 0.19, -3.13, 0.03),
        "BBVI [Vadam T1]": (6.14, 0.13, -3.24, 0.02),
        "Vadam [Vadam T1]": (6.85, 0.09, -3.39, 0.02),
    },
    "Energy": {
        "BBB [SLANG T2]": (0.97, 0.09, -1.45, 0.10),
        "Dropout [SLANG T2]": (1.66, 0.04, -1.99, 0.02),
        "SLANG L=1 [SLANG T2]": (0.64, 0.03, -1.12, 0.01),
        "BBVI [Vadam T1]": (2.79, 0.06, -2.47, 0.02),
        "Vadam [Vadam T1]": (1.55, 0.08, -2.15, 0.07),
    },
    "Kin8nm": {
        "BBB [SLANG T2]": (0.08, 0.00, 1.07, 0.00),
        "Dropout [SLANG T2]": (0.10, 0.00, 0.95, 0.01),
        "SLANG L=1 [SLANG T2]": (0.08, 0.00, 1.06, 0.00),
        "BBVI [Vadam T1]": (0.09, 0.00, 0.95, 0.01),
        "Vadam [Vadam T1]": (0.10, 0.00, 0.76, 0.00),
    },
    "Power": {
        "BBB [SLANG T2]": (4.21, 0.03, -2.86, 0.01),
        "Dropout [SLANG T2]": (4.02, 0.04, -2.80, 0.01),
        "SLANG L=1 [SLANG T2]": (4.16, 0.04, -2.84, 0.01),
        "BBVI [Vadam T1]": (4.31, 0.03, -2.88, 0.01),
        "Vadam [Vadam T1]": (4.28, 0.03, -2.88, 0.01),
    },
    "Wine": {
        "BBB [SLANG T2]": (0.64, 0.01, -0.97, 0.01),
        "Dropout [SLANG T2]": (0.62, 0.01, -0.93, 0.01),
        "SLANG L=1 [SLANG T2]": (0.65, 0.01, -0.97, 0.01),
        "BBVI [Vadam T1]": (0.65, 0.01, -1.00, 0.01),
        "Vadam [Vadam T1]": (0.66, 0.01, -1.01, 0.01),
    },
    "Yacht": {
        "BBB [SLANG T2]": (1.13, 0.06, -1.56, 0.02),
        "Dropout [SLANG T2]": (1.11, 0.09, -1.55, 0.03),
        "SLANG L=1 [SLANG T2]": (1.08, 0.06, -1.88, 0.01),
        "BBVI [Vadam T1]": (2.05, 0.06, -2.41, 0.02),
        "Vadam [Vadam T1]": (1.32, 0.10, -1.70, 0.03),
    },
}


def load(data_dir, name):
    path = check_data(data_dir / "uci" / name / f"{name}.npz", f"UCI {name}")
    d = np.load(path)
    return (d["X"].astype(np.float64), d["y"].astype(np.float64), d["train_idx"],
            d["test_idx"])


def make_estimator(spec, prior_var, obs_var, seed):
    return BongRegressor(
        hidden_layer_sizes=(50,),
        activation="relu",
        prior_variance=prior_var,
        obs_variance=obs_var,
        predictive="linmc",
        on_error="skip",
        passes=1,  # the protocol: one pass over the training split
        random_state=seed,
        **spec,
    )


def predictive_scores(est, X, y):
    """Mean log predictive density (``predict_logpdf``: the linearised Gaussian with a
    fixed noise, the Student-t with the learned one) and RMSE, in the units of y."""
    mean = est.predict(X)
    logpdf = est.predict_logpdf(X, y)
    if not (np.all(np.isfinite(mean)) and np.all(np.isfinite(logpdf))):
        return -np.inf, np.inf
    return float(np.mean(logpdf)), float(np.sqrt(np.mean((y - mean) ** 2)))


def run_split(X, y, train, test, spec, grid, seed):
    x_mean, x_std = X[train].mean(0), X[train].std(0)
    x_std[x_std == 0] = 1.0
    y_mean, y_std = y[train].mean(), y[train].std()
    Xn, yn = (X - x_mean) / x_std, (y - y_mean) / y_std
    n_fit = int(0.8 * len(train))
    fit_rows, val_rows = train[:n_fit], train[n_fit:]
    if spec is None:  # the defaults: no grid, no validation split, no skipping
        t0 = time.perf_counter()
        est = BongRegressor(hidden_layer_sizes=(50,), passes=1, random_state=seed).fit(
            Xn[train], yn[train]
        )
        seconds = time.perf_counter() - t0
        ll_n, rmse_n = predictive_scores(est, Xn[test], yn[test])
        return {"rmse": rmse_n * y_std, "ll": ll_n - np.log(y_std), "prior_variance": 1.0,
                "obs_variance": float(est.obs_variance_[0]), "skipped": int(est.n_skipped_),
                "fit_seconds": seconds}
    scores = {}
    for prior_var, obs_var in grid:
        est = make_estimator(spec, prior_var, obs_var, seed).fit(Xn[fit_rows], yn[fit_rows])
        ll, _ = predictive_scores(est, Xn[val_rows], yn[val_rows])
        scores[(prior_var, obs_var)] = ll if np.isfinite(ll) else -np.inf
    best = max(scores, key=scores.get)
    t0 = time.perf_counter()
    est = make_estimator(spec, *best, seed).fit(Xn[train], yn[train])
    seconds = time.perf_counter() - t0
    ll_n, rmse_n = predictive_scores(est, Xn[test], yn[test])
    return {
        "rmse": rmse_n * y_std,
        "ll": ll_n - np.log(y_std),  # density of y = density of y_n / y_std
        "prior_variance": best[0],
        "obs_variance": best[1],
        "skipped": int(est.n_skipped_),
        "fit_seconds": seconds,
        "validation_ll": {f"{k[0]:g},{k[1]:g}": v for k, v in scores.items()},
    }


def main():
    p = parser(__doc__.splitlines()[0], seeds=20)
    p.add_argument("--datasets", nargs="+", default=list(DATASETS), choices=list(DATASETS))
    p.add_argument("--families", nargs="+", default=list(FAMILIES), choices=list(FAMILIES))
    args = p.parse_args()
    n_splits = 3 if args.quick else args.seeds
    priors, obs = (QUICK_PRIOR_GRID, QUICK_OBS_GRID) if args.quick else (PRIOR_GRID, OBS_GRID)
    grid = [(a, b) for a in priors for b in obs]
    settings = header(
        "UCI regression, MLP 50 ReLU, BONG-LIN-HESS one pass (SLANG T2 / Vadam T1)",
        {
            "datasets": args.datasets,
            "splits": n_splits,
            "families": args.families,
            "grid prior_variance": priors,
            "grid obs_variance (standardised y)": obs,
            "selection": "validation log-lik, fit on first 80 % of the training split",
            "predictive": "linmc (closed-form Gaussian)",
            "dtype": "float32, batch_size 1, one pass",
        },
    )
    results = {}
    for name in args.datasets:
        X, y, train_idx, test_idx = load(args.data_dir, name)
        results[name] = {}
        t0 = time.perf_counter()
        for fam in args.families:
            results[name][fam] = [
                run_split(X, y, train_idx[k], test_idx[k], FAMILIES[fam], grid, seed=k)
                for k in range(n_splits)
            ]
        print(f"\n--- {DATASETS[name]} ({name}): N = {len(y)}, D = {X.shape[1]}, "
              f"{n_splits} splits, {time.perf_counter() - t0:.0f} s")
        rows = []
        for fam in args.families:
            runs = results[name][fam]
            chosen = sorted({(r["prior_variance"], r["obs_variance"]) for r in runs})
            if FAMILIES[fam] is None:  # learned noise: one value per split
                r_learned = [r["obs_variance"] for r in runs]
                chosen = [(1.0, f"learned {min(r_learned):.3f}-{max(r_learned):.3f}")]
            rows.append({
                "method": f"skbong {fam} (1 pass)",
                "test RMSE": pm([r["rmse"] for r in runs], 2),
                "test LL": pm([r["ll"] for r in runs], 2),
                "chosen (σ0², R)": " ".join(f"{a:g},{b:g}" if isinstance(b, float)
                                            else f"{a:g},{b}" for a, b in chosen),
                "skipped rows": str(sum(r["skipped"] for r in runs)),
            })
        for method, (rm, rs, lm, ls) in PUBLISHED[DATASETS[name]].items():
            rows.append({"method": method, "test RMSE": f"{rm:.2f} ± {rs:.2f}",
                         "test LL": f"{lm:.2f} ± {ls:.2f}"})
        table(rows, ["method", "test RMSE", "test LL", "chosen (σ0², R)", "skipped rows"])
    summary(results, args.families)
    write_json({"results": results, "published": PUBLISHED}, "paper/uci_regression.json",
               args.out, settings)
    if args.figure:
        figure(results, args.families, args.figure)


def summary(results, families):
    print("\n--- summary: test log-likelihood, mean ± s.e. over splits")
    rows = []
    for name, res in results.items():
        row = {"dataset": DATASETS[name]}
        for fam in families:
            row[fam] = pm([r["ll"] for r in res[fam]], 2)
        pub = PUBLISHED[DATASETS[name]]
        for key in ("SLANG L=1 [SLANG T2]", "Dropout [SLANG T2]", "BBB [SLANG T2]",
                    "Vadam [Vadam T1]"):
            row[key.split(" [")[0]] = f"{pub[key][2]:.2f}"
        rows.append(row)
    table(rows, ["dataset", *families, "SLANG L=1", "Dropout", "BBB", "Vadam"])


def figure(results, families, path):
    plt = pyplot()
    names = list(results)
    fig, axes = plt.subplots(2, len(names), figsize=(2.3 * len(names), 5.2), squeeze=False)
    for j, name in enumerate(names):
        pub = PUBLISHED[DATASETS[name]]
        labels = [f.replace("bong ", "") for f in families] + [k.split(" [")[0] for k in pub]
        for i, (key, col) in enumerate((("rmse", 0), ("ll", 2))):
            stats = [mean_se([r[key] for r in results[name][f]]) for f in families]
            means = [s[0] for s in stats] + [v[col] for v in pub.values()]
            ses = [s[1] for s in stats] + [v[col + 1] for v in pub.values()]
            colors = ["C0"] * len(families) + ["C7"] * len(pub)
            ax = axes[i][j]
            ax.errorbar(range(len(means)), means, yerr=ses, fmt="none", ecolor="k")
            ax.scatter(range(len(means)), means, c=colors, zorder=3)
            ax.set_xticks(range(len(means)), labels, rotation=70, fontsize=7)
            ax.set_title(f"{DATASETS[name]}: {'RMSE' if key == 'rmse' else 'test LL'}",
                         fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
