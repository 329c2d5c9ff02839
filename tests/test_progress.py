"""Progress reporting of ``fit`` / ``partial_fit`` with ``verbose``.

What is tested, and why:

* ``verbose=1`` draws a tqdm bar on stderr, named after the estimator, counting
  update steps: 24 rows in mini-batches of 5 are ⌈24 / 5⌉ = 5 steps, so the bar ends
  at ``5/5``; one-row steps end at ``24/24``. Nothing goes to stdout.
* ``verbose=0`` (the default) prints nothing at all, on either stream.
* Without tqdm (its import made to fail with ``monkeypatch``) a fit still works and
  reports plain lines, one after each compiled chunk of the stream: for 600 one-row
  steps the lines are the running sums of ``skbong.engine.chunk_plan(600)`` (512 then
  600 with the current 512-step chunks), ending at 600/600.
* Reporting never changes the result: the posterior mean after a verbose fit, with or
  without tqdm, is bit-for-bit the one of a silent fit (same operations, same order).
"""

import importlib.util
import sys

import numpy as np
import pytest
from numpy.testing import assert_array_equal

from skbong import BongClassifier, BongRegressor
from skbong.engine import chunk_plan

needs_tqdm = pytest.mark.skipif(
    importlib.util.find_spec("tqdm") is None,
    reason="tqdm (the optional 'progress' extra) is not installed: there is no bar to check",
)

N, D = 24, 3
RNG = np.random.default_rng(0)
X = RNG.normal(size=(N, D))
Y = X @ np.array([1.0, -2.0, 0.5]) + 0.1 * RNG.normal(size=N)
Y_BIN = (X[:, 0] > 0).astype(int)
CONFIG = dict(family="diag", random_state=0)


def _silent_mean(estimator_cls, **kw):
    return estimator_cls(**CONFIG, **kw).fit(X, Y if estimator_cls is BongRegressor else Y_BIN)


@needs_tqdm
def test_verbose_draws_a_tqdm_bar_on_stderr(capsys):
    silent = _silent_mean(BongRegressor, batch_size=5).posterior_mean_
    assert capsys.readouterr() == ("", "")
    reg = BongRegressor(**CONFIG, batch_size=5, verbose=1).fit(X, Y)
    out, err = capsys.readouterr()
    assert out == ""
    assert "BongRegressor" in err and "5/5" in err and "100%" in err
    assert_array_equal(reg.posterior_mean_, silent)


@needs_tqdm
def test_verbose_partial_fit_classifier(capsys):
    BongClassifier(**CONFIG, verbose=1).partial_fit(X, Y_BIN, classes=[0, 1])
    out, err = capsys.readouterr()
    assert out == "" and "BongClassifier" in err and f"{N}/{N}" in err


def test_silent_by_default(capsys):
    BongRegressor(**CONFIG).fit(X, Y).partial_fit(X[:3], Y[:3])
    BongClassifier(**CONFIG, verbose=0).fit(X, Y_BIN)
    assert capsys.readouterr() == ("", "")


def test_works_without_tqdm(capsys, monkeypatch):
    n_long = 600
    x_long = np.resize(X, (n_long, D))
    y_long = (x_long[:, 0] > 0).astype(int)
    silent = BongClassifier(**CONFIG).fit(x_long, y_long).posterior_mean_
    capsys.readouterr()
    monkeypatch.setitem(sys.modules, "tqdm.auto", None)  # `from tqdm.auto import tqdm` fails
    monkeypatch.setitem(sys.modules, "tqdm", None)
    clf = BongClassifier(**CONFIG, verbose=1).fit(x_long, y_long)
    # one line per program call: the chunks (chunk_plan), cut where a prior bank of a
    # large model checks which of its filters to keep (steps 64, 256)
    ends = set(np.cumsum(chunk_plan(n_long))) | {64, 256}
    lines = capsys.readouterr().out.splitlines()
    steps = [int(line.split()[-1].split("/")[0]) for line in lines]
    assert lines == [f"[BongClassifier] step {k}/{n_long}" for k in steps]
    assert steps == sorted(set(steps)) and steps[-1] == n_long and set(steps) <= ends
    assert_array_equal(clf.posterior_mean_, silent)


def test_tempered_passes_report_as_one(capsys, monkeypatch):
    """``fit``'s three tempered passes over 24 one-row steps are one report of 72 steps:
    the lines count on across the passes (24, 48, 72 of 72), never restarting at 0 of
    24."""
    monkeypatch.setitem(sys.modules, "tqdm.auto", None)
    monkeypatch.setitem(sys.modules, "tqdm", None)
    silent = BongRegressor(hidden_layer_sizes=(2,), passes=3, **CONFIG).fit(X, Y)
    capsys.readouterr()
    reg = BongRegressor(hidden_layer_sizes=(2,), passes=3, verbose=1, **CONFIG).fit(X, Y)
    assert reg.passes_ == 3
    lines = capsys.readouterr().out.splitlines()
    assert lines == [f"[BongRegressor] step {k}/{3 * N}" for k in (N, 2 * N, 3 * N)]
    assert_array_equal(reg.posterior_mean_, silent.posterior_mean_)
    assert not hasattr(reg, "_pass_progress")
