"""Plot helpers: predictive bands, reliability diagrams, prequential learning curves.

The drawing functions need matplotlib, an optional dependency (``pip install
"skbong[plot]"``). It is imported only when a function has to create a figure, so
importing this module works without it. Each ``plot_*`` function draws on the given
Axes (or on a new figure) and returns the Axes. The numbers they draw come from
:mod:`skbong.metrics` (:func:`~skbong.metrics.reliability_curve`,
:func:`~skbong.metrics.expected_calibration_error`,
:func:`~skbong.metrics.prequential_curve`), which this module re-exports.
"""

import numpy as np

from .metrics import expected_calibration_error, prequential_curve, reliability_curve

_MATPLOTLIB_MISSING = (
    "skbong.plotting needs matplotlib to draw, an optional dependency; install it with "
    "pip install 'skbong[plot]' (or pip install matplotlib), or pass an existing Axes"
)


def _pyplot():
    try:
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise ImportError(_MATPLOTLIB_MISSING) from exc
    return plt


def _axes(ax):
    if ax is None:
        _, ax = _pyplot().subplots()
    return ax


# --------------------------------------------------------------- predictive band
def plot_predictive_band(
    x, mean, std, ax=None, x_train=None, y_train=None, n_std=2.0, label="predictive mean"
):
    """Plot a 1-D predictive mean with a ± ``n_std`` standard-deviation band.

    Parameters
    ----------
    x : array-like of shape (n,)
        1-D inputs (sorted here if they are not).
    mean : array-like of shape (n,)
        Predictive mean, e.g. the first output of ``predict(X, return_std=True)``.
    std : array-like of shape (n,)
        Predictive standard deviation (non-negative), the second output.
    ax : matplotlib Axes, default=None
        Where to draw; a new figure if None.
    x_train, y_train : array-like of shape (m,), default=None
        Observations to scatter on top (both or neither).
    n_std : float, default=2.0
        Half-width of the band in standard deviations (2 covers about 95 % of a
        Gaussian predictive).
    label : str, default="predictive mean"
        Legend label of the mean curve.

    Returns
    -------
    ax : matplotlib Axes
        The axes drawn on: one line (the mean), one filled band from
        ``mean - n_std * std`` to ``mean + n_std * std``, and the scattered data.
    """
    x, mean, std = (np.asarray(a, dtype=float).ravel() for a in (x, mean, std))
    if not (x.shape == mean.shape == std.shape):
        raise ValueError(
            f"x, mean and std must have the same length, got {x.size}, {mean.size} and {std.size}"
        )
    if np.any(std < 0):
        raise ValueError("std must be non-negative")
    if n_std <= 0:
        raise ValueError(f"n_std must be positive, got {n_std}")
    if (x_train is None) != (y_train is None):
        raise ValueError("pass both x_train and y_train, or neither")
    order = np.argsort(x, kind="stable")
    x, mean, std = x[order], mean[order], std[order]
    ax = _axes(ax)
    (line,) = ax.plot(x, mean, label=label)
    ax.fill_between(
        x,
        mean - n_std * std,
        mean + n_std * std,
        color=line.get_color(),
        alpha=0.25,
        label=f"± {n_std:g} sd",
    )
    if x_train is not None:
        ax.scatter(np.ravel(x_train), np.ravel(y_train), s=8, c="k", alpha=0.5, label="data")
    ax.legend()
    return ax


def plot_reliability(y_true, proba, ax=None, n_bins=10, label=None, classes=None):
    """Reliability diagram: accuracy against confidence per bin, with the ECE.

    A calibrated classifier lies on the dotted diagonal; points below it are
    over-confident, points above under-confident.

    Parameters
    ----------
    y_true : array-like of shape (n,)
        True classes: column indices of ``proba``, or labels when ``classes`` is given.
    proba : array-like of shape (n, n_classes) or (n,)
        Predicted probabilities (1-D: positive-class probability).
    ax : matplotlib Axes, default=None
        Where to draw; a new figure if None.
    n_bins : int, default=10
        Number of equal-width confidence bins.
    label : str, default=None
        Name of the curve; the legend shows it with the ECE.
    classes : array-like of shape (n_classes,), default=None
        Labels of the columns of ``proba`` (e.g. ``estimator.classes_``).

    Returns
    -------
    ax : matplotlib Axes
        The axes drawn on: the diagonal, then one line through
        (confidence_b, accuracy_b) of every non-empty bin.

    See Also
    --------
    reliability_curve : The numbers drawn.
    """
    confidence, accuracy, _, ece = reliability_curve(y_true, proba, n_bins, classes)
    ax = _axes(ax)
    mask = ~np.isnan(accuracy)
    ax.plot([0, 1], [0, 1], "k:", lw=1, label="_calibrated")
    name = f"{label} (ECE {ece:.3f})" if label else f"ECE {ece:.3f}"
    ax.plot(confidence[mask], accuracy[mask], "o-", label=name)
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_xlabel("confidence (top-label probability)")
    ax.set_ylabel("accuracy")
    ax.legend()
    return ax


# ---------------------------------------------------------------- prequential
def plot_prequential(curves, ax=None, ylabel="prequential accuracy"):
    """Plot prequential (predict-then-learn) learning curves, one line per learner.

    Parameters
    ----------
    curves : dict of str to tuple (n_seen, values)
        One curve per learner: the number of rows seen at each evaluation and the
        running metric, e.g. the output of :func:`prequential_curve`.
    ax : matplotlib Axes, default=None
        Where to draw; a new figure if None.
    ylabel : str, default="prequential accuracy"
        Label of the y axis.

    Returns
    -------
    ax : matplotlib Axes
        The axes drawn on, with one labelled line per entry of ``curves``, in order.
    """
    if not curves:
        raise ValueError("curves is empty")
    pairs = {}
    for name, (n_seen, values) in curves.items():
        n_seen, values = np.ravel(n_seen), np.ravel(values)
        if n_seen.shape != values.shape:
            raise ValueError(
                f"curve {name!r}: n_seen has {n_seen.size} points but values has {values.size}"
            )
        pairs[name] = (n_seen, values)
    ax = _axes(ax)
    for name, (n_seen, values) in pairs.items():
        ax.plot(n_seen, values, label=name)
    ax.set_xlabel("observations seen")
    ax.set_ylabel(ylabel)
    ax.legend()
    ax.grid(alpha=0.3)
    return ax


__all__ = [
    "expected_calibration_error",
    "plot_predictive_band",
    "plot_prequential",
    "plot_reliability",
    "prequential_curve",
    "reliability_curve",
]
