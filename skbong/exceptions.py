"""Exceptions raised by skbong."""


class NonFiniteUpdateError(ValueError, FloatingPointError):
    """An update would have produced a non-finite or invalid posterior.

    Raised by ``fit`` / ``partial_fit`` with ``on_error="raise"``; the estimator's
    posterior is left exactly as it was before the call. It is a ``ValueError``
    (bad input is the usual cause) and a ``FloatingPointError``.
    """
