"""Fitting on a dask collection (:func:`fit_partitions`): one partition per task, each
filtered from the prior where it lies, the posteriors merged in a tree reduction
(:func:`skbong.merge_posteriors`).

dask is an optional dependency (the ``dask`` extra), imported only when called.
"""

import uuid
from numbers import Integral

import numpy as np
from sklearn.base import clone, is_classifier
from sklearn.utils import check_random_state

from ._merging.checks import check_mergeable, check_online
from ._merging.merge import merge_fitted


def _partitions(data, name):
    """The row partitions of a dask array (rows chunked, columns in one chunk), DataFrame
    or Series, as a list of ``Delayed``; also the collection actually partitioned."""
    import dask
    import dask.array as da

    if isinstance(data, da.Array):
        if data.ndim not in (1, 2):
            raise ValueError(f"{name} must be 1-D or 2-D; got a {data.ndim}-D dask array")
        if data.ndim == 2 and data.numblocks[1] > 1:
            data = data.rechunk({1: -1})
        return list(data.to_delayed().ravel()), data
    if dask.is_dask_collection(data) and hasattr(data, "npartitions"):
        return list(data.to_delayed()), data  # a dask DataFrame or Series
    raise TypeError(
        f"{name} must be a dask array, DataFrame or Series; got {type(data).__name__} (for "
        "data in memory call the estimator's fit or partial_fit, or wrap it with "
        "dask.array.from_array(X, chunks=...))"
    )


def _aligned(data, rows):
    """A dask array rechunked to the row chunks of X, where both are known."""
    import dask.array as da

    if not isinstance(data, da.Array):
        return data
    known = all(np.isfinite(c) for c in rows + data.chunks[0])
    if known and data.chunks[0] != rows:
        return data.rechunk({0: rows})
    return data


def _n_columns(data):
    return 1 if data.ndim == 1 else int(data.shape[1])


def _classes(y_parts):
    """The sorted labels of all partitions of y (one extra pass over y)."""
    import dask

    found = dask.compute(*[dask.delayed(np.unique)(part) for part in y_parts])
    return np.unique(np.concatenate([np.asarray(f) for f in found]))


def _fit_partition(template, index, X, y, sample_weight, fit_params):
    """Filter one partition from the prior: a fitted copy of ``template`` (None for an
    empty partition)."""
    n_rows = len(X)
    if n_rows == 0:
        return None
    if len(y) != n_rows or (sample_weight is not None and len(sample_weight) != n_rows):
        raise ValueError(
            f"partition {index} holds {n_rows} rows of X, {len(y)} of y"
            + ("" if sample_weight is None else f" and {len(sample_weight)} of sample_weight")
            + ": they must be partitioned alike"
        )
    return clone(template).partial_fit(X, y, sample_weight=sample_weight, **fit_params)


def _merge_partitions(fitted):
    """One node of the tree: merge the fitted estimators that are not None."""
    fitted = [est for est in fitted if est is not None]
    if len(fitted) <= 1:
        return fitted[0] if fitted else None
    # copies of one template: their models are equal by construction, even where a model
    # pickled by value came back from a worker as another object
    return merge_fitted(fitted, compare_model=False)


def fit_partitions(estimator, X, y, *, sample_weight=None, classes=None, split_every=8):
    """Fit an estimator on a dask collection, one partition per task, and merge.

    Each partition is filtered from the prior by a copy of ``estimator`` in its own
    dask task, where the partition lies (and is generated, for a lazily built stream),
    and the posteriors are merged in a tree reduction of fan-in ``split_every`` with
    :func:`merge_posteriors`. For the linear-Gaussian model with ``family="full"`` (or
    ``"dlr"`` with ``rank`` ≥ P) the result is the exact posterior of all rows, as a
    single ``fit`` would give; otherwise it is the streaming distributed variational Bayes
    approximation (:doc:`/user_guide/scaling_out`).

    The computation runs on dask's current scheduler: a ``dask.distributed`` client if
    one is active (a ``LocalCluster`` with processes: its workers are spawned, so the
    JAX fork guard does not apply), else the threaded scheduler; choose another with
    ``dask.config.set(scheduler=...)``.

    Parameters
    ----------
    estimator : BongRegressor or BongClassifier
        The unfitted template (its parameters are used; it is not modified). It must be
        mergeable (see :func:`merge_posteriors`); this is checked before any partition
        is fitted.
    X : dask array of shape (n_samples, n_features), dask DataFrame
        Inputs, partitioned along the rows (a dask array's column chunks are joined).
    y : dask array of shape (n_samples,) or (n_samples, n_outputs), dask Series or DataFrame
        Targets, partitioned like X (a dask array is rechunked to X's row chunks where
        both are known).
    sample_weight : dask array of shape (n_samples,) or dask Series, default=None
        Row weights, partitioned like X.
    classes : array-like of shape (n_classes,), default=None
        Classifiers: every label of y. Computed from y when not given, at the cost of an
        extra pass over y.
    split_every : int, default=8
        Fan-in of the tree reduction (at least 2).

    Returns
    -------
    estimator : BongRegressor or BongClassifier
        A new fitted estimator with the parameters of ``estimator``: an ordinary one,
        which continues with ``partial_fit`` and pickles. ``n_observations_`` counts the
        rows of every partition.

    Raises
    ------
    TypeError
        When X, y or sample_weight is not a dask collection, or the estimator is not one
        of skbong's online estimators.
    ValueError
        When the estimator cannot be merged (the reason is given), X and y are
        partitioned differently, or every partition is empty.

    See Also
    --------
    merge_posteriors : Combine estimators fitted on disjoint shards.

    Examples
    --------
    >>> import dask.array as da
    >>> import numpy as np
    >>> from skbong import BongRegressor, fit_partitions
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(300, 2))
    >>> y = X @ [1.0, -2.0] + 0.1 * rng.normal(size=300)
    >>> reg = fit_partitions(
    ...     BongRegressor(family="full", dtype="float64"),
    ...     da.from_array(X, chunks=(100, 2)), da.from_array(y, chunks=100))
    >>> reg.n_observations_
    300
    >>> bool(np.allclose(reg.coef_, BongRegressor(family="full", dtype="float64").fit(X, y).coef_))
    True
    """
    import dask

    check_online(estimator)
    if not isinstance(split_every, Integral) or isinstance(split_every, bool) or split_every < 2:
        raise ValueError(f"split_every must be an integer >= 2, got {split_every!r}")
    x_parts, X = _partitions(X, "X")
    y_parts, y = _partitions(_aligned(y, X.chunks[0]) if hasattr(X, "chunks") else y, "y")
    w_parts = [None] * len(x_parts)
    if sample_weight is not None:
        w_parts, _ = _partitions(
            _aligned(sample_weight, X.chunks[0]) if hasattr(X, "chunks") else sample_weight,
            "sample_weight",
        )
    if not len(x_parts) == len(y_parts) == len(w_parts):
        raise ValueError(
            f"X has {len(x_parts)} partitions, y {len(y_parts)}"
            + ("" if sample_weight is None else f", sample_weight {len(w_parts)}")
            + ": they must be partitioned alike"
        )
    fit_params = {}
    n_out = _n_columns(y)
    if is_classifier(estimator):
        classes = _classes(y_parts) if classes is None else np.unique(np.asarray(classes))
        fit_params, n_out = {"classes": classes}, (1 if len(classes) == 2 else len(classes))
    # one prior for every partition: a network's prior mean comes from the seed
    seed = estimator.random_state
    if not isinstance(seed, Integral):
        seed = int(check_random_state(seed).randint(np.iinfo(np.int32).max))
    template = clone(estimator).set_params(random_state=seed)
    config = template._build_config(_n_columns(X), n_out, template._check_params())
    check_mergeable(template, config)  # refuse before any partition is fitted

    shared = dask.delayed(template, name=f"skbong-template-{uuid.uuid4().hex}")
    nodes = [
        dask.delayed(_fit_partition)(shared, i, xp, yp, wp, fit_params)
        for i, (xp, yp, wp) in enumerate(zip(x_parts, y_parts, w_parts))
    ]
    while len(nodes) > 1:
        nodes = [
            dask.delayed(_merge_partitions)(nodes[i : i + split_every])
            for i in range(0, len(nodes), split_every)
        ]
    (fitted,) = dask.compute(nodes[0])
    if fitted is None:
        raise ValueError("every partition of X is empty: there is nothing to fit")
    return fitted.set_params(random_state=estimator.random_state)


__all__ = ["fit_partitions"]
