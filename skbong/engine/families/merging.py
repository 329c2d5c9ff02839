"""How each family holds the precision Λ of its belief for merging beliefs learned from
one prior (:func:`skbong.merge_posteriors`): the operations the natural-parameter sum
needs, on the host in float64. A family's record carries its algebra (``Family.merge``).
"""

from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import scipy.linalg

from ..linalg import dlr_grams, dlr_solve, project_rank
from ..program import program


class MergeAlgebra(NamedTuple):
    """How one family holds the precision Λ of its belief (float64 numpy arrays).

    Attributes
    ----------
    precision : callable ``state -> Λ``
        The precision of a belief, in the family's representation.
    add : callable ``(λ₀, [Λₖ]) -> Λ₀ + Σₖ (Λₖ − Λ₀)``
        The merged precision, for the diagonal prior precision λ₀ (P,).
    matvec : callable ``(Λ, v) -> Λ v``
    logdet : callable ``Λ -> log |Λ|``
    solve : callable ``(Λ, v) -> Λ⁻¹ v``
    state : callable ``(μ, Λ, R) -> state``
        The belief N(μ, Λ⁻¹) in the family's state (for ``dlr``, projected to rank R).
    """

    precision: Callable
    add: Callable
    matvec: Callable
    logdet: Callable
    solve: Callable
    state: Callable


def _cho(a):
    return scipy.linalg.cho_factor(a, lower=True)


def _dense_inverse(a):
    return scipy.linalg.cho_solve(_cho(a), np.eye(a.shape[0]))


DENSE = MergeAlgebra(
    precision=lambda state: _dense_inverse(state[1]),
    add=lambda lam0, precs: sum(precs) - (len(precs) - 1) * np.diag(lam0),
    matvec=lambda prec, v: prec @ v,
    logdet=lambda prec: 2.0 * np.sum(np.log(np.diagonal(_cho(prec)[0]))),
    solve=lambda prec, v: scipy.linalg.cho_solve(_cho(prec), v),
    state=lambda mean, prec, rank: (mean, _dense_inverse(prec)),
)
"""``full`` and ``full_moment``: Λ = Σ⁻¹ dense (P, P)."""

DIAGONAL = MergeAlgebra(
    precision=lambda state: 1.0 / state[1],
    add=lambda lam0, precs: sum(precs) - (len(precs) - 1) * lam0,
    matvec=lambda prec, v: prec * v,
    logdet=lambda prec: np.sum(np.log(prec)),
    solve=lambda prec, v: v / prec,
    state=lambda mean, prec, rank: (mean, 1.0 / prec),
)
"""``diag`` and ``diag_moment``: Λ = 1 / σ² (P,)."""


@program
def _woodbury_solve(diag, factor, v):
    rows = factor.T
    _, inner, _ = dlr_grams(diag, rows)
    return dlr_solve(diag, rows, inner, jnp.zeros(rows.shape[0], v.dtype), v)


def _dlr_solve(prec, v):
    """(Υ + W Wᵀ)⁻¹ v by the engine's Woodbury solve (refined once below
    :data:`~skbong.engine.linalg.REFINE_BELOW` parameters)."""
    with jax.enable_x64(True):
        return np.asarray(_woodbury_solve(*prec, v))


def _dlr_logdet(prec):
    """log |Υ + W Wᵀ| = Σ log Υ + log |I + Wᵀ Υ⁻¹ W| (determinant lemma)."""
    diag, factor = prec
    inner = np.eye(factor.shape[1]) + factor.T @ (factor / diag[:, None])
    return np.sum(np.log(diag)) + DENSE.logdet(inner)


@program(static_argnames="rank")
def _project(diag, factor, rank):
    rows = factor.T
    head, dropped = project_rank(rows, rows @ factor, rank)
    return diag + dropped, head.T


def _dlr_state(mean, prec, rank):
    """Project Υ + W̃ W̃ᵀ back to rank R with the family's own projection
    (:func:`~skbong.engine.linalg.project_rank`: the top R directions of W̃ W̃ᵀ, the rest
    of its diagonal added to Υ, so diag(Λ) is kept)."""
    with jax.enable_x64(True):
        return (mean, *(np.asarray(a) for a in _project(*prec, rank)))


LOW_RANK = MergeAlgebra(
    precision=lambda state: (state[1], state[2]),
    add=lambda lam0, precs: (
        sum(p[0] for p in precs) - (len(precs) - 1) * lam0,
        np.concatenate([p[1] for p in precs], axis=1),
    ),
    matvec=lambda prec, v: prec[0] * v + prec[1] @ (prec[1].T @ v),
    logdet=_dlr_logdet,
    solve=_dlr_solve,
    state=_dlr_state,
)
"""``dlr``: Λ = Υ + W Wᵀ as the pair (Υ (P,), W (P, k)); the merged factor stacks the
shards' factors, W̃ = [W₁ … W_K], before the projection."""
