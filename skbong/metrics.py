"""Scores of probabilistic and online predictions: calibration and prequential curves.

Pure numpy (no plotting): :func:`reliability_curve` and
:func:`expected_calibration_error` score predicted class probabilities;
:func:`prequential_curve` scores an online learner on a stream, predict-then-learn.
:mod:`skbong.plotting` draws them.
"""

import numpy as np
from sklearn.base import clone, is_classifier


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

    >>> from skbong.metrics import expected_calibration_error
    >>> proba = [[0.9, 0.1], [0.2, 0.8], [0.6, 0.4], [0.7, 0.3]]
    >>> round(expected_calibration_error([0, 1, 1, 0], proba), 3)
    0.3
    """
    return reliability_curve(y_true, proba, n_bins, classes)[3]


_METRICS = ("accuracy", "log_loss", "squared_error")


def prequential_curve(
    estimator, X, y, batch_size=1, metric="accuracy", classes=None, progress=None
):
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
    metric : {"accuracy", "log_loss", "squared_error"} or list of them, default="accuracy"
        Per-row score: 0/1 correctness of ``predict``, −log of the
        ``predict_proba`` probability of the true class (clipped at 1e-15), or the
        squared error of ``predict``; a list scores every batch with each.
    classes : array-like, default=None
        All class labels, passed to a classifier's first ``partial_fit``; default
        ``np.unique(y)``.
    progress : callable, default=None
        Called with the number of rows of each batch once it is learned from (e.g. a
        progress bar's ``update``).

    Returns
    -------
    n_seen : ndarray of shape (n_evaluations,)
        Rows seen (learned from) after each evaluated batch.
    values : ndarray of shape (n_evaluations,) or (n_evaluations, n_metrics)
        Running mean of the score over the rows predicted so far (one column per
        metric when ``metric`` is a list).

    See Also
    --------
    skbong.plotting.plot_prequential : Draw the curves of several learners.
    """
    metrics = [metric] if isinstance(metric, str) else list(metric)
    for name in metrics:
        if name not in _METRICS:
            raise ValueError(f"metric={name!r} is not one of {_METRICS}")
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
    total, n_scored, n_seen, values = np.zeros(len(metrics)), 0, [], []
    for start in range(0, X.shape[0], batch_size):
        xb, yb = X[start : start + batch_size], y[start : start + batch_size]
        if start > 0:
            total += [np.sum(_row_scores(learner, name, xb, yb)) for name in metrics]
            n_scored += len(yb)
            n_seen.append(start + len(yb))
            values.append(total / n_scored)
        learner.partial_fit(xb, yb, **fit_kw)
        fit_kw = {}
        if progress is not None:
            progress(len(yb))
    values = np.asarray(values)
    return np.asarray(n_seen), values[:, 0] if isinstance(metric, str) else values


def _row_scores(learner, metric, xb, yb):
    """The per-row ``metric`` of a fitted learner on one batch (see prequential_curve)."""
    if metric == "log_loss":
        proba = learner.predict_proba(xb)
        cols = np.searchsorted(learner.classes_, yb)
        return -np.log(np.clip(proba[np.arange(len(yb)), cols], 1e-15, 1.0))
    if metric == "accuracy":
        return (learner.predict(xb) == yb).astype(float)
    return (np.asarray(learner.predict(xb), dtype=float) - yb) ** 2

__all__ = ["expected_calibration_error", "prequential_curve", "reliability_curve"]
