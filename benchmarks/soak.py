"""Soak test: long float32 streams through every family, checking the posterior stays sound.

For every variational family, a small MLP learns a stationary stream from a fixed random
"teacher" network, in ``partial_fit`` blocks, predicting each block before learning it
(prequential evaluation):

* regression: 5 inputs → 8 tanh units → 1 output, y = teacher(x) + N(0, 0.3²);
* classification: 5 inputs → 8 tanh units → 3 classes, y ~ softmax(teacher(x)).

Configurations: ``bong`` with ``lin_hess`` and with ``lin_ef`` for ``--long`` rows
(default 100,000), and ``blr`` + ``mc_ef``, ``bbb`` + ``mc_ef`` and ``bong`` + ``mc_ef``
for ``--short`` rows (default 20,000). Every run uses ``on_error="skip"`` (a long-lived
stream must not stop) and reports how many rows were refused.

Checked after every window of rows and reported at the end:

* the posterior is finite;
* the covariance is symmetric positive definite: for full / full_moment, ``max |Σ − Σᵀ|``
  and the smallest eigenvalue of Σ (computed in float64 from the float32 Σ) and whether
  a float32 Cholesky succeeds; for diag / diag_moment the smallest variance; for dlr the
  smallest Υ and the smallest eigenvalue of the precision Υ + W Wᵀ (dense, float64);
* the prequential log-loss per window does not diverge: every window is finite and the
  last window is at most 10 % above the first (``diverged`` is reported otherwise); the
  marginal baseline (the loss of ignoring x) is printed for scale, and ``learned`` says
  whether the last window beats it.

Speed is reported as µs per row after the first block (which pays for the compiles).
The defaults (prior variance 0.01, learning rate 0.01, 5 inner steps and 5 MC samples)
keep the moment-parameter and plain-gradient rules stable on this network.

Usage::

    nice -n 10 python benchmarks/soak.py            # full run, writes results/soak.json
    python benchmarks/soak.py --quick               # 5,000 / 2,000 rows, for a smoke test
"""

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

import jax
import numpy as np

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, os.environ.get("SKBONG_SRC", str(ROOT.parent)))

from skbong import BongClassifier, BongRegressor  # noqa: E402
from skbong.engine import FAMILY_NAMES  # noqa: E402

N_FEATURES, HIDDEN, NOISE = 5, 8, 0.3
LONG_RULES = [("bong", "lin_hess"), ("bong", "lin_ef")]
SHORT_RULES = [("blr", "mc_ef"), ("bbb", "mc_ef"), ("bong", "mc_ef")]


def teacher(task, seed=0):
    """A fixed random tanh network: x (n, 5) -> outputs (n, 1) or (n, 3)."""
    rng = np.random.default_rng(seed)
    n_out = 1 if task == "reg" else 3
    w1 = rng.normal(size=(N_FEATURES, HIDDEN)) / np.sqrt(N_FEATURES)
    w2 = rng.normal(size=(HIDDEN, n_out)) * (1.0 if task == "reg" else 2.0)
    b1 = 0.1 * rng.normal(size=HIDDEN)
    return lambda x: np.tanh(x @ w1 + b1) @ w2


def make_stream(task, n, seed=1):
    """n rows of the teacher's stream (float32 inputs)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, N_FEATURES)).astype(np.float32)
    f = teacher(task)(X.astype(np.float64))
    if task == "reg":
        return X, f[:, 0] + NOISE * rng.normal(size=n)
    p = np.exp(f - f.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    return X, (rng.random(n)[:, None] > np.cumsum(p, axis=1)).sum(axis=1)


def make_learner(task, family, rule, hessian, args):
    common = dict(
        hidden_layer_sizes=(HIDDEN,),
        activation="tanh",
        family=family,
        rank=args.rank,
        rule=rule,
        hessian=hessian,
        n_iter=args.n_iter,
        mc_samples=args.mc_samples,
        learning_rate=args.learning_rate,
        prior_variance=args.prior_variance,
        dtype="float32",
        on_error="skip",
        random_state=0,
    )
    if task == "reg":
        return BongRegressor(obs_variance=NOISE**2, **common)
    return BongClassifier(**common)


def block_log_loss(est, X, y):
    """Mean prequential (plugin) negative log-likelihood of a block, before learning it."""
    if isinstance(est, BongClassifier):
        proba = est.predict_proba(X)
        return float(-np.mean(np.log(np.maximum(proba[np.arange(len(y)), y], 1e-300))))
    mean = est.predict(X)
    r = float(est.obs_variance_[0])
    return float(np.mean(0.5 * np.log(2 * np.pi * r) + (y - mean) ** 2 / (2 * r)))


def baseline(task, y):
    """Log-loss of the best constant prediction (the marginal of y)."""
    if task == "reg":
        return float(0.5 * np.log(2 * np.pi * np.e * np.var(y)))
    p = np.bincount(y, minlength=3) / len(y)
    return float(-np.sum(p[p > 0] * np.log(p[p > 0])))


def soundness(est):
    """Finiteness, symmetry and positive definiteness of the belief (numbers, not flags)."""
    state = [np.asarray(a) for a in est.posterior_]
    out = {"finite": bool(all(np.all(np.isfinite(a)) for a in state))}
    if not out["finite"]:
        return out
    if est.family in ("full", "full_moment"):
        cov = state[1]
        out["asymmetry"] = float(np.abs(cov - cov.T).max())
        out["min_eig"] = float(np.linalg.eigvalsh(cov.astype(np.float64)).min())
        try:
            np.linalg.cholesky(0.5 * (cov + cov.T))
            out["cholesky_float32"] = True
        except np.linalg.LinAlgError:
            out["cholesky_float32"] = False
        out["pd"] = out["min_eig"] > 0 and out["cholesky_float32"]
    elif est.family == "dlr":
        prec_diag, w = state[1].astype(np.float64), state[2].astype(np.float64)
        out["min_prec_diag"] = float(prec_diag.min())
        out["min_eig"] = float(np.linalg.eigvalsh(np.diag(prec_diag) + w @ w.T).min())
        out["pd"] = out["min_prec_diag"] > 0 and out["min_eig"] > 0
    else:
        out["min_eig"] = float(state[1].min())  # the variances are the eigenvalues
        out["pd"] = out["min_eig"] > 0
    return out


def soak(task, family, rule, hessian, n, args):
    X, y = make_stream(task, n)
    est = make_learner(task, family, rule, hessian, args)
    window = max(n // args.windows, args.block)
    losses, window_losses, checks = [], [], []
    start = warm = time.perf_counter()
    for i in range(0, n, args.block):
        if i == args.block:
            warm = time.perf_counter()  # the first block paid for the compiles
        Xb, yb = X[i : i + args.block], y[i : i + args.block]
        if i > 0:
            losses.append((len(yb), block_log_loss(est, Xb, yb)))
        kw = {"classes": [0, 1, 2]} if task == "clf" and i == 0 else {}
        est.partial_fit(Xb, yb, **kw)
        if (i + len(yb)) % window == 0 or i + len(yb) == n:
            if losses:
                sizes, values = np.array(losses).T
                window_losses.append(float(np.sum(sizes * values) / np.sum(sizes)))
            losses = []
            checks.append(soundness(est))
    end = time.perf_counter()
    final = checks[-1]
    finite_losses = all(np.isfinite(window_losses))
    base = baseline(task, y)
    return {
        "task": task,
        "family": family,
        "rule": rule,
        "hessian": hessian,
        "rows": n,
        "params": int(est.n_params_),
        "seconds": end - start,
        "first_block_seconds": warm - start,
        "us_per_row": 1e6 * (end - warm) / max(n - args.block, 1),
        "skipped": int(est.n_skipped_),
        "window_log_loss": window_losses,
        "baseline_log_loss": base,
        "always_finite": all(c["finite"] for c in checks),
        "always_pd": all(c.get("pd", False) for c in checks),
        "final": final,
        "diverged": not finite_losses
        or window_losses[-1] > window_losses[0] + 0.1 * abs(window_losses[0]),
        "learned": bool(finite_losses and window_losses[-1] < base),
    }


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--long", type=int, default=100_000, help="rows for bong + lin_hess / lin_ef")
    p.add_argument("--short", type=int, default=20_000, help="rows for blr, bbb and mc_ef")
    p.add_argument("--block", type=int, default=1000, help="rows per partial_fit call")
    p.add_argument("--windows", type=int, default=10, help="log-loss windows per stream")
    p.add_argument("--families", nargs="+", default=list(FAMILY_NAMES), choices=FAMILY_NAMES)
    p.add_argument("--tasks", nargs="+", default=["reg", "clf"], choices=["reg", "clf"])
    p.add_argument("--rank", type=int, default=10)
    p.add_argument("--n-iter", type=int, default=5)
    p.add_argument("--mc-samples", type=int, default=5)
    p.add_argument("--learning-rate", type=float, default=0.01)
    p.add_argument("--prior-variance", type=float, default=0.01)
    p.add_argument("--quick", action="store_true", help="5,000 / 2,000 rows")
    p.add_argument("--out", type=Path, default=ROOT / "results" / "soak.json")
    args = p.parse_args(argv)
    if args.quick:
        args.long, args.short, args.block = 5000, 2000, 500
    runs = []
    header = (
        f"{'task':4s} {'family':12s} {'rule':5s} {'hessian':9s} {'rows':>7s} {'µs/row':>7s} "
        f"{'skipped':>7s} {'first':>7s} {'best':>7s} {'last':>7s} {'base':>6s} "
        f"{'min eig':>9s} {'asym':>7s} {'finite':>6s} {'PD':>3s} {'diverged':>8s} "
        f"{'learned':>7s}"
    )
    print(header)
    for task in args.tasks:
        for family in args.families:
            plan = [(r, h, args.long) for r, h in LONG_RULES]
            plan += [(r, h, args.short) for r, h in SHORT_RULES]
            for rule, hessian, n in plan:
                run = soak(task, family, rule, hessian, n, args)
                runs.append(run)
                wl, fin = run["window_log_loss"], run["final"]
                print(
                    f"{task:4s} {family:12s} {rule:5s} {hessian:9s} {n:7d} "
                    f"{run['us_per_row']:7.1f} {run['skipped']:7d} {wl[0]:7.3g} "
                    f"{min(wl):7.3g} {wl[-1]:7.3g} {run['baseline_log_loss']:6.3f} "
                    f"{fin.get('min_eig', float('nan')):9.2e} "
                    f"{fin.get('asymmetry', 0.0):7.1e} {str(run['always_finite']):>6s} "
                    f"{'yes' if run['always_pd'] else 'NO':>3s} {str(run['diverged']):>8s} "
                    f"{str(run['learned']):>7s}",
                    flush=True,
                )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    meta = {
        "platform": platform.platform(),
        "python": platform.python_version(),
        "jax": jax.__version__,
        "cpu_count": os.cpu_count(),
        "load_average": os.getloadavg(),
        "args": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
    }
    args.out.write_text(json.dumps({"machine": meta, "runs": runs}, indent=1))
    bad = [r for r in runs if not (r["always_finite"] and r["always_pd"]) or r["diverged"]]
    print(f"{len(runs)} runs, {len(bad)} with a problem; JSON: {args.out}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
