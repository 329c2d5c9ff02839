"""A Pipeline that can stream: ``partial_fit`` through every step that has it."""

from sklearn.pipeline import Pipeline, _name_estimators
from sklearn.utils.metaestimators import available_if


def _final_has_partial_fit(pipe):
    final = pipe._final_estimator
    return final == "passthrough" or hasattr(final, "partial_fit")


def _final_has(attr):
    """``available_if`` check: the final step has ``attr`` (its own ``AttributeError``
    otherwise, which names the step's class and the method)."""

    def check(pipe):
        getattr(pipe._final_estimator, attr)
        return True

    return check


class StreamingPipeline(Pipeline):
    """``sklearn.pipeline.Pipeline`` with ``partial_fit``.

    ``partial_fit`` calls ``partial_fit`` on each intermediate step that has it (e.g.
    ``StandardScaler``) and then transforms with it; steps without ``partial_fit`` must
    already be fitted and only transform. The final step's ``partial_fit`` receives
    the transformed data and any keyword arguments (e.g. ``classes``).

    The final step's uncertainty methods that :class:`~sklearn.pipeline.Pipeline` does
    not forward are forwarded here: ``predict_interval``, ``predict_logpdf``,
    ``predict_logpmf``, ``sample_y``, ``sample_f`` and ``sample_proba`` transform X
    through the fitted steps and call the final step's method, and exist only when the
    final step has it. ``predict(X, return_std=True)``, ``predict_proba`` and
    ``predict_log_proba`` are :class:`~sklearn.pipeline.Pipeline`'s own. Everything
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
    >>> pipe.sample_proba(X[:2], n_samples=3, random_state=0).shape
    (2, 2, 3)
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


    def _transform_to_final(self, X):
        """X through the ``transform`` of every step before the final one."""
        Xt = X
        for _, _, step in self._iter(with_final=False):
            Xt = step.transform(Xt)
        return Xt

    @available_if(_final_has("predict_interval"))
    def predict_interval(self, X, **params):
        """Transform X through the steps, then the final step's ``predict_interval``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Inputs, as the first step takes them.
        **params : dict
            Passed to the final step's ``predict_interval`` (e.g. ``coverage``).

        Returns
        -------
        interval : ndarray
            What the final step's ``predict_interval`` returns.
        """
        return self._final_estimator.predict_interval(self._transform_to_final(X), **params)

    @available_if(_final_has("predict_logpdf"))
    def predict_logpdf(self, X, y):
        """Transform X through the steps, then the final step's ``predict_logpdf``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Inputs, as the first step takes them.
        y : array-like of shape (n_samples,) or (n_samples, n_outputs)
            Targets, passed unchanged.

        Returns
        -------
        logpdf : ndarray
            What the final step's ``predict_logpdf`` returns.
        """
        return self._final_estimator.predict_logpdf(self._transform_to_final(X), y)

    @available_if(_final_has("predict_logpmf"))
    def predict_logpmf(self, X, y):
        """Transform X through the steps, then the final step's ``predict_logpmf``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Inputs, as the first step takes them.
        y : array-like of shape (n_samples,)
            Counts, passed unchanged.

        Returns
        -------
        logpmf : ndarray
            What the final step's ``predict_logpmf`` returns.
        """
        return self._final_estimator.predict_logpmf(self._transform_to_final(X), y)

    @available_if(_final_has("sample_y"))
    def sample_y(self, X, **params):
        """Transform X through the steps, then the final step's ``sample_y``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Inputs, as the first step takes them.
        **params : dict
            Passed to the final step's ``sample_y`` (e.g. ``n_samples``,
            ``random_state``).

        Returns
        -------
        samples : ndarray
            What the final step's ``sample_y`` returns.
        """
        return self._final_estimator.sample_y(self._transform_to_final(X), **params)

    @available_if(_final_has("sample_f"))
    def sample_f(self, X, **params):
        """Transform X through the steps, then the final step's ``sample_f``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Inputs, as the first step takes them.
        **params : dict
            Passed to the final step's ``sample_f`` (e.g. ``n_samples``,
            ``random_state``).

        Returns
        -------
        samples : ndarray
            What the final step's ``sample_f`` returns.
        """
        return self._final_estimator.sample_f(self._transform_to_final(X), **params)

    @available_if(_final_has("sample_proba"))
    def sample_proba(self, X, **params):
        """Transform X through the steps, then the final step's ``sample_proba``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Inputs, as the first step takes them.
        **params : dict
            Passed to the final step's ``sample_proba`` (e.g. ``n_samples``,
            ``random_state``).

        Returns
        -------
        samples : ndarray
            What the final step's ``sample_proba`` returns.
        """
        return self._final_estimator.sample_proba(self._transform_to_final(X), **params)


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
