"""IVON against its reference implementation: skbong's ``VariationalClassifier(solver="ivon")``
beside the ``ivon-opt`` package (0.1.3, PyTorch) on the same MLP, data, hyperparameters and
mini-batches, with the time of an epoch of each.

What is compared
----------------
For every seed k, both learners start from the same mean (the LeCun-normal draw skbong makes
from its seed, copied into a PyTorch MLP whose flat parameter order is skbong's), see the same
rows in the same order (a permutation per epoch drawn from k, fed to skbong as
``partial_fit(X[perm], y[perm])`` with ``shuffle=False``, one call per epoch, and sliced into
the same mini-batches of M = 32 for PyTorch; the last mini-batch of an epoch is short in both)
and use the same hyperparameters:

* ``digits``: sklearn's ``load_digits``, standardised, a stratified 75/25 split drawn from k
  (N = 1,347 training rows); MLP 64-32-10 ReLU (P = 2,410); 200 epochs (43 steps each).
* ``digits, beta2=0.999``: the same with β₂ = 0.999 (``precision_rate=1e-3``), the setting
  whose drift made skbong default to β₂ = 0.99999 (``skbong.engine.solvers.SOLVERS['ivon'].rates``): is it IVON's or
  skbong's?
* ``mnist10k`` (only when ``mnist/mnist.npz`` is under ``--data-dir``; not with ``--quick``): 10,000
  training rows drawn from k, pixels / 255, MLP 784-100-10 ReLU (P = 79,510), 20 epochs; the
  test set is MNIST's 10,000 test rows.

Hyperparameters (skbong's IVON defaults, which are ivon-opt's): α = ``lr`` = 0.1, β₁ =
``momentum`` = 0.9, β₂ = 1 − ``precision_rate`` = 0.99999, S = ``mc_samples`` = 1, Price's
Hessian estimate, debiased momentum, rescaled rate, no clipping, ``prior_variance`` σ₀² = 1,
``init_precision=None``. They map onto ivon-opt as follows (read off ``skbong/_batch/regressor.py``,
``skbong/engine/models.py`` and ``skbong/engine/solvers/ivon.py``, and checked numerically below):

* ``ess`` = N, the number of rows given to ``fit`` / ``partial_fit``.
* ``weight_decay`` δ = λ / N, where λ = 1 / prior variance of the parameter. skbong's MLP prior
  is fan-in scaled: a layer's weights have variance σ₀² / fan-in (λ = 64 and 32 for the digits
  layers, 784 and 100 for MNIST), the biases σ₀² (λ = 1; a classifier's output biases too). So
  δ differs between layers; ivon-opt takes it per parameter group, and here each tensor is its
  own group with its own δ (ivon-opt's usual single δ for all parameters corresponds to a
  prior that is not fan-in scaled, e.g. skbong with a user ``model=(init, apply)``).
* ``hess_init`` h₀ = (``init_precision`` − λ) / N per parameter; the default ``init_precision``
  = λ + N gives h₀ = 1 for every parameter, ivon-opt's default. (A uniform h₀ ≠ 1 cannot be
  given with a fan-in scaled prior, since ``init_precision`` is one number and λ is not; with a
  user model it is ``init_precision = N h₀ + λ``.) h₀ also enters the rescaled rate
  α (h₀ + δ), in both.
* ``beta1`` = ``momentum``, ``beta2`` = 1 − ``precision_rate``, ``mc_samples`` = ``mc_samples``.
* The loss is the mean cross-entropy of the mini-batch in both (skbong: the gradient of
  Σᵢ log p(yᵢ | θ) divided by the number of real rows); the posterior is N(μ, 1 / (N (h + δ))) in
  both (skbong's ``posterior_var_`` = 1 / (N h + λ)).

With these, the two updates are the same arithmetic. The same-noise check makes that exact:
ivon-opt is fed, step by step, the standard-normal draws skbong's epoch made (skbong draws ε for
step t from ``fold_in(key, t)``; ivon-opt's noise ε / √(ess (h + δ)) is then the same), and the
means and Hessians of the two are compared after one epoch and at the end of the run (seed 0 of
each setting). Everywhere else each learner draws its own noise (JAX's and torch's generators),
so the fits differ by Monte Carlo error only, and that is what the seeds measure.

Reported per setting, mean ± s.e. over the seeds: test log-loss (NLL) and accuracy of the
posterior predictive by Monte Carlo with 64 samples (skbong ``predictive="mc",
predictive_samples=64``: the class probabilities averaged over 64 draws of θ; ivon-opt: the
softmax averaged over 64 ``sampled_params()`` draws, as its README does), and of the plugin
predictive at the mean (skbong ``predictive="plugin"``; ivon-opt: the model at its mean). The
verdict per setting and predictive is the paired difference skbong − ivon-opt over the seeds
(the seeds share split, start and mini-batch order, so pairing removes those), in units of its
standard error: |z| < 2 is "equal within Monte Carlo error".

Time: one epoch, the median over ``--timing-reps`` (11; 5 with ``--quick``) epochs after two
warm-up epochs (the compilation), the methods interleaved round-robin so that a change of load
touches them alike, every learner on one thread (``torch.set_num_threads(1)``; XLA and BLAS on
one thread by the environment set below unless already set), the data already permuted (the
time of one pass over given mini-batches):

* skbong ``ivon``, ``vogn`` and ``vadam`` through the estimator (``partial_fit`` of the N rows:
  input checks, the compiled epoch, the posterior and KL after it), and the compiled epoch
  alone (``skbong.engine.solvers.epochs.run_epoch``, what ``fit`` runs per epoch);
* ivon-opt's ``IVON`` (one ``sampled_params(train=True)`` forward/backward and a ``step`` per
  mini-batch, as in its README);
* ``torch.optim.Adam`` on the same MLP and mini-batches;
* optax Adam in JAX: the epoch jitted as a ``lax.scan`` over the same padded mini-batches (the
  layout skbong's epoch uses), the reference the other times are divided by;
* for context, the Gaussian draws of an IVON epoch alone: P standard normals per step by JAX's
  default (threefry) generator as skbong draws them, and by ``torch.randn`` as ivon-opt does.

What differs from the paper (Shen et al. 2024, "Variational learning is effective for large deep
networks"): the paper trains large networks (ResNets, transformers) with learning-rate
schedules and per-task choices of h₀, δ, ess and ``clip_radius``; this compares the update
itself on small MLPs at a constant rate, with no clipping (``clip_radius`` = ∞; skbong has no
clipping), the prior (δ per layer) of skbong, and the package's defaults otherwise. Nothing is
tuned, and the numbers are not the paper's.

Private members read (as ``_common.dense_gaussian`` does): the estimator's ``_seed`` and
``_key(1)`` (its starting mean and noise, to copy them), ``_batch``, ``_hyper(...)``,
``_solver_state`` and ``_solver_kind`` (to call the engine's epoch directly for the time).

Run: ``python benchmarks/paper/ivon_reference.py`` (5 seeds; writes
``benchmarks/results/paper/ivon_reference.json`` and ``doc/results/ivon_reference.txt``, the
printed output); ``--quick`` (digits only, 2 seeds, 30 epochs, under a minute; writes
``..._quick.json`` / ``..._quick.txt`` unless ``--out`` / ``--text`` are given); ``--seeds``,
``--mnist-seeds`` (at most 5 for mnist10k), ``--epochs`` (all settings), ``--configs``,
``--timing-reps``. The recorded results were made with ``--seeds 20`` (mnist10k: 5 seeds).
Needs, beyond skbong:
``pip install torch==2.13.0 ivon-opt optax`` (the CPU build of torch).
"""

import os

# One thread everywhere (the timings compare one-thread learners); before numpy / jax / torch.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
os.environ.setdefault(
    "XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
)

import math  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from functools import partial  # noqa: E402
from pathlib import Path  # noqa: E402

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from sklearn.datasets import load_digits  # noqa: E402
from sklearn.model_selection import train_test_split  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/, for _common
from _common import (  # noqa: E402
    FIGURES,
    PAPER_RESULTS,
    Tee,
    check_data,
    header,
    mean_se,
    parser,
    pm,
    table,
    write_json,
)

from skbong import VariationalClassifier  # noqa: E402
from skbong.engine.solvers import epochs as engine_epochs  # noqa: E402

try:
    import ivon  # noqa: E402
    import optax  # noqa: E402
    import torch  # noqa: E402
    import torch.nn.functional as F  # noqa: E402
except ImportError as exc:  # pragma: no cover - optional dependencies of this script only
    sys.exit(f"{exc}: this script needs `pip install torch==2.13.0 ivon-opt optax`")

LR = 0.1
"""α (ivon-opt's ``lr``; skbong's default for ``solver="ivon"``)."""
BETA1 = 0.9
"""β₁ (skbong ``momentum``)."""
PREC_RATE = 1e-5
"""1 − β₂ (skbong ``precision_rate``); β₂ = 0.99999, ivon-opt's default."""
PRIOR_VARIANCE = 1.0
"""σ₀² (fan-in scaled by skbong's MLP; δ = λ / N per layer in ivon-opt)."""
BATCH_SIZE = 32
MC_SAMPLES = 1
PRED_SAMPLES = 64
"""Samples of the Monte Carlo posterior predictive, both learners."""
ADAM_LR = 1e-3
"""Rate of the Adam baselines (timing only)."""
N_CLASSES = 10

CONFIGS = {
    "digits": dict(data="digits", hidden=32, epochs=200, quick_epochs=30, prec_rate=PREC_RATE),
    "digits, beta2=0.999": dict(
        data="digits", hidden=32, epochs=200, quick_epochs=None, prec_rate=1e-3
    ),
    "mnist10k": dict(
        data="mnist", hidden=100, epochs=20, quick_epochs=None, prec_rate=PREC_RATE, n_train=10000
    ),
}
"""Settings compared (``quick_epochs=None``: not run with ``--quick``)."""


# -------------------------------------------------------------------- data
def load(cfg, data_dir, seed):
    """(X_train, y_train, X_test, y_test) of a setting for seed ``seed`` (float32, int64)."""
    if cfg["data"] == "digits":
        X, y = load_digits(return_X_y=True)
        X_tr, X_te, y_tr, y_te = train_test_split(
            X, y, test_size=0.25, random_state=seed, stratify=y
        )
        scaler = StandardScaler().fit(X_tr)
        X_tr, X_te = scaler.transform(X_tr), scaler.transform(X_te)
    else:
        d = np.load(check_data(data_dir / "mnist" / "mnist.npz", "MNIST"))
        rows = np.random.default_rng([seed, 1]).choice(len(d["y_train"]), cfg["n_train"], False)
        X_tr, y_tr = d["x_train"][rows].reshape(len(rows), -1) / 255.0, d["y_train"][rows]
        X_te, y_te = d["x_test"].reshape(len(d["x_test"]), -1) / 255.0, d["y_test"]
    return (
        X_tr.astype(np.float32),
        y_tr.astype(np.int64),
        X_te.astype(np.float32),
        y_te.astype(np.int64),
    )


def orders(seed, n, n_epochs):
    """The row permutation of every epoch (shared by both learners)."""
    rng = np.random.default_rng([seed, 2])
    return [rng.permutation(n) for _ in range(n_epochs)]


def scores(proba, y):
    """Test log-loss and accuracy of class probabilities (n, K)."""
    p = np.asarray(proba, np.float64)[np.arange(len(y)), y]
    return float(-np.mean(np.log(np.maximum(p, 1e-300)))), float(np.mean(proba.argmax(1) == y))


# ------------------------------------------------------------------ skbong
def make_skbong(cfg, seed, solver="ivon"):
    kw = {}
    if solver == "ivon":
        kw = dict(learning_rate=LR, precision_rate=cfg["prec_rate"], momentum=BETA1)
    return VariationalClassifier(
        hidden_layer_sizes=(cfg["hidden"],),
        solver=solver,
        mc_samples=MC_SAMPLES,
        prior_variance=PRIOR_VARIANCE,
        init_precision=None,
        batch_size=BATCH_SIZE,
        shuffle=False,
        predictive="mc",
        predictive_samples=PRED_SAMPLES,
        random_state=seed,
        **kw,
    )


def fit_skbong(cfg, seed, X, y, epoch_orders):
    """skbong's IVON, one ``partial_fit`` per epoch on the permuted rows. Returns the
    estimator, the solver state after the first epoch and the wall time."""
    est = make_skbong(cfg, seed)
    first, t0 = None, time.perf_counter()
    for order in epoch_orders:
        est.partial_fit(X[order], y[order], classes=np.arange(N_CLASSES))
        if first is None:
            first = tuple(np.array(a) for a in est._solver_state)
    return est, first, time.perf_counter() - t0


def skbong_start(est):
    """The starting mean of a fitted estimator (as ``VariationalBase._fit_epochs`` draws it)."""
    key = jax.random.fold_in(jax.random.PRNGKey(est._seed), 0)
    return np.asarray(est._batch.model.flat_init(key, jnp.float32))


def ivon_layout(est, n_data):
    """Per tensor of skbong's MLP (its flat order: W₁, b₁, W₂, b₂): shape, ivon-opt's
    ``weight_decay`` δ = λ / N and ``hess_init`` h₀ = (init_precision − λ) / N, from the
    estimator's own hyperparameters."""
    model = est._batch.model
    hyper = est._hyper(est._batch, n_data, 1.0)
    lam = np.asarray(hyper.prior_prec, np.float64)
    init = np.asarray(hyper.init_prec, np.float64)
    sizes = (model.n_features, *model.hidden, model.n_outputs)
    shapes = [s for a, b in zip(sizes[:-1], sizes[1:]) for s in ((a, b), (b,))]
    layout, offset = [], 0
    for shape in shapes:
        n = math.prod(shape)
        part_lam, part_init = lam[offset : offset + n], init[offset : offset + n]
        assert np.all(part_lam == part_lam[0]) and np.all(part_init == part_init[0])
        layout.append(
            dict(
                shape=shape,
                lam=float(part_lam[0]),
                weight_decay=float(part_lam[0]) / n_data,
                hess_init=float(part_init[0] - part_lam[0]) / n_data,
            )
        )
        offset += n
    assert offset == lam.size
    return layout


@partial(jax.jit, static_argnums=(2, 3, 4))
def skbong_draws(key, t0, n_steps, n_samples, n_params):
    """The standard-normal ε of steps t0 … t0 + n_steps − 1 of skbong's epoch: (T, S, P)."""
    return jax.vmap(
        lambda t: jax.random.normal(jax.random.fold_in(key, t), (n_samples, n_params), jnp.float32)
    )(t0 + jnp.arange(n_steps, dtype=jnp.int32))


# ----------------------------------------------------------------- ivon-opt
class TorchMLP:
    """The MLP with skbong's parameter layout: x ↦ relu(x W₁ + b₁) W₂ + b₂ (W (in, out))."""

    def __init__(self, flat, shapes):
        self.params, offset = [], 0
        for shape in shapes:
            n = math.prod(shape)
            data = torch.tensor(np.asarray(flat[offset : offset + n]).reshape(shape))
            self.params.append(torch.nn.Parameter(data))
            offset += n

    def __call__(self, x):
        h = x
        for i in range(0, len(self.params), 2):
            h = torch.addmm(self.params[i + 1], h, self.params[i])
            if i + 2 < len(self.params):
                h = torch.relu(h)
        return h

    def flat(self):
        return torch.cat([p.detach().flatten() for p in self.params]).numpy().copy()


class FedIVON(ivon.IVON):
    """ivon-opt's IVON, optionally fed given standard-normal draws instead of ``torch.randn``
    (``draws`` (S, P) per step; None: its own). The noise is then ivon-opt's own
    ε / √(ess (h + δ)) per group, and everything else is the package's code."""

    draws = None
    _next = 0

    def _sample_params(self):
        if self.draws is None:
            return super()._sample_params()
        z_all = torch.as_tensor(self.draws[self._next % len(self.draws)])
        self._next += 1
        noises, avgs, offset = [], [], 0
        for group in self.param_groups:
            z = z_all[offset : offset + group["numel"]]
            noise = z / (group["ess"] * (group["hess"] + group["weight_decay"])).sqrt()
            noises.append(noise)
            goffset = 0
            for p in group["params"]:
                avg = p.data.flatten()
                avgs.append(avg)
                p.data = (avg + noise[goffset : goffset + p.numel()]).view(p.shape)
                goffset += p.numel()
            offset += group["numel"]
        return torch.cat(avgs, 0), torch.cat(noises, 0)


def make_ivon(net, layout, n_data, prec_rate):
    groups = [
        {"params": [p], "weight_decay": part["weight_decay"], "hess_init": part["hess_init"]}
        for p, part in zip(net.params, layout)
    ]
    return FedIVON(
        groups,
        lr=LR,
        ess=n_data,
        beta1=BETA1,
        beta2=1.0 - prec_rate,
        mc_samples=MC_SAMPLES,
        hess_approx="price",
        clip_radius=float("inf"),
        debias=True,
        rescale_lr=True,
    )


def ivon_hess(opt):
    return torch.cat([g["hess"] for g in opt.param_groups]).numpy().copy()


def ivon_epoch(net, opt, X, y, batch_size, draws=None):
    """One epoch of ivon-opt over the rows in the given order (mini-batches of M, the last
    one short), as in its README: per mini-batch S sampled forward/backward passes, a step."""
    n = X.shape[0]
    for b, start in enumerate(range(0, n, batch_size)):
        xb, yb = X[start : start + batch_size], y[start : start + batch_size]
        if draws is not None:
            opt.draws, opt._next = draws[b], 0
        for _ in range(opt.mc_samples):
            with opt.sampled_params(train=True):
                opt.zero_grad()
                loss = F.cross_entropy(net(xb), yb)
                loss.backward()
        opt.step()


def fit_ivon(mean0, layout, cfg, seed, X, y, epoch_orders, key=None):
    """ivon-opt from ``mean0`` over the given epochs; with ``key``, fed skbong's draws.
    Returns the network, the optimiser, (mean, h) after the first epoch and the wall time."""
    torch.manual_seed(seed)
    net = TorchMLP(mean0, [part["shape"] for part in layout])
    n = X.shape[0]
    opt = make_ivon(net, layout, n, cfg["prec_rate"])
    X, y = torch.from_numpy(X), torch.from_numpy(y)
    n_steps = -(-n // BATCH_SIZE)
    first, t, t0 = None, 0, time.perf_counter()
    for order in epoch_orders:
        draws = None
        if key is not None:
            draws = np.array(skbong_draws(key, t, n_steps, MC_SAMPLES, mean0.size))
        idx = torch.from_numpy(order)
        ivon_epoch(net, opt, X[idx], y[idx], BATCH_SIZE, draws)
        t += n_steps
        if first is None:
            first = (net.flat(), ivon_hess(opt))
    opt.draws = None
    return net, opt, first, time.perf_counter() - t0


def ivon_predict(net, opt, X, n_samples):
    """Plugin and Monte Carlo (mean softmax over ``sampled_params``) class probabilities."""
    X = torch.from_numpy(X)
    with torch.no_grad():
        plugin = F.softmax(net(X), dim=1).numpy()
        total = torch.zeros(X.shape[0], N_CLASSES, dtype=torch.float64)
        for _ in range(n_samples):
            with opt.sampled_params():
                total += F.softmax(net(X), dim=1).double()
    return plugin, (total / n_samples).numpy()


# -------------------------------------------------------------- comparison
def learner_record(mc, plugin, fit_seconds, hess, sd):
    """One learner's scores ((NLL, accuracy) of the MC and plugin predictives), fit time,
    Hessian summary and median posterior standard deviation."""
    return {
        "nll_mc": mc[0],
        "acc_mc": mc[1],
        "nll_plugin": plugin[0],
        "acc_plugin": plugin[1],
        "fit_seconds": fit_seconds,
        "hess_mean": float(hess.mean()),
        "hess_min": float(hess.min()),
        "hess_max": float(hess.max()),
        "posterior_sd_median": float(np.median(sd)),
    }


def run_seed(cfg, seed, data_dir, n_epochs, same_noise):
    X_tr, y_tr, X_te, y_te = load(cfg, data_dir, seed)
    n = X_tr.shape[0]
    epoch_orders = orders(seed, n, n_epochs)
    est, sk_first, sk_fit = fit_skbong(cfg, seed, X_tr, y_tr, epoch_orders)
    mean0 = skbong_start(est)
    layout = ivon_layout(est, n)
    net, opt, iv_first, iv_fit = fit_ivon(mean0, layout, cfg, seed, X_tr, y_tr, epoch_orders)

    est.set_params(predictive="mc", predictive_samples=PRED_SAMPLES)
    sk_mc = scores(est.predict_proba(X_te), y_te)
    est.set_params(predictive="plugin")
    sk_plugin = scores(est.predict_proba(X_te), y_te)
    iv_plugin_p, iv_mc_p = ivon_predict(net, opt, X_te, PRED_SAMPLES)
    iv_mc, iv_plugin = scores(iv_mc_p, y_te), scores(iv_plugin_p, y_te)
    sk_h = np.asarray(est._solver_state[2], np.float64)
    iv_h = ivon_hess(opt)
    decay = np.concatenate([np.full(math.prod(p["shape"]), p["weight_decay"]) for p in layout])
    out = {
        "seed": seed,
        "n_train": n,
        "n_test": len(y_te),
        "skbong": {
            **learner_record(sk_mc, sk_plugin, sk_fit, sk_h, np.sqrt(est.posterior_var_)),
            "skipped_steps": int(est.n_skipped_steps_),
        },
        # ivon-opt's posterior: N(μ, 1 / (ess (h + δ)))
        "ivon_opt": learner_record(iv_mc, iv_plugin, iv_fit, iv_h, 1.0 / np.sqrt(n * (iv_h + decay))),
        "layout": [{**p, "shape": list(p["shape"])} for p in layout],
    }
    if same_noise:
        out["same_noise"] = same_noise_check(
            cfg, seed, est, sk_first, mean0, layout, X_tr, y_tr, X_te, y_te, epoch_orders, sk_plugin
        )
    return out


def same_noise_check(
    cfg, seed, est, sk_first, mean0, layout, X_tr, y_tr, X_te, y_te, epoch_orders, sk_plugin
):
    """ivon-opt fed skbong's own draws: how far apart the two are after one epoch and at
    the end (float32 rounding only, if the updates are the same)."""
    key = jnp.asarray(est._key(1))
    net, opt, iv_first, _ = fit_ivon(mean0, layout, cfg, seed, X_tr, y_tr, epoch_orders, key)

    def gap(sk_mean, sk_hess, iv_mean, iv_hess):
        moved = float(np.max(np.abs(sk_mean - mean0)))
        return {
            "max_abs_mean_diff": float(np.max(np.abs(sk_mean - iv_mean))),
            "max_abs_mean_moved": moved,
            "mean_diff_over_moved": float(np.max(np.abs(sk_mean - iv_mean)) / moved),
            "max_rel_hess_diff": float(np.max(np.abs(sk_hess - iv_hess) / np.abs(sk_hess))),
            "max_abs_hess_change": float(
                np.max(
                    np.abs(
                        sk_hess
                        - np.asarray(
                            [p["hess_init"] for p in layout for _ in range(math.prod(p["shape"]))]
                        )
                    )
                )
            ),
        }

    iv_plugin_p, _ = ivon_predict(net, opt, X_te, 1)
    iv_plugin = scores(iv_plugin_p, y_te)
    end_sk = tuple(np.asarray(a) for a in est._solver_state)
    return {
        "seed": seed,
        "steps_first_epoch": -(-X_tr.shape[0] // BATCH_SIZE),
        "epochs": len(epoch_orders),
        "after_epoch_1": gap(sk_first[0], sk_first[2], *iv_first),
        "at_end": gap(end_sk[0], end_sk[2], net.flat(), ivon_hess(opt)),
        "nll_plugin_skbong": sk_plugin[0],
        "nll_plugin_ivon_opt_fed": iv_plugin[0],
    }


def paired(runs, key):
    """skbong − ivon-opt per seed: mean, s.e., z = mean / s.e."""
    d = [r["skbong"][key] - r["ivon_opt"][key] for r in runs]
    m, se, n = mean_se(d)
    return {"mean": m, "se": se, "n": n, "z": m / se if se > 0 else float("nan"), "per_seed": d}


def report(name, cfg, runs):
    first = runs[0]
    print(
        f"\n--- {name}: N = {first['n_train']} training rows, {first['n_test']} test rows, "
        f"MLP {'-'.join(str(s) for s in (first['layout'][0]['shape'][0], cfg['hidden'], 10))} "
        f"ReLU, {cfg['epochs_run']} epochs of M = {BATCH_SIZE}, β₂ = {1 - cfg['prec_rate']:g}; "
        f"{len(runs)} seeds"
    )
    print(
        "   ivon-opt param groups (one per tensor): "
        + "; ".join(
            f"{tuple(p['shape'])}: λ = {p['lam']:g}, weight_decay = λ/N = {p['weight_decay']:.4g}, "
            f"hess_init = {p['hess_init']:.6g}"
            for p in first["layout"]
        )
    )
    rows = []
    for who, label in (("skbong", "skbong ivon"), ("ivon_opt", "ivon-opt")):
        col = lambda k, who=who: [r[who][k] for r in runs]  # noqa: E731
        rows.append(
            {
                "learner": label,
                f"NLL (MC {PRED_SAMPLES})": pm(col("nll_mc"), 4),
                "acc (MC)": pm(col("acc_mc"), 4),
                "NLL (plugin)": pm(col("nll_plugin"), 4),
                "acc (plugin)": pm(col("acc_plugin"), 4),
                "mean h": pm(col("hess_mean"), 4),
                "median sd": pm(col("posterior_sd_median"), 5),
                "fit s*": pm(col("fit_seconds"), 1),
            }
        )
    table(
        rows,
        [
            "learner",
            f"NLL (MC {PRED_SAMPLES})",
            "acc (MC)",
            "NLL (plugin)",
            "acc (plugin)",
            "mean h",
            "median sd",
            "fit s*",
        ],
    )
    print("   * wall time of the training loop (skbong's first seed includes its compilation)")
    summary = {}
    for key, label in (
        ("nll_mc", f"NLL, MC {PRED_SAMPLES}"),
        ("nll_plugin", "NLL, plugin"),
        ("acc_mc", "accuracy, MC"),
    ):
        p = paired(runs, key)
        summary[key] = p
        if p["se"] == 0 or not np.isfinite(p["se"]):
            verdict = "identical on every seed" if p["mean"] == 0 else "no spread to judge by"
        elif abs(p["z"]) < 2:
            verdict = "equal within Monte Carlo error"
        else:
            verdict = "NOT equal within Monte Carlo error"
        print(
            f"   {label}: skbong − ivon-opt = {p['mean']:+.4f} ± {p['se']:.4f} (paired s.e., "
            f"{p['n']} seeds) = {p['z']:+.2f} s.e.: {verdict}"
        )
    if len(runs) < 5:
        print(f"   (only {len(runs)} seeds: the s.e. itself is too uncertain for the verdict)")
    skipped = sum(r["skbong"]["skipped_steps"] for r in runs)
    if skipped:
        print(f"   note: skbong skipped {skipped} invalid steps")
    sn = first.get("same_noise")
    if sn:
        a, b = sn["after_epoch_1"], sn["at_end"]
        print(
            f"   same noise (seed {sn['seed']}: ivon-opt fed skbong's draws): after 1 epoch "
            f"({sn['steps_first_epoch']} steps) max|Δμ| = {a['max_abs_mean_diff']:.2e} "
            f"(the mean moved up to {a['max_abs_mean_moved']:.3g}), max rel |Δh| = "
            f"{a['max_rel_hess_diff']:.2e}; after {sn['epochs']} epochs max|Δμ| = "
            f"{b['max_abs_mean_diff']:.2e} (moved {b['max_abs_mean_moved']:.3g}), max rel |Δh| "
            f"= {b['max_rel_hess_diff']:.2e} (h moved up to {b['max_abs_hess_change']:.3g}); "
            f"plugin NLL {sn['nll_plugin_skbong']:.5f} vs {sn['nll_plugin_ivon_opt_fed']:.5f}"
        )
    return summary


# ------------------------------------------------------------------- timing
def mlp_apply(params, x):
    h = x
    for i, (w, b) in enumerate(params):
        h = h @ w + b
        if i < len(params) - 1:
            h = jax.nn.relu(h)
    return h


def optax_adam_runner(mean0, shapes, X, y):
    """optax Adam, the epoch jitted as a ``lax.scan`` over padded mini-batches (skbong's
    layout: an index per row, a zero-weight padding row, the loss averaged over real rows)."""
    tx = optax.adam(ADAM_LR)
    n = X.shape[0]
    n_steps = -(-n // BATCH_SIZE)
    idx = np.concatenate([np.arange(n), np.full(n_steps * BATCH_SIZE - n, n)])
    idx = jnp.asarray(idx.reshape(n_steps, BATCH_SIZE), jnp.int32)
    xp = jnp.concatenate([jnp.asarray(X), jnp.zeros((1, X.shape[1]), jnp.float32)])
    yp = jnp.concatenate([jnp.asarray(y, jnp.int32), jnp.zeros((1,), jnp.int32)])
    wp = jnp.concatenate([jnp.ones((n,), jnp.float32), jnp.zeros((1,), jnp.float32)])
    offsets = np.cumsum([0] + [math.prod(s) for s in shapes])
    flat = [jnp.asarray(mean0[a:b].reshape(s)) for a, b, s in zip(offsets, offsets[1:], shapes)]
    params = [(flat[i], flat[i + 1]) for i in range(0, len(flat), 2)]

    def loss(params, xb, yb, wb):
        logp = jax.nn.log_softmax(mlp_apply(params, xb))
        ll = jnp.take_along_axis(logp, yb[:, None], axis=1)[:, 0]
        return -jnp.sum(wb * ll) / jnp.maximum(jnp.sum(wb), 1.0)

    @jax.jit
    def epoch(params, state):
        def body(carry, ids):
            params, state = carry
            grads = jax.grad(loss)(params, xp[ids], yp[ids], wp[ids])
            updates, state = tx.update(grads, state, params)
            return (optax.apply_updates(params, updates), state), None

        (params, state), _ = jax.lax.scan(body, (params, state), idx)
        return params, state

    carry = [params, tx.init(params)]

    def run():
        carry[:] = epoch(*carry)
        jax.block_until_ready(carry)

    return run


def torch_adam_runner(mean0, shapes, X, y):
    net = TorchMLP(mean0, shapes)
    opt = torch.optim.Adam(net.params, lr=ADAM_LR)
    X, y = torch.from_numpy(X), torch.from_numpy(y)
    n = X.shape[0]

    def run():
        for start in range(0, n, BATCH_SIZE):
            opt.zero_grad()
            F.cross_entropy(
                net(X[start : start + BATCH_SIZE]), y[start : start + BATCH_SIZE]
            ).backward()
            opt.step()

    return run


def ivon_opt_runner(mean0, layout, X, y):
    net = TorchMLP(mean0, [p["shape"] for p in layout])
    opt = make_ivon(net, layout, X.shape[0], PREC_RATE)
    X, y = torch.from_numpy(X), torch.from_numpy(y)
    return lambda: ivon_epoch(net, opt, X, y, BATCH_SIZE)


def jax_draws_runner(est, n):
    """Only the Gaussian draws of an IVON epoch in JAX (P standard normals per step from
    ``fold_in(key, t)``, as skbong's epoch makes them), for context."""
    n_params = est.posterior_mean_.size
    key, n_steps = jnp.asarray(est._key(1)), -(-n // BATCH_SIZE)

    @jax.jit
    def draws(key):
        def body(c, t):
            eps = jax.random.normal(jax.random.fold_in(key, t), (MC_SAMPLES, n_params))
            return c + eps[0, 0], None

        return jax.lax.scan(body, jnp.zeros(()), jnp.arange(n_steps))[0]

    return lambda: draws(key).block_until_ready()


def torch_draws_runner(n_params, n):
    """Only ivon-opt's Gaussian draws of an epoch (``torch.randn(P)`` per step)."""
    n_steps = -(-n // BATCH_SIZE)

    def run():
        for _ in range(n_steps * MC_SAMPLES):
            torch.randn(n_params)

    return run


def skbong_runners(cfg, solver, X, y):
    """(estimator epoch, engine epoch) runners for one skbong solver; the first
    ``partial_fit`` (compilation) is made here."""
    est = make_skbong(cfg, 0, solver)
    classes = np.arange(N_CLASSES)
    est.partial_fit(X, y, classes=classes)

    def estimator():
        est.partial_fit(X, y)

    config, n = est._batch, X.shape[0]
    hyper = est._hyper(config, n, 1.0)
    Y = jnp.asarray(np.eye(N_CLASSES, dtype=np.float32)[y])
    w, Xj = jnp.ones((n,), jnp.float32), jnp.asarray(X)
    key = jnp.asarray(est._key(1))
    n_steps = -(-n // config.batch_size)
    carry = {"state": est._solver_kind(*(jnp.asarray(a) for a in est._solver_state)), "t": est.t_}

    def engine():
        state, *_ = engine_epochs.run_epoch(
            config, carry["state"], carry["t"], Xj, Y, w, hyper, key, shuffle=False
        )
        jax.block_until_ready(state)
        carry["state"], carry["t"] = state, carry["t"] + n_steps

    return est, estimator, engine


def timing(name, cfg, data_dir, reps):
    X, y, _, _ = load(cfg, data_dir, 0)
    X, y = X[orders(0, len(y), 1)[0]], y[orders(0, len(y), 1)[0]]
    n = len(y)
    runners, est = {}, None
    for solver in ("ivon", "vogn", "vadam"):
        e, estimator, engine = skbong_runners(cfg, solver, X, y)
        est = e if solver == "ivon" else est
        runners[f"skbong {solver} (estimator)"] = estimator
        runners[f"skbong {solver} (engine epoch)"] = engine
    mean0, layout = skbong_start(est), ivon_layout(est, n)
    shapes = [p["shape"] for p in layout]
    runners["ivon-opt IVON (torch)"] = ivon_opt_runner(mean0, layout, X, y)
    runners["torch Adam"] = torch_adam_runner(mean0, shapes, X, y)
    runners["optax Adam (lax.scan)"] = optax_adam_runner(mean0, shapes, X, y)
    runners["(JAX normal draws only)"] = jax_draws_runner(est, n)
    runners["(torch.randn only)"] = torch_draws_runner(mean0.size, n)
    torch.set_num_threads(1)
    for run in runners.values():  # warm-up: compilation, allocations
        run()
        run()
    times = {k: [] for k in runners}
    load0 = os.getloadavg()
    for _ in range(reps):
        for k, run in runners.items():
            t0 = time.perf_counter()
            run()
            times[k].append(time.perf_counter() - t0)
    ref = float(np.median(times["optax Adam (lax.scan)"]))
    n_steps = -(-n // BATCH_SIZE)
    print(
        f"\n--- time of one epoch, {name}: N = {n}, {n_steps} steps of M = {BATCH_SIZE}, "
        f"P = {sum(math.prod(s) for s in shapes):,}; median of {reps} after 2 warm-up epochs, "
        f"interleaved; 1 thread; load average {load0[0]:.2f} at the start, "
        f"{os.getloadavg()[0]:.2f} at the end"
    )
    rows, out = [], {}
    for k, v in times.items():
        med = float(np.median(v))
        out[k] = {
            "median_s": med,
            "min_s": float(np.min(v)),
            "times_s": v,
            "ratio_to_optax_adam": med / ref,
        }
        rows.append(
            {
                "method": k,
                "ms/epoch (median)": f"{1e3 * med:.2f}",
                "ms/epoch (min)": f"{1e3 * np.min(v):.2f}",
                "µs/step": f"{1e6 * med / n_steps:.0f}",
                "× optax Adam": f"{med / ref:.2f}",
            }
        )
    table(rows, ["method", "ms/epoch (median)", "ms/epoch (min)", "µs/step", "× optax Adam"])
    return {
        "n_train": n,
        "steps": n_steps,
        "reps": reps,
        "load_average_start": load0,
        "methods": out,
    }


# ---------------------------------------------------------------------- main
def main():
    p = parser(__doc__.splitlines()[0], seeds=5)
    p.add_argument(
        "--epochs",
        type=int,
        default=None,
        help="epochs of every setting (default: 200 digits, 20 mnist10k; 30 --quick)",
    )
    p.add_argument(
        "--configs",
        nargs="+",
        default=None,
        choices=list(CONFIGS),
        help="settings to run (default: all; digits only with --quick; mnist10k "
        "only if its data is present)",
    )
    p.add_argument(
        "--mnist-seeds", type=int, default=5, help="at most this many seeds for mnist10k"
    )
    p.add_argument("--timing-reps", type=int, default=None, help="timed epochs (11; 5 --quick)")
    p.add_argument(
        "--text",
        type=Path,
        default=None,
        help="write the printed output here (default doc/results/ivon_reference.txt)",
    )
    args = p.parse_args()
    suffix = "_quick" if args.quick else ""
    if args.text is None:
        args.text = FIGURES / f"ivon_reference{suffix}.txt"
    tee = Tee(sys.stdout)
    sys.stdout = tee
    try:
        run(args, suffix)
    finally:
        sys.stdout = tee.stream
    args.text.parent.mkdir(parents=True, exist_ok=True)
    args.text.write_text(tee.text())
    print(f"wrote {args.text}")


def run(args, suffix):
    torch.set_num_threads(1)
    mnist_ok = (args.data_dir / "mnist" / "mnist.npz").exists()
    names = args.configs or (
        ["digits"]
        if args.quick
        else [k for k in CONFIGS if CONFIGS[k]["data"] != "mnist" or mnist_ok]
    )
    n_seeds = 2 if args.quick else args.seeds
    reps = args.timing_reps or (5 if args.quick else 11)
    configs = {}
    for k in names:
        cfg = dict(CONFIGS[k])
        cfg["epochs_run"] = args.epochs or (
            (cfg["quick_epochs"] or 15) if args.quick else cfg["epochs"]
        )
        configs[k] = cfg
    settings = header(
        "IVON: skbong VariationalClassifier(solver='ivon') against ivon-opt (PyTorch)",
        {
            "settings": {
                k: {kk: v for kk, v in c.items() if kk != "quick_epochs"}
                for k, c in configs.items()
            },
            "seeds": f"{n_seeds} (mnist10k: at most {args.mnist_seeds})",
            "hyperparameters": f"lr α = {LR}, β₁ = {BETA1}, β₂ = 1 − precision_rate, h₀ = 1 "
            f"(init_precision=None), prior_variance σ₀² = {PRIOR_VARIANCE} "
            f"(δ = λ/N per layer), ess = N, mc_samples = {MC_SAMPLES}, "
            f"M = {BATCH_SIZE}, Price Hessian, debias, rescale_lr, no clipping",
            "predictive": f"MC over {PRED_SAMPLES} samples, and plugin at the mean",
            "timing": f"median of {reps} epochs after 2 warm-up, 1 thread; Adam lr {ADAM_LR}",
            "versions": {
                "torch": torch.__version__,
                "ivon-opt": _version("ivon-opt"),
                "optax": optax.__version__,
                "jax": jax.__version__,
            },
            "threads": {v: os.environ.get(v) for v in ("OPENBLAS_NUM_THREADS", "XLA_FLAGS")}
            | {"torch": torch.get_num_threads()},
        },
    )
    if not mnist_ok and not args.quick:
        print(f"   (mnist10k skipped: no {args.data_dir / 'mnist' / 'mnist.npz'})")
    t_start = time.perf_counter()
    results = {}
    for name, cfg in configs.items():
        seeds = min(n_seeds, args.mnist_seeds) if cfg["data"] == "mnist" else n_seeds
        runs = [
            run_seed(cfg, k, args.data_dir, cfg["epochs_run"], same_noise=(k == 0))
            for k in range(seeds)
        ]
        summary = report(name, cfg, runs)
        results[name] = {"settings": cfg, "runs": runs, "paired_difference": summary}
    timings = {}
    timing_sets = ["digits"] + (
        []
        if args.quick or not mnist_ok or (args.configs and "mnist10k" not in args.configs)
        else ["mnist10k"]
    )
    for name in timing_sets:
        timings[name] = timing(name, CONFIGS[name], args.data_dir, reps)
    wall = time.perf_counter() - t_start
    print(f"\nrun time: {wall:.0f} s wall")
    out = args.out or PAPER_RESULTS / f"ivon_reference{suffix}.json"
    write_json(
        {"results": results, "timing": timings, "run_seconds": wall, "output": sys.stdout.text()},
        f"ivon_reference{suffix}.json",
        out,
        settings,
    )


def _version(dist):
    from importlib.metadata import version

    return version(dist)


if __name__ == "__main__":
    main()
