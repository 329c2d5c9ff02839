"""MNIST with the BONG paper's CNN (Figs. 1–3 and 5–6 of Jones, Chang & Murphy, 2024).

The CNN of the paper: two 5×5 convolutions with 16 features (ReLU, 2×2 average pooling
after each), a dense layer of 64 ReLU units and a dense layer of 10 logits; P = 57,722.
It is given to ``BongClassifier`` as a user JAX model (``model=(cnn_init, cnn_apply)``,
module-level functions below). The first ``--n-train`` (2,000) training images, in a
seeded random order, are streamed once, one image per update, through
``partial_fit``; at T = 250, 500, 1000, 2000 the test set is scored:

* plugin NLPD and misclassification (``predict_log_proba`` with ``predictive="plugin"``)
  on the first ``--n-test`` test images (default: all 10,000);
* linearised-MC ("Lin-MC") NLPD and misclassification on the first ``--n-test-linmc``
  test images (default 1,000) with S = 100 samples. The estimator's own
  ``predictive="linmc"`` pushes S parameter samples through a JVP of the network for
  every image (≈ 2S forward passes per image); here the same predictive distribution,
  N(f(x, μ), J Σ Jᵀ) over the logits (θ ~ q, f = f(x, μ) + J(θ − μ) is exactly that
  Gaussian), is sampled in the 10-dimensional output space from the per-image Jacobian
  (10 backward passes) and the fitted belief. That is the one place the engine is used
  directly (``skbong.engine.outputs.output_jacobians`` and the family's ``output_cov``)
  and the private ``_state`` of the fitted estimator read; the reason is cost only (about
  7× fewer network passes at S = 100). Draws are independent per image instead of shared
  across images, which leaves each image's predictive unchanged.
* on the same images and samples, the BONG authors' "Lin-MC" as their evaluation code
  computes it (``bong/experiments/mnist_clf.py``): the S linearised logits are
  *averaged*, then the softmax taken. Since E[f_s] = f(x, μ), that tends to the plugin
  predictive as S grows; the mixture above is the posterior predictive the paper's
  footnote 2 defines (average the probabilities);
* the mean logit variance tr(J Σ Jᵀ) / C over those images, and for dlr its diagonal
  term tr(J Υ⁻¹ Jᵀ) / C, the variance left outside the rank-R directions (the total is
  that minus what the low-rank part removes).

Runtime is the wall time of the ``partial_fit`` calls only (scoring excluded), and the
first call, which includes compilation, is reported separately.

Why ``partial_fit`` one row at a time rather than ``fit``: ``fit`` runs the stream as a
``lax.scan``, and on XLA:CPU (jax 0.10) the CNN's convolutions inside the scan's loop run
4–8× slower than the same step outside a loop; a one-row ``partial_fit`` compiles a
single step without a loop. The updates are identical either way.

Hyperparameters: the paper tunes σ₀² (and the learning rate of BOG/BLR/BBB) by Bayesian
optimisation on a validation set and does not list the values; here a small grid is
searched on a short stream (``--tune-steps`` images, default 250) scored by the plugin
NLPD on 1,000 held-out training images (indices 50,000–50,999), with the cheap LIN-EF
estimator, and the chosen values are used for every estimator of that rule and family.
``--tune self`` chooses σ₀² for each BONG configuration with the configuration itself
over (0.003, …, 1), scored by the plugin NLPD; ``--tune self-linmc`` scores the same grid
by the validation Lin-MC (mixture) NLPD, i.e. tunes for the predictive that will be used.
MC-EF uses M = ``--mc-samples`` samples (paper: 100) and BLR/BBB ``--n-iter`` inner
steps (the paper's code default: 10).

Configurations (``--configs``; names are ``rule-family-hessian``): the 12 of Fig. 1
(bong/bog/blr/bbb × lin_hess/lin_ef/mc_ef with dlr-10) and the 9 more of Fig. 2 (bong ×
diag/diag_mom/dlr1 × the three estimators). ``--configs headline`` runs a subset that
tests each conclusion of the paper; ``all`` runs all 21. Results are appended to the JSON
after every run; ``--resume`` skips runs already there. A long grid can be split across
processes, each with its own ``--out`` (and ``--first-seed``); ``--merge A.json B.json
--out all.json`` then joins their runs by (config, seed).

Run (hours on 2 CPU cores): ``python benchmarks/paper/mnist_cnn.py --configs headline
--seeds 1``; a smoke test: ``--quick``.
"""

import json
import sys
import time
from functools import partial
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/, for _common
from _common import (  # noqa: E402
    PAPER_RESULTS,
    check_data,
    header,
    machine,
    mean_se,
    merge_runs,
    parser,
    pm,
    pyplot,
    table,
    write_json,
)

from skbong import BongClassifier, engine  # noqa: E402
from skbong.engine.families import FAMILIES  # noqa: E402
from skbong.engine.outputs import output_jacobians  # noqa: E402


# ------------------------------------------------------------------ the model
def _conv(x, kernel, bias):
    out = jax.lax.conv_general_dilated(
        x, kernel, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC")
    )
    return out + bias


def _avg_pool(x):
    n, h, w, c = x.shape
    return x.reshape(n, h // 2, 2, w // 2, 2, c).mean(axis=(2, 4))


def cnn_init(key, n_features, n_outputs):
    """Parameters of the paper's CNN: LeCun-normal weights, zero biases."""
    if n_features != 784:
        raise ValueError(f"the MNIST CNN needs 784 inputs (28×28), got {n_features}")
    keys = jax.random.split(key, 4)

    def lecun(k, shape, fan_in):
        return jax.random.normal(k, shape) / np.sqrt(fan_in)

    return {
        "conv1": (lecun(keys[0], (5, 5, 1, 16), 25), jnp.zeros(16)),
        "conv2": (lecun(keys[1], (5, 5, 16, 16), 400), jnp.zeros(16)),
        "dense1": (lecun(keys[2], (7 * 7 * 16, 64), 784), jnp.zeros(64)),
        "dense2": (lecun(keys[3], (64, n_outputs), 64), jnp.zeros(n_outputs)),
    }


def cnn_apply(params, x):
    """Logits (n, 10) of flattened 28×28 images (n, 784)."""
    h = x.reshape(x.shape[0], 28, 28, 1)
    h = _avg_pool(jax.nn.relu(_conv(h, *params["conv1"])))
    h = _avg_pool(jax.nn.relu(_conv(h, *params["conv2"])))
    h = jax.nn.relu(h.reshape(h.shape[0], -1) @ params["dense1"][0] + params["dense1"][1])
    return h @ params["dense2"][0] + params["dense2"][1]


MODEL = engine.UserModel(cnn_init, cnn_apply, 784, 10)

# ---------------------------------------------------------- configurations
FAMILY_SPECS = {
    "dlr10": dict(family="dlr", rank=10),
    "dlr1": dict(family="dlr", rank=1),
    "diag": dict(family="diag"),
    "diag_mom": dict(family="diag_moment"),
}


def config_spec(name):
    rule, family, hessian = name.split("-")
    return dict(rule=rule, hessian=hessian, **FAMILY_SPECS[family])


FIG1 = [f"{r}-dlr10-{h}" for r in ("bong", "bog", "blr", "bbb")
        for h in ("lin_hess", "lin_ef", "mc_ef")]
FIG2 = [f"bong-{f}-{h}" for f in ("diag", "diag_mom", "dlr1")
        for h in ("lin_hess", "lin_ef", "mc_ef")]
HEADLINE = [
    "bong-dlr10-lin_hess", "bong-dlr10-lin_ef", "bong-dlr10-mc_ef",  # linearisation; EF
    "bog-dlr10-lin_hess", "bog-dlr10-lin_ef",  # NGD helps
    "blr-dlr10-lin_ef", "bbb-dlr10-lin_ef",  # implicit regularisation; BBB
    "bong-diag-lin_hess", "bong-diag_mom-lin_hess", "bong-dlr1-lin_hess",  # families
]
GROUPS = {"headline": HEADLINE, "fig1": FIG1, "fig2": FIG2, "all": FIG1 + FIG2}

PRIOR_GRID = (0.003, 0.01, 0.03, 0.1)
PRIOR_GRID_MC = (0.0001, 0.0003, 0.001, 0.003, 0.01)
PRIOR_GRID_SELF = (0.003, 0.01, 0.03, 0.1, 0.3, 1.0)  # --tune self: each config on its own
LR_GRID = {"bog": (0.001, 0.01, 0.1), "blr": (0.1, 0.5), "bbb": (0.001, 0.01, 0.1)}


# -------------------------------------------------------------------- data
def load(data_dir):
    path = check_data(data_dir / "mnist" / "mnist.npz", "MNIST")
    d = np.load(path)

    def flat(x):
        return (x.reshape(x.shape[0], -1) / 255.0).astype(np.float32)

    return flat(d["x_train"]), d["y_train"].astype(np.int64), flat(d["x_test"]), d[
        "y_test"
    ].astype(np.int64)


# -------------------------------------------------------------- estimators
def make_estimator(name, prior_var, lr, args, seed):
    return BongClassifier(
        model=(cnn_init, cnn_apply),
        prior_variance=prior_var,
        learning_rate=lr,
        n_iter=args.n_iter,
        mc_samples=args.mc_samples,
        on_error="skip",
        random_state=seed,
        **config_spec(name),
    )


def plugin_scores(est, X, y):
    est.set_params(predictive="plugin")
    logp = est.predict_log_proba(X)
    return float(-np.mean(logp[np.arange(len(y)), y])), float(np.mean(logp.argmax(1) != y))


@partial(jax.jit, static_argnames=("family", "n_samples"))
def _linmc_block(family, state, x, y, key, n_samples):
    """Per image: log p(y) of the mixture Lin-MC and of the authors' logit-averaged Lin-MC,
    their argmax predictions, tr(J Σ Jᵀ) / C and, for dlr, tr(J Υ⁻¹ Jᵀ) / C (the diagonal
    term alone: the logit variance the rank-R directions leave)."""
    config = engine.Config(MODEL, "categorical", family)
    f, jac = output_jacobians(config, state.mean, x)  # (b, C), (b, C, P)
    cov = FAMILIES[family].output_cov(state, jac)  # J Σ Jᵀ, (b, C, C)
    vals, vecs = jnp.linalg.eigh(0.5 * (cov + jnp.swapaxes(cov, 1, 2)))
    root = vecs * jnp.sqrt(jnp.clip(vals, 0.0))[:, None, :]
    eps = jax.random.normal(key, (n_samples,) + f.shape, f.dtype)
    logits = f[None] + jnp.einsum("bcd,sbd->sbc", root, eps)
    logp = jax.nn.log_softmax(logits, axis=-1)
    mix = jax.nn.logsumexp(logp, axis=0) - jnp.log(float(n_samples))  # (b, C)
    # the BONG authors' evaluation averages the S linearised logits, then takes the softmax
    # (bong/experiments/mnist_clf.py); E[f_s] = f(x, μ), so it tends to the plugin as S grows
    avg = jax.nn.log_softmax(jnp.mean(logits, axis=0), axis=-1)
    n_out = f.shape[-1]
    var = jnp.trace(cov, axis1=1, axis2=2) / n_out
    if family == "dlr":
        var_diag = jnp.einsum("ncp,p,ncp->n", jac, 1.0 / state.prec_diag, jac) / n_out
    else:
        var_diag = var

    def pick(lp):
        return jnp.take_along_axis(lp, y[:, None], axis=1)[:, 0]

    return pick(mix), jnp.argmax(mix, axis=1), pick(avg), jnp.argmax(avg, axis=1), var, var_diag


def linmc_scores(est, X, y, n_samples, seed, block=100):
    """Lin-MC scores, sampled in output space (see module docstring): NLPD and
    misclassification of the mixture and of the logit-averaged predictive, and the mean
    logit variance (total, and the diagonal term's)."""
    cls = engine.DLRState if est.family == "dlr" else engine.MeanCov
    state = cls(*(jnp.asarray(a) for a in est.posterior_))
    key = jax.random.PRNGKey(seed)
    parts = []
    for start in range(0, len(y), block):
        xb, yb = X[start : start + block], y[start : start + block]
        n = len(yb)
        if n < block:  # pad to one compiled shape
            xb = np.concatenate([xb, np.zeros((block - n, xb.shape[1]), xb.dtype)])
            yb = np.concatenate([yb, np.zeros(block - n, yb.dtype)])
        out = _linmc_block(est.family, state, xb, yb, jax.random.fold_in(key, start),
                           n_samples)
        parts.append([np.asarray(a)[:n] for a in out])
    lp, pred, lp_avg, pred_avg, var, var_diag = (np.concatenate(a) for a in zip(*parts))
    return {"nlpd_linmc": float(-np.mean(lp)), "err_linmc": float(np.mean(pred != y)),
            "nlpd_linmc_logit": float(-np.mean(lp_avg)),
            "err_linmc_logit": float(np.mean(pred_avg != y)),
            "logit_var": float(np.mean(var)), "logit_var_diag": float(np.mean(var_diag))}


def stream(est, X, y, eval_at=(), evaluate=None, budget_s=None):
    """partial_fit one row at a time; returns (times, evals, stopped_at)."""
    times, evals = [], {}
    for t in range(len(y)):
        t0 = time.perf_counter()
        est.partial_fit(X[t : t + 1], y[t : t + 1], classes=np.arange(10))
        times.append(time.perf_counter() - t0)
        if evaluate is not None and t + 1 in eval_at:
            evals[t + 1] = evaluate(est, sum(times))
        if budget_s is not None and sum(times) > budget_s:
            return times, evals, t + 1
    return times, evals, len(y)


def tune(name, X, y, X_val, y_val, args, log):
    """(σ₀², α) by the validation plugin NLPD after a short stream.

    σ₀² is chosen per family with ``bong-<family>-lin_ef`` over PRIOR_GRID, except for
    MC-EF, whose samples are drawn from the prior and so need their own σ₀²:
    ``bong-<family>-mc_ef`` over PRIOR_GRID_MC. α is chosen per rule and family with
    ``<rule>-<family>-lin_ef`` over LR_GRID[rule] at that σ₀² (half the images for the
    ten-times costlier BLR / BBB).

    ``--tune self`` instead chooses σ₀² for each (BONG) configuration with that
    configuration itself, over PRIOR_GRID_SELF (up to 1); ``--tune self-linmc`` likewise,
    scored by the validation Lin-MC (mixture) NLPD instead of the plugin one.
    """
    rule, family, hessian = name.split("-")

    by_linmc = args.tune == "self-linmc"

    def search(proxy, grid, steps):
        key = f"{proxy}|{steps}|" + ",".join(f"{a:g}:{b:g}" for a, b in grid)
        key += "|linmc" if by_linmc else ""
        if key not in log:
            scores = {}
            for prior_var, lr in grid:
                est = make_estimator(proxy, prior_var, lr, args, seed=0)
                stream(est, X[:steps], y[:steps])
                if by_linmc:
                    nll = linmc_scores(est, X_val, y_val, args.linmc_samples, 0)["nlpd_linmc"]
                else:
                    nll, _ = plugin_scores(est, X_val, y_val)
                scores[(prior_var, lr)] = nll if np.isfinite(nll) else np.inf
                print(f"     tune {proxy} ({steps} images): σ0²={prior_var:g} α={lr:g} → "
                      f"val NLPD {nll:.4f}", flush=True)
            best = min(scores, key=scores.get)
            log[key] = {"proxy": proxy, "prior_variance": best[0], "learning_rate": best[1],
                        "scores": {f"{a:g},{b:g}": v for (a, b), v in scores.items()}}
        return log[key]

    if args.tune in ("self", "self-linmc"):
        if rule != "bong":
            raise SystemExit(f"--tune self tunes σ0² only (BONG configs), not {name}")
        return {**search(name, [(v, 1.0) for v in PRIOR_GRID_SELF], args.tune_steps),
                "learning_rate": 1.0}
    if hessian == "mc_ef":
        prior = search(f"bong-{family}-mc_ef", [(v, 1.0) for v in PRIOR_GRID_MC],
                       args.tune_steps)
    else:
        prior = search(f"bong-{family}-lin_ef", [(v, 1.0) for v in PRIOR_GRID],
                       args.tune_steps)
    if rule == "bong":
        return {**prior, "learning_rate": 1.0}
    steps = args.tune_steps if rule == "bog" else max(args.tune_steps // 2, 1)
    return search(f"{rule}-{family}-lin_ef",
                  [(prior["prior_variance"], lr) for lr in LR_GRID[rule]], steps)


def costly(name, args):
    """MC-EF and the iterated rules run on a shorter stream (``--n-train-costly``)."""
    rule, _, hessian = name.split("-")
    return hessian == "mc_ef" or rule in ("blr", "bbb")


# ---------------------------------------------------------------------- main
def main():
    p = parser(__doc__.splitlines()[0], seeds=1)
    p.add_argument("--configs", nargs="+", default=["headline"],
                   help="names rule-family-hessian, or groups: " + ", ".join(GROUPS))
    p.add_argument("--n-train", type=int, default=2000)
    p.add_argument("--n-train-costly", type=int, default=2000,
                   help="stream length for MC-EF and BLR/BBB runs (they cost 10-100× more)")
    p.add_argument("--eval-at", type=int, nargs="+", default=[250, 500, 1000, 2000])
    p.add_argument("--n-test", type=int, default=10000, help="test images for plugin scores")
    p.add_argument("--n-test-linmc", type=int, default=1000, help="test images for Lin-MC")
    p.add_argument("--linmc-samples", type=int, default=100)
    p.add_argument("--mc-samples", type=int, default=100, help="M of MC-EF (paper: 100)")
    p.add_argument("--n-iter", type=int, default=10, help="I of BLR/BBB")
    p.add_argument("--tune-steps", type=int, default=250)
    p.add_argument("--tune", choices=("proxy", "self", "self-linmc"), default="proxy",
                   help="proxy: σ0² by a LIN-EF (or MC-EF) proxy per family over "
                   f"{PRIOR_GRID}; self: σ0² by each BONG config itself over "
                   f"{PRIOR_GRID_SELF}, scored by the plugin NLPD; self-linmc: the same, "
                   "scored by the Lin-MC NLPD")
    p.add_argument("--prior-variance", type=float, default=None,
                   help="skip tuning and use this σ0² (and --learning-rate) for every run")
    p.add_argument("--learning-rate", type=float, default=None)
    p.add_argument("--budget-per-run", type=float, default=None,
                   help="stop a run's stream after this many seconds of updates")
    p.add_argument("--resume", action="store_true", help="skip runs already in the JSON")
    p.add_argument("--first-seed", type=int, default=0,
                   help="run seeds first-seed .. seeds-1 (split a long run across processes)")
    p.add_argument("--timing", type=int, default=0, metavar="STEPS",
                   help="only time STEPS one-row updates of each config, round-robin in one "
                   "process (so that every config sees the same machine load); writes "
                   "mnist_cnn_timing.json")
    p.add_argument("--replot", action="store_true",
                   help="only print the tables (and draw --figure) from the JSON (--out)")
    p.add_argument("--merge", nargs="+", type=Path, default=None, metavar="JSON",
                   help="only merge the runs of these JSON files (parallel processes' --out) "
                   "into --out by (config, seed), then print the tables as --replot does")
    args = p.parse_args()
    if args.replot or args.merge:
        path = Path(args.out) if args.out else PAPER_RESULTS / "mnist_cnn.json"
        if args.merge:
            runs = merge_runs(path, args.merge)["runs"]
        else:
            runs = json.loads(path.read_text())["runs"]
        eval_at = sorted({int(t) for r in runs for t in r["evals"]})
        report(runs, eval_at)
        if args.figure:
            figure(runs, eval_at, args.figure)
        return
    if args.quick:
        args.n_train, args.eval_at, args.n_test, args.n_test_linmc = 64, [32, 64], 500, 100
        args.n_train_costly = 32
        args.tune_steps, args.mc_samples, args.n_iter, args.linmc_samples = 16, 4, 2, 20
    names = []
    for c in args.configs:
        for n in GROUPS.get(c, [c]):
            config_spec(n)  # validates the name
            if n not in names:
                names.append(n)
    eval_at = sorted(t for t in args.eval_at if t <= args.n_train)
    if args.timing:
        return timing(names, args)
    settings = header(
        "MNIST CNN (P = 57,722), one pass, BONG family (paper Figs. 1–3, 5–6)",
        {
            "configs": names,
            "seeds": args.seeds,
            "n_train (streamed once, batch 1)": args.n_train,
            "n_train for MC-EF and BLR/BBB": args.n_train_costly,
            "eval at T": eval_at,
            "plugin test images": args.n_test,
            "Lin-MC test images / samples": (args.n_test_linmc, args.linmc_samples),
            "MC-EF samples M": args.mc_samples,
            "BLR/BBB inner steps I": args.n_iter,
            "tuning": "fixed" if args.prior_variance else
            f"σ0² by each config itself over {PRIOR_GRID_SELF}, {args.tune_steps} images, "
            f"scored by the validation {'Lin-MC' if args.tune == 'self-linmc' else 'plugin'} "
            "NLPD" if args.tune != "proxy" else
            f"grid σ0² {PRIOR_GRID} (bong, LIN-EF proxy; MC-EF: {PRIOR_GRID_MC} with "
            f"bong MC-EF), α {LR_GRID} (LIN-EF proxies), {args.tune_steps} images (half "
            "for BLR/BBB α)",
            "dtype": "float32",
        },
    )
    out = Path(args.out) if args.out else PAPER_RESULTS / "mnist_cnn.json"
    record = json.loads(out.read_text()) if args.resume and out.exists() else {}
    runs = record.get("runs", [])
    tuning = {}
    for k, v in record.get("tuning", {}).items():
        if k.count("|") == 1:  # written before the grid was part of the key
            grid = ",".join(g.replace(",", ":") for g in v["scores"])
            k = f"{k}|{grid}"
        tuning[k] = v
    done = {(r["config"], r["seed"]) for r in runs}

    Xtr, ytr, Xte, yte = load(args.data_dir)
    Xte, yte = Xte[: args.n_test], yte[: args.n_test]
    X_val, y_val = Xtr[50000:51000], ytr[50000:51000]
    for seed in range(args.first_seed, args.seeds):
        order = np.random.default_rng(seed).permutation(args.n_train)
        X, y = Xtr[: args.n_train][order], ytr[: args.n_train][order]
        for name in names:
            if (name, seed) in done:
                continue
            if args.prior_variance is not None:
                hp = {"prior_variance": args.prior_variance,
                      "learning_rate": args.learning_rate or 0.1, "proxy": "fixed"}
            else:
                hp = tune(name, X, y, X_val, y_val, args, log=tuning)
            print(f"\n== {name}, seed {seed}: σ0²={hp['prior_variance']:g}, "
                  f"α={hp['learning_rate']:g}", flush=True)
            est = make_estimator(name, hp["prior_variance"], hp["learning_rate"], args, seed)

            def evaluate(est, update_s, seed=seed):
                t0 = time.perf_counter()
                nll, err = plugin_scores(est, Xte, yte)
                lin = linmc_scores(est, Xte[: args.n_test_linmc], yte[: args.n_test_linmc],
                                   args.linmc_samples, seed)
                res = {"nlpd_plugin": nll, "err_plugin": err, **lin,
                       "eval_seconds": time.perf_counter() - t0}
                print(f"   T={est.n_observations_:5d}  plugin NLPD {nll:.4f} err {err:.4f}  "
                      f"linmc NLPD {lin['nlpd_linmc']:.4f} err {lin['err_linmc']:.4f}  "
                      f"logit-avg NLPD {lin['nlpd_linmc_logit']:.4f}  logit var "
                      f"{lin['logit_var']:.3g} (diag term {lin['logit_var_diag']:.3g})  "
                      f"(updates so far {update_s:.0f} s, scoring {time.perf_counter() - t0:.0f} s)",
                      flush=True)
                return res

            t_start = time.perf_counter()
            n = args.n_train_costly if costly(name, args) else args.n_train
            times, evals, stopped = stream(est, X[:n], y[:n], eval_at, evaluate,
                                           args.budget_per_run)
            wall_s = time.perf_counter() - t_start
            here = machine()  # after the wall time, as before
            run = {
                "config": name,
                "seed": seed,
                **hp,
                "mc_samples": args.mc_samples,
                "n_iter": args.n_iter,
                "n_steps": stopped,
                "first_call_s": times[0],
                "update_s": float(np.sum(times[1:])),
                "median_step_s": float(np.median(times[1:])) if len(times) > 1 else None,
                "skipped": int(est.n_skipped_),
                "wall_s": wall_s,
                "revision": here["skbong_revision"],
                "cpu": here["cpu"],
                "load_average": list(here["load_average"]),
                "evals": {str(k): v for k, v in evals.items()},
            }
            runs.append(run)
            print(f"   {stopped} steps; first call {times[0]:.1f} s; updates "
                  f"{run['update_s']:.1f} s ({1000 * (run['median_step_s'] or 0):.0f} ms median "
                  f"per step); skipped {run['skipped']}", flush=True)
            save(out, runs, tuning, settings, record.get("superseded_runs", []))
    report(runs, eval_at)
    save(out, runs, tuning, settings, record.get("superseded_runs", []))
    if args.figure:
        figure(runs, eval_at, args.figure)


def timing(names, args, rounds=3):
    """Median wall time of a one-row ``partial_fit`` per config, measured round-robin."""
    settings = header(
        "MNIST CNN: time per one-row update, all configs interleaved",
        {"configs": names, "steps per round": args.timing, "rounds": rounds,
         "MC-EF samples M": args.mc_samples, "BLR/BBB inner steps I": args.n_iter,
         "σ0², α": "0.01, 0.01 (timing only)"},
    )
    Xtr, ytr, _, _ = load(args.data_dir)
    ests, first, times = {}, {}, {n: [] for n in names}
    for name in names:
        ests[name] = make_estimator(name, 0.01, 0.01, args, seed=0)
        t0 = time.perf_counter()
        ests[name].partial_fit(Xtr[:1], ytr[:1], classes=np.arange(10))
        first[name] = time.perf_counter() - t0
        print(f"   {name}: first call (compile + 1 step) {first[name]:.1f} s", flush=True)
    for r in range(rounds):
        for name in names:
            rows = slice(1 + r * args.timing, 1 + (r + 1) * args.timing)
            t, _, _ = stream(ests[name], Xtr[rows], ytr[rows])
            times[name].extend(t)
        print(f"   round {r + 1}/{rounds} done", flush=True)
    rows = []
    base = np.median(times["bong-dlr10-lin_hess"]) if "bong-dlr10-lin_hess" in times else None
    for name in names:
        med = float(np.median(times[name]))
        rows.append({"config": name, "ms/step (median)": f"{1000 * med:.1f}",
                     "IQR ms": f"{1000 * np.percentile(times[name], 25):.0f}–"
                               f"{1000 * np.percentile(times[name], 75):.0f}",
                     "× bong-dlr10-lin_hess": f"{med / base:.2f}" if base else "-",
                     "first call s": f"{first[name]:.1f}"})
    print(f"\n--- one-row partial_fit, {rounds} × {args.timing} steps per config")
    table(rows, ["config", "ms/step (median)", "IQR ms", "× bong-dlr10-lin_hess",
                 "first call s"])
    payload = {"ms_per_step": {n: [1000 * t for t in times[n]] for n in names},
               "first_call_s": first}
    out = args.out or PAPER_RESULTS / "mnist_cnn_timing.json"
    write_json(payload, out.name, out, settings)


def save(out, runs, tuning, settings, superseded=()):
    """Write the runs so far (after every run: a long job keeps what it finished)."""
    write_json({"tuning": tuning, "runs": runs, "superseded_runs": list(superseded)},
               out.name, out, settings)


def report(runs, eval_at):
    names = list(dict.fromkeys(r["config"] for r in runs))
    for metric, label in (("nlpd_plugin", "plugin NLPD"), ("nlpd_linmc", "Lin-MC NLPD"),
                          ("nlpd_linmc_logit", "logit-averaged Lin-MC NLPD (authors' code)"),
                          ("err_plugin", "plugin misclassification"),
                          ("err_linmc", "Lin-MC misclassification"),
                          ("logit_var", "mean logit variance tr(J Σ Jᵀ)/C"),
                          ("logit_var_diag", "its diagonal term tr(J Υ⁻¹ Jᵀ)/C (dlr)")):
        if not any(metric in e for r in runs for e in r["evals"].values()):
            continue  # runs recorded before the metric existed
        print(f"\n--- test {label} at T (mean ± s.e. over seeds)")
        rows = []
        for name in names:
            rs = [r for r in runs if r["config"] == name]
            # the seeds whose runs carry this metric (some were recorded before it existed)
            have = [r for r in rs if any(metric in e for e in r["evals"].values())]
            row = {"config": name, "seeds": str(len(have))}
            for t in eval_at:
                vals = [r["evals"][str(t)][metric] for r in rs
                        if metric in r["evals"].get(str(t), {})]
                row[f"T={t}"] = pm(vals, 4) if vals else "-"
            rows.append(row)
        table(rows, ["config", "seeds", *[f"T={t}" for t in eval_at]])
    print("\n--- runtime of the updates (s; first call incl. compile separate)")
    rows = []
    for name in names:
        rs = [r for r in runs if r["config"] == name]
        rows.append({
            "config": name,
            "steps": str(rs[0]["n_steps"]),
            "updates s": pm([r["update_s"] for r in rs], 1),
            "ms/step (median)": pm([1000 * r["median_step_s"] for r in rs], 1),
            "first call s": pm([r["first_call_s"] for r in rs], 1),
            "σ0²": f"{rs[0]['prior_variance']:g}",
            "α": f"{rs[0]['learning_rate']:g}",
            "skipped": str(sum(r["skipped"] for r in rs)),
        })
    table(rows, ["config", "steps", "updates s", "ms/step (median)", "first call s", "σ0²",
                 "α", "skipped"])


def figure(runs, eval_at, path):
    """Two rows as the paper's Figs. 1 and 2: the four rules with DLR-10, and BONG with the
    four families; columns: plugin NLPD, Lin-MC NLPD, plugin misclassification, time per
    update (from ``mnist_cnn_timing.json`` when it exists: all configs timed together)."""
    plt = pyplot()
    names = list(dict.fromkeys(r["config"] for r in runs))
    groups = [("rules, DLR-10 (paper Fig. 1)", [n for n in names if "-dlr10-" in n], 0),
              ("BONG, families (paper Fig. 2)", [n for n in names if n.startswith("bong-")], 1)]
    style = {"lin_hess": "-", "lin_ef": "--", "mc_ef": ":"}
    fig, axes = plt.subplots(2, 4, figsize=(18, 8.5))
    timing_path = PAPER_RESULTS / "mnist_cnn_timing.json"
    timing = (json.loads(timing_path.read_text())["ms_per_step"] if timing_path.exists()
              else {n: [1000 * r["median_step_s"] for r in runs if r["config"] == n]
                    for n in names})
    for row, (title, members, which) in enumerate(groups):
        keys = sorted({n.split("-")[which] for n in members})
        colors = {k: f"C{i}" for i, k in enumerate(keys)}
        for col, (metric, label) in enumerate((("nlpd_plugin", "plugin NLPD"),
                                               ("nlpd_linmc", "Lin-MC NLPD"),
                                               ("err_plugin", "plugin misclassification"))):
            ax = axes[row, col]
            for name in members:
                rs = [r for r in runs if r["config"] == name]
                ts = [t for t in eval_at if all(str(t) in r["evals"] for r in rs)]
                stats = [mean_se([r["evals"][str(t)][metric] for r in rs]) for t in ts]
                ax.errorbar(ts, [s[0] for s in stats],
                            yerr=[s[1] if np.isfinite(s[1]) else 0 for s in stats],
                            marker="o", ms=3, capsize=2, label=f"{name} ({len(rs)} seed"
                            + ("s)" if len(rs) > 1 else ")"),
                            color=colors[name.split("-")[which]],
                            ls=style[name.split("-")[2]])
            ax.set_xscale("log")
            ax.minorticks_off()
            ax.set_xticks(eval_at, [str(t) for t in eval_at])
            ax.set_xlabel("T (training images seen)")
            ax.set_title(f"{title}: {label}", fontsize=9)
            if col == 0:
                ax.legend(fontsize=6)
        ax = axes[row, 3]
        ms = [np.median(timing[n]) if n in timing else np.nan for n in members]
        ax.barh(range(len(members)), ms, color=[colors[n.split("-")[which]] for n in members])
        ax.set_yticks(range(len(members)), members, fontsize=7)
        ax.set_xscale("log")
        ax.set_xlabel("ms per one-row update (median)")
        ax.set_title("time per update (all configs timed together)" if timing_path.exists()
                     else "time per update (as run)", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
