"""The classification face of an estimator with a Gaussian belief: the Bernoulli (two
classes) or categorical likelihood, label encoding, and the posterior predictive
(``predict_proba`` under ``predictive``, ``sample_proba``).

A set of functions of the estimator ``est``, which it names in its class body (see
:mod:`skbong._online.regression_face`).
"""

import numpy as np
import scipy.special
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import column_or_1d

from .. import engine
from .._core.posterior import _check_fitted

Y_NUMERIC = False
"""Targets are labels (``validate_data(y_numeric=False)``)."""


def tags(est, tags):
    """scikit-learn's tags of a classifier."""
    tags.classifier_tags.poor_score = est._poor_score()
    return tags


def learns_noise(est):
    """A label has no noise variance to learn."""
    return False


def likelihood(est, n_outputs):
    return "bernoulli" if n_outputs == 1 else "categorical"


def encode_y(est, y, first, classes=None):
    plain = (  # integer labels of a stream against integer classes_: nothing to check
        not first
        and classes is None
        and type(y) is np.ndarray
        and y.ndim == 1
        and y.dtype.kind in "biu"
        and est.classes_.dtype.kind in "biu"
    )
    if not plain:
        y = column_or_1d(y, warn=True)
        check_classification_targets(y)
    if first:
        labels = np.unique(y) if classes is None else np.unique(np.asarray(classes))
        if classes is not None and len(labels) != len(classes):
            raise ValueError("classes contains duplicate labels")
        if len(labels) < 2:
            raise ValueError(
                f"{type(est).__name__} needs samples of at least 2 classes; got only one class {labels.tolist()}"
            )
        est.classes_ = labels
    elif classes is not None and not np.array_equal(
        np.unique(np.asarray(classes)), est.classes_
    ):
        raise ValueError(
            f"classes={list(classes)} differs from the classes given on the first call "
            f"({est.classes_.tolist()}); call fit() to start again"
        )
    k = len(est.classes_)
    if plain:  # classes_ is sorted: y is a class where it equals its insertion point's
        idx = np.searchsorted(est.classes_, y)
        unseen = (idx == k) | (est.classes_[np.minimum(idx, k - 1)] != y)
    else:  # labels of any type: checked before they are looked up
        unseen = ~np.isin(y, est.classes_)
    if np.any(unseen):
        raise ValueError(
            f"y contains label(s) {np.unique(y[unseen]).tolist()} not in classes_ "
            f"{est.classes_.tolist()}"
        )
    if not plain:
        idx = np.searchsorted(est.classes_, y)
    Y = idx[:, None].astype(np.float64) if k == 2 else np.eye(k)[idx]
    return Y, (1 if k == 2 else k), 1.0


def linear_attributes(est, weights, bias):
    return weights, bias


def predict_log_proba(est, X):
    """Log posterior predictive class probabilities under ``predictive``.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        Inputs.

    Returns
    -------
    log_proba : ndarray of shape (n_samples, n_classes)
        Log probabilities, columns ordered as ``classes_``.
    """
    _check_fitted(est)
    kind = predictive_kind(est)
    n_samples = int(est.predictive_samples)
    logps, log_w = [], []
    for wt, state, _ in est._components():  # one filter, or the prior-variance bank
        (logp,) = est._predict_rows(
            X,
            lambda cfg, st, x, key, thetas=None: (
                engine.predict_log_proba(cfg, st, x, key, kind, n_samples, thetas),
            ),
            state=state,
            sampled=kind != "plugin",
        )
        logps.append(logp.astype(np.float64))
        log_w.append(np.log(wt))
    if len(logps) == 1:
        return logps[0]
    return scipy.special.logsumexp(np.array(logps) + np.array(log_w)[:, None, None], axis=0)


def predictive_kind(est):
    """The predictive in use: ``predictive``, with ``"auto"`` resolved to ``"plugin"``
    (measured: :ref:`which-predictive`)."""
    return "plugin" if est.predictive == "auto" else est.predictive


def predict_proba(est, X):
    """Posterior predictive class probabilities under ``predictive``.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        Inputs.

    Returns
    -------
    proba : ndarray of shape (n_samples, n_classes)
        Probabilities (rows sum to one), columns ordered as ``classes_``.
    """
    proba = np.exp(predict_log_proba(est, X))
    return proba / proba.sum(axis=1, keepdims=True)


def sample_proba(est, X, n_samples=1, random_state=None):
    """Draw class probabilities p(y | f(x, θ)), θ ~ q, from the posterior.

    Each draw is the sigmoid (two classes) or softmax of the logits f(x, θ) at one
    parameter sample, shared by all rows of the draw; with
    a prior bank each draw comes from one filter of the bank, chosen
    with its weight. The average of many draws is the ``predictive="mc"``
    probability of :meth:`predict_proba`.

    Parameters
    ----------
    X : array-like of shape (n_samples_X, n_features)
        Inputs.
    n_samples : int, default=1
        Draws per row.
    random_state : int, RandomState instance or None, default=None
        Seed of the draws.

    Returns
    -------
    proba_samples : ndarray of shape (n_samples_X, n_classes, n_samples)
        Draws (each sums to one over the classes), columns ordered as ``classes_``.
    """
    _, draws = est._draw_outputs(X, n_samples, random_state)
    f = np.concatenate([f for _, f in draws], axis=-1)  # (n, C, S)
    if f.shape[1] == 1:  # Bernoulli: one logit
        return np.concatenate([scipy.special.expit(-f), scipy.special.expit(f)], axis=1)
    return scipy.special.softmax(f, axis=1)


def predict(est, X):
    """Most probable class under the posterior predictive.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        Inputs.

    Returns
    -------
    y_pred : ndarray of shape (n_samples,)
        Predicted labels.
    """
    log_proba = predict_log_proba(est, X)
    return est.classes_[np.argmax(log_proba, axis=1)]
