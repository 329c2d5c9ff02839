"""The arguments of a small stream program, for the tests that lower or trace programs
(``test_precision.py``, ``test_linalg.py``) rather than run them."""

import jax.numpy as jnp
import numpy as np

from skbong import engine as E

F32 = np.float32


def stream_setup(family, model, likelihood="categorical"):
    """``(config, state, mean0, hyper, x, y, w)`` of a 3-step, one-row float32 stream of
    ``model`` (rank 2 for dlr, BONG LIN-HESS); y is one-hot in its first output."""
    cfg = E.Config(model, likelihood, family, 2, "bong", "lin_hess", 1, 8)
    hyper = E.Hyper(*(jnp.asarray(v, F32) for v in (0.5, 0.1, 0.1, 1.0, 0.0)))
    mean0, state = E.prior(cfg, 0, hyper.prior_var, np.dtype(F32))
    n, d = 3, model.n_features
    x = np.linspace(-1, 1, n * d, dtype=F32).reshape(n, 1, d)
    y = np.zeros((n, 1, model.n_outputs), F32)
    y[..., 0] = 1.0  # one-hot for the categorical likelihood
    return cfg, state, mean0, hyper, x, y, np.ones((n, 1), F32)
