"""A short soak: thousands of float32 rows through a small MLP, and the posterior stays
sound (the full-length version is ``benchmarks/soak.py``, whose functions this reuses).

For each configuration the stream is fed in ``partial_fit`` blocks of 500 rows,
predicting each block before learning it, and after every window we check:

* the belief is finite;
* the covariance is positive definite: full / full_moment Σ has a float32 Cholesky factor
  and a positive smallest eigenvalue (float64 eigvalsh) and is exactly symmetric (every
  full-family step keeps Σ symmetric bit for bit: the Woodbury downdate Σ − Hᵀ H sums
  the same products in the same order for (i, j) and (j, i)); diag variances > 0; dlr
  Υ > 0 and Υ + W Wᵀ with a positive smallest eigenvalue;
* the prequential log-loss per window is finite and does not grow (last window at most
  10 % above the first);
* the EKF-type learners (bong + lin_hess) beat the constant predictor: their last window's
  log-loss is below the marginal baseline. The teacher is a fixed network of the same
  architecture, so a learner that does not beat ignoring x has lost its posterior.
"""

import argparse
import importlib.util
from pathlib import Path

import pytest

_path = Path(__file__).resolve().parent.parent / "benchmarks" / "soak.py"
_spec = importlib.util.spec_from_file_location("skbong_soak", _path)
soak = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(soak)

ARGS = argparse.Namespace(
    rank=4, n_iter=2, mc_samples=2, learning_rate=0.01, prior_variance=0.01, block=500, windows=4
)
CASES = [
    ("reg", "full", "bong", "lin_hess", 4000),
    ("clf", "dlr", "bong", "lin_hess", 4000),
    ("reg", "diag", "bbb", "mc_ef", 2000),
    ("clf", "full_moment", "blr", "mc_ef", 2000),
]


@pytest.mark.parametrize("task, family, rule, hessian, n", CASES, ids=["-".join(c[:4]) for c in CASES])
def test_short_soak(task, family, rule, hessian, n):
    run = soak.soak(task, family, rule, hessian, n, ARGS)
    assert run["always_finite"], run["final"]
    assert run["always_pd"], run["final"]
    if family in ("full", "full_moment"):
        assert run["final"]["asymmetry"] == 0.0
    assert not run["diverged"], run["window_log_loss"]
    if (rule, hessian) == ("bong", "lin_hess"):
        assert run["learned"], (run["window_log_loss"], run["baseline_log_loss"])
    assert run["skipped"] < n // 10  # the soak is about learning, not about refusing rows
