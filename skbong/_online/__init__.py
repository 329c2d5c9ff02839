"""The online estimators (:class:`~skbong.BongRegressor`, :class:`~skbong.BongClassifier`,
:class:`~skbong.BongPoissonRegressor`) and what they share: the parameters and the
configuration (``base``), one transactional call through the compiled stream
(``stream``), the bank of filters (``bank``; ``conjugate``, its closed form), prequential
calibration (``calibration``) and the regression face (``regression_face``)."""
