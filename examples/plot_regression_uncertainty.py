r"""
1-D regression with predictive uncertainty
==========================================

A small network learns :math:`y = \sin(x) + \varepsilon` from a stream, 50 rows at a
time, with :class:`~skbong.BongRegressor`. Its belief over the weights is a
full-covariance Gaussian updated by BONG with the linearised Hessian — the extended
Kalman filter (CM-EKF). With ``predictive="linmc"``, ``predict(X, return_std=True)``
returns the closed-form linearised predictive
:math:`\mathcal{N}(f(x, \mu), J \Sigma J^\top + R)`: its band is wide where no data
have been seen — in the gap around 0 and beyond the data — and narrows as
observations arrive.
"""

# %%
# Data: two clusters of inputs with a gap between them
# ------------------------------------------------------
import matplotlib.pyplot as plt
import numpy as np

from skbong import BongRegressor
from skbong.plotting import plot_predictive_band

rng = np.random.default_rng(0)
n = 300
x = np.concatenate([rng.uniform(-4, -1, n // 2), rng.uniform(1, 4, n // 2)])
rng.shuffle(x)  # a stream in random order
y = np.sin(x) + 0.1 * rng.normal(size=n)
X = x[:, None]
grid = np.linspace(-6, 6, 300)[:, None]

# %%
# Learn from the stream and look at the belief along the way
# ----------------------------------------------------------
# ``obs_variance`` is the noise variance of the likelihood (here the true 0.1²) and
# ``prior_variance`` the prior variance of the weights, divided by each layer's fan-in
# (the default 1 is the usual initialisation distribution); a larger one lets the band
# open wider where there are no data. The network has two hidden layers of 16
# tanh units: P = 321 weights, a 321 × 321 covariance.
reg = BongRegressor(
    hidden_layer_sizes=(16, 16),
    activation="tanh",
    family="full",
    obs_variance=0.01,
    predictive="linmc",
    random_state=0,
)

snapshots = {10: None, 50: None, 300: None}
seen = 0
for size in [10, 40, 50, 50, 50, 50, 50]:
    reg.partial_fit(X[seen : seen + size], y[seen : seen + size])
    seen += size
    if seen in snapshots:
        snapshots[seen] = reg.predict(grid, return_std=True)

fig, axes = plt.subplots(1, 3, figsize=(12, 3.6), sharey=True)
for ax, (count, (mean, std)) in zip(axes, snapshots.items()):
    plot_predictive_band(grid, mean, std, ax=ax, x_train=x[:count], y_train=y[:count])
    ax.plot(grid, np.sin(grid), "k--", lw=1, label="sin(x)")
    ax.legend(loc="lower left", fontsize=8)
    ax.set_title(f"after {count} observations")
    ax.set_ylim(-3, 3)
    ax.set_xlabel("x")
axes[0].set_ylabel("y")
fig.tight_layout()

# %%
# Plug-in against linearised predictive, and function draws
# ---------------------------------------------------------
# The plug-in predictive uses the posterior mean only, so its band is the noise
# :math:`\sqrt{R} = 0.1` everywhere. :meth:`~skbong.BongRegressor.sample_y` draws
# :math:`\theta \sim q` and then :math:`y \sim \mathcal{N}(f(x, \theta), R)`; one
# parameter sample is shared by all rows of a draw, so each draw is a whole function.
mean, std_linmc = reg.predict(grid, return_std=True)
_, std_plugin = reg.set_params(predictive="plugin").predict(grid, return_std=True)
draws = reg.sample_y(grid, n_samples=5, random_state=1)

fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 3.8))
ax1.plot(grid, std_linmc, label="linmc: √(JΣJᵀ + R)")
ax1.plot(grid, std_plugin, label="plugin: √R")
ax1.axvspan(-1, 1, color="0.9", label="no data")
ax1.set_xlabel("x")
ax1.set_ylabel("predictive standard deviation")
ax1.legend()
ax2.plot(grid, draws, lw=1, alpha=0.8)
ax2.scatter(x, y, s=6, c="k", alpha=0.4)
ax2.set_ylim(-3, 3)
ax2.set_title("5 draws from the posterior predictive")
ax2.set_xlabel("x")
fig.tight_layout()

print(f"P = {reg.n_params_} parameters; mean predictive sd: "
      f"in the data {std_linmc[np.abs(grid[:, 0] - 2.5) < 1.5].mean():.3f}, "
      f"in the gap {std_linmc[np.abs(grid[:, 0]) < 0.5].mean():.3f}, "
      f"beyond the data {std_linmc[np.abs(grid[:, 0]) > 5].mean():.3f}")
plt.show()
