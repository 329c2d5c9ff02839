r"""
Tracking a drifting target
==========================

A static Bayesian model assumes one fixed set of parameters generated the whole
stream, so its posterior keeps shrinking and it adapts ever more slowly when the data
change. Here the slope of a linear relation turns slowly for 600 steps and then jumps.
With ``drift`` :math:`\gamma < 1` the belief is pushed through the Ornstein–Uhlenbeck
predict step

.. math::

   \mu_{t|t-1} = \gamma \mu_{t-1} + (1 - \gamma) \mu_0, \qquad
   \Sigma_{t|t-1} = \gamma^2 \Sigma_{t-1} + (1 - \gamma^2) \sigma_0^2 I

before every observation, so that it remembers roughly :math:`1 / (1 - \gamma^2)`
observations (about 100 for :math:`\gamma = 0.995`, 25 for :math:`\gamma = 0.98`) and
keeps enough uncertainty to follow the change.
"""

# %%
# A stream whose slope changes
# ----------------------------
import matplotlib.pyplot as plt
import numpy as np

from skbong import BongRegressor

rng = np.random.default_rng(0)
T = 1000
t = np.arange(T)
slope = np.where(t < 600, np.sin(2 * np.pi * t / 600), -2.0)  # slow turn, then a jump
x = rng.normal(size=T)
y = slope * x + 0.5 + 0.3 * rng.normal(size=T)

# %%
# One estimator per drift, one ``partial_fit`` per observation
# ------------------------------------------------------------
# The linear model is exact Bayesian linear regression when ``drift=1`` (the Kalman
# filter with a full covariance). After every row we record the posterior mean and
# standard deviation of the slope (``coef_`` and ``posterior_var_``) and, before the
# row, the squared error of the prediction.
drifts = {"γ = 1 (static)": 1.0, "γ = 0.995": 0.995, "γ = 0.98": 0.98}
tracks = {}
for name, gamma in drifts.items():
    reg = BongRegressor(
        family="full", drift=gamma, prior_variance=1.0, obs_variance=0.09, random_state=0
    )
    mean, sd, err = np.empty(T), np.empty(T), np.empty(T)
    for i in range(T):
        xi, yi = x[i : i + 1, None], y[i : i + 1]
        err[i] = (reg.predict(xi)[0] - yi[0]) ** 2 if i else np.nan
        reg.partial_fit(xi, yi)
        mean[i], sd[i] = reg.coef_[0], np.sqrt(reg.posterior_var_[0])
    tracks[name] = (mean, sd, err)

# %%
# The tracked slope and the prediction error
# ------------------------------------------
# The static model averages the whole history: it lags the turning slope and needs
# hundreds of rows to move after the jump, with a confidence band that no longer
# covers the truth. With drift the band stays wide enough to follow; a smaller
# :math:`\gamma` follows faster but is noisier.
fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(9, 7), sharex=True)
ax1.plot(t, slope, "k", lw=2, label="true slope")
for name, (mean, sd, _) in tracks.items():
    (line,) = ax1.plot(t, mean, lw=1.2, label=name)
    ax1.fill_between(t, mean - 2 * sd, mean + 2 * sd, color=line.get_color(), alpha=0.2)
ax1.set_ylabel("slope: posterior mean ± 2 sd")
ax1.legend(loc="lower left")
window = 50
for name, (_, _, err) in tracks.items():
    smooth = np.convolve(err[1:], np.ones(window) / window, mode="valid")  # trailing mean
    ax2.plot(t[window:], smooth, lw=1.2, label=name)
ax2.axhline(0.09, color="k", ls=":", label="noise variance")
ax2.set_yscale("log")
ax2.set_xlabel("observation")
ax2.set_ylabel(f"squared error ({window}-row mean)")
ax2.legend(loc="upper left")
fig.tight_layout()

for name, (_, _, err) in tracks.items():
    print(f"{name:16s} mean squared error {np.nanmean(err):.3f}")
plt.show()
