"""UCI regression with the batch solvers (SLANG Table 2, Vadam Table 1).

Protocol
--------
* Data: the 7 UCI sets of ``--data-dir``/uci with Gal's 20 train/test splits (90/10),
  inputs and targets standardised on each split's training rows; scores on the original
  scale of y.
* Model: one hidden layer of 50 ReLU (a user model, so that the prior N(0, I/λ) is
  isotropic as in the papers), float32.
* Methods (:data:`METHODS`): Vadam and BBVI with Vadam Table 1's protocol (40 epochs;
  M = 32 on the small sets, 128 on wine, kin8nm, power; S = 10 / 20 samples, 5 / 10 on
  the large sets; α = 0.01, γ₁ = 0.99, γ₂ = 0.9; initial precision 10), VOGN on the same
  protocol (no VOGN UCI numbers are published: compared with Vadam's row), and BBB and
  SLANG (L = 1) with SLANG Table 2's (120 epochs; M = 10, S = 4 on the small sets, M =
  100, S = 2 on kin8nm and power; the authors' code's α = β = 0.01, momentum 0.9).
  ``vadam-code`` and ``bbvi-code`` run the Vadam authors' code's rates instead.
* Hyperparameters: λ (prior precision) and τ (noise precision) chosen on split 0's
  training rows by the mean validation log-likelihood of ``--folds`` of 5 CV folds
  (1 on kin8nm and power), with a coordinate search on log grids (:func:`tune`), not the
  papers' 30 iterations of Bayesian optimisation; the chosen (λ, τ) then serve all
  splits (the papers tuned per split).
* Test log-likelihood: the MC average of the likelihood over 100 draws θ ~ q (Vadam's
  convention); RMSE of the predictive mean.
* Verdict: within 2 combined standard errors of the published mean, or the signed gap.

``--quick``: yacht and Boston, 2 splits, 4 / 12 epochs, 1 fold (a smoke run, not a
reproduction). Writes benchmarks/results/paper/uci_batch.json and doc/results/
uci_batch.txt (quick: uci_batch_quick.*).
"""

import os

# One BLAS thread (set before numpy / jax load OpenBLAS): SLANG's eigendecompositions are
# small, and extra threads only fight over the cores.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import sys  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax.flatten_util import ravel_pytree  # noqa: E402
from scipy.special import logsumexp  # noqa: E402
from sklearn.exceptions import ConvergenceWarning  # noqa: E402
from uci_regression import DATASETS, PUBLISHED, load  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/, for _common
from _common import (  # noqa: E402
    FIGURES,
    Tee,
    dense_gaussian,
    header,
    mean_se,
    parser,
    run_tasks,
    table,
    write_json,
)

from skbong import VariationalRegressor  # noqa: E402
from skbong.exceptions import SkippedRowsWarning  # noqa: E402

HIDDEN = 50


# ---------------------------------------------------------------------- model
def mlp_init(key, n_features, n_outputs):
    """One hidden layer of 50 ReLU: LeCun-normal weights, zero biases (the start of q)."""
    k1, k2 = jax.random.split(key)
    return [
        (jax.random.normal(k1, (n_features, HIDDEN)) / jnp.sqrt(n_features), jnp.zeros(HIDDEN)),
        (jax.random.normal(k2, (HIDDEN, n_outputs)) / jnp.sqrt(HIDDEN), jnp.zeros(n_outputs)),
    ]


def mlp_apply(params, x):
    """f(x, θ) = relu(x W₁ + b₁) W₂ + b₂."""
    (w1, b1), (w2, b2) = params
    return jax.nn.relu(x @ w1 + b1) @ w2 + b2


MODEL = (mlp_init, mlp_apply)
"""A user model, so that the prior N(0, λ⁻¹ I) is isotropic as in the papers (the built-in
MLP scales the weights' prior variance by 1 / fan-in and gives the intercept variance 100)."""


@jax.jit
def _outputs(thetas, x, template):
    unravel = ravel_pytree(template)[1]
    return jax.vmap(lambda th: mlp_apply(unravel(th), x)[:, 0])(thetas)


def outputs(thetas, x):
    """f(x, θₛ) for each row of ``thetas``: (S, n)."""
    template = mlp_init(jax.random.PRNGKey(0), x.shape[1], 1)
    return np.asarray(_outputs(jnp.asarray(thetas, jnp.float32), jnp.asarray(x, jnp.float32),
                               template), np.float64)


# ------------------------------------------------------------------ protocols
PROTOCOLS = {
    # SLANG Table 2 (appendix F.3): 120 epochs; M = 10 on the 5 small sets, M = 100 on the
    # 3 large ones (kin8nm, naval, power).
    "T2": {"epochs": 120, "large": ("kin8nm", "power-plant"), "batch": (10, 100)},
    # Vadam Table 1 (appendix J.1): 40 epochs; M = 32 on the 4 smallest sets, M = 128 on the
    # 4 largest (wine, kin8nm, naval, power).
    "T1": {"epochs": 40, "large": ("wine-quality-red", "kin8nm", "power-plant"), "batch": (32, 128)},
}

METHODS = {
    # name: (protocol, VariationalRegressor parameters, (S small, S large), published row)
    "vadam": ("T1", dict(solver="vadam", learning_rate=0.01, precision_rate=0.1, momentum=0.99,
                         init_precision=10.0), (10, 5), "Vadam [Vadam T1]"),
    "bbvi": ("T1", dict(solver="bbb", learning_rate=0.01, precision_rate=0.1, momentum=0.99,
                        init_precision=10.0), (20, 10), "BBVI [Vadam T1]"),
    "vogn": ("T1", dict(solver="vogn", learning_rate=0.1, precision_rate=0.1,
                        init_precision=10.0), (10, 5), "Vadam [Vadam T1]"),
    "bbb": ("T2", dict(solver="bbb", learning_rate=0.01, precision_rate=0.01, momentum=0.9,
                       init_precision=10.19), (4, 2), "BBB [SLANG T2]"),
    "slang": ("T2", dict(solver="slang", rank=1, learning_rate=0.01, precision_rate=0.01,
                         momentum=0.9, init_precision=1.0), (4, 2), "SLANG L=1 [SLANG T2]"),
    # the Vadam authors' code (betas = (0.9, 0.99)) instead of the paper's γ₁ = 0.99, γ₂ = 0.9
    "vadam-code": ("T1", dict(solver="vadam", learning_rate=0.01, precision_rate=0.01,
                              momentum=0.9, init_precision="prior"), (10, 5), "Vadam [Vadam T1]"),
    "bbvi-code": ("T1", dict(solver="bbb", learning_rate=0.01, precision_rate=0.01,
                             momentum=0.9, init_precision=10.0), (20, 10), "BBVI [Vadam T1]"),
}
"""Run (and tuned) in this order on each data set: each method's search starts from the
(λ, τ) chosen for the one before it in the same protocol (the first from λ = 1, τ = 16)."""

DEFAULT_METHODS = ("vadam", "bbvi", "vogn", "bbb", "slang", "vadam-code", "bbvi-code")
WARM_FROM = {"bbvi": "vadam", "vogn": "vadam", "bbb": "bbvi", "slang": "bbb",
             "vadam-code": "vadam", "bbvi-code": "bbvi"}

PREDICTIVE_SAMPLES = 100
TAU_START, LAM_START = 16.0, 1.0
TAU_RANGE = (0.25, 4096.0)
"""Bounds of the noise-precision search (standardised units)."""
LAM_RANGE = (1e-3, 1e3)
"""Bounds of the prior-precision search."""
DIVERGED_RMSE = 3.0
"""A split whose test RMSE is above 3× the median of the method's splits diverged; with any
such split the verdict is "k/n div." (a mean ± s.e. over them would be meaningless)."""
PUBLISHED_SE_FLOOR = 0.005
"""A published "± 0.00" means an s.e. below half the last printed digit: it counts as 0.005."""


def settings_of(method, name, epochs=None):
    """(parameters of VariationalRegressor, epochs) of ``method`` on data set ``name``."""
    proto, params, samples, _ = METHODS[method]
    p = PROTOCOLS[proto]
    large = name in p["large"]
    n_epochs = epochs[proto] if epochs else p["epochs"]
    return {**params, "batch_size": p["batch"][large], "mc_samples": samples[large]}, n_epochs


def standardise(X, y, rows):
    """X and y standardised with the mean and std of ``rows`` (x std 0 → 1)."""
    x_mean, x_std = X[rows].mean(0), X[rows].std(0)
    x_std[x_std == 0] = 1.0
    y_mean, y_std = y[rows].mean(), y[rows].std()
    return (X - x_mean) / x_std, (y - y_mean) / y_std, y_mean, y_std


def fit(method, name, Xn, yn, lam, tau, seed, epochs=None):
    """Fit ``method`` on standardised data with prior precision λ (every parameter) and
    noise precision τ (standardised units)."""
    params, n_epochs = settings_of(method, name, epochs)
    if params["init_precision"] == "prior":  # the Vadam code's prec_init = prior_prec
        params["init_precision"] = lam
    est = VariationalRegressor(
        model=MODEL,
        prior_variance=1.0 / lam,
        obs_variance=1.0 / tau,
        max_iter=n_epochs,
        n_iter_no_change=10**9,  # never stop early: run the protocol's epochs
        tol=0.0,
        predictive="mc",
        predictive_samples=PREDICTIVE_SAMPLES,
        random_state=seed,
        warm_start=True,
        **params,
    )
    est.n_resumed_ = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # "max_iter reached": expected
        warnings.simplefilter("ignore", SkippedRowsWarning)  # counted in n_skipped_steps_
        est.fit(Xn, yn)
        # fit() stops at an epoch whose Monte Carlo loss is not finite (a sample of q gave a
        # non-finite likelihood; that step was not applied): continue to the protocol's epochs
        while est.n_iter_ < n_epochs:
            est.n_resumed_ += 1
            est.set_params(max_iter=n_epochs - est.n_iter_)
            est.fit(Xn, yn)
    return est


def posterior_samples(est, n, seed):
    """n draws θ ~ q (float64): from the dense covariance for SLANG's low-rank-plus-diagonal
    precision, from the marginal variances for the diagonal families."""
    rng = np.random.default_rng(seed)
    mean = np.asarray(est.posterior_mean_, np.float64)
    eps = rng.standard_normal((n, mean.size))
    if est.solver == "slang":
        _, cov, _ = dense_gaussian(est)
        return mean + eps @ np.linalg.cholesky(cov).T
    return mean + eps * np.sqrt(np.asarray(est.posterior_var_, np.float64))


def scores(est, Xn, y, y_mean, y_std, tau, seed):
    """Test log-likelihood, the MC average of the likelihood over 100 θₛ ~ q (Vadam's
    convention), and the RMSE of the predictive mean, both on the original scale of y."""
    thetas = posterior_samples(est, PREDICTIVE_SAMPLES, seed)
    f = y_mean + y_std * outputs(thetas, Xn)  # (S, n), original scale
    if not np.all(np.isfinite(f)):
        return -np.inf, np.inf
    var = y_std**2 / tau
    logp = -0.5 * np.log(2 * np.pi * var) - 0.5 * (y[None, :] - f) ** 2 / var
    ll = float(np.mean(logsumexp(logp, axis=0) - np.log(f.shape[0])))
    return ll, float(np.sqrt(np.mean((y - f.mean(0)) ** 2)))


# --------------------------------------------------------------------- tuning
def folds_of(rows, n_folds, seed):
    """(train, validation) row pairs: the first ``n_folds`` folds of a seeded 5-fold split
    of ``rows`` (the papers' 5-fold CV), all with the same training size 80 % (the
    remainder of N / 5 always trains: one compiled program for every fold)."""
    perm = np.random.default_rng(seed).permutation(rows)
    size = len(perm) // 5
    return [(np.concatenate([perm[: i * size], perm[(i + 1) * size :]]),
             perm[i * size : (i + 1) * size]) for i in range(n_folds)]


def cv_score(method, name, X, y, folds, lam, tau, epochs):
    """Mean validation log-likelihood (original scale) over the folds; −inf if not finite."""
    lls = []
    for i, (fit_rows, val_rows) in enumerate(folds):
        Xn, yn, y_mean, y_std = standardise(X, y, fit_rows)
        est = fit(method, name, Xn[fit_rows], yn[fit_rows], lam, tau, 1000 + i, epochs)
        ll, _ = scores(est, Xn[val_rows], y[val_rows], y_mean, y_std, tau, 2000 + i)
        lls.append(ll)
    value = float(np.mean(lls))
    return value if np.isfinite(value) else -np.inf


def tune(method, name, X, y, folds, start, wide, epochs):
    """Coordinate search for (λ, τ) by the CV log-likelihood, on log grids.

    τ on the grid 2^(k/2), λ on 10^(k/2). Round 1: τ from ``start`` with steps of ×4
    (``wide``) or ×2, moving while the best point is at an edge, then refined (×2, ×√2);
    λ likewise at that τ, with steps of ×10 then ×√10. Round 2: τ refined again (×2, ×√2)
    at the chosen λ. About 15–20 scored points (the papers ran 30 iterations of Bayesian
    optimisation). Returns the chosen (λ, τ) and every evaluation.
    """
    evals = {}

    def score(lam, tau):
        key = (float(f"{lam:.6g}"), float(f"{tau:.6g}"))
        if key not in evals:
            evals[key] = cv_score(method, name, X, y, folds, lam, tau, epochs)
        return evals[key]

    def line_search(f, best, steps, bounds):
        """Maximise f along one axis: bracket with steps[0] while the best is at an edge,
        then refine with each further step."""
        lo, hi = bounds
        for i, step in enumerate(steps):
            for _ in range(8 if i == 0 else 1):
                cands = [v for v in (best / step, best, best * step) if lo <= v <= hi]
                new = max(cands, key=f)
                if new == best:
                    break
                best = new
        return best

    lam, tau = start
    tau_steps = (4.0, 2.0, 2**0.5) if wide else (2.0, 2**0.5)
    tau = line_search(lambda t: score(lam, t), tau, tau_steps, TAU_RANGE)
    lam = line_search(lambda v: score(v, tau), lam, (10.0, 10**0.5), LAM_RANGE)
    tau = line_search(lambda t: score(lam, t), tau, (2.0, 2**0.5), TAU_RANGE)
    return (lam, tau), evals


# ----------------------------------------------------------------- experiment
def run_dataset(task):
    """Tune and fit every method of ``task["methods"]`` on one data set (plain data in and
    out, so that it can run in a worker process)."""
    name, methods, n_splits = task["name"], task["methods"], task["splits"]
    X, y, train_idx, test_idx = load(task["data_dir"], name)
    folds = folds_of(train_idx[0], task["folds"][name], seed=0)
    out, chosen = {}, {}
    for method in methods:
        t0 = time.perf_counter()
        warm = WARM_FROM.get(method)
        start = chosen.get(warm, (LAM_START, TAU_START))
        (lam, tau), evals = tune(method, name, X, y, folds, start, warm not in chosen,
                                 task["epochs"])
        chosen[method] = (lam, tau)
        tune_s = time.perf_counter() - t0
        runs = []
        for k in range(n_splits[method]):
            train, test = train_idx[k], test_idx[k]
            Xn, yn, y_mean, y_std = standardise(X, y, train)
            f0 = time.perf_counter()
            est = fit(method, name, Xn[train], yn[train], lam, tau, seed=k, epochs=task["epochs"])
            fit_s = time.perf_counter() - f0
            ll, rmse = scores(est, Xn[test], y[test], y_mean, y_std, tau, seed=10_000 + k)
            runs.append({"split": k, "ll": ll, "rmse": rmse, "fit_seconds": fit_s,
                         "skipped_steps": int(est.n_skipped_steps_), "loss": float(est.loss_),
                         "epochs": int(est.n_iter_), "resumed": est.n_resumed_})
        out[method] = {
            "data": {"n": int(X.shape[0]), "d": int(X.shape[1]), "n_train": len(train_idx[0]),
                     "n_test": len(test_idx[0])},
            "lambda": lam, "tau": tau, "tau_original_units": tau / np.var(y[train_idx[0]]),
            "tuning": [{"lambda": a, "tau": b, "cv_ll": v} for (a, b), v in evals.items()],
            "tuning_seconds": tune_s, "seconds": time.perf_counter() - t0, "runs": runs,
        }
        print(f"   {DATASETS[name]:>8} {method:>10}: λ = {lam:g}, τ = {tau:.3g} "
              f"({len(evals)} CV points, {tune_s:.0f} s), {len(runs)} splits "
              f"{time.perf_counter() - t0 - tune_s:.0f} s", flush=True)
    return name, out


# --------------------------------------------------------------------- report
def published(method, name):
    """(RMSE, s.e., LL, s.e.) of the method's published row, s.e. floored (see
    :data:`PUBLISHED_SE_FLOOR`)."""
    rm, rs, lm, ls = PUBLISHED[DATASETS[name]][METHODS[method][3]]
    return rm, max(rs, PUBLISHED_SE_FLOOR), lm, max(ls, PUBLISHED_SE_FLOOR)


def verdict(values, pub_mean, pub_se):
    """"ok" when |mean − published| ≤ 2 √(se² + se_pub²), else the signed gap in combined
    standard errors (e.g. "−3.1σ": ours below the published value)."""
    m, s, n = mean_se(values)
    if n < 2:
        return "n/a", float("nan")
    z = (m - pub_mean) / np.hypot(s, pub_se)
    return ("ok" if abs(z) <= 2 else f"{z:+.1f}σ"), float(z)


def diverged(runs):
    """How many splits diverged: a non-finite test RMSE, or one above
    :data:`DIVERGED_RMSE` × the median over the splits."""
    rmse = np.array([run["rmse"] for run in runs])
    bad = ~np.isfinite(rmse)
    return int(np.sum(bad | (rmse > DIVERGED_RMSE * np.median(rmse[~bad]))))


def fmt(values, digits):
    m, s, n = mean_se(values)
    text = f"{m:.{digits}f} ± {s:.{digits}f}" if np.isfinite(s) else f"{m:.{digits}f}"
    return text if n == len(values) else f"{text} ({n}/{len(values)} finite)"


def report(results, methods):
    """Print one table per data set and a summary of the verdicts; return the summary."""
    summary, short = {}, []
    for name, res in results.items():
        X, _, train_idx, test_idx = load_shape(name, res)
        print(f"\n--- {DATASETS[name]} ({name}): N = {X[0]}, D = {X[1]}, "
              f"{train_idx} train / {test_idx} test rows per split")
        digits = 3 if name == "kin8nm" else 2
        rows, line = [], {"data set": DATASETS[name]}
        for method in methods:
            if method not in res:
                continue
            r = res[method]
            lls = [run["ll"] for run in r["runs"]]
            rmses = [run["rmse"] for run in r["runs"]]
            rm, rs, lm, ls = published(method, name)
            v_ll, z_ll = verdict(lls, lm, ls)
            v_rmse, z_rmse = verdict(rmses, rm, rs)
            n_div = diverged(r["runs"])
            if n_div:
                v_ll = v_rmse = f"{n_div}/{len(lls)} div."
            summary.setdefault(name, {})[method] = {
                "ll": mean_se(lls), "rmse": mean_se(rmses), "z_ll": z_ll, "z_rmse": z_rmse,
                "published_row": METHODS[method][3], "verdict_ll": v_ll, "verdict_rmse": v_rmse,
                "diverged_splits": n_div,
            }
            line[method] = f"{v_ll} / {v_rmse}"
            rows.append({
                "method": method,
                "splits": str(len(r["runs"])),
                "test LL": fmt(lls, 2),
                "published": f"{lm:.2f} ± {ls:.2f}",
                "LL": v_ll,
                "test RMSE": fmt(rmses, digits),
                "published ": f"{rm:.2f} ± {rs:.2f}",
                "RMSE": v_rmse,
                "published row": METHODS[method][3] + (" *" if method == "vogn" else ""),
                "λ, τ (std.)": f"{r['lambda']:g}, {r['tau']:.3g}",
                "skipped": str(sum(run["skipped_steps"] for run in r["runs"])),
                "resumed": str(sum(run["resumed"] for run in r["runs"])),
                "fit s": f"{np.median([run['fit_seconds'] for run in r['runs']]):.1f}",
            })
        table(rows, ["method", "splits", "test LL", "published", "LL", "test RMSE", "published ",
                     "RMSE", "published row", "λ, τ (std.)", "skipped", "resumed", "fit s"])
        short.append(line)
    print("\n--- summary: verdict on test LL / test RMSE against the published row")
    table(short, ["data set", *methods])
    print("   ok = within 2 combined standard errors √(se² + se_pub²) of the published value, "
          "else the gap in those\n   units (+: ours higher; higher LL is better, lower RMSE is "
          "better); a published s.e. of 0.00 counts as 0.005.\n   fit s: median seconds of one "
          "final fit (the first includes compilation); skipped: steps not applied, all splits;\n"
          "   resumed: fits that stopped at an epoch with a non-finite Monte Carlo loss and were "
          "continued to the protocol's epochs;\n   k/n div.: k of the n splits diverged (test "
          f"RMSE above {DIVERGED_RMSE:g}× the median of the splits, or not finite).")
    if "vogn" in methods:
        print("   * no VOGN UCI numbers are published (Vadam §6.2: \"VOGN shows similar results "
              "to Vadam and BBVI\"): compared with Vadam's row.")
    return summary


def load_shape(name, res):
    """(N, D), training and test rows of one split, from the results of ``name``."""
    info = next(iter(res.values()))["data"]
    return (info["n"], info["d"]), None, info["n_train"], info["n_test"]


def main():
    p = parser(__doc__.splitlines()[0], seeds=20)
    p.add_argument("--datasets", nargs="+", default=list(DATASETS), choices=list(DATASETS))
    p.add_argument("--methods", nargs="+", default=list(DEFAULT_METHODS), choices=list(METHODS))
    p.add_argument("--large-slang-splits", type=int, default=20,
                   help="splits of SLANG on kin8nm and power (120 epochs of M = 100, S = 2 cost "
                        "~40 s a fit here)")
    p.add_argument("--folds", type=int, default=2,
                   help="how many of the 5 CV folds score a tuning point on the small sets "
                        "(kin8nm and power: 1)")
    p.add_argument("--jobs", type=int, default=1, help="parallel worker processes (data sets)")
    p.add_argument("--text", type=Path, default=None,
                   help="also write the printed output here (default doc/results/uci_batch.txt; "
                        "with --quick: uci_batch_quick.txt)")
    args = p.parse_args()
    if args.quick and args.datasets == list(DATASETS):
        args.datasets = ["yacht", "bostonHousing"]
    text = args.text or FIGURES / ("uci_batch_quick.txt" if args.quick else "uci_batch.txt")
    tee = Tee(sys.stdout)
    sys.stdout = tee
    try:
        run(args)
    finally:
        sys.stdout = tee.stream
    text.parent.mkdir(parents=True, exist_ok=True)
    text.write_text(tee.text())
    print(f"wrote {text}")


def run(args):
    n_splits = 2 if args.quick else args.seeds
    epochs = {"T2": 12, "T1": 4} if args.quick else None
    large = PROTOCOLS["T2"]["large"]
    splits = {
        name: {m: min(n_splits, args.large_slang_splits) if m == "slang" and name in large
               else n_splits for m in args.methods}
        for name in args.datasets
    }
    folds = {name: 1 if args.quick or name in large else args.folds for name in args.datasets}
    settings = header(
        "UCI regression, one hidden layer of 50 ReLU, batch solvers (SLANG Table 2, Vadam "
        "Table 1)",
        {
            "datasets": args.datasets,
            "methods": {m: {"protocol": METHODS[m][0], **METHODS[m][1],
                            "mc_samples (small, large)": METHODS[m][2],
                            "published row": METHODS[m][3]} for m in args.methods},
            "protocols": {k: {**v, "epochs": epochs[k] if epochs else v["epochs"]}
                          for k, v in PROTOCOLS.items()},
            "splits": splits,
            "tuning": "split 0's training rows: coordinate search over (λ, τ) by the CV "
                      "log-likelihood (see the module docstring)",
            "folds": {k: f"{v} of 5 (80 % train, 20 % validation)" for k, v in folds.items()},
            "prior": "N(0, I/λ) on every weight and bias (λ per parameter)",
            "noise": "obs_variance = 1/τ, τ in units of the standardised targets",
            "predictive": f"{PREDICTIVE_SAMPLES} samples of q: LL = mean_i log mean_s "
                          "N(y_i | f(x_i, θ_s), 1/τ), RMSE of mean_s f(x_i, θ_s), original scale",
            "dtype": "float32",
            "jobs": args.jobs,
        },
    )
    tasks = [{"name": name, "methods": args.methods, "splits": splits[name],
              "folds": folds, "epochs": epochs, "data_dir": args.data_dir}
             for name in args.datasets]
    print("\n--- progress (tuning on split 0, then the splits)")
    done, wall, cpu = run_tasks(run_dataset, tasks, args.jobs)
    results = dict(done)
    print(f"\n--- results: mean ± s.e. over splits; {wall / 60:.1f} min wall, {cpu / 60:.1f} min "
          f"CPU (load average now {' '.join(f'{v:.2f}' for v in os.getloadavg())})")
    summary = report(results, args.methods)
    settings["wall_seconds"], settings["cpu_seconds"] = wall, cpu
    write_json({"results": results, "summary": summary, "published": PUBLISHED},
               "paper/uci_batch_quick.json" if args.quick else "paper/uci_batch.json", args.out,
               settings)


if __name__ == "__main__":
    main()
