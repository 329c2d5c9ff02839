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

Usage: ``python benchmarks/bench_variational.py [--quick] [--out FILE]``.
"""

import sys
import time
import warnings

import jax
import jax.numpy as jnp
import numpy as np
from _common import Tee, load_note, parser, write_json
from sklearn.datasets import load_breast_cancer, load_diabetes, load_digits
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import BayesianRidge, LogisticRegression
from sklearn.metrics import log_loss, r2_score
from sklearn.model_selection import train_test_split
from sklearn.neural_network import MLPClassifier, MLPRegressor
from sklearn.preprocessing import StandardScaler

from skbong import BongClassifier, BongRegressor, VariationalClassifier, VariationalRegressor
from skbong.engine import epochs, solvers
from skbong.engine.models import MLP

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
            online = BongClassifier(hidden_layer_sizes=hidden, random_state=0)
            base = (
                LogisticRegression(max_iter=5000)
                if not hidden
                else MLPClassifier(hidden_layer_sizes=hidden, max_iter=500, random_state=0)
            )
            batch = VariationalClassifier
        else:
            online = BongRegressor(hidden_layer_sizes=hidden, random_state=0)
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


def _adam_epoch(model, likelihood):
    from skbong.engine.curvature import batch_log_lik
    from skbong.engine.types import Config

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
    args = p.parse_args()
    tee = Tee(sys.stdout)
    sys.stdout = tee
    out = print
    names = args.solvers.split(",")
    out(f"# bench_variational ({load_note()})")
    stages = (5, 20) if args.quick else (5, 20, 200)
    out(f"{'data':15s} {'estimator':28s} {'nll':>8s} {'score':>7s} {'time s':>8s}")
    rows = part1(names, stages, out)
    out("")
    speed = part2(
        ["vogn", "von", "vprop", "vadam", "slang", "bbb", "ivon"], 3 if args.quick else 5, out
    )
    sys.stdout = tee.stream
    write_json({"part1": rows, "part2": speed, "output": tee.text()}, "variational.json", args.out)


if __name__ == "__main__":
    main()
