"""BONG steps with validity decided before writing (``checked_ngd``): full and dlr.

The stream takes BONG's rank-one natural step on the full family through
:func:`skbong.engine.families.full.checked_ngd`, which certifies from O(P) quantities that
the new belief passes ``is_valid`` and selects it inside the kernel that writes it; the
dlr family's :func:`skbong.engine.families.dlr.checked_ngd` certifies from O(P) and
O(k²) quantities, without a pass over its (P, R) factor. These tests pin that each is
the same step as the generic one, that what it accepts is valid, and that what it refuses
leaves the belief bitwise unchanged.
"""

import importlib

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from skbong import engine as E
from skbong.engine.families import dlr, full, gaussian
from skbong.engine.filter.rules import checks_before_writing
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
        new, ok, new_bound, _ = full.checked_ngd(state, g, curv, jnp.asarray(True), bound)
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
        new, ok, new_bound, _ = full.checked_ngd(state, g, none, keep, bound)
        ref, ref_ok, ref_bound, _ = full.checked_ngd(state, g, zero, keep, bound)
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
    new, ok, new_bound, _ = full.checked_ngd(state, g, curv, jnp.asarray(False), bound)
    assert bool(ok)
    np.testing.assert_array_equal(new.cov, state.cov)
    np.testing.assert_array_equal(new.mean, state.mean)
    assert float(new_bound) == float(bound)


def _refused(state, g, curv, bound=None):
    bound = full.entry_bound(state) if bound is None else bound
    new, ok, new_bound, _ = full.checked_ngd(state, g, curv, jnp.asarray(True), bound)
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
        new, ok, _, _ = _dlr_checked(state, g, curv, jnp.asarray(True), bound)
        ref = dlr.ngd(state, None, g, curv, 1.0)
        assert bool(ok) and bool(E.FAMILIES["dlr"].is_valid(new))
        # the same operations: only XLA's fusion of them may differ
        tol = 50 * (rank + k) * np.finfo(np.float64).eps
        for a, b in zip(new, ref):
            np.testing.assert_allclose(a, b, rtol=tol, atol=tol * float(jnp.max(jnp.abs(b))))


def _dlr_refused(state, g, curv):
    new, ok, _, _ = _dlr_checked(state, g, curv, jnp.asarray(True), jnp.zeros((), state.mean.dtype))
    assert not bool(ok)
    for a, b in zip(new, state):
        np.testing.assert_array_equal(a, b)


def test_dlr_padding_keeps_the_belief_and_reports_ok():
    state, g, curv = _dlr_problem(20, 4, 2, jnp.float32)
    new, ok, _, _ = _dlr_checked(state, g, curv, jnp.asarray(False), jnp.zeros((), jnp.float32))
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
    _, ok, _, _ = _dlr_checked(state, g, curv, jnp.asarray(True), jnp.zeros((), jnp.float32))
    valid = bool(E.FAMILIES["dlr"].is_valid(dlr.ngd(state, None, g, curv, 1.0)))
    assert valid or not bool(ok)
    if scale <= 1e15:  # tr ≈ 40 scale² < M / 6³ ≈ 1.6e36
        assert bool(ok) and valid


def test_stream_takes_the_dlr_checked_step():
    mlp = E.MLP(n_features=3, n_outputs=1)
    assert checks_before_writing(E.Config(mlp, "gaussian", "dlr", 2, "bong", "lin_hess"))
    assert not checks_before_writing(E.Config(mlp, "gaussian", "dlr", 2, "blr", "lin_hess"))


# ------------------------------------------------------------------ learned noise: c Σ'
def _finish(c, extra=True):
    return lambda mean: (jnp.asarray(c, mean.dtype), jnp.asarray(extra), jnp.sum(mean))


def _scaled_generic(family, state, g, curv, c):
    """The generic natural step, then the covariance scaled by c (the stream's generic
    learned-noise path)."""
    if family == "full":
        new = gaussian.natural_ngd(full.ALGEBRA, state, None, g, curv, 1.0)
        return gaussian.MeanCov(new.mean, new.cov * c)
    return dlr.scale(dlr.ngd(state, None, g, curv, 1.0), c)


def _checked(family, state, g, curv, keep, finish):
    if family == "full":
        return full.checked_ngd(state, g, curv, keep, full.entry_bound(state), finish)
    return dlr.checked_ngd(state, g, curv, keep, jnp.zeros((), state.mean.dtype), finish)


def _state_problem(family, dtype):
    if family == "full":
        return _problem(10, dtype)
    if family == "full-indefinite":  # |Σ₀₁| = 8 > Σᵢᵢ: c Σ' overflows off the diagonal first
        state, g, curv = _problem(10, dtype, scale=0.01)
        cov = state.cov.at[0, 1].set(8.0).at[1, 0].set(8.0)
        return gaussian.MeanCov(state.mean, cov), g, curv
    return _dlr_problem(12, 3, 1, dtype)


@pytest.mark.parametrize("family", ["full", "dlr"])
def test_scaled_checked_step_is_the_scaled_natural_step(family):
    """With ``finish`` the written belief is the natural step with its covariance scaled
    by c (float64, to 50 P ε: only the order of the operations differs), ``aux`` is
    passed through, and a false extra flag refuses the step, belief bitwise kept."""
    with jax.enable_x64(True):
        state, g, curv = _state_problem(family, jnp.float64)
        yes = jnp.asarray(True)
        new, ok, _, aux = _checked(family, state, g, curv, yes, _finish(0.7))
        ref = _scaled_generic(family, state, g, curv, 0.7)
        assert bool(ok)
        tol = 50 * state.mean.shape[0] * np.finfo(np.float64).eps
        if family == "dlr":  # compare precisions: W is defined up to a rotation
            new_prec = np.diag(new.prec_diag) + new.prec_lr @ new.prec_lr.T
            ref_prec = np.diag(ref.prec_diag) + ref.prec_lr @ ref.prec_lr.T
            np.testing.assert_allclose(new_prec, ref_prec, rtol=tol)
        else:
            np.testing.assert_allclose(new.cov, ref.cov, rtol=0, atol=tol)
        np.testing.assert_allclose(new.mean, ref.mean, rtol=0, atol=tol)
        np.testing.assert_allclose(float(aux), float(np.sum(new.mean)), rtol=1e-15)
        unscaled = _checked(family, state, g, curv, yes, None)[0]
        assert not np.allclose(unscaled[1], new[1])  # c was applied (Σ or Υ)
        kept, refused, _, _ = _checked(family, state, g, curv, yes, _finish(0.7, False))
        assert not bool(refused)
        for a, b in zip(kept, state):
            np.testing.assert_array_equal(a, b)


SCALES = [0.0, 1e-45, 1e-40, 1e-38, 1e-37, 1e-30, 1e-3, 1.0, 1e3, 1e30, 1e37, 1e38, 3e38,
          np.inf, np.nan]


@pytest.mark.parametrize("case", ["full", "full-indefinite", "dlr"])
def test_scaled_certificate_is_sound(case):
    """float32, c over the whole range and past it: what the certificate accepts is a
    valid belief (``is_valid`` of the written result, and the same as the generic scaled
    step); what it refuses leaves the belief bitwise unchanged; for c in [1e-30, 1e30]
    nothing is refused (the margins cost only the last few binades). The indefinite Σ
    (which ``is_valid`` admits) has an off-diagonal entry larger than its diagonal, so
    that only the scaled running bound refuses c = 1e38."""
    state, g, curv = _state_problem(case, jnp.float32)
    family = case.split("-")[0]
    fam = E.FAMILIES[family]
    for c in SCALES:
        new, ok, _, _ = _checked(family, state, g, curv, jnp.asarray(True), _finish(c))
        if bool(ok):
            assert bool(fam.is_valid(new)), c
            ref = _scaled_generic(family, state, g, curv, np.float32(c))
            np.testing.assert_allclose(new.mean, ref.mean, rtol=1e-4, atol=1e-5)
        else:
            for a, b in zip(new, state):
                np.testing.assert_array_equal(a, b)
        if 1e-30 <= c <= 1e30:
            assert bool(ok), c
    assert not any(
        bool(_checked(family, state, g, curv, jnp.asarray(True), _finish(c))[1])
        for c in (0.0, np.inf, np.nan)
    )


@pytest.mark.parametrize("family, coupled", [("full", True), ("full", False), ("dlr", True)])
def test_learned_noise_stream_takes_the_checked_step(monkeypatch, family, coupled):
    """The learned-noise stream goes through ``checked_ngd`` and gives the generic path's
    belief, noise posterior, log-likelihoods and outputs (float64, 1e-10: the two steps
    differ only in the order of their operations), over 30 rows of which one has a zero
    weight (padding) and one an infinite target (refused)."""
    st = importlib.import_module("skbong.engine.filter.stream")  # the package exports a function `stream`
    cfg = E.Config(E.MLP(4, 1), "gaussian", family, 3, "bong", "lin_hess", 1, 1,
                   learn_noise=True, noise_coupled=coupled)
    assert checks_before_writing(cfg)
    rng = np.random.default_rng(3)
    xs = rng.normal(size=(30, 1, 4))
    ys = xs @ rng.normal(size=(4, 1)) + 0.3 * rng.normal(size=(30, 1, 1))
    ws = np.ones((30, 1))
    ws[7] = 0.0
    ys[12] = np.inf
    with jax.enable_x64(True):
        hyper = E.Hyper(*(jnp.asarray(v, jnp.float64) for v in (1.0, 0.5, 1.0, 1.0, 0.0)))
        mean0, belief = E.prior(cfg, 0, hyper.prior_var, np.dtype(np.float64))
        state = (belief, E.filter.noise.init(0.5, 1, jnp.float64))
        args = (mean0, hyper, xs, ys, ws, 0, jax.random.PRNGKey(0))
        checked = st._run_stream(cfg, state, *args)
        monkeypatch.setattr(st, "checks_before_writing", lambda config: False)
        generic = st._run_stream(cfg, state, *args)
    ok = np.asarray(checked[3])
    assert not ok[12] and ok.sum() == 29
    np.testing.assert_array_equal(ok, np.asarray(generic[3]))
    for a, b in zip(jax.tree_util.tree_leaves(checked), jax.tree_util.tree_leaves(generic)):
        a, b = np.asarray(a), np.asarray(b)
        if a.ndim == 2 and family == "dlr" and a.shape[1] == 3:  # W: up to a rotation
            a, b = a @ a.T, b @ b.T
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-10)
