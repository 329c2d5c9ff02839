"""Plain data types shared across the engine: the traced hyperparameters and the
curvature estimate (the static configuration is :class:`~.config.Config`).

Every real-valued hyperparameter lives in :class:`Hyper` (traced), so that changing a
prior variance never recompiles. This module imports no other part of the engine: the
families, rules and curvature estimators build on it, and :mod:`.config` on them.
"""

from typing import Any, NamedTuple

import jax.numpy as jnp

OUTLIER_Z = 1e6
"""Standard deviations beyond which a step is absurd: a Gaussian-noise target this far
from its one-step predictive mean (:mod:`.stream`), or a diagonal step that moves a
coordinate this far in units of its own standard deviation (:mod:`.families.diag`).
Under the model either has probability below 10⁻¹²."""


class Hyper(NamedTuple):
    """Traced real-valued hyperparameters (arrays of the working dtype).

    Attributes
    ----------
    prior_var : scalar or (P,)
        σ₀², the prior variance: one for all parameters or one per parameter (also the
        OU stationary variance).
    obs_var : scalar or (C,)
        Gaussian observation variance R (ignored by the other likelihoods).
    learning_rate : scalar
        α of ``bog``, ``blr`` and ``bbb`` (``bong`` uses 1).
    drift : scalar
        γ ∈ (0, 1], the Ornstein–Uhlenbeck decay toward the prior.
    process_noise : scalar
        q ≥ 0, isotropic process noise added in the predict step.
    """

    prior_var: Any
    obs_var: Any
    learning_rate: Any
    drift: Any
    process_noise: Any


class Curv(NamedTuple):
    """Curvature G ≈ E_q[∇²_θ log p(y | θ)]: ``factor`` or ``hess`` is set.

    Attributes
    ----------
    factor : array (P, k) or None
        ``B`` with ``G = −B Bᵀ`` (LIN-HESS, LIN-EF, MC-EF).
    hess : array (P, P) or (P,) or None
        ``G`` itself: dense for the full families, its diagonal for the diagonal
        families (MC-HESS, and the KL-augmented curvature of BLR / BBB).
    coef, rest : array (k,) and array (P,), or None
        With ``factor``, the gradient written as ``g = B u + r`` (``u = coef``,
        ``r = rest``). Every factored estimator has g in the span of B, so r is zero
        up to rows whose u overflowed; ``rest=None`` with ``coef`` set says r = 0
        exactly (LIN-EF, MC-EF, and LIN-HESS for a likelihood with ``split_exact``),
        and the steps skip their products with r. The natural Woodbury steps use this
        split: the push-through identity gives ``Σ' B u`` without the cancellation of
        ``Σ g − Σ B (I + Bᵀ Σ B)⁻¹ Bᵀ Σ g`` (see :func:`gradient_split`).
    jac, scale : array (k, P) and array (k,), or None
        With ``factor``, its columns as Jacobian rows times scalars, B = Jᵀ diag(s)
        (LIN-HESS of one row and one output): a step may form Σ B as (Σ Jᵀ) diag(s),
        the product Σ Jᵀ that the linearised predictive of the same row also forms,
        so that the program computes it once.
    """

    factor: Any = None
    hess: Any = None
    coef: Any = None
    rest: Any = None
    jac: Any = None
    scale: Any = None


def gradient_split(g, curv):
    """``(u, r)`` with ``g = B u + r`` for a factored curvature.

    The estimator's split when it gave one (r is ``None`` where it is exactly zero),
    else ``u = 0, r = g``. With ``Σ' = (Σ⁻¹ +
    B Bᵀ)⁻¹``, ``Σ' g = Σ g − Σ B (I + K)⁻¹ Bᵀ Σ g`` (K = Bᵀ Σ B) loses about ‖B‖² ε of a
    result that shrinks like 1 / ‖B‖²; ``Σ' B u = Σ B (I + K)⁻¹ u`` loses nothing.
    """
    if curv.coef is None:
        return jnp.zeros(curv.factor.shape[1:], g.dtype), g
    return curv.coef, curv.rest
