"""Online or batch? One BONG pass against epochs of the batch variational solvers, and
the solvers' cost per epoch against a plain Adam loop.

Part 1, held-out scores against wall time. For each data set, a seeded 70/30 split
(standardised on the training part): ``BongClassifier`` / ``BongRegressor`` at their
defaults (one pass), ``VariationalClassifier`` / ``VariationalRegressor`` with each
``--solvers`` at its defaults after 5, 20 and ``max_iter`` (200) epochs or its own stop
(``warm_start`` continues the same run, so the times are cumulative), and the
scikit-learn baselines a user would reach for (LogisticRegression / MLPClassifier,
BayesianRidge / MLPRegressor). Reported: test log-loss or NLL (nats), accuracy or R²,
fit time (s, including compilation: the first fit of a shape compiles once).

Part 2, time per epoch of the solvers on one MLP (digits, 64-32-10, 1347 rows, M = 32),
against the same mini-batches through a jitted ``lax.scan`` of plain Adam on the
negative log-likelihood (MAP, the point-estimate baseline): median of 5 epochs after a
warm-up, and the ratio to Adam, measured in one run.

Part 0 (with ``--data-dir``), the defaults: on the UCI regression sets
(``DATA_DIR/uci/<name>/<name>.npz``, the first ``--splits`` published splits, X and y
standardised with the training part's statistics) ``VariationalRegressor`` at its
defaults with one 50-unit layer (and at σ₀² = 1, ``s0=1``) against one pass of
``BongRegressor`` with the same layer and ``MLPRegressor((50,))`` (its noise variance the
training residuals' mean square), and the linear model against ``BongRegressor()`` and
``BayesianRidge``; on digits and breast cancer (70/30, standardised)
``VariationalClassifier`` (linear, and with one 32-unit layer at its defaults and at
σ₀² = 1) against one pass of ``BongClassifier`` and ``LogisticRegression`` /
``MLPClassifier((32,))``. Reported: the mean test log-likelihood on the original y scale
(nats per row; log-loss for the classifiers), RMSE (accuracy), the fit time including
compilation, and the epochs run; then per UCI set the means over the splits and the
batch (50,) network's mean difference from one pass with its standard error (the
papers' protocol is all 20 splits: ``--splits 20``).

Part 3 (``--parts knobs`` with ``--data-dir``), the settings: on the UCI sets of
``--knob-sets`` (the first ``--splits`` splits, standardised as in part 0)
``VariationalRegressor((50,))`` at its defaults and with one setting changed at a time
(σ₀², early stopping, the solver, Monte Carlo samples, epochs, the predictive, batch
size, learning and precision rates, curvature, the full covariance), beside one pass (``passes=1``) of ``BongRegressor((50,))``:
whether any setting of the batch fit reaches the one pass's test log-likelihood.

Usage: ``python benchmarks/bench_variational.py [--quick] [--out FILE]
[--data-dir DIR [--splits K] [--parts defaults,knobs] [--knob-sets NAMES]]``.
"""

import sys
import time
import warnings
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from _common import Tee, load_note, parser, write_json
from scipy.stats import norm
from sklearn.datasets import load_breast_cancer, load_diabetes, load_digits
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import BayesianRidge, LogisticRegression
from sklearn.metrics import log_loss, r2_score
from sklearn.model_selection import train_test_split
from sklearn.neural_network import MLPClassifier, MLPRegressor
from sklearn.preprocessing import StandardScaler

from skbong import BongClassifier, BongRegressor, VariationalClassifier, VariationalRegressor
from skbong.engine import solvers
from skbong.engine.models import MLP
from skbong.engine.solvers import epochs

warnings.simplefilter("ignore", ConvergenceWarning)


def data_sets():
    X, y = load_digits(return_X_y=True)
    yield "digits", X, y, "clf", ()
    yield "digits (32,)", X, y, "clf", (32,)
    X, y = load_breast_cancer(return_X_y=True)
    yield "breast cancer", X, y, "clf", ()
    X, y = load_diabetes(return_X_y=True)
    yield "diabetes", X, y, "reg", ()
    yield "diabetes (50,)", X, y, "reg", (50,)


def score(est, X, y, kind):
    if kind == "clf":
        return log_loss(y, est.predict_proba(X), labels=np.unique(y)), est.score(X, y)
    if hasattr(est, "predict_logpdf"):
        nll = -np.mean(est.predict_logpdf(X, y))
    elif isinstance(est, BayesianRidge):
        m, s = est.predict(X, return_std=True)
        nll = -np.mean(-0.5 * ((y - m) / s) ** 2 - np.log(s * np.sqrt(2 * np.pi)))
    else:
        nll = float("nan")
    return nll, r2_score(y, est.predict(X))


def _record(rows, out, name, label, est, Xte, yte, kind, elapsed):
    nll, value = score(est, Xte, yte, kind)
    rows.append((name, label, nll, value, elapsed))
    out(f"{name:15s} {label:28s} {nll:8.4f} {value:7.4f} {elapsed:8.2f}")


def _timed_fit(est, X, y):
    t = time.perf_counter()
    est.fit(X, y)
    return time.perf_counter() - t


def part1(solver_names, stages, out):
    rows = []
    for name, X, y, kind, hidden in data_sets():
        Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, random_state=0)
        sc = StandardScaler().fit(Xtr)
        Xtr, Xte = sc.transform(Xtr), sc.transform(Xte)
        if kind == "clf":
            online = BongClassifier(hidden_layer_sizes=hidden, passes=1, random_state=0)
            base = (
                LogisticRegression(max_iter=5000)
                if not hidden
                else MLPClassifier(hidden_layer_sizes=hidden, max_iter=500, random_state=0)
            )
            batch = VariationalClassifier
        else:
            online = BongRegressor(hidden_layer_sizes=hidden, passes=1, random_state=0)
            base = (
                BayesianRidge()
                if not hidden
                else MLPRegressor(hidden_layer_sizes=hidden, max_iter=2000, random_state=0)
            )
            batch = VariationalRegressor
        for label, est in (("one BONG pass", online), (type(base).__name__, base)):
            elapsed = _timed_fit(est, Xtr, ytr)
            _record(rows, out, name, label, est, Xte, yte, kind, elapsed)
        for solver in solver_names:
            est = batch(
                solver=solver,
                hidden_layer_sizes=hidden,
                random_state=0,
                warm_start=True,
                n_iter_no_change=10**6,
            )
            done, clock = 0, 0.0
            for stage in stages:  # warm_start: the same run, continued
                clock += _timed_fit(est.set_params(max_iter=stage - done), Xtr, ytr)
                done = stage
                label = f"{solver} {stage} epochs"
                _record(rows, out, name, label, est, Xte, yte, kind, clock)
        out("")
    return rows


UCI_SETS = (
    "bostonHousing",
    "concrete",
    "energy",
    "kin8nm",
    "power-plant",
    "wine-quality-red",
    "yacht",
)


def uci_split(data_dir, name, i):
    """Split ``i`` of a UCI set, X and y standardised with the training statistics;
    also the training standard deviation of y (for the original scale)."""
    d = np.load(Path(data_dir) / "uci" / name / f"{name}.npz")
    X, y = d["X"].astype(np.float64), d["y"].astype(np.float64)
    tr, te = d["train_idx"][i], d["test_idx"][i]
    mx, sx = X[tr].mean(0), X[tr].std(0)
    sx[sx == 0] = 1.0
    my, sy = y[tr].mean(), y[tr].std()
    return (X[tr] - mx) / sx, (y[tr] - my) / sy, (X[te] - mx) / sx, (y[te] - my) / sy, sy


def regression_scores(est, Xtr, ytr, Xte, yte, sy):
    """(test log-likelihood per row on the original scale, RMSE on it, fit seconds)."""
    t = time.perf_counter()
    est.fit(Xtr, ytr)
    elapsed = time.perf_counter() - t
    mean = est.predict(Xte)
    if hasattr(est, "predict_logpdf"):
        ll = np.mean(est.predict_logpdf(Xte, yte))
    elif isinstance(est, BayesianRidge):
        mean, std = est.predict(Xte, return_std=True)
        ll = np.mean(norm.logpdf(yte, mean, std))
    else:  # a point estimate: its training residuals' mean square as the noise
        std = np.sqrt(np.mean((est.predict(Xtr) - ytr) ** 2))
        ll = np.mean(norm.logpdf(yte, mean, std))
    return ll - np.log(sy), np.sqrt(np.mean((mean - yte) ** 2)) * sy, elapsed


def part0(data_dir, n_splits, out):
    """The defaults against one pass and the scikit-learn baselines."""
    rows = []
    out(
        f"{'data':17s} {'split':>5s} {'estimator':24s} {'LL':>8s} {'RMSE':>8s} "
        f"{'time s':>7s} {'epochs':>6s}"
    )
    makers = (
        ("Variational (50,)", lambda: VariationalRegressor(hidden_layer_sizes=(50,))),
        ("Variational (50,) s0=1", lambda: VariationalRegressor(hidden_layer_sizes=(50,),
                                                                prior_variance=1.0)),
        ("one BONG pass (50,)", lambda: BongRegressor(hidden_layer_sizes=(50,), passes=1)),
        ("MLPRegressor (50,)", lambda: MLPRegressor(hidden_layer_sizes=(50,), max_iter=2000)),
        ("Variational linear", lambda: VariationalRegressor()),
        ("one BONG pass linear", lambda: BongRegressor()),
        ("BayesianRidge", lambda: BayesianRidge()),
    )
    for name in UCI_SETS:
        for i in range(n_splits):
            split = uci_split(data_dir, name, i)
            for label, make in makers:
                est = make()
                if "random_state" in est.get_params():
                    est.set_params(random_state=0)
                ll, rmse, elapsed = regression_scores(est, *split)
                epochs_run = getattr(est, "n_iter_", "")
                rows.append((name, i, label, ll, rmse, elapsed, epochs_run))
                out(
                    f"{name:17s} {i:5d} {label:24s} {ll:8.3f} {rmse:8.3f} {elapsed:7.2f} "
                    f"{epochs_run!s:>6s}"
                )
    summarise(rows, out)
    for name, X, y in (
        ("digits", *load_digits(return_X_y=True)),
        ("breast cancer", *load_breast_cancer(return_X_y=True)),
    ):
        Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, random_state=0)
        sc = StandardScaler().fit(Xtr)
        Xtr, Xte = sc.transform(Xtr), sc.transform(Xte)
        net = (32,)
        for label, est in (
            ("Variational linear", VariationalClassifier(random_state=0)),
            ("one BONG pass linear", BongClassifier(random_state=0)),
            ("LogisticRegression", LogisticRegression(max_iter=5000)),
            ("Variational (32,)", VariationalClassifier(hidden_layer_sizes=net, random_state=0)),
            ("Variational (32,) s0=1", VariationalClassifier(
                hidden_layer_sizes=net, prior_variance=1.0, random_state=0)),
            ("one BONG pass (32,)", BongClassifier(hidden_layer_sizes=net, passes=1, random_state=0)),
            ("MLPClassifier (32,)", MLPClassifier(net, max_iter=2000, random_state=0)),
        ):
            elapsed = _timed_fit(est, Xtr, ytr)
            loss, acc = score(est, Xte, yte, "clf")
            epochs_run = getattr(est, "n_iter_", "")
            rows.append((name, 0, label, -loss, acc, elapsed, epochs_run))
            out(
                f"{name:17s} {0:5d} {label:24s} {-loss:8.3f} {acc:8.3f} {elapsed:7.2f} "
                f"{epochs_run!s:>6s}"
            )
    out("(classifiers: LL = minus the log-loss, RMSE column = accuracy)")
    return rows


def summarise(rows, out):
    """Per UCI set: each estimator's mean test log-likelihood and RMSE over the splits,
    and the batch (50,) network against one pass of the same network: the mean paired
    difference in log-likelihood, its standard error over the splits, and the splits won."""
    out("\nmean over the splits (LL / RMSE); Variational (50,) minus one BONG pass (50,):")
    for name in dict.fromkeys(r[0] for r in rows):
        by = {}
        for _, i, label, ll, rmse, _, _ in (r for r in rows if r[0] == name):
            by.setdefault(label, {})[i] = (ll, rmse)
        means = "  ".join(
            f"{label} {np.mean([v[0] for v in s.values()]):.3f} / "
            f"{np.mean([v[1] for v in s.values()]):.3f}"
            for label, s in by.items()
        )
        batch, one = by["Variational (50,)"], by["one BONG pass (50,)"]
        d = np.array([batch[i][0] - one[i][0] for i in batch])
        se = d.std(ddof=1) / np.sqrt(d.size) if d.size > 1 else np.nan
        out(f"{name} ({d.size} splits): {means}")
        out(f"  LL difference {d.mean():+.4f} ± {se:.4f} (s.e.), batch ahead on "
            f"{int((d > 0).sum())} of {d.size}")


KNOBS = (
    {}, {"prior_variance": 1.0}, {"prior_variance": 100.0}, {"early_stopping": True},
    {"solver": "ivon"}, {"solver": "slang", "rank": 5}, {"solver": "vadam"},
    {"mc_samples": 8}, {"max_iter": 30}, {"predictive": "mc"}, {"batch_size": 8},
    {"batch_size": 128}, {"learning_rate": 0.03}, {"learning_rate": 0.003, "max_iter": 3000},
    {"precision_rate": 0.001}, {"curvature": "ggn"}, {"family": "full"},
    {"family": "full", "curvature": "ggn"},
)
"""Part 3's settings of ``VariationalRegressor((50,))``, one change at a time ({} the
defaults)."""


def part3(data_dir, names, n_splits, out):
    """Each setting of :data:`KNOBS` against one BONG pass, per split."""
    rows = []
    out(f"{'data':17s} {'split':>5s} {'estimator':52s} {'LL':>8s} {'RMSE':>8s} {'epochs':>6s}")
    for name in names:
        for i in range(n_splits):
            split = uci_split(data_dir, name, i)
            makers = [("one BONG pass (50,)", BongRegressor(hidden_layer_sizes=(50,), passes=1))]
            makers += [(f"Variational (50,) {knob or 'defaults'}",
                        VariationalRegressor(hidden_layer_sizes=(50,), **knob)) for knob in KNOBS]
            for label, est in makers:
                est.set_params(random_state=0)
                ll, rmse, _ = regression_scores(est, *split)
                epochs_run = getattr(est, "n_iter_", "")
                rows.append((name, i, label, ll, rmse, epochs_run))
                out(f"{name:17s} {i:5d} {label:52s} {ll:8.3f} {rmse:8.3f} {epochs_run!s:>6s}")
    return rows


def _adam_epoch(model, likelihood):
    from skbong.engine.config import Config
    from skbong.engine.outputs import batch_log_lik

    config = Config(model=model, likelihood=likelihood, family="diag")

    @jax.jit
    def epoch(theta, mom, sq, t0, xs, ys, ws):
        def body(carry, batch):
            theta, mom, sq, t = carry
            x, y, w = batch
            g = -jax.grad(batch_log_lik, argnums=1)(config, theta, x, y, w, 1.0) / x.shape[0]
            mom = 0.9 * mom + 0.1 * g
            sq = 0.999 * sq + 0.001 * g * g
            t = t + 1
            step = (mom / (1 - 0.9**t)) / (jnp.sqrt(sq / (1 - 0.999**t)) + 1e-8)
            return (theta - 1e-3 * step, mom, sq, t), None

        (theta, mom, sq, t), _ = jax.lax.scan(body, (theta, mom, sq, t0), (xs, ys, ws))
        return theta, mom, sq, t

    return epoch


def part2(solver_names, repeats, out):
    X, y = load_digits(return_X_y=True)
    Xtr, _, ytr, _ = train_test_split(X, y, test_size=0.25, random_state=0)
    Xtr = StandardScaler().fit_transform(Xtr).astype(np.float32)
    Y = np.eye(10, dtype=np.float32)[ytr]
    w = np.ones(len(Xtr), np.float32)
    model = MLP(64, 10, (32,))
    p = model.n_params()
    m = 32
    n_steps = len(Xtr) // m
    xs = Xtr[: n_steps * m].reshape(n_steps, m, -1)
    ys = Y[: n_steps * m].reshape(n_steps, m, -1)
    ws = w[: n_steps * m].reshape(n_steps, m)
    adam = _adam_epoch(model, "categorical")
    theta = model.flat_init(jax.random.PRNGKey(0))
    zeros = jnp.zeros(p, jnp.float32)
    carry = jax.block_until_ready(adam(theta, zeros, zeros, 0, xs, ys, ws))
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        carry = jax.block_until_ready(adam(*carry, xs, ys, ws))
        times.append(time.perf_counter() - t)
    t_adam = float(np.median(times))
    out(f"MLP 64-32-10 (P = {p}), {len(Xtr)} rows, M = {m}: ms per epoch (median of {repeats})")
    out(f"{'adam (MAP, plain jitted scan)':34s} {1e3 * t_adam:8.2f}   1.00x")
    result = {"adam_ms": 1e3 * t_adam}
    for name in solver_names:
        family = "dlr" if name == "slang" else "diag"
        config = solvers.BatchConfig(model, "categorical", name, family, "ef", 1, 1, m)
        lam = np.full(p, 1.0, np.float32)
        hyper = solvers.BatchHyper(
            lam,
            lam + len(Xtr),
            np.float32(1),
            np.float32(0.01),
            np.float32(0.01),
            np.float32(0.9),
            np.float32(0),
            np.float32(len(Xtr)),
        )
        state = epochs.init_state(config, np.asarray(theta), hyper)
        key = jax.random.PRNGKey(1)
        x, yy, ww = Xtr[: n_steps * m], Y[: n_steps * m], w[: n_steps * m]
        state = jax.block_until_ready(epochs.run_epoch(config, state, 0, x, yy, ww, hyper, key))[0]
        times = []
        for r in range(repeats):
            t = time.perf_counter()
            state = jax.block_until_ready(
                epochs.run_epoch(config, state, (r + 1) * n_steps, x, yy, ww, hyper, key)
            )[0]
            times.append(time.perf_counter() - t)
        t_s = float(np.median(times))
        result[name + "_ms"] = 1e3 * t_s
        out(f"{name:34s} {1e3 * t_s:8.2f}   {t_s / t_adam:5.2f}x")
    return result


def main():
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--solvers", default="vogn,ivon,bbb,slang")
    p.add_argument("--data-dir", type=Path, default=None, help="folder holding uci/")
    p.add_argument("--splits", type=int, default=3, help="UCI splits per set (part 0)")
    p.add_argument("--parts", default="defaults,solvers,speed", help="parts to run")
    p.add_argument("--knob-sets", default="wine-quality-red", help="UCI sets of part 3")
    args = p.parse_args()
    parts = set(args.parts.split(","))
    tee = Tee(sys.stdout)
    sys.stdout = tee
    out = print
    names = args.solvers.split(",")
    out(f"# bench_variational ({load_note()})")
    result = {}
    if "defaults" in parts and args.data_dir is not None:
        result["part0"] = part0(args.data_dir, 2 if args.quick else args.splits, out)
        out("")
    if "knobs" in parts and args.data_dir is not None:
        result["part3"] = part3(args.data_dir, args.knob_sets.split(","), args.splits, out)
        out("")
    if "solvers" in parts:
        stages = (5, 20) if args.quick else (5, 20, 200)
        out(f"{'data':15s} {'estimator':28s} {'nll':>8s} {'score':>7s} {'time s':>8s}")
        result["part1"] = part1(names, stages, out)
        out("")
    if "speed" in parts:
        result["part2"] = part2(
            ["vogn", "von", "vprop", "vadam", "slang", "bbb", "ivon"], 3 if args.quick else 5, out
        )
    sys.stdout = tee.stream
    write_json({**result, "output": tee.text()}, "variational.json", args.out)


if __name__ == "__main__":
    main()
