"""The online estimators (:class:`~skbong.BongRegressor`, :class:`~skbong.BongClassifier`,
:class:`~skbong.BongPoissonRegressor`) and the parts they are composed of: the parameters
and the configuration (``base``), the driver, one transactional call through the compiled
stream (``stream``), the bank of filters (``bank``; ``conjugate``, its closed form),
prequential calibration (``calibration``) and the faces, which the batch estimators name
too (``regression_face``, ``classification_face``)."""
