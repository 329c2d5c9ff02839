"""The estimator machinery every estimator shares: the root class of an estimator with a
Gaussian belief, the belief's public attributes and its predictives (``posterior``),
input scaling (``inputs``), the fork guard (``guard``), structural signatures
(``signature``) and the copies warning (``copies``)."""
