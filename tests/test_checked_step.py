"""The full family's BONG step with validity decided before writing (``checked_ngd``).

The stream takes BONG's rank-one natural step on the full family through
:func:`skbong.engine.families.full.checked_ngd`, which certifies from O(P) quantities that
the new belief passes ``is_valid`` and selects it inside the kernel that writes it. These
tests pin that it is the same step as the generic one, that what it accepts is valid, and
that what it refuses leaves the belief bitwise unchanged.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from skbong import engine as E
from skbong.engine.families import full, gaussian
from skbong.engine.rules import checks_before_writing
from skbong.engine.types import Curv


def _problem(p, dtype, seed=0, scale=1.0):
    rng = np.random.default_rng(seed)
    a = rng.normal(size=(p, p))
    cov = a @ a.T / p + np.eye(p)
    b = scale * rng.normal(size=p)
    coef = rng.normal(size=1)
    rest = rng.normal(size=p)
    mean = rng.normal(size=p)
    state = gaussian.MeanCov(jnp.asarray(mean, dtype), jnp.asarray(cov, dtype))
    curv = Curv(
        factor=jnp.asarray(b[:, None], dtype),
        coef=jnp.asarray(coef, dtype),
        rest=jnp.asarray(rest, dtype),
    )
    g = curv.factor @ curv.coef + curv.rest
    return state, g, curv


@pytest.mark.parametrize("p", [3, 10, 100])
def test_checked_step_is_the_natural_step(p):
    with jax.enable_x64(True):
        state, g, curv = _problem(p, jnp.float64)
        bound = full.entry_bound(state)
        new, ok, new_bound = full.checked_ngd(state, g, curv, jnp.asarray(True), bound)
        ref = gaussian.natural_ngd(full.ALGEBRA, state, None, g, curv, 1.0)
        assert bool(ok)
        assert bool(E.FAMILIES["full"].is_valid(new))
        eps = np.finfo(np.float64).eps
        np.testing.assert_allclose(new.cov, ref.cov, rtol=0, atol=50 * p * eps)
        np.testing.assert_allclose(new.mean, ref.mean, rtol=0, atol=50 * p * eps)
        np.testing.assert_array_equal(new.cov, new.cov.T)  # exactly symmetric
        assert float(new_bound) >= float(jnp.max(jnp.abs(new.cov)))


def test_padding_keeps_the_belief_and_reports_ok():
    state, g, curv = _problem(10, jnp.float32)
    bound = full.entry_bound(state)
    new, ok, new_bound = full.checked_ngd(state, g, curv, jnp.asarray(False), bound)
    assert bool(ok)
    np.testing.assert_array_equal(new.cov, state.cov)
    np.testing.assert_array_equal(new.mean, state.mean)
    assert float(new_bound) == float(bound)


def _refused(state, g, curv, bound=None):
    bound = full.entry_bound(state) if bound is None else bound
    new, ok, new_bound = full.checked_ngd(state, g, curv, jnp.asarray(True), bound)
    assert not bool(ok)
    np.testing.assert_array_equal(new.cov, state.cov)
    np.testing.assert_array_equal(new.mean, state.mean)
    assert float(new_bound) == float(bound)


def test_overflowing_row_is_refused_unchanged():
    state, g, curv = _problem(10, jnp.float32, scale=1e30)
    _refused(state, g, curv)


def test_entries_near_the_float_range_are_refused():
    # a finite Σ whose entries would overflow when the downdate is added
    state, g, curv = _problem(10, jnp.float32, scale=1e3)
    big = state._replace(cov=state.cov.at[0, 1].set(3e38).at[1, 0].set(3e38))
    _refused(big, g, curv)


def test_a_variance_that_would_not_stay_positive_is_refused():
    # an indefinite Σ (a 2 × 2 block with |Σ₀₁| > √(Σ₀₀ Σ₁₁)) lets hᵢ² exceed Σᵢᵢ
    cov = jnp.asarray([[1.0, 3.0], [3.0, 1.0]], jnp.float32)
    state = gaussian.MeanCov(jnp.zeros(2, jnp.float32), cov)
    b = jnp.asarray([[1.0], [1.0]], jnp.float32)
    curv = Curv(factor=b, coef=jnp.ones(1, jnp.float32), rest=jnp.zeros(2, jnp.float32))
    new_ref = gaussian.natural_ngd(full.ALGEBRA, state, None, b[:, 0], curv, 1.0)
    assert not bool(E.FAMILIES["full"].is_valid(new_ref))  # the generic check refuses too
    _refused(state, b[:, 0], curv)


def test_stream_uses_the_checked_step_for_bong_only():
    mlp = E.MLP(n_features=3, n_outputs=1)
    assert checks_before_writing(E.Config(mlp, "gaussian", "full", 2, "bong", "lin_hess"))
    for other in (
        E.Config(mlp, "gaussian", "full", 2, "blr", "lin_hess"),
        E.Config(mlp, "gaussian", "full_moment", 2, "bong", "lin_hess"),
        E.Config(mlp, "gaussian", "full", 2, "bong", "lin_hess", backtrack=3),
        E.Config(mlp, "gaussian", "full", 2, "bong", "lin_hess", dynamic=True),
        E.Config(mlp, "gaussian", "diag", 2, "bong", "lin_hess"),
    ):
        assert not checks_before_writing(other)
