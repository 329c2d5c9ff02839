"""
Sequential classification of two moons
======================================

A :class:`~skbong.BongClassifier` with two hidden layers sees the two-moons data one
observation at a time. After every row it is first asked for a prediction and then
learns from the row (prequential evaluation), so the running accuracy is measured on
rows it had never seen. Snapshots of the predicted probability show the decision
boundary forming; the last panel shows the predictive entropy of the linearised
predictive, high along the boundary and away from the data.

The belief is the default diagonal-plus-low-rank Gaussian of rank 10 updated by BONG
with the linearised Hessian (LO-FI).
"""

# %%
import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import make_moons

from skbong import BongClassifier
from skbong.plotting import plot_prequential

X, y = make_moons(n_samples=600, noise=0.2, random_state=0)
X = (X - X.mean(axis=0)) / X.std(axis=0)  # standardised inputs

clf = BongClassifier(
    hidden_layer_sizes=(16, 16),
    activation="tanh",
    random_state=0,
)

# %%
# Predict, then learn, one row at a time
# --------------------------------------
# Each ``partial_fit`` call learns from one row; the classifier needs all the classes on
# its first call. We keep the predicted probability surface at a few moments.
xx, yy = np.meshgrid(np.linspace(-2.5, 2.5, 80), np.linspace(-2.5, 2.5, 80))
grid = np.column_stack([xx.ravel(), yy.ravel()])
moments = [5, 25, 100, 600]
surfaces, correct, seen = {}, [], []
for t in range(len(y)):
    if t > 0:
        correct.append(clf.predict(X[t : t + 1])[0] == y[t])
        seen.append(t + 1)
    clf.partial_fit(X[t : t + 1], y[t : t + 1], classes=[0, 1])
    if t + 1 in moments:
        surfaces[t + 1] = clf.predict_proba(grid)[:, 1].reshape(xx.shape)

fig, axes = plt.subplots(1, len(moments), figsize=(14, 3.5), sharey=True)
for ax, (count, proba) in zip(axes, surfaces.items()):
    ax.contourf(xx, yy, proba, levels=np.linspace(0, 1, 11), cmap="RdBu_r", alpha=0.7)
    ax.contour(xx, yy, proba, levels=[0.5], colors="k", linewidths=1.5)
    ax.scatter(*X[:count].T, c=y[:count], cmap="RdBu_r", edgecolors="w", s=14, lw=0.4)
    ax.set_title(f"after {count} observations")
    ax.set_xlabel("$x_1$")
axes[0].set_ylabel("$x_2$")
fig.tight_layout()

# %%
# Prequential accuracy and predictive uncertainty
# -----------------------------------------------
# ``predictive="linmc"`` averages the class probabilities over posterior samples of the
# linearised network; its entropy is the model's total uncertainty about the label.
running = np.cumsum(correct) / np.arange(1, len(correct) + 1)
proba = clf.set_params(predictive="linmc").predict_proba(grid)
entropy = -np.sum(proba * np.log(np.clip(proba, 1e-12, 1)), axis=1).reshape(xx.shape)

fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4))
plot_prequential({"BongClassifier (LO-FI)": (seen, running)}, ax=ax1)
ax1.set_ylim(0.5, 1)
image = ax2.contourf(xx, yy, entropy, levels=12, cmap="viridis")
ax2.scatter(*X.T, c=y, cmap="RdBu_r", edgecolors="w", s=8, lw=0.2)
fig.colorbar(image, ax=ax2, label="predictive entropy (nats)")
ax2.set_title("linearised predictive entropy after 600 rows")
fig.tight_layout()

print(f"prequential accuracy over the last 300 rows: {np.mean(correct[-300:]):.3f}")
plt.show()
