r"""
Online or batch: one BONG pass against epochs of VOGN and IVON
==============================================================

:class:`~skbong.BongClassifier` learns from a stream: every row is seen once, and the
belief after it is final. When the whole data set is at hand and time allows,
:class:`~skbong.VariationalClassifier` trains the same model to convergence instead:
epochs of shuffled mini-batches with a fixed prior, the likelihood scaled by N/M, as
the batch variational solvers of Khan et al. (2018, VOGN), Mishkin et al. (2018, SLANG)
and Shen et al. (2024, IVON) do. Both keep a Gaussian posterior and predict with the
same machinery.

We fit a one-hidden-layer network on the digits, and follow the held-out log-loss of
the batch solvers epoch by epoch (``warm_start`` continues the same run), with the one
pass of BONG and scikit-learn's ``MLPClassifier`` as reference lines.
"""

# %%
# Data
# ----
import time
import warnings

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_digits
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics import log_loss
from sklearn.model_selection import train_test_split
from sklearn.neural_network import MLPClassifier
from sklearn.preprocessing import StandardScaler

from skbong import BongClassifier, VariationalClassifier

X, y = load_digits(return_X_y=True)
X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.3, random_state=0)
scaler = StandardScaler().fit(X_train)
X_train, X_test = scaler.transform(X_train), scaler.transform(X_test)

# %%
# One pass, and the point-estimate baseline
# -----------------------------------------
start = time.perf_counter()
online = BongClassifier(hidden_layer_sizes=(32,), random_state=0).fit(X_train, y_train)
online_time = time.perf_counter() - start
online_loss = log_loss(y_test, online.predict_proba(X_test))
mlp = MLPClassifier(hidden_layer_sizes=(32,), max_iter=500, random_state=0).fit(X_train, y_train)
mlp_loss = log_loss(y_test, mlp.predict_proba(X_test))
print(f"one BONG pass: log-loss {online_loss:.3f} in {online_time:.1f} s")
print(f"MLPClassifier: log-loss {mlp_loss:.3f}")

# %%
# Epochs of VOGN and IVON
# -----------------------
# Five epochs at a time; ``warm_start=True`` continues from the fitted posterior.
curves = {}
for solver in ("vogn", "ivon"):
    clf = VariationalClassifier(
        solver=solver, hidden_layer_sizes=(32,), warm_start=True, max_iter=5, random_state=0
    )
    losses = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        for _ in range(12):
            clf.fit(X_train, y_train)
            losses.append(log_loss(y_test, clf.predict_proba(X_test)))
    curves[solver] = (np.arange(1, 13) * 5, losses, clf)
    print(f"{solver}: log-loss {losses[-1]:.3f} after {clf.n_iter_} epochs")

# %%
# Held-out log-loss against epochs
# --------------------------------
fig, ax = plt.subplots(figsize=(6, 4))
for solver, (epochs, losses, _) in curves.items():
    ax.plot(epochs, losses, marker="o", label=f"VariationalClassifier(solver={solver!r})")
ax.axhline(online_loss, color="k", linestyle="--", label="one BONG pass")
ax.axhline(mlp_loss, color="grey", linestyle=":", label="MLPClassifier (point estimate)")
ax.set_xlabel("epochs")
ax.set_ylabel("held-out log-loss (nats)")
ax.set_ylim(0, max(1.0, online_loss * 1.2))
ax.legend()
fig.tight_layout()

# %%
# The training objective
# ----------------------
# ``loss_curve_`` is the negative ELBO per row (a Monte Carlo estimate: it is noisy, and
# ``tol`` compares means over ``n_iter_no_change`` epochs for that reason).
fig, ax = plt.subplots(figsize=(6, 3))
for solver, (_, _, clf) in curves.items():
    ax.plot(clf.loss_curve_, label=solver)
ax.set_xlabel("epoch")
ax.set_ylabel("negative ELBO / N")
ax.legend()
fig.tight_layout()
plt.show()

# %%
# One pass is the right tool for a stream, or when each row may be seen only once; a
# few epochs of a batch solver are worth it when the data set is at hand. The user
# guide's "Online or batch?" page has the measured trade-off on more data sets.
