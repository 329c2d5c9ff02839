"""Which posterior predictive should BongClassifier use by default? Held-out scores.

For each classification data set, a seeded stratified 70/30 split (features
standardised by a scaler fitted on the training part), one pass of ``BongClassifier``
at its default settings (``rule="bong"``, ``hessian="lin_hess"``, ``rank=10``,
``prior_variance=1``, float32) over the shuffled training rows, then on the test rows,
for each ``predictive`` in ("plugin", "linmc", "mc") and also ``linmc`` with S = 1000
samples instead of the default 100: log-loss (nats, from ``predict_log_proba``, no
clipping), accuracy, and the expected calibration error (15 equal-width bins of the
top-class confidence). Families ``dlr`` (the default), ``diag`` and ``full`` (where the
parameter count P <= ``--max-full-params``). A ``LogisticRegression`` (default C = 1)
row per data set for reference. Mean ± sd over ``--seeds`` seeds (split, training order
and ``random_state``).

The second part tests the claim that the dlr posterior is "too wide outside its rank-R
directions". On the same streams it compares the dlr and full beliefs (their dense
covariances Σ, read from the fitted ``_state``), and both against a batch Laplace
reference (MAP of the same model and prior N(0, σ₀² I), Σ = H⁻¹ at the MAP):

* marginal variances ``posterior_var_``: quantiles of dlr / full;
* logit variances diag(J Σ Jᵀ) on the test points (the linearised output variance;
  exact for these linear models): quantiles of dlr / full and full / Laplace;
* the mean variance uᵀ Σ u over unit directions u inside span(W), the dlr's rank-R
  directions, and in its orthogonal complement, dlr / full;
* a swap test: the linearised predictive's held-out log-loss (numpy Monte Carlo with
  S = 2000 common samples, so MC noise is negligible) with the dlr mean and the dlr,
  full or Laplace covariance, and the same for the full mean, which separates the effect
  of the covariance from that of the mean.

The third part fits the same splits with networks, ``hidden_layer_sizes`` (32,) and
(64, 64), ``dlr`` and the other defaults, and compares ``plugin`` with ``linmc`` in
held-out log-loss and ECE: the evidence for the classifier's ``predictive="auto"``
(``linmc`` for the linear model, ``plugin`` for networks).

Usage: ``python benchmarks/bench_predictive.py [--quick] [--seeds 3] [--data-dir DIR]
[--out FILE [--append]]``; ``SKBONG_SRC=DIR`` imports skbong from another checkout (as
in benchmarks/_common.py). Data sets from ``--data-dir`` (LIBSVM australian and
breast-cancer, MNIST) are skipped with a note when absent. About 10 minutes on 2 cores.
"""

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

import jax
import numpy as np
import scipy.optimize
from scipy.special import log_expit, log_softmax, logsumexp
from sklearn.datasets import (
    load_breast_cancer,
    load_digits,
    load_iris,
    load_wine,
    make_classification,
)
from sklearn.decomposition import PCA
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, os.environ.get("SKBONG_SRC", str(REPO)))

import skbong  # noqa: E402
from skbong import BongClassifier  # noqa: E402
from skbong.metrics import expected_calibration_error  # noqa: E402

DEFAULT_DATA = (REPO / ".." / "shared" / "data").resolve()
PREDICTIVES = (("plugin", "plugin", 100), ("linmc", "linmc", 100), ("mc", "mc", 100),
               ("linmc S=1000", "linmc", 1000))
FAMILIES = ("dlr", "diag", "full")
N_BINS = 15
SWAP_SAMPLES = 2000


class Tee:
    """Print and keep every line, to write the whole output to ``--out`` at the end."""

    def __init__(self):
        self.lines = []

    def __call__(self, text=""):
        print(text, flush=True)
        self.lines.append(str(text))


# ------------------------------------------------------------------- metrics
def log_loss(logp, y):
    """Mean negative log probability of the true class (nats)."""
    return float(-np.mean(logp[np.arange(len(y)), y]))


def timed(fn, *args):
    t0 = time.perf_counter()
    fn(*args)
    return time.perf_counter() - t0


def scores(logp, y):
    proba = np.exp(logp - logsumexp(logp, axis=1, keepdims=True))
    return {"ll": log_loss(logp, y), "acc": float(np.mean(proba.argmax(1) == y)),
            "ece": expected_calibration_error(y, proba, n_bins=15)}


# ------------------------------------------------------------------- data sets
def sklearn_sets():
    sets = {}
    for name, load in (("iris", load_iris), ("wine", load_wine),
                       ("breast_cancer", load_breast_cancer), ("digits", load_digits)):
        X, y = load(return_X_y=True)
        sets[name] = dict(X=X, y=y)
    X, y = make_classification(n_samples=3000, n_features=20, n_informative=8, n_redundant=4,
                               flip_y=0.03, random_state=0)
    sets["synth2 (3000x20)"] = dict(X=X, y=y)
    X, y = make_classification(n_samples=3000, n_features=20, n_informative=10, n_redundant=4,
                               n_classes=5, n_clusters_per_class=2, flip_y=0.03,
                               random_state=1)
    sets["synth5 (3000x20)"] = dict(X=X, y=y)
    return sets


def data_dir_sets(data_dir, mnist_rows, mnist_pca, note):
    sets = {}
    for name in ("australian_scale", "breast-cancer_scale"):
        path = data_dir / "libsvm" / name / f"{name}.npz"
        if not path.exists():
            note(f"   (skipped {name}: {path} not found)")
            continue
        with np.load(path) as f:
            sets[name] = dict(X=f["X"].astype(np.float64), y=f["y01"].astype(int))
    path = data_dir / "mnist" / "mnist.npz"
    if not path.exists():
        note(f"   (skipped MNIST: {path} not found)")
    else:
        with np.load(path) as f:
            X = f["x_train"].reshape(-1, 784).astype(np.float64) / 255.0
            y = f["y_train"].astype(int)
        sets[f"mnist-pca{mnist_pca} ({mnist_rows} rows)"] = dict(
            X=X, y=y, subset=mnist_rows, pca=mnist_pca)
    return sets


def split(spec, seed):
    """Seeded stratified 70/30 split, optional PCA, standardised on the training part."""
    X, y = spec["X"], spec["y"]
    if spec.get("subset"):
        keep, _ = train_test_split(np.arange(len(y)), train_size=spec["subset"], stratify=y,
                                   random_state=seed)
        X, y = X[keep], y[keep]
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, stratify=y, random_state=seed)
    if spec.get("pca"):
        pca = PCA(spec["pca"], random_state=seed).fit(Xtr)
        Xtr, Xte = pca.transform(Xtr), pca.transform(Xte)
    scaler = StandardScaler().fit(Xtr)
    Xtr, Xte = scaler.transform(Xtr), scaler.transform(Xte)
    order = np.random.default_rng(seed).permutation(len(ytr))
    classes = np.unique(ytr)  # labels as 0..K-1, the column order of predict_log_proba
    return Xtr[order], np.searchsorted(classes, ytr)[order], Xte, np.searchsorted(classes, yte)


def n_params(d, k):
    return (d + 1) * (1 if k == 2 else k)


# ------------------------------------------------------ dense beliefs (numpy)
def dense_cov(est):
    """The fitted belief's covariance Σ as a dense float64 (P, P) array.

    Reads the private ``_state``: ``(mean, cov)`` for full, ``(mean, variances)`` for
    diag, ``(mean, Υ, W)`` with precision Υ + W Wᵀ for dlr (as benchmarks/paper does).
    """
    state = [np.asarray(a, np.float64) for a in est.posterior_]
    if est.family == "dlr":
        return np.linalg.inv(np.diag(state[1]) + state[2] @ state[2].T)
    return np.diag(state[1]) if state[1].ndim == 1 else state[1]


def augment(X):
    return np.hstack([X, np.ones((len(X), 1))])


def logit_moments(mean, cov, X, n_out):
    """Logit means (n, C) and covariances J Σ Jᵀ (n, C, C) of the linear model.

    The flat parameter layout is the weights (d, C) row-major, then the C intercepts,
    i.e. Θ = mean.reshape(d + 1, C) with logits [x, 1] Θ.
    """
    Xa = augment(X)
    d1 = Xa.shape[1]
    cov4 = cov.reshape(d1, n_out, d1, n_out)
    half = np.einsum("nj,jckd->nckd", Xa, cov4, optimize=True)
    return Xa @ mean.reshape(d1, n_out), np.einsum("nckd,nk->ncd", half, Xa, optimize=True)


def class_logp(f):
    """Log class probabilities from logits (..., C); one logit is the Bernoulli case."""
    if f.shape[-1] == 1:
        return np.concatenate([log_expit(-f), log_expit(f)], axis=-1)
    return log_softmax(f, axis=-1)


def linearised_log_loss(f_mean, f_cov, y, z):
    """Held-out log-loss of the linearised predictive N(f_mean, f_cov) by Monte Carlo with
    the standard normal draws ``z`` (S, C) shared by all rows; probabilities averaged."""
    if f_cov is None:
        return log_loss(class_logp(f_mean), y)
    vals, vecs = np.linalg.eigh(f_cov)
    root = vecs * np.sqrt(np.clip(vals, 0.0, None))[:, None, :]  # (n, C, C), root rootᵀ = cov
    total = 0.0
    for start in range(0, len(y), 256):
        sl = slice(start, start + 256)
        f = f_mean[sl, None, :] + np.einsum("sc,ndc->nsd", z, root[sl])
        logp = logsumexp(class_logp(f), axis=1) - np.log(len(z))
        total += logp[np.arange(len(logp)), y[sl]].sum()
    return float(-total / len(y))


def prior_variances(est):
    """The estimator's prior variance of every parameter, (P,): the model's own scaling of
    ``prior_variance`` where it has one (e.g. a wider intercept prior), else σ₀² for all.
    The linear model's prior mean is zero."""
    own = getattr(est, "_prior_variances", None)
    if own is None:  # an skbong (SKBONG_SRC) from before per-parameter prior variances
        return np.full(est.n_params_, float(est.prior_variance))
    return np.asarray(own(est._fitted_config), np.float64)


def laplace(X, y, n_out, prior_var):
    """Batch Laplace reference: MAP of the linear model under the prior N(0, diag(σ₀²))
    (``prior_var`` holds one variance per parameter) and the covariance H⁻¹ there."""
    Xa = augment(X)
    n, d1 = Xa.shape
    Y = y[:, None].astype(float) if n_out == 1 else np.eye(n_out)[y]

    def objective(theta):
        f = Xa @ theta.reshape(d1, n_out)
        logp = class_logp(f)
        nll = -np.sum(logp[np.arange(n), y])
        p = np.exp(logp[:, 1:] if n_out == 1 else logp)  # d nll / d f = p − Y
        grad = (Xa.T @ (p - Y)).ravel() + theta / prior_var
        return nll + 0.5 * np.sum(theta**2 / prior_var), grad

    res = scipy.optimize.minimize(objective, np.zeros(d1 * n_out), jac=True, method="L-BFGS-B",
                                  options={"maxiter": 20000, "gtol": 1e-9, "ftol": 1e-15})
    theta = res.x
    f = Xa @ theta.reshape(d1, n_out)
    if n_out == 1:
        lam = np.exp(log_expit(f[:, 0]) + log_expit(-f[:, 0]))
        hess = (Xa * lam[:, None]).T @ Xa
    else:
        p = np.exp(log_softmax(f, axis=1))
        hess = np.zeros((d1, n_out, d1, n_out))
        for c in range(n_out):
            hess[:, c, :, c] = (Xa * p[:, c : c + 1]).T @ Xa
        a = (Xa[:, :, None] * p[:, None, :]).reshape(n, -1)
        hess = hess.reshape(d1 * n_out, -1) - a.T @ a
    hess += np.diag(1.0 / prior_var)
    return theta, np.linalg.inv(hess)


def span_variances(cov, w):
    """Mean of uᵀ Σ u over an orthonormal basis of span(W) and of its complement."""
    u, s, _ = np.linalg.svd(w, full_matrices=False)
    q = u[:, s > s.max() * 1e-8] if s.max() > 0 else u[:, :0]
    inside = np.trace(q.T @ cov @ q)
    r, p = q.shape[1], cov.shape[0]
    return inside / max(r, 1), (np.trace(cov) - inside) / (p - r)


def variance_diagnostics(fits, Xtr, ytr, Xte, yte, n_out, rng):
    """Compare the dlr and full beliefs of one stream with each other and with Laplace."""
    dlr, full = fits["dlr"], fits["full"]
    prior_var = prior_variances(dlr)
    cov = {"dlr": dense_cov(dlr), "full": dense_cov(full)}
    mean = {k: np.asarray(fits[k].posterior_mean_, np.float64) for k in ("dlr", "full")}
    for k in cov:  # the dense Σ must reproduce the estimator's own marginal variances
        assert np.allclose(np.diag(cov[k]), fits[k].posterior_var_, rtol=2e-2, atol=1e-6), k
    mean["laplace"], cov["laplace"] = laplace(Xtr, ytr, n_out, prior_var)
    moments = {(m, c): logit_moments(mean[m], cov[c], Xte, n_out)
               for m in mean for c in cov}
    # layout check: the numpy plugin equals the estimator's plugin predictive
    dlr.set_params(predictive="plugin")
    plug = dlr.predict_log_proba(Xte)
    assert np.allclose(plug, class_logp(moments["dlr", "dlr"][0]), atol=5e-3), "layout"
    lv = {c: np.diagonal(moments["full", c][1], axis1=1, axis2=2).ravel() for c in cov}
    mv = {c: np.diag(cov[c]) for c in cov}
    w = np.asarray(dlr.posterior_.prec_lr, np.float64)
    span = {c: span_variances(cov[c], w) for c in cov}
    z = rng.standard_normal((SWAP_SAMPLES, n_out))
    out = {
        "var dlr/full": np.quantile(mv["dlr"] / mv["full"], [0.1, 0.5, 0.9]),
        "var full/lap": np.quantile(mv["full"] / mv["laplace"], [0.1, 0.5, 0.9]),
        "logit var dlr/full": np.quantile(lv["dlr"] / lv["full"], [0.1, 0.5, 0.9]),
        "logit var full/lap": np.quantile(lv["full"] / lv["laplace"], [0.1, 0.5, 0.9]),
        "logit var dlr/lap": np.quantile(lv["dlr"] / lv["laplace"], [0.1, 0.5, 0.9]),
        "span in dlr/full": span["dlr"][0] / span["full"][0],
        "span out dlr/full": span["dlr"][1] / span["full"][1],
        "span out full/lap": span["full"][1] / span["laplace"][1],
        "median var": {c: float(np.median(mv[c])) for c in cov},
    }
    for m in mean:
        out[f"{m} mu plugin"] = linearised_log_loss(moments[m, m][0], None, yte, z)
        for c in cov:
            out[f"{m} mu, {c} cov"] = linearised_log_loss(*moments[m, c], yte, z)
    return out


# ----------------------------------------------------------------- formatting
def pm(values, digits=3):
    v = np.asarray(values, float)
    if v.size == 0:
        return "-"
    sd = f" ± {np.std(v, ddof=1):.{digits}f}" if v.size > 1 else ""
    return f"{np.mean(v):.{digits}f}{sd}"


def table(rows, columns, say):
    cells = [[str(r.get(c, "-")) for c in columns] for r in rows]
    widths = [max([len(c)] + [len(row[i]) for row in cells]) for i, c in enumerate(columns)]
    say("  ".join(c.rjust(w) for c, w in zip(columns, widths)))
    for row in cells:
        say("  ".join(v.rjust(w) for v, w in zip(row, widths)))


def git_revision():
    try:
        rev = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
                             capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "skbong"],
                               capture_output=True, text=True, check=True).stdout.strip()
        return rev + (" (skbong/ has uncommitted changes)" if dirty else "")
    except (OSError, subprocess.CalledProcessError):  # pragma: no cover - not a checkout
        return "unknown"


# ----------------------------------------------------------------------- main
NETWORKS = ((32,), (64, 64))


def networks(sets, seeds, say):
    """The same splits with hidden layers: ``BongClassifier(hidden_layer_sizes=h)`` at
    its other defaults, scored under ``predictive="plugin"`` and ``"linmc"``."""
    say(f"\n--- networks {NETWORKS}, dlr-10 at defaults otherwise: held-out log-loss and "
        "ECE under plugin and linmc, mean ± sd over seeds; Δ = linmc − plugin, paired")
    rows, deltas = [], []
    for name, spec in sets.items():
        for hidden in NETWORKS:
            res = {"plugin": [], "linmc": []}
            for seed in seeds:
                Xtr, ytr, Xte, yte = split(spec, seed)
                est = BongClassifier(hidden_layer_sizes=hidden, random_state=seed)
                est.fit(Xtr, ytr)
                for kind in res:
                    est.set_params(predictive=kind)
                    res[kind].append(scores(est.predict_log_proba(Xte), yte))
            d_ll = [b["ll"] - a["ll"] for a, b in zip(res["plugin"], res["linmc"])]
            d_ece = [b["ece"] - a["ece"] for a, b in zip(res["plugin"], res["linmc"])]
            deltas.append((np.mean(d_ll), np.mean(d_ece)))
            rows.append({"data": name, "hidden": str(hidden),
                         "ll plugin": pm([r["ll"] for r in res["plugin"]]),
                         "ll linmc": pm([r["ll"] for r in res["linmc"]]),
                         "Δll": pm(d_ll),
                         "ECE plugin": pm([r["ece"] for r in res["plugin"]]),
                         "ECE linmc": pm([r["ece"] for r in res["linmc"]]),
                         "acc plugin": pm([r["acc"] for r in res["plugin"]])})
    table(rows, list(rows[0]), say)
    dll, dece = np.array(deltas).T
    say(f"   networks: plugin better in log-loss on {int(np.sum(dll > 0))} of {len(dll)} "
        f"cases (Δll median {np.median(dll):+.3f}, range {dll.min():+.3f}..{dll.max():+.3f}), "
        f"in ECE on {int(np.sum(dece > 0))} of {len(dece)} (ΔECE median {np.median(dece):+.3f})")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data-dir", type=Path, default=DEFAULT_DATA,
                   help="folder holding libsvm/ and mnist/ (default: ../shared/data)")
    p.add_argument("--seeds", type=int, default=3, help="number of seeds (splits)")
    p.add_argument("--mnist-rows", type=int, default=5000,
                   help="MNIST training images used (then split 70/30)")
    p.add_argument("--mnist-pca", type=int, default=50, help="PCA dimensions for MNIST")
    p.add_argument("--max-full-params", type=int, default=700,
                   help="run family='full' only up to this many parameters")
    p.add_argument("--quick", action="store_true", help="one seed, small data sets only")
    p.add_argument("--out", type=Path, default=None, help="also write the output to this file")
    p.add_argument("--append", action="store_true",
                   help="append to --out (after a blank line) instead of overwriting it")
    args = p.parse_args()
    say = Tee()
    t_start = time.perf_counter()
    seeds = range(1 if args.quick else args.seeds)

    say("== BongClassifier posterior predictives: plugin vs linmc vs mc, held-out scores")
    env = f"SKBONG_SRC={os.environ['SKBONG_SRC']} " if "SKBONG_SRC" in os.environ else ""
    say(f"   command: {env}python {' '.join(sys.argv)}")
    if "SKBONG_SRC" in os.environ:
        say(f"   revision: skbong imported from SKBONG_SRC, not from this checkout "
            f"(this checkout, holding the script: {git_revision()})")
    else:
        say(f"   revision: {git_revision()}")
    say(f"   skbong imported from {Path(skbong.__file__).parent}")
    la = os.getloadavg()
    say(f"   load average {la[0]:.2f} {la[1]:.2f} {la[2]:.2f} on {os.cpu_count()} cores")
    say("   BongClassifier defaults (rule=bong, hessian=lin_hess, rank=10, the prior "
        "variance learned by the evidence bank, float32, batch_size=1, fit's refinement "
        "passes); predictive_samples=100 unless marked S=1000; the variance diagnostics "
        "need one belief per family and are skipped for a bank")
    say(f"   seeds: {list(seeds)} (split, training order and random_state); 70/30 stratified; "
        f"ECE with {N_BINS} equal-width bins; log-loss unclipped, from predict_log_proba")
    sets = sklearn_sets()
    if not args.quick:
        sets.update(data_dir_sets(args.data_dir, args.mnist_rows, args.mnist_pca, say))
    else:
        sets = {k: sets[k] for k in ("iris", "wine", "digits")}

    results, diagnostics, meta, prior_used = {}, {}, {}, set()
    for name, spec in sets.items():
        jax.clear_caches()  # every set's programs kept would hold GBs of XLA:CPU code
        t0 = time.perf_counter()
        for seed in seeds:
            Xtr, ytr, Xte, yte = split(spec, seed)
            k = len(np.unique(ytr))
            P = n_params(Xtr.shape[1], k)
            meta[name] = (len(ytr), len(yte), Xtr.shape[1], k, P)
            lr = LogisticRegression(max_iter=5000).fit(Xtr, ytr)
            results.setdefault((name, "sklearn LR", "-"), []).append(
                scores(lr.predict_log_proba(Xte), yte))
            fits = {}
            for family in FAMILIES:
                if family == "full" and P > args.max_full_params:
                    continue
                est = BongClassifier(family=family, random_state=seed).fit(Xtr, ytr)
                fits[family] = est
                prior_used.add(tuple(np.unique(prior_variances(est)).round(6)))
                for label, kind, samples in PREDICTIVES:
                    est.set_params(predictive=kind, predictive_samples=samples)
                    row = scores(est.predict_log_proba(Xte), yte)
                    row["ms"] = 1e3 * min(timed(est.predict_log_proba, Xte) for _ in range(3))
                    results.setdefault((name, family, label), []).append(row)
            if "full" in fits and not fits["full"]._bank_spec().is_bank:  # one belief each
                diagnostics.setdefault(name, []).append(variance_diagnostics(
                    fits, Xtr, ytr, Xte, yte, 1 if k == 2 else k,
                    np.random.default_rng(1000 + seed)))
        n_tr, n_te, d, k, P = meta[name]
        say(f"   {name}: {n_tr} train / {n_te} test rows, {d} features, {k} classes, P = {P}"
            f" ({time.perf_counter() - t0:.1f} s)")

    say(f"   distinct prior variances of the parameters in use: {sorted(prior_used)}")

    # ---------------------------------------------------------------- tables
    labels = [lab for lab, _, _ in PREDICTIVES]
    say("\n--- held-out log-loss (nats), mean ± sd over seeds; Δ = linmc − plugin, paired")
    rows = []
    for name in sets:
        for family in (*FAMILIES, "sklearn LR"):
            key = (name, family, "-" if family == "sklearn LR" else "plugin")
            if key not in results:
                continue
            row = {"data": name, "P": meta[name][4], "family": family}
            if family == "sklearn LR":
                row["plugin"] = pm([s["ll"] for s in results[key]])
            else:
                for lab in labels:
                    row[lab] = pm([s["ll"] for s in results[name, family, lab]])
                d = [b["ll"] - a["ll"] for a, b in
                     zip(results[name, family, "plugin"], results[name, family, "linmc"])]
                row["Δ linmc−plugin"] = pm(d)
            rows.append(row)
    table(rows, ["data", "P", "family", *labels, "Δ linmc−plugin"], say)

    say("   (mc and linmc agree here: for a linear model f(x, θₛ) = f(x, μ) + J (θₛ − μ) "
        "exactly, and both use the same S samples)")
    say("\n--- held-out ECE (15 bins) and accuracy, mean ± sd over seeds")
    rows = []
    for name in sets:
        for family in (*FAMILIES, "sklearn LR"):
            key = (name, family, "-" if family == "sklearn LR" else "plugin")
            if key not in results:
                continue
            row = {"data": name, "family": family}
            if family == "sklearn LR":
                row["ECE plugin"] = pm([s["ece"] for s in results[key]])
                row["acc plugin"] = pm([s["acc"] for s in results[key]])
            else:
                for lab in ("plugin", "linmc", "mc"):
                    row[f"ECE {lab}"] = pm([s["ece"] for s in results[name, family, lab]])
                    row[f"acc {lab}"] = pm([s["acc"] for s in results[name, family, lab]])
            rows.append(row)
    table(rows, ["data", "family", "ECE plugin", "ECE linmc", "ECE mc", "acc plugin",
                 "acc linmc", "acc mc"], say)

    say("\n--- summary over data sets: linmc (S=100) − plugin, mean log-loss and ECE")
    rows = []
    for family in FAMILIES:
        names = [n for n in sets if (n, family, "plugin") in results]
        dll = [np.mean([s["ll"] for s in results[n, family, "linmc"]])
               - np.mean([s["ll"] for s in results[n, family, "plugin"]]) for n in names]
        dece = [np.mean([s["ece"] for s in results[n, family, "linmc"]])
                - np.mean([s["ece"] for s in results[n, family, "plugin"]]) for n in names]
        rows.append({"family": family, "data sets": len(names),
                     "linmc better (ll)": sum(v < 0 for v in dll),
                     "Δll median": f"{np.median(dll):+.3f}",
                     "Δll min..max": f"{min(dll):+.3f}..{max(dll):+.3f}",
                     "linmc better (ECE)": sum(v < 0 for v in dece),
                     "ΔECE median": f"{np.median(dece):+.3f}"})
    table(rows, list(rows[0]), say)

    say("\n--- dlr (rank 10) vs full on the same stream, and both vs a batch Laplace "
        "reference: variance ratios, q10/q50/q90 (each quantile averaged over seeds)")
    say("    var = posterior_var_ (marginal); logit var = diag(J Σ Jᵀ) over test points and "
        "classes; span in/out = mean uᵀΣu over span(W) of the dlr / its complement")
    rows = []
    for name, diags in diagnostics.items():
        def q(key, diags=diags):
            qs = np.mean([dd[key] for dd in diags], axis=0)
            return f"{qs[0]:.2f}/{qs[1]:.2f}/{qs[2]:.2f}"
        rows.append({"data": name, "P": meta[name][4],
                     "var dlr/full": q("var dlr/full"), "var full/lap": q("var full/lap"),
                     "logit var dlr/full": q("logit var dlr/full"),
                     "logit var dlr/lap": q("logit var dlr/lap"),
                     "logit var full/lap": q("logit var full/lap"),
                     "span in dlr/full": pm([dd["span in dlr/full"] for dd in diags], 2),
                     "span out dlr/full": pm([dd["span out dlr/full"] for dd in diags], 2),
                     "span out full/lap": pm([dd["span out full/lap"] for dd in diags], 2)})
    if rows:
        table(rows, list(rows[0]), say)
    else:
        say("    (none: every fit was a prior bank; pass a fixed prior_variance to the script's "
            "BongClassifier for one belief per family)")

    say("\n--- predict_log_proba wall time on the test rows (ms, warm, min of 3 calls, mean "
        "over seeds); the numbers above are for these same calls")
    rows = []
    for name in sets:
        for family in FAMILIES:
            if (name, family, "plugin") in results:
                rows.append({"data": name, "test rows": meta[name][1], "family": family, **{
                    lab: f"{np.mean([r['ms'] for r in results[name, family, lab]]):.1f}"
                    for lab in labels}})
    table(rows, ["data", "test rows", "family", *labels], say)

    say(f"\n--- swap test: held-out log-loss of the linearised predictive (numpy MC, "
        f"S = {SWAP_SAMPLES} common draws) for a mean and a covariance; mean ± sd over seeds")
    rows = []
    for name, diags in diagnostics.items():
        row = {"data": name}
        for m in ("dlr", "full", "laplace"):
            row[f"{m} μ: plugin"] = pm([dd[f"{m} mu plugin"] for dd in diags])
            for c in ("dlr", "full", "laplace"):
                if m == "laplace" and c != "laplace":
                    continue
                row[f"{m} μ, {c} Σ"] = pm([dd[f"{m} mu, {c} cov"] for dd in diags])
        rows.append(row)
    table(rows[:], ["data", "dlr μ: plugin", "dlr μ, dlr Σ", "dlr μ, full Σ",
                    "dlr μ, laplace Σ"], say)
    say("")
    table(rows, ["data", "full μ: plugin", "full μ, full Σ", "full μ, dlr Σ",
                 "full μ, laplace Σ", "laplace μ: plugin", "laplace μ, laplace Σ"], say)
    say("\n   median marginal variance (seed 0): " + "; ".join(
        f"{n}: " + ", ".join(f"{c} {v:.3g}" for c, v in dd[0]["median var"].items())
        for n, dd in diagnostics.items()))

    networks(sets, seeds, say)

    la = os.getloadavg()
    say(f"\n   wall time {time.perf_counter() - t_start:.0f} s; load average "
        f"{la[0]:.2f} {la[1]:.2f} {la[2]:.2f}")
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        text = "\n".join(say.lines) + "\n"
        if args.append and args.out.exists():
            text = args.out.read_text() + "\n\n" + text
        args.out.write_text(text)
        print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
