"""The stabilised variant (``backtrack``) against the published algorithms.

Case (e) of ``bench_survival.py``: ``BongRegressor`` MLP 1-4-1 on 60 rows of a sine
problem (x ~ U(−3, 3), y = sin(x) + 0.1 ε), prior_variance=0.5, obs_variance=0.1,
float64, ``on_error="skip"``, the default hessian (``lin_hess``). Every family × rule is
run with ``backtrack=0`` (the published algorithm) and with ``backtrack`` halvings
allowed (default 20, i.e. a step may shrink to 2⁻²⁰ of its rate before the row is
refused). Columns: refused rows of 60 and the RMSE against sin(x) on 200 held-out
points ("inf"/"nan": the predictions are not finite).

Usage: ``python benchmarks/bench_backtrack.py [--backtrack 20] [--out FILE]``
"""

import argparse
import os
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, os.environ.get("SKBONG_SRC", str(REPO)))

from skbong import BongRegressor  # noqa: E402
from skbong.engine import FAMILY_NAMES, RULE_NAMES  # noqa: E402


def run(family, rule, backtrack, X, y, X_test, y_test):
    est = BongRegressor(
        hidden_layer_sizes=(4,),
        family=family,
        rule=rule,
        prior_variance=0.5,
        obs_variance=0.1,
        dtype="float64",
        on_error="skip",
        backtrack=backtrack,
        random_state=0,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(X, y)
        with np.errstate(all="ignore"):
            rmse = float(np.sqrt(np.mean((est.predict(X_test) - y_test) ** 2)))
    return est.n_skipped_, rmse


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--backtrack", type=int, default=20)
    p.add_argument("--out", type=Path, default=None)
    args = p.parse_args()
    rng = np.random.default_rng(0)
    X = rng.uniform(-3, 3, size=(60, 1))
    y = np.sin(X[:, 0]) + 0.1 * rng.normal(size=60)
    X_test = rng.uniform(-3, 3, size=(200, 1))
    y_test = np.sin(X_test[:, 0])
    rev = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    lines = [
        "bench_backtrack: refused rows (of 60) and held-out RMSE, published vs backtracking",
        f"command: python benchmarks/bench_backtrack.py --backtrack {args.backtrack}",
        f"skbong revision {rev}",
        f"{'family':12s} {'rule':5s} {'refused, 0':>11s} {'rmse, 0':>8s} "
        f"{f'refused, {args.backtrack}':>12s} {f'rmse, {args.backtrack}':>9s}",
    ]
    print("\n".join(lines), flush=True)
    for family in FAMILY_NAMES:
        for rule in RULE_NAMES:
            (n0, r0), (n1, r1) = (
                run(family, rule, b, X, y, X_test, y_test) for b in (0, args.backtrack)
            )
            line = f"{family:12s} {rule:5s} {n0:11d} {r0:8.3g} {n1:12d} {r1:9.3g}"
            print(line, flush=True)
            lines.append(line)
    if args.out is not None:
        args.out.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
