"""``python -m skbong``, the README's main command: the printed table.

With ``--hidden 0`` (softmax regression) and batches of 100 the demo is a few seconds.
The table must hold one line per learner with the final prequential accuracy and
log-loss, equal to :func:`skbong.metrics.prequential_curve` of the same learner (the
demo is that function plus timing and a progress bar), and BongClassifier must be
better than chance by far (digits, 10 classes: softmax regression reaches about 0.9).
"""

import sys

import numpy as np
import pytest
from sklearn.datasets import load_digits
from sklearn.preprocessing import StandardScaler

from skbong import BongClassifier, make_streaming_pipeline
from skbong.__main__ import main
from skbong.metrics import prequential_curve


def test_main_prints_the_prequential_table(capsys):
    assert main(["--hidden", "0", "--batch-size", "100", "--no-plot", "--quiet"]) == 0
    lines = capsys.readouterr().out.splitlines()
    rows = {line.split()[0]: [float(v) for v in line.split()[1:]] for line in lines[-2:]}
    assert set(rows) == {"BongClassifier", "SGDClassifier"}
    X, y = load_digits(return_X_y=True)
    order = np.random.default_rng(0).permutation(len(y))
    learner = make_streaming_pipeline(StandardScaler(), BongClassifier(random_state=0))
    _, values = prequential_curve(
        learner, X[order], y[order], 100, ["accuracy", "log_loss"], np.unique(y)
    )
    accuracy, log_loss, seconds = rows["BongClassifier"]
    assert accuracy == pytest.approx(values[-1, 0], abs=5e-5)  # printed to 4 decimals
    assert log_loss == pytest.approx(values[-1, 1], abs=5e-5)
    assert accuracy > 0.85 and seconds > 0
    assert 0 <= rows["SGDClassifier"][0] <= 1 and rows["SGDClassifier"][1] > 0


class _Bar:
    """A stand-in for ``tqdm.auto.tqdm`` that records its total and its updates."""

    made = []

    def __init__(self, total, unit, desc):
        self.total, self.desc, self.updates, self.closed = total, desc, [], False
        _Bar.made.append(self)

    def update(self, n):
        self.updates.append(n)

    def close(self):
        self.closed = True


def test_progress_bar_counts_each_row_once_per_learner(monkeypatch):
    """Two learners over 47 rows in batches of 10: one bar per learner, each of total 47,
    updated 10, 10, 10, 10, 7 (a bar of 2 × 47 rows would count every row twice)."""
    import types

    from sklearn.linear_model import SGDClassifier

    from skbong.__main__ import prequential

    monkeypatch.setitem(sys.modules, "tqdm.auto", types.SimpleNamespace(tqdm=_Bar))
    monkeypatch.setattr(_Bar, "made", [])
    X, y = load_digits(return_X_y=True)
    X, y = X[:47], y[:47]
    learners = {
        name: make_streaming_pipeline(StandardScaler(), SGDClassifier(loss="log_loss", random_state=seed))
        for seed, name in enumerate(["first", "second"])
    }
    prequential(learners, X, y, np.unique(y), 10)
    assert [bar.total for bar in _Bar.made] == [47, 47]
    assert [bar.updates for bar in _Bar.made] == [[10, 10, 10, 10, 7]] * 2
    assert [bar.desc.endswith(name) for bar, name in zip(_Bar.made, learners)] == [True] * 2
    assert all(bar.closed for bar in _Bar.made)
    prequential(learners, X, y, np.unique(y), 10, show_progress=False)
    assert len(_Bar.made) == 2  # --quiet: no bar
