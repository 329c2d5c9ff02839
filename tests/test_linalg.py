"""The blocked dense kernels of :mod:`skbong.engine.linalg` against numpy/LAPACK.

``cholesky`` and ``tril_inverse`` split large matrices into blocks (to keep OpenBLAS's
threaded paths out of the compiled step); the sizes below cover the unsplit case, one
split with odd halves and two levels of splitting. In float64 the factors of these
well-conditioned matrices (eigenvalues in [1, ~5]) agree with LAPACK to a few ulps of
their entries (≤ 1e-12 absolute), and L⁻¹ L = I to the same order.
"""

import jax
import numpy as np
import pytest

from skbong.engine import linalg as la

SIZES = [3, la.TRIANGULAR_BLOCK + 1, la.CHOLESKY_BLOCK + 1, 2 * la.CHOLESKY_BLOCK + 3]


def _spd(n):
    m = np.random.default_rng(n).normal(size=(n, n))
    return m @ m.T / n + np.eye(n)


@pytest.mark.parametrize("n", SIZES)
def test_blocked_kernels_match_lapack(n):
    a = _spd(n)
    with jax.enable_x64(True):
        chol = np.asarray(jax.jit(la.cholesky)(a))
        inv_chol = np.asarray(jax.jit(la.tril_inverse)(chol))
        inv = np.asarray(jax.jit(la.spd_inverse)(a))
    np.testing.assert_array_equal(np.triu(chol, 1), 0.0)
    np.testing.assert_allclose(chol, np.linalg.cholesky(a), rtol=0, atol=1e-12)
    np.testing.assert_array_equal(np.triu(inv_chol, 1), 0.0)
    np.testing.assert_allclose(inv_chol @ chol, np.eye(n), rtol=0, atol=1e-12)
    np.testing.assert_allclose(inv, np.linalg.inv(a), rtol=0, atol=1e-12)
    np.testing.assert_array_equal(inv, inv.T)


def test_blocked_cholesky_of_an_indefinite_matrix_is_not_finite():
    """An indefinite input must not give a finite factor (the validity checks rely on it)."""
    n = la.CHOLESKY_BLOCK + 5
    a = _spd(n)
    a[-1, -1] = -1.0
    with jax.enable_x64(True):
        chol = np.asarray(jax.jit(la.cholesky)(a))
    assert not np.all(np.isfinite(chol))
