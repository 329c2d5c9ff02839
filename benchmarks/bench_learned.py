"""Learned noise and learned prior against fixed grids, on the UCI regression sets.

Two claims of ``BongRegressor`` are measured here, nothing is tuned:

1. the learned observation noise (``obs_variance="auto"``, the default) predicts within
   0.1 nats of the best fixed noise variance chosen in hindsight on the test part;
2. the learned prior (``prior_variance="auto"``, a bank of 7 filters over
   σ₀² ∈ {10⁻³, …, 10³} weighted by their online evidence) predicts within 0.05 nats of
   the best fixed prior variance of the same grid chosen in hindsight.

Protocol
--------
The 7 UCI regression sets of ``--data-dir`` (``uci/<name>/<name>.npz``, the splits of
Hernandez-Lobato & Adams 2015 / Gal & Ghahramani 2016; a missing set is skipped), loaded
by ``benchmarks/paper/uci_regression.py``'s ``load``. Split 0 of each set (``--splits K``
averages the NLLs, coverages and times over the first K splits). X and y are
standardised with the training part's mean and standard deviation; each estimator sees
the training rows once, in the split's order (one ``fit``). Two models per set: linear
``BongRegressor()`` and ``BongRegressor(hidden_layer_sizes=(50,))``, both with
``random_state=0`` and every other parameter at its default unless the column varies
it. Every fixed value (noise variance, prior variance) is in standardised units.

The test metric is the mean negative log predictive density of the test targets in
nats on the original scale of y: ``-mean(est.predict_logpdf(X_test, y_test_std))`` +
log(sd_y) (Student-t predictive when the noise is learned, Gaussian when it is fixed;
a mixture over the bank with the learned prior). Lower is better. "Best in hindsight"
is the lowest NLL of the fixed grid on the test part itself, an oracle no online
learner has; the gap (auto - best) is then what learning the value costs against that
oracle (negative: auto is better than every grid value).

Columns
-------
Table 1 (learned noise, prior variance 1): ``auto`` the NLL at defaults
(``obs_variance="auto"``); ``R=v`` the NLL with ``obs_variance=v``; ``best`` and
``best_R`` the lowest of the fixed columns and its value; ``gap`` = auto - best;
``ok`` whether gap ≤ 0.1; ``R_learned`` the learned noise variance ``obs_variance_``
at the end of the fit (standardised units); ``rmse_auto`` and ``rmse_best`` the test
RMSE of the predictive mean (standardised units) at defaults and with ``best_R``: a
fixed R also sets the size of every step, so where a small R wins, it is usually by a
better-fitted mean after one pass rather than by a better noise estimate.

Table 2 (learned prior, noise learned): ``auto`` the NLL with ``prior_variance="auto"``;
``s2=v`` the NLL with ``prior_variance=v`` (``s2=1`` is the default estimator, the same
fit as Table 1's ``auto``); ``best``, ``best_s2``, ``gap`` = auto - best and ``ok``
(gap ≤ 0.05) as above. Table 2, continued: ``s2_auto`` is ``prior_variance_`` (the
bank's value of largest weight; one per split, "/"-separated, with ``--splits``) and
``w_max`` that weight; ``fit_s_auto`` and
``fit_s_s2=1`` are wall seconds of one fit with the learned and with the default prior,
each the fastest of ``--repeats`` fits of fresh estimators, both already compiled by
the scored fits (the two are run in turn so that both see the same machine load);
``ratio`` = fit_s_auto / fit_s_s2=1; ``compile_s_auto`` is the first fit of the auto
estimator on the set (split 0, the scored fit) less its fastest fit, i.e. the one-off
JAX compilation (near 0 when a program compiled for an earlier set is reused);
``cov90_def`` and
``cov90_auto`` are the fraction of test targets inside the central 90 % interval
``predict_interval(X_test, coverage=0.9)`` (standardised units; target 0.90) at
defaults and with the learned prior.

Table 3 (``--coverage-splits K``, default 20; 0 skips it): the fraction of test
targets inside the central 90 % interval at defaults, pooled over the first K splits,
with the range over splits and the mean NLL, for the linear model, the network, the
network with ``noise_discount=1`` (no discounting of the learned noise) and
scikit-learn's ``BayesianRidge`` (the same Gaussian linear model with noise and prior
fitted by evidence maximisation, a reference from outside skbong): where the linear
model misses 0.90, BayesianRidge misses it alike, so the miss is the model's
(non-Gaussian or heteroscedastic residuals), not the inference's.

A fit or prediction that raises (e.g. ``skbong.exceptions.NonFiniteUpdateError``) is
shown as "FAILED <exception class>" in its cell and the run goes on; ``notes`` names
the warnings raised by a row's estimators (e.g. ``SkippedRowsWarning`` when the bank
dropped a filter whose update was not finite). A case whose ``auto`` cell failed counts
as not meeting its claim.

The full grid is run for both models (every fit here takes seconds), so no column is
reduced for the network.

Usage: ``python benchmarks/bench_learned.py [--quick] [--splits K] [--repeats N]
[--coverage-splits K] [--data-dir DIR] [--out FILE]``; ``--quick`` runs yacht and energy, linear only.
"""

import argparse
import math
import os
import subprocess
import sys
import time
import traceback
import warnings
from pathlib import Path

import numpy as np
from _common import DEFAULT_DATA, Tee, cpu_model, load_note
from paper.uci_regression import load

from skbong import BongRegressor

HERE = Path(__file__).resolve().parent

UCI = ("bostonHousing", "concrete", "energy", "kin8nm", "power-plant", "wine-quality-red",
       "yacht")
UCI_QUICK = ("yacht", "energy")
MODELS = {"linear": {}, "mlp(50,)": {"hidden_layer_sizes": (50,)}}
OBS_GRID = (0.01, 0.03, 0.1, 0.3, 1.0)
PRIOR_GRID = (1e-3, 1e-2, 1e-1, 1.0, 10.0, 100.0, 1000.0)
NOISE_TOL, PRIOR_TOL = 0.1, 0.05


# ---------------------------------------------------------------- output


def progress(msg):
    print(msg, file=sys.stderr, flush=True)


def fmt(v, spec="{:.4f}"):
    if v is None:
        return "-"
    if isinstance(v, str):
        return v
    if isinstance(v, bool):
        return "yes" if v else "NO"
    if isinstance(v, float) and not math.isfinite(v):
        return str(v)
    return spec.format(v)


def print_table(rows, columns, left=("set", "model", "notes")):
    cells = [[str(r.get(c, "-")) for c in columns] for r in rows]
    widths = [max([len(c)] + [len(row[i]) for row in cells]) for i, c in enumerate(columns)]
    just = [(str.ljust if c in left else str.rjust) for c in columns]
    print("  ".join(j(c, w) for c, w, j in zip(columns, widths, just)).rstrip())
    for row in cells:
        print("  ".join(j(v, w) for v, w, j in zip(row, widths, just)).rstrip())


def git_revision():
    try:
        out = subprocess.run(["git", "-C", str(HERE.parent), "rev-parse", "--short", "HEAD"],
                             capture_output=True, text=True, check=True)
        return out.stdout.strip()
    except (OSError, subprocess.CalledProcessError):  # pragma: no cover - not a checkout
        return "unknown"


# ---------------------------------------------------------------- data


def splits(data_dir, name, n_splits):
    """The first ``n_splits`` standardised splits of a set: (Xtr, ytr, Xte, yte, log sd_y),
    or None when the set is not in ``data_dir``."""
    if not (Path(data_dir) / "uci" / name / f"{name}.npz").exists():
        return None
    X, y, train_idx, test_idx = load(Path(data_dir), name)
    out = []
    for k in range(min(n_splits, len(train_idx))):
        tr, te = train_idx[k], test_idx[k]
        x_mean, x_sd = X[tr].mean(0), X[tr].std(0)
        x_sd[x_sd == 0] = 1.0
        y_mean, y_sd = y[tr].mean(), y[tr].std()
        out.append(((X[tr] - x_mean) / x_sd, (y[tr] - y_mean) / y_sd,
                    (X[te] - x_mean) / x_sd, (y[te] - y_mean) / y_sd, math.log(y_sd)))
    return out


# ---------------------------------------------------------------- one estimator


class Failed(Exception):
    """A cell that could not be computed (carries the original exception's class)."""

    def __init__(self, exc):
        super().__init__(type(exc).__name__)
        self.name = type(exc).__name__


def make(arch, **params):
    return lambda: BongRegressor(random_state=0, passes=1, **arch, **params)  # one pass


def scores(est, Xte, yte, log_sd):
    """NLL on the original scale, 90 % coverage and fitted attributes of a fitted estimator."""
    nll = -float(np.mean(est.predict_logpdf(Xte, yte))) + log_sd
    lo, hi = (np.asarray(a, float) for a in est.predict_interval(Xte, coverage=0.9))
    out = {"nll": nll, "cov90": float(np.mean((yte >= lo) & (yte <= hi))),
           "obs_var": float(np.ravel(est.obs_variance_)[0]),
           "rmse": float(np.sqrt(np.mean((est.predict(Xte) - yte) ** 2)))}
    if est.prior_variance == "auto":
        out["prior_var"] = est.prior_variance_
        out["w_max"] = float(np.max(est.prior_weights_))
    return out


def evaluate(factory, data, caught_names):
    """Scores of one configuration averaged over the splits; raises Failed. The
    ``first_fit_s`` of split 0 is the first fit of this configuration in the run (it
    includes the JAX compilation; the splits of a set share one compiled program)."""
    per = []
    for Xtr, ytr, Xte, yte, log_sd in data:
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                t0 = time.perf_counter()
                est = factory().fit(Xtr, ytr)
                seconds = time.perf_counter() - t0
                per.append(scores(est, Xte, yte, log_sd))
                per[-1]["first_fit_s"] = seconds
            caught_names.update(w.category.__name__ for w in caught)
        except Exception as exc:  # noqa: BLE001 - a failure is a result, not the end
            progress("  FAILED\n" + "".join(traceback.format_exception(exc)[-3:]))
            raise Failed(exc) from exc
    out = {k: float(np.mean([p[k] for p in per])) for k in per[0]}
    out["first_fit_s"] = per[0]["first_fit_s"]
    if "prior_var" in per[0]:  # a grid value per split, not averaged
        out["prior_var"] = "/".join(f"{p['prior_var']:g}" for p in per)
    return out


def timed_pair(make_a, make_b, data, repeats):
    """Fastest fit wall time of two configurations over ``repeats`` fresh fits each, run
    in turn (both already compiled by :func:`evaluate`), per split."""
    t_a, t_b = [], []
    for Xtr, ytr, *_ in data:
        best = {"a": math.inf, "b": math.inf}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for _ in range(repeats):
                for key, mk in (("a", make_a), ("b", make_b)):
                    t0 = time.perf_counter()
                    mk().fit(Xtr, ytr)
                    best[key] = min(best[key], time.perf_counter() - t0)
        t_a.append(best["a"])
        t_b.append(best["b"])
    return t_a, t_b


def try_eval(factory, data, notes):
    try:
        return evaluate(factory, data, notes)
    except Failed as f:
        return f"FAILED {f.name}"


def hindsight(results, grid):
    """Lowest finite NLL of the grid and its value (None when none is finite)."""
    ok = [(r["nll"], v) for v, r in zip(grid, results)
          if isinstance(r, dict) and math.isfinite(r["nll"])]
    return min(ok) if ok else (None, None)


# ---------------------------------------------------------------- one case


def run_case(name, label, arch, data, repeats):
    notes = set()
    progress(f"{name} {label}: defaults")
    default = try_eval(make(arch), data, notes)

    row1 = {"set": name, "model": label}
    fixed = []
    for v in OBS_GRID:
        progress(f"{name} {label}: obs_variance={v:g}")
        fixed.append(try_eval(make(arch, obs_variance=v), data, notes))
    row1 |= case_cells(default, fixed, OBS_GRID, "R", NOISE_TOL)
    row1["R_learned"] = fmt(default["obs_var"]) if isinstance(default, dict) else "-"
    row1["rmse_auto"] = fmt(default["rmse"], "{:.3f}") if isinstance(default, dict) else "-"
    best_r = row1["best_R"]
    row1["rmse_best"] = next((fmt(r["rmse"], "{:.3f}") for v, r in zip(OBS_GRID, fixed)
                              if f"{v:g}" == best_r and isinstance(r, dict)), "-")

    notes2 = set()
    progress(f"{name} {label}: prior_variance='auto'")
    auto = try_eval(make(arch, prior_variance="auto"), data, notes2)
    grid = []
    for v in PRIOR_GRID:
        if v == 1.0:  # the default estimator, already fitted
            grid.append(default)
            continue
        progress(f"{name} {label}: prior_variance={v:g}")
        grid.append(try_eval(make(arch, prior_variance=v), data, notes2))
    row2 = {"set": name, "model": label}
    row2 |= case_cells(auto, grid, PRIOR_GRID, "s2", PRIOR_TOL)

    row3 = {"set": name, "model": label}
    if isinstance(auto, dict):
        row3["s2_auto"] = auto["prior_var"]
        row3["w_max"] = fmt(auto["w_max"], "{:.3f}")
        row3["cov90_auto"] = fmt(auto["cov90"], "{:.3f}")
    else:
        row3["cov90_auto"] = auto
    row3["cov90_def"] = (fmt(default["cov90"], "{:.3f}") if isinstance(default, dict)
                         else default)
    if isinstance(auto, dict) and isinstance(default, dict):
        progress(f"{name} {label}: timing auto vs prior_variance=1")
        t_auto, t_one = timed_pair(make(arch, prior_variance="auto"), make(arch), data,
                                   repeats)
        c_auto = max(auto["first_fit_s"] - t_auto[0], 0.0)
        t_auto, t_one = float(np.mean(t_auto)), float(np.mean(t_one))
        row3 |= {"fit_s_auto": fmt(t_auto, "{:.3f}"), "fit_s_s2=1": fmt(t_one, "{:.3f}"),
                 "ratio": fmt(t_auto / t_one, "{:.2f}"),
                 "compile_s_auto": fmt(c_auto, "{:.2f}")}
    row1["notes"] = " ".join(sorted(notes))
    row2["notes"] = row3["notes"] = " ".join(sorted(notes2))
    return row1, row2, row3


def case_cells(auto, fixed, grid, prefix, tol):
    """Cells of one row: auto, each grid value, best in hindsight, gap and the claim."""
    cells = {"auto": fmt(auto["nll"]) if isinstance(auto, dict) else auto}
    for v, r in zip(grid, fixed):
        cells[f"{prefix}={v:g}"] = fmt(r["nll"]) if isinstance(r, dict) else r
    best, best_v = hindsight(fixed, grid)
    cells["best"] = fmt(best)
    cells[f"best_{prefix}"] = "-" if best_v is None else f"{best_v:g}"
    gap = None
    if isinstance(auto, dict) and best is not None and math.isfinite(auto["nll"]):
        gap = auto["nll"] - best
    cells["gap"] = fmt(gap, "{:+.4f}")
    cells["ok"] = fmt(bool(gap is not None and gap <= tol))
    cells["_gap"] = gap
    return cells


def claim_line(rows, tol, what):
    gaps = [r["_gap"] for r in rows]
    met = sum(g is not None and g <= tol for g in gaps)
    unscored = sum(g is None for g in gaps)
    extra = f" ({unscored} could not be scored: auto or every grid value failed)" if unscored else ""
    print(f"Claim ({what}, gap <= {tol} nats): {met} of {len(rows)} cases meet it{extra}")


# ---------------------------------------------------------------- coverage

COVERAGE_MODELS = {
    "linear": {},
    "linear preq.": {"calibration": "prequential"},
    "linear uncal.": {"calibration": None},
    "mlp(50,)": {"hidden_layer_sizes": (50,)},
    "mlp(50,) cal.": {"hidden_layer_sizes": (50,), "calibration": "prequential"},
}


def coverage_table(data_dir, names, n_splits):
    """Table 3: test points inside the central 90 % interval at defaults, pooled over the
    first ``n_splits`` splits (the spread over splits in brackets), next to BayesianRidge's
    (the exact Gaussian linear model with evidence-fitted noise and prior) and the mean
    NLL. The defaults calibrate the linear model's intervals on the leave-one-out PITs of
    its last 1,000 rows and not the network's (``calibration="auto"``); ``preq.`` is the
    linear model calibrated on its prequential PITs, ``uncal.`` the linear model with
    ``calibration=None`` (its own quantiles), ``cal.`` the network with
    ``calibration="prequential"``."""
    from scipy import stats
    from sklearn.linear_model import BayesianRidge

    print(f"\n== Table 3: 90 % intervals at defaults, pooled over {n_splits} splits "
          "(target 0.90; [min-max over splits]); nll: mean over splits")
    z = stats.norm.ppf(0.95)
    rows = []
    for name in names:
        data = splits(data_dir, name, n_splits)
        if data is None:
            continue
        progress(f"{name}: coverage over {len(data)} splits")
        hits = {k: [] for k in (*COVERAGE_MODELS, "BayesianRidge")}
        nll = {k: [] for k in hits}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for Xtr, ytr, Xte, yte, log_sd in data:
                for label, params in COVERAGE_MODELS.items():
                    est = BongRegressor(random_state=0, passes=1, **params).fit(Xtr, ytr)
                    lo, hi = est.predict_interval(Xte, coverage=0.9)
                    hits[label].append((yte >= lo) & (yte <= hi))
                    nll[label].append(-np.mean(est.predict_logpdf(Xte, yte)) + log_sd)
                br = BayesianRidge().fit(Xtr, ytr)
                m, sd = br.predict(Xte, return_std=True)
                hits["BayesianRidge"].append(np.abs(yte - m) <= z * sd)
                nll["BayesianRidge"].append(-np.mean(stats.norm.logpdf(yte, m, sd)) + log_sd)
        row = {"set": name, "n_test": str(sum(len(h) for h in hits["linear"]))}
        for k, h in hits.items():
            per = [np.mean(a) for a in h]
            row[k] = (f"{np.mean(np.concatenate(h)):.3f} [{min(per):.2f}-{max(per):.2f}] "
                      f"{np.mean(nll[k]):.3f}")
        rows.append(row)
    print_table(rows, ["set", "n_test", *COVERAGE_MODELS, "BayesianRidge"])
    for k in (*COVERAGE_MODELS, "BayesianRidge"):
        inside = sum(0.88 <= float(r[k].split()[0]) <= 0.92 for r in rows)
        print(f"{k}: pooled coverage in 0.88-0.92 on {inside} of {len(rows)} sets")


# ---------------------------------------------------------------- main


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data-dir", type=Path, default=DEFAULT_DATA,
                   help="folder holding uci/ (default: ../shared/data from the repo root)")
    p.add_argument("--splits", type=int, default=1, help="average over the first K splits")
    p.add_argument("--repeats", type=int, default=3,
                   help="warm fits timed per configuration (the fastest is kept)")
    p.add_argument("--coverage-splits", type=int, default=20,
                   help="splits pooled by Table 3 (90 %% coverage at defaults); 0 skips it")
    p.add_argument("--quick", action="store_true", help="yacht and energy, linear model only")
    p.add_argument("--out", type=Path, default=None, help="also write the output to this file")
    args = p.parse_args()

    tee = Tee(sys.stdout)
    sys.stdout = tee
    start = time.perf_counter()
    names = UCI_QUICK if args.quick else UCI
    models = {"linear": MODELS["linear"]} if args.quick else MODELS

    print("bench_learned: learned noise and learned prior against fixed grids, UCI regression")
    print(f"command: {' '.join([os.path.basename(sys.executable)] + sys.argv)}")
    print(f"skbong revision {git_revision()}; {cpu_model()}, {os.cpu_count()} cores")
    print(f"start: {load_note()}")
    print(f"splits: first {args.splits} of each set; NLL in nats on the original scale of y "
          "(lower is better); fixed values in standardised units")

    rows1, rows2, rows3 = [], [], []
    for name in names:
        data = splits(args.data_dir, name, args.splits)
        if data is None:
            print(f"{name}: skipped (not found under {args.data_dir}/uci)")
            continue
        for label, arch in models.items():
            r1, r2, r3 = run_case(name, label, arch, data, args.repeats)
            rows1.append(r1)
            rows2.append(r2)
            rows3.append(r3)

    print("\n== Table 1: learned noise (obs_variance='auto') vs fixed obs_variance R; "
          "prior_variance=1")
    print_table(rows1, ["set", "model", "auto", *(f"R={v:g}" for v in OBS_GRID), "best",
                        "best_R", "gap", "ok", "R_learned", "rmse_auto", "rmse_best",
                        "notes"])
    claim_line(rows1, NOISE_TOL, "learned noise")

    print("\n== Table 2: learned prior (prior_variance='auto') vs fixed prior_variance s2; "
          "obs_variance='auto'")
    print_table(rows2, ["set", "model", "auto", *(f"s2={v:g}" for v in PRIOR_GRID), "best",
                        "best_s2", "gap", "ok", "notes"])
    claim_line(rows2, PRIOR_TOL, "learned prior")

    print("\n== Table 2, continued: choice, fit time and 90 % coverage (target 0.90)")
    print_table(rows3, ["set", "model", "s2_auto", "w_max", "fit_s_auto", "fit_s_s2=1", "ratio",
                        "compile_s_auto", "cov90_def", "cov90_auto", "notes"])
    ratios = [float(r["ratio"]) for r in rows3 if "ratio" in r]
    if ratios:
        print(f"fit time ratio auto / s2=1: median {np.median(ratios):.2f}, "
              f"range {min(ratios):.2f} to {max(ratios):.2f}")

    if args.coverage_splits:
        coverage_table(args.data_dir, names, args.coverage_splits)

    print(f"\nend: {load_note()}; total wall time {time.perf_counter() - start:.0f} s")
    sys.stdout = tee.stream
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(tee.text())
        print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
