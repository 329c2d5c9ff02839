"""A Pipeline that can stream: ``partial_fit`` through every step that has it."""

from sklearn.pipeline import Pipeline, _name_estimators
from sklearn.utils.metaestimators import available_if


def _final_has_partial_fit(pipe):
    final = pipe._final_estimator
    return final == "passthrough" or hasattr(final, "partial_fit")


class StreamingPipeline(Pipeline):
    """``sklearn.pipeline.Pipeline`` with ``partial_fit``.

    ``partial_fit`` calls ``partial_fit`` on each intermediate step that has it (e.g.
    ``StandardScaler``) and then transforms with it; steps without ``partial_fit`` must
    already be fitted and only transform. The final step's ``partial_fit`` receives
    the transformed data and any keyword arguments (e.g. ``classes``). Everything
    else behaves exactly as :class:`~sklearn.pipeline.Pipeline`.

    Parameters
    ----------
    steps : list of (str, estimator) tuples
        As for :class:`~sklearn.pipeline.Pipeline`.
    memory : str or object with the joblib.Memory interface, default=None
        As for :class:`~sklearn.pipeline.Pipeline`.
    transform_input : list of str, default=None
        As for :class:`~sklearn.pipeline.Pipeline`.
    verbose : bool, default=False
        As for :class:`~sklearn.pipeline.Pipeline`.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.preprocessing import StandardScaler
    >>> from skbong import BongClassifier, make_streaming_pipeline
    >>> pipe = make_streaming_pipeline(StandardScaler(), BongClassifier(random_state=0))
    >>> X, y = np.random.default_rng(0).normal(size=(20, 3)), np.arange(20) % 2
    >>> pipe = pipe.partial_fit(X[:10], y[:10], classes=[0, 1]).partial_fit(X[10:], y[10:])
    """

    @available_if(_final_has_partial_fit)
    def partial_fit(self, X, y=None, **params):
        """Update every step that supports it with one batch of rows.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Inputs.
        y : array-like of shape (n_samples,), default=None
            Targets.
        **params : dict
            Passed to the final step's ``partial_fit`` (e.g. ``classes``,
            ``sample_weight``).

        Returns
        -------
        self : StreamingPipeline
            The updated pipeline.
        """
        Xt = X
        for _, name, step in self._iter(with_final=False, filter_passthrough=True):
            if hasattr(step, "partial_fit"):
                step.partial_fit(Xt, y)
            elif not _is_fitted(step):
                raise ValueError(
                    f"step {name!r} ({type(step).__name__}) has no partial_fit and is not fitted; "
                    "fit it first or use a step that can stream"
                )
            Xt = step.transform(Xt)
        final = self._final_estimator
        if final != "passthrough":
            final.partial_fit(Xt, y, **params)
        return self


def _is_fitted(step):
    from sklearn.utils.validation import check_is_fitted

    try:
        check_is_fitted(step)
    except Exception:
        return False
    return True


def make_streaming_pipeline(*steps, memory=None, verbose=False):
    """Build a :class:`StreamingPipeline` from estimators, naming them automatically.

    Parameters
    ----------
    *steps : estimators
        The steps, in order.
    memory : str or object with the joblib.Memory interface, default=None
        As for :func:`sklearn.pipeline.make_pipeline`.
    verbose : bool, default=False
        As for :func:`sklearn.pipeline.make_pipeline`.

    Returns
    -------
    pipeline : StreamingPipeline
        The pipeline.
    """
    return StreamingPipeline(_name_estimators(steps), memory=memory, verbose=verbose)
