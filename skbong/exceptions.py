"""Exceptions raised by skbong."""


class NonFiniteUpdateError(ValueError, FloatingPointError):
    """An update would have produced a non-finite or invalid posterior.

    Invalid means a non-positive variance or precision; for the full-covariance
    families, a covariance that is not positive definite (its Cholesky factorisation fails
    in the working dtype); for ``dlr``, a precision so ill-conditioned that the marginal
    variances cancel to zero or below in the working dtype. Raised by ``fit`` / ``partial_fit`` with ``on_error="raise"``;
    the message names the first offending row of the call, and the estimator (posterior,
    counters, every fitted attribute) is left exactly as it was before the call. With
    ``on_error="skip"`` such rows are skipped instead and counted in ``n_skipped_``. It
    is a ``ValueError`` (bad input is the usual cause) and a ``FloatingPointError``.
    """
