"""The batch solvers' static configuration and traced hyperparameters."""

from dataclasses import dataclass
from typing import Any, NamedTuple

from ..config import Config
from .registry import SOLVER_NAMES, check_family

CURVATURE_NAMES = ("ef", "ggn")


@dataclass(frozen=True)
class BatchConfig:
    """Static configuration of a batch solver (hashable; a ``jit`` static argument).

    Parameters
    ----------
    model : MLP or UserModel
        The model f(θ, X).
    likelihood : str
        ``gaussian``, ``bernoulli``, ``categorical`` or ``poisson``.
    solver : str
        A key of :data:`~skbong.engine.solvers.SOLVERS`.
    family : str
        One of the solver's ``families``.
    curvature : str
        ``ef`` (the per-example empirical Fisher, as published) or ``ggn`` for vogn and
        slang (von always uses the Hessian).
    rank : int
        L, the rank of SLANG's low-rank precision.
    mc_samples : int
        S, samples of q per step.
    batch_size : int
        M, rows per mini-batch.
    """

    model: Any
    likelihood: str
    solver: str
    family: str = "diag"
    curvature: str = "ef"
    rank: int = 1
    mc_samples: int = 1
    batch_size: int = 32

    def __post_init__(self):
        if self.solver not in SOLVER_NAMES:
            raise ValueError(f"solver={self.solver!r} is not one of {SOLVER_NAMES}")
        if self.curvature not in CURVATURE_NAMES:
            raise ValueError(f"curvature={self.curvature!r} is not one of {CURVATURE_NAMES}")
        check_family(self.solver, self.family)

    @property
    def impl(self):
        """The registry objects of the likelihood and family (:attr:`.config.Config.impl`)."""
        return self.online().impl

    def online(self):
        """The :class:`~.config.Config` whose predictives read this solver's posterior."""
        return Config(
            model=self.model, likelihood=self.likelihood, family=self.family, rank=self.rank
        )


class BatchHyper(NamedTuple):
    """Traced hyperparameters of the batch solvers (arrays of the working dtype).

    Attributes
    ----------
    prior_prec : (P,)
        λ, the prior precision of each parameter (prior mean zero).
    init_prec : (P,)
        Precision of the starting q (IVON: h₀ = (init_prec − λ) / N, also its rate scale).
    obs_var : scalar or (C,)
        Gaussian observation variance.
    lr, prec_rate : scalar
        α (mean) and β (precision; β₂ = 1 − β for Vadam, BBB and IVON).
    momentum : scalar
        γ₁ (Vadam, SLANG, BBB's Adam, IVON's β₁).
    decay : scalar
        ω of the schedule α / (1 + t^ω); 0 keeps the rates constant.
    n_data : scalar
        N.
    """

    prior_prec: Any
    init_prec: Any
    obs_var: Any
    lr: Any
    prec_rate: Any
    momentum: Any
    decay: Any
    n_data: Any
