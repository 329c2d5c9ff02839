"""The engine's compiled programs: ``jax.jit`` with float32 matrix products in float32.

On GPUs with tensor cores, XLA's default precision computes a float32 matrix product
in TensorFloat-32 (a 10-bit mantissa, relative error ≈ 5e-4), and every Gram matrix,
Woodbury solve and Jacobian product of a belief update would carry that error into the
posterior: on an NVIDIA H200 the dlr family's float32 conjugate oracle
(``tests/test_conjugate.py``) was off by 6.1e-4 against its float32 tolerance of 1e-5.
So every program of skbong traces its body under
``jax.default_matmul_precision("highest")``, the user's model included, unless the user
chose a precision themselves (``jax_default_matmul_precision``, globally or with the
same context manager around the call): theirs is then kept. The context covers the
tracing of skbong's own programs only; JAX's configuration is never changed. On CPUs a
float32 product is computed in float32 either way, so nothing changes there.
"""

import functools

import jax

__all__ = ["program", "PRECISION"]

PRECISION = "highest"
"""The matrix-product precision of skbong's programs where the user chose none."""


def _full_precision(fn):
    """``fn`` traced under :data:`PRECISION`, or under the user's own choice if any."""

    @functools.wraps(fn)
    def traced(*args, **kwargs):
        if jax.config.jax_default_matmul_precision is not None:
            return fn(*args, **kwargs)
        with jax.default_matmul_precision(PRECISION):
            return fn(*args, **kwargs)

    return traced


def program(fn=None, *, static_argnames=()):
    """``jax.jit(fn, static_argnames=...)`` whose float32 products keep float32 precision.

    Use as ``@program`` or ``@program(static_argnames=("config",))``.

    Parameters
    ----------
    fn : callable, optional
        The function to compile; omitted, a decorator is returned.
    static_argnames : tuple of str
        As for :func:`jax.jit`.

    Returns
    -------
    callable
        The jitted function (its ``lower``, ``__wrapped__`` and docstring as
        :func:`jax.jit` gives them).
    """
    if fn is None:
        return functools.partial(program, static_argnames=static_argnames)
    return jax.jit(_full_precision(fn), static_argnames=static_argnames)
