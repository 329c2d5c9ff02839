"""Plot helpers: predictive bands, reliability diagrams, prequential learning curves.

The drawing functions need matplotlib, an optional dependency (``pip install
"skbong[plot]"``). It is imported only when a function has to create a figure, so
importing this module, and the numerical helpers :func:`reliability_curve`,
:func:`expected_calibration_error` and :func:`prequential_curve`, work without it.
Each ``plot_*`` function draws on the given Axes (or on a new figure) and returns
the Axes.
"""

import numpy as np
from sklearn.base import clone, is_classifier

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


# ------------------------------------------------------------------- calibration
def _top_label(y_true, proba, classes):
    proba = np.asarray(proba, dtype=float)
    if proba.ndim == 1:  # probability of the positive class (binary)
        proba = np.column_stack([1.0 - proba, proba])
    if proba.ndim != 2 or proba.shape[1] < 2:
        raise ValueError(
            "proba must be of shape (n,) (positive-class probability) or (n, n_classes) "
            f"with n_classes >= 2; got shape {proba.shape}"
        )
    y_true = np.asarray(y_true).ravel()
    if y_true.shape[0] != proba.shape[0]:
        raise ValueError(f"y_true has {y_true.shape[0]} rows but proba has {proba.shape[0]}")
    if y_true.shape[0] == 0:
        raise ValueError("y_true and proba are empty")
    if classes is None:
        index = y_true
        if index.dtype.kind not in "iub":
            raise ValueError(
                "y_true must hold class indices (columns of proba); pass classes= (e.g. "
                "estimator.classes_) to map labels to columns"
            )
    else:
        classes = np.asarray(classes)
        if classes.shape[0] != proba.shape[1]:
            raise ValueError(f"{classes.shape[0]} classes but proba has {proba.shape[1]} columns")
        unknown = ~np.isin(y_true, classes)
        if np.any(unknown):
            raise ValueError(f"y_true has labels not in classes: {np.unique(y_true[unknown])}")
        order = np.argsort(classes, kind="stable")
        index = order[np.searchsorted(classes, y_true, sorter=order)]
    if np.any(index < 0) or np.any(index >= proba.shape[1]):
        raise ValueError(f"class indices must lie in [0, {proba.shape[1]})")
    confidence = proba.max(axis=1)
    correct = proba.argmax(axis=1) == index
    return confidence, correct


def reliability_curve(y_true, proba, n_bins=10, classes=None):
    """Binned confidence and accuracy of the top-label prediction, and the ECE.

    The confidence of a row is its largest predicted probability and the row counts as
    correct when that class is the true one. Rows are grouped into ``n_bins``
    equal-width confidence bins: bin ``b`` holds confidences in
    ``[b / n_bins, (b + 1) / n_bins)``, the last bin also holds 1.

    Parameters
    ----------
    y_true : array-like of shape (n,)
        True classes: column indices of ``proba``, or labels when ``classes`` is given.
    proba : array-like of shape (n, n_classes) or (n,)
        Predicted probabilities; a 1-D array is the positive-class probability of a
        binary problem (column 1).
    n_bins : int, default=10
        Number of equal-width bins on [0, 1].
    classes : array-like of shape (n_classes,), default=None
        Labels of the columns of ``proba`` (e.g. ``estimator.classes_``).

    Returns
    -------
    confidence : ndarray of shape (n_bins,)
        Mean confidence per bin (NaN where the bin is empty).
    accuracy : ndarray of shape (n_bins,)
        Fraction of correct predictions per bin (NaN where empty).
    counts : ndarray of shape (n_bins,)
        Rows per bin.
    ece : float
        Expected calibration error: the sum over bins b of
        (n_b / n) · abs(accuracy_b − confidence_b).

    See Also
    --------
    expected_calibration_error : The ECE alone.
    plot_reliability : The reliability diagram.
    """
    if int(n_bins) != n_bins or n_bins < 1:
        raise ValueError(f"n_bins must be a positive integer, got {n_bins!r}")
    n_bins = int(n_bins)
    conf, correct = _top_label(y_true, proba, classes)
    bins = np.clip((conf * n_bins).astype(int), 0, n_bins - 1)
    counts = np.bincount(bins, minlength=n_bins)
    with np.errstate(invalid="ignore", divide="ignore"):
        confidence = np.bincount(bins, conf, n_bins) / counts
        accuracy = np.bincount(bins, correct.astype(float), n_bins) / counts
    mask = counts > 0
    ece = float(np.sum(counts[mask] / conf.shape[0] * np.abs(accuracy[mask] - confidence[mask])))
    return confidence, accuracy, counts, ece


def expected_calibration_error(y_true, proba, n_bins=10, classes=None):
    """Expected calibration error (ECE) of the top-label prediction.

    The sum over ``n_bins`` equal-width confidence bins b of
    (n_b / n) · abs(accuracy_b − confidence_b) (Guo et al., 2017): 0 for a perfectly
    calibrated classifier, at most 1.

    Parameters
    ----------
    y_true : array-like of shape (n,)
        True classes: column indices of ``proba``, or labels when ``classes`` is given.
    proba : array-like of shape (n, n_classes) or (n,)
        Predicted probabilities (1-D: positive-class probability).
    n_bins : int, default=10
        Number of equal-width bins on [0, 1].
    classes : array-like of shape (n_classes,), default=None
        Labels of the columns of ``proba``.

    Returns
    -------
    ece : float
        The expected calibration error.

    See Also
    --------
    reliability_curve : The per-bin numbers behind it.

    Examples
    --------
    Four predictions with confidences 0.9, 0.8, 0.6 and 0.7, the third one wrong, each
    alone in its bin: ECE = (0.1 + 0.2 + 0.6 + 0.3) / 4 = 0.3.

    >>> from skbong.plotting import expected_calibration_error
    >>> proba = [[0.9, 0.1], [0.2, 0.8], [0.6, 0.4], [0.7, 0.3]]
    >>> round(expected_calibration_error([0, 1, 1, 0], proba), 3)
    0.3
    """
    return reliability_curve(y_true, proba, n_bins, classes)[3]


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
_METRICS = ("accuracy", "log_loss", "squared_error")


def prequential_curve(estimator, X, y, batch_size=1, metric="accuracy", classes=None):
    """Prequential (predict-then-learn) running score of an online learner.

    A clone of ``estimator`` sees the rows of X in order, ``batch_size`` at a time:
    every batch after the first is predicted first and scored, then learned from with
    ``partial_fit``. The curve is the running mean of the per-row score over all rows
    predicted so far, so every row is scored by a model that never saw it.

    Parameters
    ----------
    estimator : estimator with ``partial_fit``
        An unfitted online learner (a :class:`~skbong.BongClassifier`, a
        :class:`~skbong.StreamingPipeline`, an ``SGDClassifier``, ...); it is cloned
        and left untouched.
    X : array-like of shape (n_samples, n_features)
        The stream, in order.
    y : array-like of shape (n_samples,)
        Targets.
    batch_size : int, default=1
        Rows per ``partial_fit`` call.
    metric : {"accuracy", "log_loss", "squared_error"}, default="accuracy"
        Per-row score: 0/1 correctness of ``predict``, −log of the
        ``predict_proba`` probability of the true class (clipped at 1e-15), or the
        squared error of ``predict``.
    classes : array-like, default=None
        All class labels, passed to a classifier's first ``partial_fit``; default
        ``np.unique(y)``.

    Returns
    -------
    n_seen : ndarray of shape (n_evaluations,)
        Rows seen (learned from) after each evaluated batch.
    values : ndarray of shape (n_evaluations,)
        Running mean of the score over the rows predicted so far.

    See Also
    --------
    plot_prequential : Draw the curves of several learners.
    """
    if metric not in _METRICS:
        raise ValueError(f"metric={metric!r} is not one of {_METRICS}")
    if int(batch_size) != batch_size or batch_size < 1:
        raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}")
    batch_size = int(batch_size)
    X, y = np.asarray(X), np.asarray(y)
    if X.shape[0] != y.shape[0]:
        raise ValueError(f"X has {X.shape[0]} rows but y has {y.shape[0]}")
    if X.shape[0] <= batch_size:
        raise ValueError("the stream needs more than one batch to score any row")
    learner = clone(estimator)
    fit_kw = {}
    if is_classifier(learner):
        fit_kw["classes"] = np.unique(y) if classes is None else np.asarray(classes)
    total, n_scored, n_seen, values = 0.0, 0, [], []
    for start in range(0, X.shape[0], batch_size):
        xb, yb = X[start : start + batch_size], y[start : start + batch_size]
        if start > 0:
            if metric == "log_loss":
                proba = learner.predict_proba(xb)
                cols = np.searchsorted(learner.classes_, yb)
                p = np.clip(proba[np.arange(len(yb)), cols], 1e-15, 1.0)
                score = -np.log(p)
            elif metric == "accuracy":
                score = (learner.predict(xb) == yb).astype(float)
            else:
                score = (np.asarray(learner.predict(xb), dtype=float) - yb) ** 2
            total += float(np.sum(score))
            n_scored += len(yb)
            n_seen.append(start + len(yb))
            values.append(total / n_scored)
        learner.partial_fit(xb, yb, **fit_kw)
        fit_kw = {}
    return np.asarray(n_seen), np.asarray(values)


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
