"""Plot helpers (optional ``plot`` extra: matplotlib).

Each function draws on a given (or new) matplotlib Axes and returns it.
"""

import numpy as np


def _axes(ax):
    if ax is None:
        import matplotlib.pyplot as plt

        _, ax = plt.subplots()
    return ax


def plot_prequential(curves, ax=None, ylabel="prequential accuracy"):
    """Plot prequential (predict-then-learn) learning curves.

    Parameters
    ----------
    curves : dict of str -> (n_seen, values)
        One curve per learner: the number of rows seen before each evaluation and the
        running metric.
    ax : matplotlib Axes, default=None
        Where to draw; a new figure if None.
    ylabel : str, default="prequential accuracy"
        Label of the y axis.

    Returns
    -------
    ax : matplotlib Axes
        The axes drawn on.
    """
    ax = _axes(ax)
    for name, (n_seen, values) in curves.items():
        ax.plot(np.asarray(n_seen), np.asarray(values), label=name)
    ax.set_xlabel("observations seen")
    ax.set_ylabel(ylabel)
    ax.legend()
    ax.grid(alpha=0.3)
    return ax


def plot_predictive_band(x, mean, std, ax=None, x_train=None, y_train=None, n_std=2.0):
    """Plot a 1-D predictive mean with a ± ``n_std`` standard-deviation band.

    Parameters
    ----------
    x : array of shape (n,)
        Sorted 1-D inputs.
    mean, std : arrays of shape (n,)
        Predictive mean and standard deviation (e.g. ``predict(X, return_std=True)``).
    ax : matplotlib Axes, default=None
        Where to draw; a new figure if None.
    x_train, y_train : arrays, default=None
        Observations to scatter.
    n_std : float, default=2.0
        Half-width of the band in standard deviations.

    Returns
    -------
    ax : matplotlib Axes
        The axes drawn on.
    """
    ax = _axes(ax)
    x, mean, std = (np.asarray(a).ravel() for a in (x, mean, std))
    ax.plot(x, mean, label="predictive mean")
    ax.fill_between(x, mean - n_std * std, mean + n_std * std, alpha=0.3, label=f"± {n_std:g} sd")
    if x_train is not None:
        ax.scatter(np.ravel(x_train), np.ravel(y_train), s=8, c="k", alpha=0.5, label="data")
    ax.legend()
    return ax


def reliability_curve(y_true, proba, n_bins=10):
    """Binned confidence, accuracy and expected calibration error (ECE).

    Parameters
    ----------
    y_true : array of shape (n,)
        True class indices (columns of ``proba``).
    proba : array of shape (n, n_classes)
        Predicted probabilities.
    n_bins : int, default=10
        Equal-width confidence bins on [0, 1].

    Returns
    -------
    confidence, accuracy, counts : arrays of shape (n_bins,)
        Mean confidence and accuracy per bin (NaN where empty) and bin counts.
    ece : float
        Σ_b (n_b / n) |accuracy_b − confidence_b|.
    """
    proba = np.asarray(proba)
    conf = proba.max(axis=1)
    correct = proba.argmax(axis=1) == np.asarray(y_true)
    bins = np.minimum((conf * n_bins).astype(int), n_bins - 1)
    counts = np.bincount(bins, minlength=n_bins)
    with np.errstate(invalid="ignore"):
        confidence = np.bincount(bins, conf, n_bins) / counts
        accuracy = np.bincount(bins, correct, n_bins) / counts
    mask = counts > 0
    ece = float(np.sum(counts[mask] / len(conf) * np.abs(accuracy[mask] - confidence[mask])))
    return confidence, accuracy, counts, ece


def plot_reliability(y_true, proba, ax=None, n_bins=10, label=None):
    """Reliability diagram (accuracy against confidence) with the ECE in the legend.

    Parameters
    ----------
    y_true : array of shape (n,)
        True class indices (columns of ``proba``).
    proba : array of shape (n, n_classes)
        Predicted probabilities.
    ax : matplotlib Axes, default=None
        Where to draw; a new figure if None.
    n_bins : int, default=10
        Equal-width confidence bins.
    label : str, default=None
        Name of the curve.

    Returns
    -------
    ax : matplotlib Axes
        The axes drawn on.
    """
    ax = _axes(ax)
    confidence, accuracy, _, ece = reliability_curve(y_true, proba, n_bins)
    mask = ~np.isnan(accuracy)
    name = f"{label} (ECE {ece:.3f})" if label else f"ECE {ece:.3f}"
    ax.plot(confidence[mask], accuracy[mask], "o-", label=name)
    ax.plot([0, 1], [0, 1], "k:", lw=1)
    ax.set_xlabel("confidence")
    ax.set_ylabel("accuracy")
    ax.legend()
    return ax
