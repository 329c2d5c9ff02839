"""The estimator machinery every estimator shares: the posterior and its predictives
(``posterior``), input scaling (``inputs``), the fork guard (``guard``), structural
signatures (``signature``) and the copies warning (``copies``)."""
