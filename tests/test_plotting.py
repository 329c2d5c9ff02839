"""The plot helpers of :mod:`skbong.plotting`.

What is tested, and why:

* Every ``plot_*`` function returns the Axes it drew on (the one given, or one of a
  new figure) and draws exactly the data passed in: the artists' data are read back
  and compared with the inputs. The band polygon's vertices are computed from the
  same float64 values in the same order as the test's ``mean ± n_std · std``, so
  they must agree exactly (``assert_array_equal``).
* Figures render headless with the Agg backend to a PNG of the expected pixel size
  (figure size × dpi) that is not blank.
* ``reliability_curve`` and ``expected_calibration_error`` agree with hand
  computations on small cases whose confidences lie away from bin edges (one
  3-class case with empty and shared bins, one binary case given as 1-D and 2-D
  probabilities and with string labels); the calibrated case (confidence 0.75, 3 of 4
  correct, both exact in binary) has an ECE of exactly 0. The hand values are sums of
  a few float64 numbers, so they are checked to rtol 1e-12.
* ``prequential_curve`` equals hand-computed running scores of two deterministic
  stub learners (a majority-vote classifier with Laplace probabilities, a running-
  mean regressor): predict-then-learn order, batching, the classifier's ``classes``
  on the first call, cloning (the given estimator stays unfitted).
* Without matplotlib (simulated by hiding ``matplotlib.pyplot``) a helper that must
  create a figure raises an ImportError that says how to install it, and the helpers
  still draw on an Axes made without pyplot.

The whole module is skipped, with its reason, when matplotlib is not installed.
"""

import io
import sys

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin

matplotlib = pytest.importorskip(
    "matplotlib", reason="matplotlib (the optional 'plot' extra) is needed to test the plots"
)
matplotlib.use("Agg")

import matplotlib.image  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from skbong.metrics import (  # noqa: E402
    expected_calibration_error,
    prequential_curve,
    reliability_curve,
)
from skbong.plotting import (  # noqa: E402
    plot_predictive_band,
    plot_prequential,
    plot_reliability,
)


def _axes():
    """An Axes of a figure made without pyplot (nothing global to close)."""
    return Figure(figsize=(4, 3), dpi=50).add_subplot()


@pytest.fixture
def close_figures():
    yield
    plt.close("all")


# ------------------------------------------------------------------ the band
X_BAND = np.array([0.5, -1.0, 2.0, 0.0, 1.5])  # deliberately unsorted
MEAN = np.array([1.0, -0.5, 2.5, 0.2, 0.0])
STD = np.array([0.1, 0.3, 0.0, 0.25, 1.0])


def test_band_draws_the_mean_and_the_band():
    ax = _axes()
    x_train, y_train = np.array([0.1, 0.7, 1.9]), np.array([1.0, 2.0, 3.0])
    out = plot_predictive_band(X_BAND, MEAN, STD, ax=ax, x_train=x_train, y_train=y_train, n_std=3)
    assert out is ax
    order = np.argsort(X_BAND)
    (line,) = ax.get_lines()
    assert_array_equal(line.get_xdata(), X_BAND[order])
    assert_array_equal(line.get_ydata(), MEAN[order])
    band, points = ax.collections
    vertices = {tuple(v) for v in band.get_paths()[0].vertices}
    expected = {(x, m - 3 * s) for x, m, s in zip(X_BAND, MEAN, STD)}
    expected |= {(x, m + 3 * s) for x, m, s in zip(X_BAND, MEAN, STD)}
    assert vertices == expected
    assert_array_equal(np.asarray(points.get_offsets()), np.column_stack([x_train, y_train]))
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels == ["predictive mean", "± 3 sd", "data"]


def test_band_without_data_and_on_a_new_figure(close_figures):
    ax = plot_predictive_band(X_BAND, MEAN, STD)
    assert ax.figure is plt.gcf()
    assert len(ax.get_lines()) == 1 and len(ax.collections) == 1  # no scatter


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(std=STD[:4]), "same length"),
        (dict(std=-STD), "non-negative"),
        (dict(n_std=0.0), "n_std"),
        (dict(x_train=X_BAND), "both"),
    ],
)
def test_band_rejects_bad_input(kwargs, message):
    args = {**dict(x=X_BAND, mean=MEAN, std=STD, ax=_axes()), **kwargs}
    with pytest.raises(ValueError, match=message):
        plot_predictive_band(**args)


# ----------------------------------------------------------------- calibration
# (probabilities, true class): confidence, predicted class, correct, bin of 5
PROBA3 = np.array(
    [
        [0.50, 0.30, 0.20],  # y=0: 0.50, 0, yes, bin 2
        [0.10, 0.55, 0.35],  # y=2: 0.55, 1, no,  bin 2
        [0.05, 0.10, 0.85],  # y=2: 0.85, 2, yes, bin 4
        [0.90, 0.05, 0.05],  # y=1: 0.90, 0, no,  bin 4
        [0.25, 0.70, 0.05],  # y=1: 0.70, 1, yes, bin 3
        [0.35, 0.33, 0.32],  # y=0: 0.35, 0, yes, bin 1
    ]
)
Y3 = np.array([0, 2, 2, 1, 1, 0])


def test_reliability_curve_by_hand():
    confidence, accuracy, counts, ece = reliability_curve(Y3, PROBA3, n_bins=5)
    assert_array_equal(counts, [0, 1, 2, 1, 2])
    assert np.isnan(confidence[0]) and np.isnan(accuracy[0])  # empty bin
    assert_allclose(confidence[1:], [0.35, (0.50 + 0.55) / 2, 0.70, (0.85 + 0.90) / 2], rtol=1e-12)
    assert_allclose(accuracy[1:], [1.0, 0.5, 1.0, 0.5], rtol=1e-12)
    # (1·|1 − .35| + 2·|.5 − .525| + 1·|1 − .7| + 2·|.5 − .875|) / 6 = 1.75 / 6
    assert_allclose(ece, 1.75 / 6, rtol=1e-12)
    assert_allclose(expected_calibration_error(Y3, PROBA3, n_bins=5), 1.75 / 6, rtol=1e-12)


def test_binary_probabilities_and_string_labels():
    p1 = np.array([0.9, 0.2, 0.65, 0.4])  # P(positive): conf .9, .8, .65, .6
    y = np.array([1, 0, 0, 1])  # correct, correct, wrong, wrong
    # two bins, all four rows in [0.5, 1]: |0.5 − 2.95 / 4| = 0.2375
    expected = abs(0.5 - (0.9 + 0.8 + 0.65 + 0.6) / 4)
    assert_allclose(expected_calibration_error(y, p1, n_bins=2), expected, rtol=1e-12)
    p2 = np.column_stack([1 - p1, p1])
    assert expected_calibration_error(y, p2, n_bins=2) == expected_calibration_error(
        y, p1, n_bins=2
    )
    labels = np.array(["yes", "no", "no", "yes"])
    with_labels = expected_calibration_error(labels, p2, n_bins=2, classes=["no", "yes"])
    assert with_labels == expected_calibration_error(y, p2, n_bins=2)
    # column order is that of `classes`, not sorted order
    swapped = expected_calibration_error(labels, p2[:, ::-1], n_bins=2, classes=["yes", "no"])
    assert swapped == with_labels


def test_calibrated_is_zero_and_certainty_falls_in_the_last_bin():
    proba = np.tile([0.75, 0.25], (4, 1))
    assert expected_calibration_error([0, 0, 0, 1], proba) == 0.0
    _, accuracy, counts, ece = reliability_curve([1, 1], [[0.0, 1.0], [1.0, 0.0]], n_bins=4)
    assert_array_equal(counts, [0, 0, 0, 2])
    assert accuracy[3] == 0.5 and ece == 0.5


@pytest.mark.parametrize(
    "y, proba, kwargs, message",
    [
        ([0, 1], [[0.5, 0.5]], {}, "rows"),
        ([0, 3], [[0.5, 0.5], [0.2, 0.8]], {}, "indices"),
        (["a", "b"], [[0.5, 0.5], [0.2, 0.8]], {}, "classes="),
        (["a", "c"], [[0.5, 0.5], [0.2, 0.8]], dict(classes=["a", "b"]), "not in classes"),
        ([0, 1], [[0.5, 0.5], [0.2, 0.8]], dict(n_bins=0), "n_bins"),
        ([0], [[1.0]], {}, "n_classes >= 2"),
    ],
)
def test_calibration_rejects_bad_input(y, proba, kwargs, message):
    with pytest.raises(ValueError, match=message):
        reliability_curve(y, proba, **kwargs)


def test_reliability_diagram_draws_the_binned_points():
    ax = _axes()
    assert plot_reliability(Y3, PROBA3, ax=ax, n_bins=5, label="model") is ax
    diagonal, curve = ax.get_lines()
    assert_array_equal(diagonal.get_xydata(), [[0, 0], [1, 1]])
    confidence, accuracy, _, ece = reliability_curve(Y3, PROBA3, n_bins=5)
    assert_array_equal(curve.get_xdata(), confidence[1:])  # the empty bin is not drawn
    assert_array_equal(curve.get_ydata(), accuracy[1:])
    assert [t.get_text() for t in ax.get_legend().get_texts()] == [f"model (ECE {ece:.3f})"]


# ---------------------------------------------------------------- prequential
def test_prequential_plot_draws_one_line_per_learner():
    curves = {"a": ([2, 3, 4], [1.0, 0.5, 0.25]), "b": (np.arange(3), np.ones(3))}
    ax = _axes()
    assert plot_prequential(curves, ax=ax, ylabel="log-loss") is ax
    lines = ax.get_lines()
    assert [ln.get_label() for ln in lines] == ["a", "b"]
    for line, (n_seen, values) in zip(lines, curves.values()):
        assert_array_equal(line.get_xdata(), n_seen)
        assert_array_equal(line.get_ydata(), values)
    assert ax.get_ylabel() == "log-loss"
    with pytest.raises(ValueError, match="points"):
        plot_prequential({"a": ([1, 2], [1.0])}, ax=_axes())
    with pytest.raises(ValueError, match="empty"):
        plot_prequential({}, ax=_axes())


class MajorityClassifier(ClassifierMixin, BaseEstimator):
    """Predicts the most frequent label so far (ties: the smallest); Laplace probabilities."""

    def partial_fit(self, X, y, classes=None):
        if not hasattr(self, "classes_"):
            if classes is None:
                raise ValueError("classes must be passed on the first call")
            self.classes_ = np.asarray(classes)
            self.counts_ = np.zeros(len(classes))
        elif classes is not None:
            raise AssertionError("classes passed after the first call")
        self.counts_ += np.array([np.sum(np.asarray(y) == c) for c in self.classes_])
        return self

    def predict_proba(self, X):
        p = (self.counts_ + 1) / (self.counts_.sum() + len(self.classes_))
        return np.tile(p, (len(X), 1))

    def predict(self, X):
        return np.full(len(X), self.classes_[np.argmax(self.counts_)])


class MeanRegressor(RegressorMixin, BaseEstimator):
    """Predicts the mean of the targets seen so far."""

    def partial_fit(self, X, y):
        self.sum_ = getattr(self, "sum_", 0.0) + float(np.sum(y))
        self.n_ = getattr(self, "n_", 0) + len(y)
        return self

    def predict(self, X):
        return np.full(len(X), self.sum_ / self.n_)


X_STREAM = np.zeros((6, 1))
Y_STREAM = np.array([0, 0, 1, 1, 1, 0])


def test_prequential_curve_accuracy_by_hand():
    learner = MajorityClassifier()
    n_seen, values = prequential_curve(learner, X_STREAM, Y_STREAM)
    # row 0 learned only; rows 1..5 predicted 0, 0, 0, 0 (tie → 0), 1: right, then wrong ×4
    assert_array_equal(n_seen, [2, 3, 4, 5, 6])
    assert_allclose(values, [1, 1 / 2, 1 / 3, 1 / 4, 1 / 5], rtol=1e-15)
    assert not hasattr(learner, "classes_")  # a clone learned, not the given estimator


def test_prequential_curve_log_loss_in_batches():
    n_seen, values = prequential_curve(
        MajorityClassifier(), X_STREAM, Y_STREAM, batch_size=2, metric="log_loss", classes=[0, 1]
    )
    # after {0: 2}: p(1) = 1/4 for rows 2, 3; after {0: 2, 1: 2}: p = 1/2 for rows 4, 5
    assert_array_equal(n_seen, [4, 6])
    assert_allclose(values, [np.log(4), (2 * np.log(4) + 2 * np.log(2)) / 4], rtol=1e-12)


def test_prequential_curve_squared_error():
    y = np.array([1.0, 3.0, 2.0, 6.0])
    n_seen, values = prequential_curve(MeanRegressor(), np.zeros((4, 1)), y, metric="squared_error")
    # predictions 1, 2, 2 for rows 1, 2, 3: squared errors 4, 0, 16
    assert_array_equal(n_seen, [2, 3, 4])
    assert_allclose(values, [4.0, 2.0, 20 / 3], rtol=1e-15)
    with pytest.raises(ValueError, match="metric"):
        prequential_curve(MeanRegressor(), np.zeros((4, 1)), y, metric="r2")
    with pytest.raises(ValueError, match="more than one batch"):
        prequential_curve(MeanRegressor(), np.zeros((4, 1)), y, batch_size=4)


def test_prequential_curve_several_metrics_and_progress():
    seen = []
    n_seen, values = prequential_curve(
        MajorityClassifier(), X_STREAM, Y_STREAM, batch_size=2,
        metric=["accuracy", "log_loss"], classes=[0, 1], progress=seen.append,
    )
    # after {0: 2}: rows 2, 3 (labels 1, 1) predicted 0; after {0: 2, 1: 2}: rows 4, 5
    # (labels 1, 0) predicted 0 (tie): right once
    assert_array_equal(n_seen, [4, 6])
    assert values.shape == (2, 2)
    assert_allclose(values[:, 0], [0.0, 1 / 4], rtol=1e-15)
    assert_allclose(values[:, 1], [np.log(4), (2 * np.log(4) + 2 * np.log(2)) / 4], rtol=1e-12)
    assert seen == [2, 2, 2]  # every batch, the first (learned only) included
    with pytest.raises(ValueError, match="metric='r2'"):
        prequential_curve(MajorityClassifier(), X_STREAM, Y_STREAM, metric=["accuracy", "r2"])


# ------------------------------------------------------------ headless output
def test_renders_headless_to_png():
    fig = Figure(figsize=(4, 3), dpi=50)
    axes = fig.subplots(1, 3)
    plot_predictive_band(X_BAND, MEAN, STD, ax=axes[0])
    plot_reliability(Y3, PROBA3, ax=axes[1], n_bins=5)
    plot_prequential({"a": ([2, 3, 4], [1.0, 0.5, 0.25])}, ax=axes[2])
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    data = buffer.getvalue()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    image = matplotlib.image.imread(io.BytesIO(data))
    assert image.shape[:2] == (150, 200)  # (3 × 50, 4 × 50) pixels
    assert image[..., :3].std() > 0.05  # something was drawn on the white canvas


def test_pyplot_figure_renders_with_agg(close_figures, tmp_path):
    ax = plot_reliability(Y3, PROBA3)  # new pyplot figure
    assert ax.figure.canvas.get_renderer() is not None
    path = tmp_path / "reliability.png"
    ax.figure.savefig(path)
    assert path.read_bytes()[:4] == b"\x89PNG"


def test_missing_matplotlib_gives_an_install_hint(monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)  # import now fails
    with pytest.raises(ImportError, match=r"pip install 'skbong\[plot\]'"):
        plot_prequential({"a": ([1, 2], [0.5, 0.5])})
    ax = _axes()  # an Axes built without pyplot still works
    assert plot_prequential({"a": ([1, 2], [0.5, 0.5])}, ax=ax) is ax
    assert expected_calibration_error([0], [[0.9, 0.1]]) == pytest.approx(0.1, rel=1e-12)
