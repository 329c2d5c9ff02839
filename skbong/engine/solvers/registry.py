"""The registry of batch solvers: one :class:`~.base.Solver` record per name."""

from .adam import VADAM, VPROP
from .base import all_finite
from .bbb import BBB
from .ivon import IVON
from .natural import VOGN, VON
from .slang import SLANG

SOLVERS = {s.name: s for s in (VOGN, VON, VPROP, VADAM, SLANG, BBB, IVON)}
"""Every batch solver by its ``solver`` name."""

SOLVER_NAMES = tuple(SOLVERS)


def check_family(solver, family):
    """Raise ``ValueError`` unless ``solver`` keeps a posterior of ``family`` (its record's
    ``families``: the one place this constraint lives)."""
    allowed = SOLVERS[solver].families
    if family not in allowed:
        raise ValueError(
            f"family={family!r} is not available with solver={solver!r}, which keeps a "
            f"{' or '.join(repr(f) for f in allowed)} posterior"
        )


def posterior_family(solver, family, small_linear):
    """The family of ``solver``'s belief for the estimators' ``family``: ``"diag"`` means
    the record's ``diag_family``; ``"auto"`` is ``"full"`` where ``small_linear`` (the
    linear model within the full family's size) and the solver keeps it, else the
    solver's own family."""
    record = SOLVERS[solver]
    if family == "diag":
        return record.diag_family
    if family == "auto":
        return "full" if small_linear and "full" in record.families else record.families[0]
    return family


def solver(config):
    """The :class:`~.base.Solver` record of ``config.solver``."""
    return SOLVERS[config.solver]


def is_valid(config, state, hyper):
    """Whether a state of ``config.solver`` is usable: every array finite and the
    record's own condition (``positive``) met (traced)."""
    return all_finite(state) & SOLVERS[config.solver].positive(state, hyper)
