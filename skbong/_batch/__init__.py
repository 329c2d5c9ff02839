"""The batch estimators (:class:`~skbong.VariationalRegressor`,
:class:`~skbong.VariationalClassifier`): training to convergence with the solvers of
:mod:`skbong.engine.solvers` (``base``), and their two faces."""
