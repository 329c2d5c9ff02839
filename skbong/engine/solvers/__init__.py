"""Batch variational solvers of the seed papers, and IVON, as pure steps, and the epoch
driver that runs them (:mod:`.epochs`).

Each solver is one :class:`Solver` record in :data:`SOLVERS` (its file has its
equations, with the papers' numbers): VOGN and VON (``natural.py``), Vprop and Vadam
(``adam.py``), SLANG (``slang.py``), BBB (``bbb.py``) and IVON (``ivon.py``). They share
the gradients and curvature rows of ``grads.py``, the rate schedule of ``base.py``
(α_t = α / (1 + t^ω) and the same for β when the ``decay`` ω is positive, constant
otherwise; t counts steps from 0), and what ``posterior.py`` reads from a posterior.
"""

from .base import Rates, Solver, diag_kl, rates
from .config import CURVATURE_NAMES, BatchConfig, BatchHyper
from .posterior import kl_to_prior, marginal_variances, second_moments
from .registry import SOLVER_NAMES, SOLVERS, check_family, is_valid, posterior_family, solver

__all__ = [
    "CURVATURE_NAMES", "SOLVERS", "SOLVER_NAMES", "BatchConfig", "BatchHyper", "Rates",
    "Solver", "check_family", "diag_kl", "is_valid", "kl_to_prior", "marginal_variances",
    "posterior_family", "rates", "second_moments", "solver",
]
