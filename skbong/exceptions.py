"""Exceptions raised by skbong."""


class NonFiniteUpdateError(ValueError, FloatingPointError):
    """An update would have produced a non-finite or invalid posterior.

    Invalid means a non-positive variance or precision; for the full-covariance
    families, a covariance that is not positive definite (its Cholesky factorisation fails
    in the working dtype); for ``dlr``, a precision so ill-conditioned that the marginal
    variances cancel to zero or below in the working dtype. An absurd row is refused in
    the same way: a Gaussian-noise target more than ``skbong.engine.OUTLIER_Z`` (10⁶)
    predictive standard deviations from the model's one-step prediction (not tested on
    a fresh belief's first row), or a ``family="diag"`` step that would move a
    coordinate by more than 10⁶ of its standard deviations. Raised by ``fit`` /
    ``partial_fit`` with ``on_error="raise"``;
    the message names the first offending row of the call, and the estimator (posterior,
    counters, every fitted attribute) is left exactly as it was before the call. With
    ``on_error="skip"`` such rows are skipped instead, counted in ``n_skipped_`` and
    reported by a :class:`SkippedRowsWarning`; a call with ``on_error="skip"`` that
    would leave a model which has learned no row at all, or predicts non-finite values
    at the rows it learned, raises it as well. It
    is a ``ValueError`` (bad input is the usual cause) and a ``FloatingPointError``.
    """


class SkippedRowsWarning(UserWarning):
    """``fit`` / ``partial_fit`` with ``on_error="skip"`` skipped rows whose update would
    have produced a non-finite or invalid posterior.

    The message states how many rows of the call were skipped, what fraction, and the
    setting most likely to help; ``n_skipped_`` counts them over the estimator's life.
    A model that skipped a large fraction of its rows has learned from the rest only.
    """


class DivergenceWarning(UserWarning):
    """``fit`` / ``partial_fit`` learned rows whose one-step-ahead predictions were far
    worse than knowing nothing: the updates are diverging.

    Raised for a Gaussian-noise regressor when, over the second half of a call of at
    least 20 rows, the mean squared error of the predictions the stream made before
    learning each row exceeds 100 times the variance of those rows' targets and their
    mean square (the error of predicting their mean, and of predicting 0). Every update
    was finite and valid, so nothing was refused, but the model has not learned the data:
    a published algorithm overshooting as published (``family="diag"`` on a wide linear
    model, whose diagonal gain J Σ Jᵀ / R grows with the number of parameters), or a
    learning rate too large for a plain-gradient rule. The message names the setting
    most likely to help.

    Raised by ``fit`` (``refine`` > 0) of a linear classifier or count model when the
    fitted mean's log posterior on the rows of the call is below the prior mean's by more
    than 0.1 nat per row: its predictions are worse than knowing nothing, an update having
    overshot where the further passes (``refine``) could not run or recover. A bank drops
    such filters while others remain and says which.
    """


class OutliersWarning(UserWarning):
    """``fit`` / ``partial_fit`` of a Gaussian-noise regressor learned rows that lie far
    out under the one-step-ahead predictive: gross outliers in y.

    Raised when, in a call of at least 20 rows, at least 5 rows and 0.5 % of the rows each
    have a log predictive density more than 18 nats below the call's median row (about
    6 predictive standard deviations out, for a Gaussian; clean data give none to two).
    A Gaussian likelihood gives such rows a pull that grows with their distance, so a
    few of them move the mean and inflate the noise. The rows were learned; the message
    names them. ``likelihood="student_t"`` learns as if they were not there.
    """

