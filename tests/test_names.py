"""Each family, likelihood and batch solver is resolved once into its registry record:
outside the registries and the engine's configuration module, no module of the package
compares a value with one of their names (``x == "diag"``, ``x in ("vogn", "von")``,
``x.startswith("full")``). What differs between them is a field of the record.

Read from the source (``ast``), so that the test sees every comparison, also those a run
would not reach; string literals elsewhere (messages, dictionary keys, parameter
constraints, defaults) are not comparisons and are allowed."""

import ast
import pathlib

import pytest

import skbong
from skbong import engine
from skbong.engine import solvers

ROOT = pathlib.Path(skbong.__file__).parent

NAMES = frozenset(engine.FAMILY_NAMES) | frozenset(engine.LIKELIHOODS) | frozenset(solvers.SOLVER_NAMES)

OWNERS = (
    "engine/families/",  # the family records
    "engine/likelihoods.py",  # the likelihood records and resolve()
    "engine/solvers/registry.py",  # the solver records and their family checks
    "engine/config.py",  # the one module that checks names against the registries
)
"""The modules that may compare a name: the registries and the configuration's checks."""


def _literals(node):
    """The string constants a comparison's operand is or holds (a tuple, list or set)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return [v for e in node.elts for v in _literals(e)]
    return []


def name_comparisons(tree):
    """(line, name) of every comparison with a family, likelihood or solver name."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            operands = (node.left, *node.comparators)
            if any(isinstance(o, ast.Attribute) and o.attr == "hess_kind" for o in operands):
                continue  # a curvature's shape ("dense", "diag"), a field of the record
            for operand in operands:
                found += [(node.lineno, v) for v in _literals(operand) if v in NAMES]
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("startswith", "endswith")
        ):
            found += [(node.lineno, v) for a in node.args for v in _literals(a) if v in NAMES]
    return found


def test_the_detector_finds_each_form():
    """The detector itself: each form of comparison is found, a message is not."""
    source = (
        'a = family == "diag"\n'
        'b = "vogn" != solver\n'
        'c = likelihood in ("gaussian", "student_t")\n'
        'd = family.startswith("full")\n'
        'e = f"family={family!r} is not \'diag\'"\n'
        'f = {"diag": 1}["diag"]\n'
        'g = FAMILIES[family].hess_kind == "diag"\n'
        'h = "diag" == config.family\n'
    )
    lines = sorted({line for line, _ in name_comparisons(ast.parse(source))})
    assert lines == [1, 2, 3, 4, 8]


@pytest.mark.parametrize(
    "path",
    sorted(p for p in ROOT.rglob("*.py") if not str(p.relative_to(ROOT)).startswith(OWNERS)),
    ids=lambda p: str(p.relative_to(ROOT)),
)
def test_no_module_outside_the_registries_compares_a_name(path):
    found = name_comparisons(ast.parse(path.read_text(encoding="utf-8")))
    assert not found, f"{path.relative_to(ROOT)} compares names {found}: read a record's field"
