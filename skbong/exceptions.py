"""Exceptions raised by skbong."""


class NonFiniteUpdateError(ValueError, FloatingPointError):
    """An update would have produced a non-finite or invalid posterior.

    Invalid means a non-positive variance or precision; for the full-covariance
    families, a covariance that is not positive definite (its Cholesky factorisation fails
    in the working dtype); for ``dlr``, a precision so ill-conditioned that the marginal
    variances cancel to zero or below in the working dtype. Raised by ``fit`` / ``partial_fit`` with ``on_error="raise"``;
    the message names the first offending row of the call, and the estimator (posterior,
    counters, every fitted attribute) is left exactly as it was before the call. With
    ``on_error="skip"`` such rows are skipped instead, counted in ``n_skipped_`` and
    reported by a :class:`SkippedRowsWarning`. It
    is a ``ValueError`` (bad input is the usual cause) and a ``FloatingPointError``.
    """


class SkippedRowsWarning(UserWarning):
    """``fit`` / ``partial_fit`` with ``on_error="skip"`` skipped rows whose update would
    have produced a non-finite or invalid posterior.

    The message states how many rows of the call were skipped, what fraction, and the
    setting most likely to help; ``n_skipped_`` counts them over the estimator's life.
    A model that skipped a large fraction of its rows has learned from the rest only.
    """
