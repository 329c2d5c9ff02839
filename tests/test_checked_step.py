"""BONG steps with validity decided before writing (``checked_ngd``): full and dlr.

The stream takes BONG's rank-one natural step on the full family through
:func:`skbong.engine.families.full.checked_ngd`, which certifies from O(P) quantities that
the new belief passes ``is_valid`` and selects it inside the kernel that writes it; the
dlr family's :func:`skbong.engine.families.dlr.checked_ngd` certifies from O(P) and
O(k²) quantities, without a pass over its (P, R) factor. These tests pin that each is
the same step as the generic one, that what it accepts is valid, and that what it refuses
leaves the belief bitwise unchanged.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from skbong import engine as E
from skbong.engine.families import dlr, full, gaussian
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


@pytest.mark.parametrize("p", [full.ROWS_FROM - 1, full.ROWS_FROM])
def test_checked_step_takes_the_faster_product_form(p):
    """Σ b and Σ r are two matrix-vector products below ``ROWS_FROM`` and one product of
    the rows [b, r]ᵀ with Σ from it on (XLA:CPU's faster form at each size)."""
    state, g, curv = _problem(p, jnp.float32)

    def step(state):
        return full.checked_ngd(state, g, curv, jnp.asarray(True), full.entry_bound(state))

    lines = jax.jit(step).lower(state).as_text().splitlines()
    rows = [line for line in lines if "dot_general" in line and f"tensor<2x{p}xf32>" in line]
    assert bool(rows) == (p >= full.ROWS_FROM)


@pytest.mark.parametrize("p", [3, 10, 100])
def test_checked_step_without_rest_is_the_step_with_r_zero(p):
    """``rest=None`` (r = 0 exactly: the Gaussian LIN-HESS, LIN-EF, MC-EF) takes Σ b only
    and gives the step of an explicit r = 0 (float64, to rounding: 50 P ε), which is the
    generic Woodbury step; its lowered program has one product with Σ, of the vector b
    (a dropped coefficient u or a kept Σ r would fail one or the other)."""
    with jax.enable_x64(True):
        state, _, curv = _problem(p, jnp.float64)
        none = curv._replace(rest=None)
        zero = curv._replace(rest=jnp.zeros_like(curv.rest))
        g = curv.factor @ curv.coef
        bound = full.entry_bound(state)
        keep = jnp.asarray(True)
        new, ok, new_bound = full.checked_ngd(state, g, none, keep, bound)
        ref, ref_ok, ref_bound = full.checked_ngd(state, g, zero, keep, bound)
        generic = gaussian.natural_ngd(full.ALGEBRA, state, None, g, none, 1.0)
        assert bool(ok) and bool(ref_ok)
        eps = np.finfo(np.float64).eps
        for other in (ref, generic):
            np.testing.assert_allclose(new.cov, other.cov, rtol=0, atol=50 * p * eps)
            np.testing.assert_allclose(new.mean, other.mean, rtol=0, atol=50 * p * eps)
        np.testing.assert_allclose(float(new_bound), float(ref_bound), rtol=50 * p * eps)
        assert not np.allclose(new.mean, state.mean)  # the step moved the mean

        def step(state):
            return full.checked_ngd(state, g, none, keep, full.entry_bound(state))

        text = jax.jit(step).lower(state).as_text()
    products = [line for line in text.splitlines() if "dot_general" in line
                and f"tensor<{p}x{p}xf64>" in line]
    assert len(products) == 1 and f"tensor<{p}xf64>" in products[0], products


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


# ------------------------------------------------------------------ the dlr family


def _dlr_problem(p, rank, k, dtype, seed=0, scale=1.0):
    rng = np.random.default_rng(seed)
    state = dlr.DLRState(
        jnp.asarray(rng.normal(size=p), dtype),
        jnp.asarray(rng.uniform(0.5, 2.0, size=p), dtype),
        jnp.asarray(rng.normal(size=(p, rank)), dtype),
    )
    curv = Curv(
        factor=jnp.asarray(scale * rng.normal(size=(p, k)), dtype),
        coef=jnp.asarray(rng.normal(size=k), dtype),
        rest=jnp.asarray(rng.normal(size=p), dtype),
    )
    return state, curv.factor @ curv.coef + curv.rest, curv


_dlr_checked = jax.jit(dlr.checked_ngd)


@pytest.mark.parametrize("p, rank, k", [(5, 2, 1), (40, 10, 3)])
def test_dlr_checked_step_is_the_natural_step(p, rank, k):
    with jax.enable_x64(True):
        state, g, curv = _dlr_problem(p, rank, k, jnp.float64)
        bound = jnp.zeros((), jnp.float64)
        new, ok, _ = _dlr_checked(state, g, curv, jnp.asarray(True), bound)
        ref = dlr.ngd(state, None, g, curv, 1.0)
        assert bool(ok) and bool(E.FAMILIES["dlr"].is_valid(new))
        # the same operations: only XLA's fusion of them may differ
        tol = 50 * (rank + k) * np.finfo(np.float64).eps
        for a, b in zip(new, ref):
            np.testing.assert_allclose(a, b, rtol=tol, atol=tol * float(jnp.max(jnp.abs(b))))


def _dlr_refused(state, g, curv):
    new, ok, _ = _dlr_checked(state, g, curv, jnp.asarray(True), jnp.zeros((), state.mean.dtype))
    assert not bool(ok)
    for a, b in zip(new, state):
        np.testing.assert_array_equal(a, b)


def test_dlr_padding_keeps_the_belief_and_reports_ok():
    state, g, curv = _dlr_problem(20, 4, 2, jnp.float32)
    new, ok, _ = _dlr_checked(state, g, curv, jnp.asarray(False), jnp.zeros((), jnp.float32))
    assert bool(ok)
    for a, b in zip(new, state):
        np.testing.assert_array_equal(a, b)


def test_dlr_overflowing_row_is_refused_unchanged():
    # squared factor entries past the float32 range: the generic step's result is invalid too
    state, g, curv = _dlr_problem(20, 4, 2, jnp.float32, scale=1e20)
    assert not bool(E.FAMILIES["dlr"].is_valid(dlr.ngd(state, None, g, curv, 1.0)))
    _dlr_refused(state, g, curv)


def test_dlr_non_finite_curvature_is_refused_unchanged():
    state, g, curv = _dlr_problem(20, 4, 2, jnp.float32)
    bad = curv._replace(factor=curv.factor.at[3, 1].set(jnp.nan))
    _dlr_refused(state, g, bad)
    bad = curv._replace(factor=curv.factor.at[7, 0].set(jnp.inf))
    _dlr_refused(state, g, bad)


def test_dlr_non_finite_gradient_is_refused_unchanged():
    # the factor is fine, the mean is not: only the O(P) part of the certificate sees it
    state, g, curv = _dlr_problem(20, 4, 2, jnp.float32)
    _dlr_refused(state, g, curv._replace(rest=curv.rest.at[2].set(jnp.inf)))


@pytest.mark.parametrize("scale", [1.0, 1e3, 1e8, 1e15, 1e18, 1e25])
def test_dlr_certificate_is_sound_and_refuses_only_near_overflow(scale):
    # what it accepts is_valid accepts; below tr(W̃ᵀW̃) ≈ M / k³ it accepts all is_valid does
    state, g, curv = _dlr_problem(20, 4, 2, jnp.float32, scale=scale)
    _, ok, _ = _dlr_checked(state, g, curv, jnp.asarray(True), jnp.zeros((), jnp.float32))
    valid = bool(E.FAMILIES["dlr"].is_valid(dlr.ngd(state, None, g, curv, 1.0)))
    assert valid or not bool(ok)
    if scale <= 1e15:  # tr ≈ 40 scale² < M / 6³ ≈ 1.6e36
        assert bool(ok) and valid


def test_stream_takes_the_dlr_checked_step():
    mlp = E.MLP(n_features=3, n_outputs=1)
    assert checks_before_writing(E.Config(mlp, "gaussian", "dlr", 2, "bong", "lin_hess"))
    assert not checks_before_writing(E.Config(mlp, "gaussian", "dlr", 2, "blr", "lin_hess"))
