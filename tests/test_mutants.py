"""The hand-made mutants of ``tools/mutate.py`` stay applicable: each one's original text
occurs exactly once in its file. A mutant whose text no longer matches would be reported
as not applied rather than run, so a refactoring could silently retire the checks it
stands for; this keeps the list in step with the code."""

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _mutants():
    spec = importlib.util.spec_from_file_location("mutate", ROOT / "tools" / "mutate.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.MUTANTS


@pytest.mark.parametrize("mutant", _mutants(), ids=lambda m: m.name)
def test_each_mutant_applies_once(mutant):
    text = (ROOT / mutant.path).read_text()
    assert text.count(mutant.old) == 1, f"{mutant.name}: {mutant.path} holds its text {text.count(mutant.old)} times"
    assert mutant.old != mutant.new


def test_mutant_names_are_unique():
    names = [m.name for m in _mutants()]
    assert len(names) == len(set(names))
