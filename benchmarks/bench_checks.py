"""scikit-learn's estimator checks on a generated sample of configurations.

The configurations are drawn from the product of every axis that changes what an
estimator does (:data:`AXES`: estimator, family, rule, hessian, model, predictive,
backtrack, the regressor's likelihood, the variational solver), valid combinations only
(``skbong.engine.check_names``), by a seeded greedy covering design
(:func:`sample_configurations`): each next configuration is the one that adds the most
axis values not yet covered, then the most pairs of values, ties broken by a seeded
shuffle of the product. The first configurations of the sample cover every value of
every axis; ``tests/test_sklearn_checks.py`` runs that prefix in its quick lane and a
longer prefix under ``-m slow``.

For each configuration ``sklearn.utils.estimator_checks.check_estimator`` runs every
check (``on_fail=None`` with a ``callback``), and this prints which fail and with which
exception (the row refused by a ``NonFiniteUpdateError``, the assertion of a check),
grouped by message, then the comparison with ``skbong.expected_failed_checks`` (a
failure it does not list, or a listed check that passed: a stale declaration).
``--table`` prints the table of measured failures of ``skbong/_compat.py``
(``_MEASURED``) from the failures beyond the sample-weight check; ``--from-results FILE``
prints it from a results file this wrote (``--out``), without running the checks.

``--defaults`` runs the three Bong estimators at their defaults instead of the sample.

Usage: ``python benchmarks/bench_checks.py [--sample N] [--start K] [--seed S]
[--defaults] [--out FILE] [--table] [--from-results FILE]``
"""

import argparse
import itertools
import json
import os
import random
import subprocess
import sys
import time
import warnings
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, os.environ.get("SKBONG_SRC", str(REPO)))

from sklearn.utils.estimator_checks import check_estimator  # noqa: E402

import skbong  # noqa: E402
from skbong import engine  # noqa: E402
from skbong._compat import NETWORK, SAMPLE_WEIGHT_CHECK, measured_only  # noqa: E402

_BONG = {
    "family": engine.FAMILY_NAMES,
    "rule": engine.RULE_NAMES,
    "hessian": engine.HESSIAN_NAMES,
    "model": ("linear", "network"),
    "predictive": engine.PREDICTIVES,
    "backtrack": (0, 20),
}
AXES = (
    {"estimator": ("BongRegressor",), **_BONG, "likelihood": ("gaussian", "student_t")},
    {"estimator": ("BongClassifier", "BongPoissonRegressor"), **_BONG},
    {
        "estimator": ("VariationalRegressor", "VariationalClassifier"),
        "solver": ("vogn", "vadam"),
        "model": ("linear", "network"),
        "predictive": engine.PREDICTIVES,
    },
)
"""The axes of the sample, one product per group of estimators that share them; every
other parameter stays at its default (``random_state=0``)."""


DEFAULTS = [{"estimator": name} for name in ("BongRegressor", "BongClassifier", "BongPoissonRegressor")]
"""The Bong estimators at their defaults (``--defaults``; ``random_state=0``)."""


def _valid(config):
    try:
        engine.check_names(family=config.get("family"), hessian=config.get("hessian"))
    except ValueError:
        return False
    return True


def sample_configurations(n, seed=0):
    """The first ``n`` configurations of the seeded greedy covering design (module
    docstring), as dicts of axis values; a prefix of a longer sample is the shorter one."""
    pool = [
        dict(zip(axes, values))
        for axes in AXES
        for values in itertools.product(*axes.values())
        if _valid(dict(zip(axes, values)))
    ]
    random.Random(seed).shuffle(pool)
    singles, pairs, chosen = set(), set(), []

    def gain(config):
        items = sorted(config.items())
        return len(set(items) - singles), len(set(itertools.combinations(items, 2)) - pairs)

    for _ in range(min(n, len(pool))):
        best = max(pool, key=gain)  # the first of the maxima in the shuffled order
        pool.remove(best)
        chosen.append(best)
        items = sorted(best.items())
        singles.update(items)
        pairs.update(itertools.combinations(items, 2))
    return chosen


def covering_prefix(seed=0):
    """How many configurations of :func:`sample_configurations` it takes to cover every
    value of every axis."""
    values = {(k, v) for axes in AXES for k, vs in axes.items() for v in vs}
    sample = sample_configurations(len(values), seed)
    seen = set()
    for i, config in enumerate(sample):
        seen.update(config.items())
        if seen >= values:
            return i + 1
    raise AssertionError("the sample does not cover every axis value")


def build(config):
    """The estimator of a configuration of the sample (``random_state=0``; without
    ``model``, the linear model)."""
    params = dict(config)
    cls = getattr(skbong, params.pop("estimator"))
    params["hidden_layer_sizes"] = () if params.pop("model", "linear") == "linear" else NETWORK
    return cls(random_state=0, **params)


def first_line(exc):
    text = str(exc).strip().splitlines()
    line = text[0] if text else ""
    if not line and len(text) > 1:
        line = text[1]
    return f"{type(exc).__name__}: {line[:150]}" if line else type(exc).__name__


def run_checks(estimator):
    """Run every check on ``estimator``; return ({failed check: first line of its
    exception}, {passed check names}). A check whose variants (``readonly_memmap=True``,
    …) share its name counts once, as failed if any variant fails."""
    results = {}

    def callback(*, estimator, check_name, exception, status, expected_to_fail, expected_to_fail_reason):
        if results.get(check_name, ("",))[0] == "failed":
            return
        results[check_name] = (status, None if exception is None else first_line(exception))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check_estimator(estimator, on_fail=None, on_skip=None, callback=callback)
    failed = {k: v[1] for k, v in results.items() if v[0] == "failed"}
    passed = {k for k, v in results.items() if v[0] == "passed"}
    return failed, passed


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sample", type=int, default=24, help="configurations (default 24)")
    p.add_argument("--start", type=int, default=0, help="first configuration to run")
    p.add_argument("--defaults", action="store_true", help="the Bong estimators' defaults instead")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path, default=None)
    p.add_argument("--table", action="store_true", help="print skbong._compat._MEASURED")
    p.add_argument("--from-results", type=Path, default=None, help="print the table from FILE")
    args = p.parse_args()
    if args.from_results is not None:
        print_table(read_results(args.from_results))
        return
    lines = []

    def emit(text=""):
        print(text, flush=True)
        lines.append(text)
        if args.out is not None:  # rewritten as it goes: an interrupted run keeps its rows
            args.out.write_text("\n".join(lines) + "\n")

    rev = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    emit("bench_checks: scikit-learn's check_estimator on a generated sample of configurations")
    emit(f"command: python benchmarks/bench_checks.py {' '.join(sys.argv[1:])}".rstrip())
    emit(f"skbong revision {rev}; XLA_FLAGS={os.environ.get('XLA_FLAGS', '')!r}")
    emit(f"load average {' '.join(f'{v:.2f}' for v in os.getloadavg())}")
    start = time.time()
    summary, table = [], []
    sample = DEFAULTS if args.defaults else sample_configurations(args.sample, args.seed)
    for i, config in enumerate(sample[args.start :], args.start):
        est = build(config)
        t0 = time.time()
        failed, passed = run_checks(est)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # an unmeasured configuration warns
            listed = set(skbong.expected_failed_checks(est))
        text = " ".join(f"{k}={v}" for k, v in config.items())
        emit(f"\n== [{i}] {text}: {len(passed)} passed, {len(failed)} failed ({time.time() - t0:.0f} s)")
        by_reason = defaultdict(list)
        for check, reason in failed.items():
            by_reason[reason].append(check)
        for reason, checks in by_reason.items():
            emit(f"   {len(checks)} x {reason}")
            emit(f"      {', '.join(sorted(checks))}")
        missing, stale = sorted(set(failed) - listed), sorted(listed - set(failed))
        emit(
            f"   expected_failed_checks: {len(listed)} listed"
            + (f"; failed, not listed: {', '.join(missing)}" if missing else "")
            + (f"; listed, passed: {', '.join(stale)}" if stale else "")
        )
        summary.append((i, text, len(passed), len(failed), "yes" if not missing + stale else "NO"))
        if "family" in config or config["estimator"].startswith("Bong"):
            table.append((config, failed, est))
    emit("\n== summary: configuration, checks passed, failed, expected_failed_checks exact")
    for i, text, n_passed, n_failed, exact in summary:
        emit(f"   [{i:2d}] {text:110s} {n_passed:3d} {n_failed:3d}  {exact}")
    emit(f"\nwall time {time.time() - start:.0f} s; load average {' '.join(f'{v:.2f}' for v in os.getloadavg())}")
    if args.table:
        print_table(table)


_REFUSAL_SIGNS = ("NonFiniteUpdateError", "error message should contain", "pandas.Series")
"""What a check's first line shows when it failed on a refused row: the error itself,
or a check that expected another error, or one that blames the type it passed."""


def mechanism(check, line):
    """Why ``check`` failed, from the first line of its exception: ``"outlier"`` (an
    absurd target refused), ``"step"`` (a row refused because the step left the valid
    beliefs), ``"refused"`` (a refusal whose line does not say which), ``"score"`` (a
    training check's assertion) or ``"other"``."""
    if "predictive standard deviations" in line:
        return "outlier"
    if "non-finite or invalid posterior" in line or "not positive definite" in line:
        return "step"
    if any(sign in line for sign in _REFUSAL_SIGNS):
        return "refused"
    if check in ("check_regressors_train", "check_classifiers_train"):
        return "score"
    return "other"


def read_results(path):
    """The table of :func:`print_table` from a results file written by ``--out``: for
    each Bong configuration, its failed checks with their first lines."""
    table, config, reason = [], None, None
    for line in path.read_text().splitlines():
        if line.startswith("== ["):
            words = line.split("] ", 1)[1].split(":", 1)[0].split()
            config = {}
            for word in words:
                key, value = word.split("=", 1)
                config[key] = int(value) if key == "backtrack" else value
            if config["estimator"].startswith("Bong"):
                table.append((config, {}, build(config)))
        elif line.startswith("      ") and reason is not None and config["estimator"].startswith("Bong"):
            table[-1][1].update(dict.fromkeys(line.strip().split(", "), reason))
        elif line.startswith("   ") and " x " in line:
            reason = line.split(" x ", 1)[1]
    return table


def print_table(table):
    """Print the measured failures of the Bong configurations beyond the sample-weight
    check as skbong/_compat.py's ``_MEASURED``: one row per configuration (the sample's
    axes but ``predictive``, which no fit reads) and mechanism (:func:`mechanism`), with
    the checks without the ``check_`` prefix; a configuration whose failures are known
    only by measuring (``measured_only``) that fails nothing more gets an empty
    ``"none"`` row."""
    print("_MEASURED = (")
    for config, failed, est in table:
        params = {k: v for k, v in config.items() if k != "predictive"}
        params.setdefault("model", "linear")
        kinds = {c: mechanism(c, line) for c, line in sorted(failed.items()) if c != SAMPLE_WEIGHT_CHECK}
        direct = set(kinds.values())  # a refusal that does not say which: the one seen
        refused = "outlier" if "outlier" in direct and "step" not in direct else "step"
        rows = defaultdict(list)
        for check, kind in kinds.items():
            rows[refused if kind == "refused" else kind].append(check[len("check_") :])
        if measured_only(est) and not rows:
            rows["none"] = []
        for kind, checks in rows.items():
            line, chunks = "", []
            for word in checks:
                if len(line) + len(word) > 80:
                    chunks.append(line)
                    line = ""
                line += word + " "
            chunks.append(line.rstrip())
            text = "\n".join(f'            "{c}"' for c in chunks)
            print(f"    (\n        {json.dumps(params)},\n        {kind!r},\n        (\n{text}\n        ),\n    ),")
    print(")")


if __name__ == "__main__":
    main()
