"""The batch estimators (:class:`~skbong.VariationalRegressor`,
:class:`~skbong.VariationalClassifier`): training to convergence with the solvers of
:mod:`skbong.engine.solvers` (``base``), each naming the online estimators' face of its
task."""
