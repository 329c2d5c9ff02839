"""Survival of every family × rule: how many rows each configuration refuses.

An update that would leave a non-finite or invalid belief (a covariance that is not
positive definite, a non-positive variance or precision) is refused; with
``on_error="skip"`` the row is dropped and counted in ``n_skipped_``. This script counts
the refused rows of every family × rule, with the estimator's default ``hessian`` and,
for the natural families (``full``, ``diag``, ``dlr``), also ``lin_ef`` and ``mc_ef``, on

(a) ``BongRegressor`` MLP 21-20-20-1 on synthetic sine data (X ~ N(0, I), 21 features,
    y = sin(x₀) + 0.1 ε; 500 rows; X and y standardised);
(b) ``BongClassifier`` MLP 64-32-10 on sklearn's digits (standardised, shuffled, one
    pass);
(c) ``BongRegressor`` MLP with 50 hidden units on the UCI boston, concrete, energy and
    yacht data (first split's training rows, X and y standardised with their own
    statistics); skipped with a note when ``--data-dir`` does not hold them;
(d) ``BongClassifier`` linear on sklearn's breast_cancer (standardised, shuffled);
(e) ``BongRegressor`` MLP 1-4-1 on 60 rows of a sine problem (x ~ U(−3, 3),
    y = sin(x) + 0.1 ε), prior_variance=0.5, obs_variance=0.1, float64;

each stream cut to its first ``--max-rows`` rows (500: digits, concrete and energy are
longer; short streams keep the run near 10 minutes on 2 cores).

Every case runs at the estimator's *default* parameters, whatever they are when the
script runs (only family, rule, hessian, ``on_error`` and ``random_state=0`` are set);
the regression cases (a) and (c) run again at the explicit settings of the older
releases, prior_variance=1.0, obs_variance=0.1. Case (e) runs only at its own settings.

A model counts as usable when its predictions on held-out rows are finite (128 rows
for (a), (b), (d) and (e), the first split's test rows for (c)); the quality columns give
the held-out RMSE (standardised units, (e) raw) or accuracy of the default-parameter runs.

Cost: the full families store a P × P covariance, and the rules that invert it at every
inner step (``bog`` on ``full``; ``blr``, ``bbb`` on ``full`` and ``full_moment``) cost
O(P³) per step: the full families run only where P ≤ ``--full-max-params`` (1000) and
those rules only where P ≤ ``--dense-inverse-max-params`` (100); the other cells read
``n/r``. Each configuration's cases run in one worker process (``--jobs``, default 2);
most of the time is XLA compilation (one program per configuration and input width).

Usage: ``python benchmarks/bench_survival.py [--data-dir DIR] [--jobs 2] [--out FILE]``
(``--quick``: the default hessian only, 200-row streams).
"""

import argparse
import multiprocessing
import os
import subprocess
import sys
import time
import warnings
from concurrent.futures import ProcessPoolExecutor, as_completed
from functools import cache
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
DEFAULT_DATA = (REPO / ".." / "shared" / "data").resolve()
sys.path.insert(0, os.environ.get("SKBONG_SRC", str(REPO)))  # run from a clean clone

FAMILIES = ("full", "full_moment", "diag", "diag_moment", "dlr")
RULES = ("bong", "bog", "blr", "bbb")
NATURAL = ("full", "diag", "dlr")
EXTRA_HESSIANS = ("lin_ef", "mc_ef")
UCI = {"boston": "bostonHousing", "concrete": "concrete", "energy": "energy", "yacht": "yacht"}
OLD = dict(prior_variance=1.0, obs_variance=0.1)
"""The explicit regression settings of the older releases (second table)."""
N_EVAL = 128

# case name -> (estimator, hidden layers); the data come from load_case
CASES = {
    "a:sine": ("regressor", (20, 20)),
    "b:digits": ("classifier", (32,)),
    **{f"c:{name}": ("regressor", (50,)) for name in UCI},
    "d:cancer": ("classifier", ()),
    "e:mlp4": ("regressor", (4,)),
}
CASE_E = dict(prior_variance=0.5, obs_variance=0.1, dtype="float64")


def git_revision():
    """Short HEAD revision, with ``+dirty`` when skbong/ has uncommitted changes."""
    try:
        rev = subprocess.run(
            ["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
            capture_output=True, text=True, check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(REPO), "status", "--porcelain", "skbong"],
            capture_output=True, text=True, check=True,
        ).stdout.strip()
        return rev + ("+dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):  # pragma: no cover - not a checkout
        return "unknown"


def standardise(train, *others):
    """Scale by the training rows' mean and standard deviation (1 where it is 0)."""
    mean, std = train.mean(axis=0), train.std(axis=0)
    std = np.where(std > 0, std, 1.0)
    return [(a - mean) / std for a in (train, *others)]


@cache
def load_case(name, data_dir, rows):
    """``(X, y, X_eval, y_eval)`` of a case, or None when its data are absent.

    ``rows`` caps the stream length (None: the case's own length)."""
    rng = np.random.default_rng(0)
    if name == "a:sine":
        X = rng.normal(size=(500 + N_EVAL, 21))
        y = np.sin(X[:, 0]) + 0.1 * rng.normal(size=len(X))
        X, Xe = standardise(X[:500], X[500:])
        y, ye = standardise(y[:500], y[500:])
    elif name == "b:digits":
        from sklearn.datasets import load_digits

        X, y = load_digits(return_X_y=True)
        order = rng.permutation(len(X))
        X, y = X[order], y[order]
        X, Xe = standardise(X[:-N_EVAL], X[-N_EVAL:])
        y, ye = y[:-N_EVAL], y[-N_EVAL:]
    elif name.startswith("c:"):
        path = Path(data_dir) / "uci" / UCI[name[2:]] / f"{UCI[name[2:]]}.npz"
        if not path.exists():
            return None
        d = np.load(path)
        tr, te = d["train_idx"][0], d["test_idx"][0]
        X, y = d["X"].astype(np.float64), d["y"].astype(np.float64).reshape(-1)
        X, Xe = standardise(X[tr], X[te])
        y, ye = standardise(y[tr], y[te])
    elif name == "d:cancer":
        from sklearn.datasets import load_breast_cancer

        X, y = load_breast_cancer(return_X_y=True)
        order = rng.permutation(len(X))
        X, y = X[order], y[order]
        X, Xe = standardise(X[:-N_EVAL], X[-N_EVAL:])
        y, ye = y[:-N_EVAL], y[-N_EVAL:]
    elif name == "e:mlp4":
        x = rng.uniform(-3.0, 3.0, size=(60, 1))
        X, y = x, np.sin(x[:, 0]) + 0.1 * rng.normal(size=60)
        Xe = np.linspace(-3.0, 3.0, N_EVAL)[:, None]
        ye = np.sin(Xe[:, 0])
    else:  # pragma: no cover
        raise ValueError(name)
    if rows is not None:
        X, y = X[:rows], y[:rows]
    return X, y, Xe, ye


def n_params(name, n_features, n_outputs):
    sizes = (n_features, *CASES[name][1], n_outputs)
    return sum(a * b + b for a, b in zip(sizes[:-1], sizes[1:]))


def not_run(family, rule, p, args):
    """Why a (configuration, case) is too costly to run, or None."""
    if family in ("full", "full_moment"):
        if p > args.full_max_params:
            return f"P = {p} > {args.full_max_params} (full covariance)"
        dense_inverse = rule in ("blr", "bbb") or (family == "full" and rule == "bog")
        if dense_inverse and p > args.dense_inverse_max_params:
            return f"P = {p} > {args.dense_inverse_max_params} (a P x P inverse per inner step)"
    return None


def run_config(config, jobs, data_dir, rows):
    """Fit one configuration on its (case, setting) jobs in this process.

    Returns a list of result dicts (skipped rows, stream length, usable, metric, time)."""
    warnings.simplefilter("ignore")  # SkippedRowsWarning and friends: counted instead
    from skbong import BongClassifier, BongRegressor
    from skbong.exceptions import NonFiniteUpdateError

    out = []
    for name, setting in jobs:
        X, y, Xe, ye = load_case(name, data_dir, rows.get(name))
        kind, hidden = CASES[name]
        cls = BongRegressor if kind == "regressor" else BongClassifier
        params = dict(config, hidden_layer_sizes=hidden, on_error="skip", random_state=0)
        if name == "e:mlp4":
            params.update(CASE_E)
        elif setting == "old":
            params.update(OLD)
        t0 = time.perf_counter()
        res = dict(config=config, case=name, setting=setting, n=len(X))
        try:
            est = cls(**params).fit(X, y)
            if kind == "regressor":
                pred = est.predict(Xe)
                usable = bool(np.all(np.isfinite(pred)))
                metric = float(np.sqrt(np.mean((pred - ye) ** 2))) if usable else None
            else:
                proba = est.predict_proba(Xe)
                usable = bool(np.all(np.isfinite(proba)))
                metric = float(np.mean(est.classes_[np.argmax(proba, 1)] == ye)) if usable else None
            res.update(skipped=int(est.n_skipped_), usable=usable, metric=metric)
        except NonFiniteUpdateError as exc:  # pragma: no cover - on_error="skip" never raises
            res.update(error=f"NonFiniteUpdateError: {exc}")
        except Exception as exc:  # a configuration the estimator rejects, or a crash
            res.update(error=f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}")
        res["seconds"] = time.perf_counter() - t0
        out.append(res)
    return out


def configurations(quick):
    """Family × rule × hessian: the estimator default, plus lin_ef and mc_ef for the
    natural families; labels name them."""
    from skbong import BongRegressor

    default_hessian = BongRegressor().hessian
    configs = []
    for family in FAMILIES:
        hessians = [default_hessian]
        if family in NATURAL and not quick:
            hessians += [h for h in EXTRA_HESSIANS if h != default_hessian]
        for hessian in hessians:
            for rule in RULES:
                configs.append(dict(family=family, rule=rule, hessian=hessian))
    return configs


def label(config, rank):
    family = f"dlr-{rank}" if config["family"] == "dlr" else config["family"]
    return f"{family} {config['rule']} {config['hessian']}"


def cell(res):
    if res is None:
        return "-"
    if "not_run" in res:
        return "n/r"
    if "error" in res:
        return "err"
    frac = 100.0 * res["skipped"] / res["n"]
    pct = f"{frac:.0f}%" if frac == 0 or frac >= 1 else "<1%"
    return f"{res['skipped']} ({pct})" + ("" if res["usable"] else " !")


def metric_cell(res):
    if res is None or "not_run" in res:
        return "n/r" if res else "-"
    if "error" in res:
        return "err"
    if res["metric"] is None:
        return "nan"
    return f"{res['metric']:.2f}" if res["metric"] < 100 else f"{res['metric']:.0e}"


def format_table(rows, columns):
    """Aligned text lines: the first column left-aligned, the others right-aligned."""
    widths = [max(len(c), *(len(r[i]) for r in rows)) for i, c in enumerate(columns)]

    def line(values):
        cells = (v.rjust(w) if i else v.ljust(w) for i, (v, w) in enumerate(zip(values, widths)))
        return "  ".join(cells)

    return [line(columns), *(line(r) for r in rows)]


def main():
    p = argparse.ArgumentParser(
        description=__doc__.splitlines()[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter
    )
    p.add_argument("--data-dir", type=Path, default=DEFAULT_DATA,
                   help="folder holding uci/ (default: ../shared/data from the repo root)")
    p.add_argument("--jobs", type=int, default=2, help="worker processes")
    p.add_argument("--max-rows", type=int, default=500,
                   help="stream length cap (cases b and c: concrete, energy and digits are longer)")
    p.add_argument("--full-max-params", type=int, default=1000)
    p.add_argument("--dense-inverse-max-params", type=int, default=100)
    p.add_argument("--quick", action="store_true",
                   help="default hessian only, streams of at most 200 rows")
    p.add_argument("--out", type=Path, default=None, help="also write the output to this file")
    args = p.parse_args()
    t_start = time.perf_counter()

    from skbong import BongClassifier, BongRegressor

    rows = dict.fromkeys(CASES, 200 if args.quick else args.max_rows)
    cases = [name for name in CASES if load_case(name, args.data_dir, rows[name]) is not None]
    missing = [name for name in CASES if name not in cases]
    columns_default = [(name, "default") for name in cases]
    columns_old = [(name, "old") for name in cases if name == "a:sine" or name.startswith("c:")]
    configs = configurations(args.quick)

    # the jobs of each configuration; the too costly ones are recorded, not run
    results, work = {}, []
    for config in configs:
        jobs = []
        for name, setting in columns_default + columns_old:
            X, y, _, _ = load_case(name, args.data_dir, rows[name])
            n_classes = len(np.unique(y)) if CASES[name][0] == "classifier" else 1
            n_out = n_classes if n_classes > 2 else 1
            why = not_run(config["family"], config["rule"], n_params(name, X.shape[1], n_out), args)
            key = (label(config, 0), name, setting)
            if why:
                results[key] = dict(not_run=why, config=config, case=name, setting=setting)
            else:
                jobs.append((name, setting))
        if jobs:
            work.append((config, jobs))
    # the costliest first: the MC estimators and the iterated rules
    work.sort(key=lambda w: -(len(w[1]) * (1 + 3 * (w[0]["hessian"] == "mc_ef"))
                              * (1 + (w[0]["rule"] in ("blr", "bbb")))))

    ctx = multiprocessing.get_context("spawn")  # JAX is not fork-safe
    with ProcessPoolExecutor(max_workers=args.jobs, mp_context=ctx) as pool:
        futures = [pool.submit(run_config, c, j, args.data_dir, rows) for c, j in work]
        for fut in as_completed(futures):
            for res in fut.result():
                results[(label(res["config"], 0), res["case"], res["setting"])] = res
    wall = time.perf_counter() - t_start

    reg, clf = BongRegressor(), BongClassifier()
    shown = ("family", "rank", "hessian", "learning_rate", "n_iter", "mc_samples",
             "prior_variance", "dtype", "activation")
    lines = [
        "== Survival of family x rule: rows refused (on_error='skip', n_skipped_) per case",
        f"   command: python {' '.join(sys.argv)}",
        f"   revision: {git_revision()}",
        "   BongRegressor defaults: "
        + ", ".join(f"{k}={reg.get_params()[k]!r}" for k in (*shown, "obs_variance")),
        "   BongClassifier defaults: " + ", ".join(f"{k}={clf.get_params()[k]!r}" for k in shown),
        f"   old explicit regression settings: {OLD}; case e: {CASE_E}",
        "   stream rows: " + ", ".join(
            f"{name} {load_case(name, args.data_dir, rows[name])[0].shape[0]}" for name in cases),
        f"   load average at the end {' '.join(f'{v:.2f}' for v in os.getloadavg())} on "
        f"{os.cpu_count()} cores; {args.jobs} worker process(es); wall time {wall:.0f} s",
    ]
    if missing:
        lines.append(f"   not found under {args.data_dir}: {', '.join(missing)} (skipped)")
    lines += [
        "",
        "cell: refused rows (fraction of the stream); ' !' = predictions on held-out rows not "
        "finite; n/r = not run (cost, see below); err = the fit raised",
    ]
    rank = reg.get_params()["rank"]

    def block(title, columns, fmt):
        head = ["configuration"] + [f"{n}" for n, _ in columns]
        body = [[label(c, rank)] + [fmt(results.get((label(c, 0), n, s))) for n, s in columns]
                for c in configs]
        return ["", title, *format_table(body, head)]

    lines += block("-- defaults (case e: prior 0.5, obs 0.1, float64)", columns_default, cell)
    if columns_old:
        lines += block(f"-- regression at the old explicit settings {OLD}", columns_old, cell)
    lines += block("-- held-out quality at defaults: RMSE (a, c standardised y; e raw y) or "
                   "accuracy (b, d); nan = not finite", columns_default, metric_cell)
    # totals per configuration and the reasons for n/r and err
    lines += ["", "-- summary per configuration over the cases run (both settings)"]
    summary = []
    for c in configs:
        rs = [r for k, r in results.items() if k[0] == label(c, 0) and "skipped" in r]
        if not rs:
            continue
        refused = sum(r["skipped"] for r in rs)
        total = sum(r["n"] for r in rs)
        summary.append([label(c, rank), f"{len(rs)}", f"{sum(r['skipped'] > 0 for r in rs)}",
                        f"{sum(not r['usable'] for r in rs)}", f"{refused}/{total}",
                        f"{100.0 * refused / total:.1f}%", f"{sum(r['seconds'] for r in rs):.0f}"])
    lines += format_table(summary, ["configuration", "cases", "with refusals", "unusable",
                                    "refused rows", "fraction", "seconds"])
    notes = sorted({r["not_run"] for r in results.values() if "not_run" in r})
    errors = sorted({f"{label(r['config'], rank)} {r['case']} {r['setting']}: {r['error']}"
                     for r in results.values() if "error" in r})
    if notes:
        lines += ["", "n/r: " + "; ".join(notes)]
    if errors:
        lines += ["", "errors:"] + [f"  {e}" for e in errors]
    text = "\n".join(lines)
    print(text)
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text + "\n")
        print(f"\nwrote {args.out}")


if __name__ == "__main__":
    main()
