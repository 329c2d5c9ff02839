"""The gradient split g = B u + r of the factored curvatures (``Curv``), and where r is left out.

LIN-HESS writes g = B u + r, with r collecting the rows whose coefficient u overflowed (a
saturated classifier: u divides by a factor S that vanishes while ∇ stays finite). For a
likelihood whose u overflows only where its gradient does (``split_exact``: the Gaussian),
r is left out (``rest=None``) and the steps skip their products with it. What is tested:

* the claim itself, over float32's range: u √w non-finite implies ∇ w non-finite, for
  every likelihood that makes it; and every likelihood that does not make it has a
  finite gradient with an overflowing u on the same grid (so the flag is not merely
  conservative);
* which estimators leave r out: LIN-HESS for the Gaussian only, LIN-EF and MC-EF always
  (g = B u there by construction);
* that a Gaussian row whose u overflows is still refused, with the belief bitwise
  unchanged, in every family's stream (the update r would have made non-finite now
  goes non-finite through u).
"""

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from skbong import engine as E
from skbong.engine.filter.curvature import ESTIMATORS
from skbong.engine.likelihoods import LIKELIHOODS

BIG = [0.0, 1.0, -1.0, 1e-30, 1e19, -1e19, 1e30, 3e38, -3e38]
WEIGHTS = [0.0, 1e-30, 1e-4, 1.0, 1e4, 1e30]
OBS_VAR = [1e-38, 1e-4, 1.0, 1e4, 1e38]
SATURATING = [-200.0, -80.0, -1.0, 0.0, 1.0, 80.0, 200.0]


def _rows(name):
    """(y, f) pairs (C,) in float32 for a likelihood, reaching the edges of its range."""
    if name == "gaussian":
        return [([y], [f]) for y, f in itertools.product(BIG, BIG)]
    if name == "bernoulli":
        return [([y], [f]) for y, f in itertools.product([0.0, 1.0], SATURATING)]
    if name == "categorical":
        return [(list(np.eye(3)[c]), [a, 0.0, -a]) for c in range(3) for a in SATURATING]
    return [([y], [f]) for y, f in itertools.product([0.0, 1.0, 5.0], SATURATING)]


@pytest.mark.parametrize("name", sorted(LIKELIHOODS))
def test_split_exact_means_u_overflows_only_with_the_gradient(name):
    lik = LIKELIHOODS[name]
    coef = jax.jit(lambda y, f, v: lik.grad_coef(y, f, v))
    grad = jax.jit(lambda y, f, v: lik.grad(y, f, v))
    violations = []
    for (y, f), v, w in itertools.product(_rows(name), OBS_VAR, WEIGHTS):
        y, f, v, w = (np.asarray(a, np.float32) for a in (y, f, v, w))
        with np.errstate(all="ignore"):  # as LIN-HESS weighs them: u √w and ∇ w, in float32
            u = np.asarray(coef(y, f, v)) * np.sqrt(w)
            g = np.asarray(grad(y, f, v)) * w
        if not np.all(np.isfinite(u)) and np.all(np.isfinite(g)):
            violations.append((y, f, v, w))
    assert lik.split_exact == (not violations), violations[:3]


@pytest.mark.parametrize("name", sorted(LIKELIHOODS))
def test_which_estimators_leave_the_rest_out(name):
    config = E.Config(E.MLP(2, 3 if name == "categorical" else 1), name, "diag")
    family = E.FAMILIES["diag"]
    mean0 = config.model.flat_init(jax.random.PRNGKey(0))
    state = family.init(mean0, 1.0, 1)
    x = jnp.asarray([[0.5, -1.0]])
    y = jnp.asarray([[0.0, 1.0, 0.0]]) if name == "categorical" else jnp.asarray([[1.0]])
    for hessian in ("lin_hess", "lin_ef", "mc_ef"):
        g, curv = ESTIMATORS[hessian](config, family, state, x, y, jnp.ones(1), 0.5,
                                      jax.random.PRNGKey(1))
        exact = hessian != "lin_hess" or LIKELIHOODS[name].split_exact
        assert (curv.rest is None) == exact, (hessian, name)
        rest = 0.0 if curv.rest is None else curv.rest
        np.testing.assert_allclose(curv.factor @ curv.coef + rest, g, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("family", ["full", "dlr", "diag"])
def test_a_gaussian_row_whose_u_overflows_is_refused(family):
    """float32, R = 1e-30: u = (y − f) / √R = 1e30 / 1e-15 overflows (and so does
    ∇ = (y − f) / R). The step must be refused and the belief kept bitwise; the row
    after it, ordinary, is accepted. The overflowing row is a fresh belief's first step,
    which the stream does not test for an absurd target, so the update alone must refuse
    it. (Zeroing the overflowed u, as the split with r does for a classifier, would
    accept a covariance-only update here.)"""
    config = E.Config(E.MLP(3, 1), "gaussian", family, 2, "bong", "lin_hess")
    hyper = E.Hyper(*(jnp.asarray(v, jnp.float32) for v in (1.0, 1e-30, 1.0, 1.0, 0.0)))
    mean0, state = E.prior(config, 0, hyper.prior_var, np.dtype(np.float32))
    xs = jnp.asarray([[[1.0, 1.0, 1.0]], [[0.5, -1.0, 0.2]]], jnp.float32)
    ys = jnp.asarray([[[1e30]], [[0.1]]], jnp.float32)
    ws = jnp.ones((2, 1), jnp.float32)
    key = jax.random.PRNGKey(0)
    # the ordinary row alone, as the second step of a stream (step index 1)
    second, *_ = E.run_stream(config, state, mean0, hyper, xs[1:], ys[1:], ws[1:], 1, key)
    final, _, _, ok = E.run_stream(config, state, mean0, hyper, xs, ys, ws, 0, key)
    assert np.asarray(ok).tolist() == [False, True]
    for a, b in zip(jax.tree_util.tree_leaves(final), jax.tree_util.tree_leaves(second)):
        np.testing.assert_array_equal(a, b)
