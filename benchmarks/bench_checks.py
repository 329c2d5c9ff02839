"""scikit-learn's estimator checks on every family × rule at otherwise default parameters.

``tests/test_sklearn_checks.py`` runs the checks on seven configurations that jointly
cover every family, rule and hessian (a test suite cannot afford more: each check set
is a few dozen fits, most of them compiling new programs). This script runs
``sklearn.utils.estimator_checks.check_estimator`` on all 5 families × 4 rules, for
both estimators, with only ``family``, ``rule`` and ``random_state=0`` set (``mc_hess``
is not needed: the default hessian is ``lin_hess``), and prints which checks fail and
with which exception, so that every failure has a measured cause.

Columns: configuration, checks passed / failed (out of the checks run; a check whose
variants, e.g. ``readonly_memmap=True``, share its name counts once, as failed if any
variant fails), and for each failing check the exception class and the first line of
its message (the row refused by a ``NonFiniteUpdateError``, the assertion of a check),
grouped when several checks fail for the same reason. Each configuration ends with its
comparison against ``skbong.expected_failed_checks`` (a failure it does not list, or an
entry that passed, is a stale table), and ``--table`` prints the refused-row table of
``skbong/_compat.py`` (``_REFUSED``) from the measured failures.

Usage: ``python benchmarks/bench_checks.py [--estimator regressor|classifier|both]
[--family F ...] [--rule R ...] [--out FILE] [--table]``
"""

import argparse
import os
import sys
import time
import warnings
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, os.environ.get("SKBONG_SRC", str(REPO)))

from sklearn.utils.estimator_checks import check_estimator  # noqa: E402

from skbong import BongClassifier, BongRegressor, expected_failed_checks  # noqa: E402
from skbong._compat import SAMPLE_WEIGHT_CHECK  # noqa: E402
from skbong.engine import FAMILY_NAMES, RULE_NAMES  # noqa: E402

ESTIMATORS = {"regressor": BongRegressor, "classifier": BongClassifier}


def first_line(exc):
    text = str(exc).strip().splitlines()
    line = text[0] if text else ""
    if not line and len(text) > 1:
        line = text[1]
    return f"{type(exc).__name__}: {line[:150]}" if line else type(exc).__name__


def run_one(cls, family, rule):
    """Run every check on one configuration; return (n_passed, {check: reason})."""
    est = cls(family=family, rule=rule, random_state=0)
    results = {}

    def callback(*, estimator, check_name, exception, status, expected_to_fail, expected_to_fail_reason):
        if results.get(check_name, ("",))[0] == "failed":
            return  # an earlier variant of this check failed: that is its result
        results[check_name] = (status, None if exception is None else first_line(exception))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check_estimator(est, on_fail=None, on_skip=None, callback=callback)
    failed = {k: v[1] for k, v in results.items() if v[0] == "failed"}
    passed = sum(v[0] == "passed" for v in results.values())
    return passed, failed, set(expected_failed_checks(est))


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--estimator", choices=("regressor", "classifier", "both"), default="both")
    p.add_argument("--family", nargs="*", default=list(FAMILY_NAMES))
    p.add_argument("--rule", nargs="*", default=list(RULE_NAMES))
    p.add_argument("--out", type=Path, default=None)
    p.add_argument("--table", action="store_true", help="print skbong._compat._REFUSED")
    args = p.parse_args()
    lines = []

    def emit(text=""):
        print(text, flush=True)
        lines.append(text)
        if args.out is not None:  # rewritten as it goes: an interrupted run keeps its rows
            args.out.write_text("\n".join(lines) + "\n")

    import subprocess

    rev = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    emit("bench_checks: scikit-learn's check_estimator on every family x rule at defaults")
    emit(f"command: python benchmarks/bench_checks.py {' '.join(sys.argv[1:])}".rstrip())
    emit(f"skbong revision {rev}; load average {' '.join(f'{v:.2f}' for v in os.getloadavg())}")
    start = time.time()
    names = ("regressor", "classifier") if args.estimator == "both" else (args.estimator,)
    summary, table = [], {}
    for name in names:
        for family in args.family:
            for rule in args.rule:
                t0 = time.time()
                passed, failed, listed = run_one(ESTIMATORS[name], family, rule)
                config = f"{name} family={family} rule={rule}"
                emit(f"\n== {config}: {passed} passed, {len(failed)} failed ({time.time() - t0:.0f} s)")
                by_reason = defaultdict(list)
                for check, reason in failed.items():
                    by_reason[reason].append(check)
                for reason, checks in by_reason.items():
                    emit(f"   {len(checks)} x {reason}")
                    emit(f"      {', '.join(sorted(checks))}")
                missing, stale = sorted(set(failed) - listed), sorted(listed - set(failed))
                emit(f"   expected_failed_checks: {len(listed)} listed"
                     + (f"; failed, not listed: {', '.join(missing)}" if missing else "")
                     + (f"; listed, passed: {', '.join(stale)}" if stale else ""))
                summary.append((config, passed, len(failed), "yes" if not missing + stale else "NO"))
                refused = sorted(c[len("check_"):] for c in failed if c != SAMPLE_WEIGHT_CHECK)
                if refused:
                    table[name, family, rule] = refused
    emit("\n== summary: configuration, checks passed, failed, expected_failed_checks exact")
    for config, passed, n_failed, exact in summary:
        emit(f"   {config:45s} {passed:4d} {n_failed:4d}  {exact}")
    emit(f"\nwall time {time.time() - start:.0f} s; load average "
         f"{' '.join(f'{v:.2f}' for v in os.getloadavg())}")
    if args.table:
        print_table(table)


def print_table(table):
    """Print the measured refusals as skbong/_compat.py's ``_EVERY`` and ``_REFUSED``:
    a row is its checks, or ``*`` (every check of its kind in ``_EVERY``) followed by
    ``-name`` for each one left out, whichever is shorter."""

    def entry(key, items):  # one line where it fits in 100 columns, as ruff formats it
        text = " ".join(items)
        if len(key) + len(text) + 10 <= 100:
            print(f'    {key}: "{text}",')
            return
        print(f"    {key}: (")
        line = ""
        for item in items:
            if len(line) + len(item) > 86:
                print(f'        "{line.rstrip()} "')
                line = ""
            line += item + " "
        print(f'        "{line.rstrip()}"\n    ),')

    every = defaultdict(set)
    for (kind, _, _), checks in table.items():
        every[kind].update(checks)
    print("_EVERY = {")
    for kind, checks in every.items():
        entry(f'"{kind}"', sorted(checks))
    print("}\n_REFUSED = {")
    for key, checks in table.items():
        rest = sorted(every[key[0]] - set(checks))
        short = ["*"] + ["-" + name for name in rest]
        entry("(" + ", ".join(f'"{k}"' for k in key) + ")", short if len(rest) < len(checks) else checks)
    print("}")


if __name__ == "__main__":
    main()
