"""``python -m skbong``, the README's main command: the printed table.

With ``--hidden 0`` (softmax regression) and batches of 100 the demo is a few seconds.
The table must hold one line per learner with the final prequential accuracy and
log-loss, equal to :func:`skbong.metrics.prequential_curve` of the same learner (the
demo is that function plus timing and a progress bar), and BongClassifier must be
better than chance by far (digits, 10 classes: softmax regression reaches about 0.9).
"""

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
