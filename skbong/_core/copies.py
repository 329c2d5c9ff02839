"""A warning for a network regressor's training rows that are mostly copies.

A Bayesian model counts every row as a new observation. Where the rows (x, y) are a few
distinct ones repeated, a network fits them exactly, and its learned noise and its
posterior shrink as if it had seen that many independent observations: on new inputs
its predictive is overconfident by orders of magnitude. Twenty distinct rows of eight
features, each repeated 100 times: held-out negative log-likelihood 526 for one pass
of ``BongRegressor(hidden_layer_sizes=(50,))`` and 2.8e11 for
``VariationalRegressor(hidden_layer_sizes=(50,))`` (``MLPRegressor`` with its training
residual variance: 1,172), against 1.19 for the linear model, whose exact posterior is
not fooled (``benchmarks/bench_defaults.py``, "duplicated rows (reg)"). The data do not
say whether copies are independent observations, so ``fit`` warns and learns.
"""

import warnings

import numpy as np

DISTINCT_MIN = 0.5
"""The smallest fraction of distinct rows (x, y) a network regressor's ``fit`` takes
without a warning."""


def is_network(est):
    """Whether an estimator's model is a network: hidden layers, or a user's model."""
    return getattr(est, "model", None) is not None or np.size(est.hidden_layer_sizes) > 0


def warn_if_mostly_copies(X, y, stacklevel=3):
    """Warn where at most :data:`DISTINCT_MIN` of the rows (x, y) are distinct (20 rows or
    more; inputs that are not yet a numeric array are left to the estimator's checks)."""
    try:
        X = np.asarray(X, dtype=np.float64)
        y = np.asarray(y, dtype=np.float64)
    except (TypeError, ValueError):
        return
    n = X.shape[0] if X.ndim else 0
    if n < 20 or y.shape[:1] != (n,):
        return
    rows = np.ascontiguousarray(np.column_stack([X.reshape(n, -1), y.reshape(n, -1)]))
    distinct = np.unique(rows.view(np.dtype((np.void, rows.itemsize * rows.shape[1])))).size
    if distinct <= DISTINCT_MIN * n:
        warnings.warn(
            f"only {distinct} of the {n} rows (x, y) are distinct: a network fits the "
            "copies exactly and counts each as a new observation, so its learned noise "
            "and its uncertainty on new inputs shrink as if the copies were independent "
            "(an overconfident predictive); if they are repeated records of one "
            "observation, pass each distinct row once",
            UserWarning,
            stacklevel=stacklevel,
        )
