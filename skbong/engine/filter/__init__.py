"""What the online filter owns: the update rules (:mod:`.rules`), the gradient and
curvature estimators (:mod:`.curvature`), the observation noise learned online
(:mod:`.noise`) and the stream program that runs predict → update over the rows
(:mod:`.stream`).

It builds on what the engine shares with the batch solvers (:mod:`skbong.engine.solvers`):
the models, likelihoods, Gaussian families, outputs, predictives and programs.
"""
