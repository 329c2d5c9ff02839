r"""
Thompson sampling for a contextual bandit
=========================================

In a contextual bandit a learner sees a context :math:`x_t`, chooses one of :math:`K`
arms, and observes the reward of that arm only. Acting greedily on the current
estimates can lock onto a poor arm forever; acting on a **sample from the posterior**
(Thompson sampling) explores exactly as much as the posterior is uncertain. Over many
bandits greedy play is often good — the variety of contexts explores for it — but now
and then it locks onto a poor arm after an unlucky first reward, while Thompson
sampling's regret stays small on every bandit.

Here the expected reward of arm :math:`a` is linear in the context,
:math:`r = w_a^\top x + b_a + \varepsilon`. One :class:`~skbong.BongRegressor` holds all
arms: its features are the context placed in the block of the chosen arm,
:math:`\phi(x, a) = e_a \otimes [x, 1]`, so the full-covariance belief is exact Bayesian
linear regression for every arm at once (the conjugate case). Each round,
:meth:`~skbong.BongRegressor.sample_y` draws one parameter sample shared by the
:math:`K` candidate rows and a reward for each; the arm with the largest draw is played
and the estimator learns from its observed reward with ``partial_fit``.

Thompson sampling needs draws of the *expected* reward :math:`f(x, \theta)`, while
``sample_y`` draws rewards :math:`f(x, \theta) + \varepsilon`. Because one parameter
sample is shared by all rows of a draw and the noise is independent across rows,
averaging a draw over :math:`m` copies of the same row gives
:math:`f(x, \theta)` plus noise of variance :math:`R / m`: with :math:`m = 100` the
leftover noise is a tenth of the reward noise.
"""

# %%
# The bandits
# -----------
# Ten random bandits with four arms and three-dimensional contexts; the reward noise
# (standard deviation 0.5) is comparable to the differences between the arms.
import matplotlib.pyplot as plt
import numpy as np

from skbong import BongRegressor

n_arms, d, T, noise = 4, 3, 300, 0.5
m = 100  # copies of each row per Thompson draw
n_bandits = 10


def make_bandit(seed):
    rng = np.random.default_rng(seed)
    W = rng.normal(size=(n_arms, d))
    b = rng.normal(scale=0.5, size=n_arms)
    return W, b, rng.normal(size=(T, d))


def features(x):
    """Rows phi(x, a) for every arm a: the context (and a 1) in the block of arm a."""
    return np.kron(np.eye(n_arms), np.append(x, 1.0))


def new_model():
    return BongRegressor(
        family="full", fit_intercept=False, prior_variance=1.0, obs_variance=noise**2
    )


# %%
# Greedy and Thompson play
# ------------------------
# *greedy* plays the arm with the best posterior mean (``predict``); *Thompson* plays
# the best arm under one posterior draw. Both start with one pull of each arm and see
# the same contexts and the same reward noise.
def run(strategy, bandit, seed, rounds=T):
    W, b, contexts = bandit
    rng = np.random.default_rng(seed)
    model = new_model()
    regret = np.empty(rounds)
    for t, x in enumerate(contexts[:rounds]):
        rows = features(x)
        if t < n_arms:
            arm = t
        elif strategy == "Thompson":
            seed_t = int(rng.integers(2**31))
            draw = model.sample_y(np.repeat(rows, m, axis=0), random_state=seed_t)[:, 0]
            arm = int(np.argmax(draw.reshape(n_arms, m).mean(axis=1)))
        else:
            arm = int(np.argmax(model.predict(rows)))
        mean = W @ x + b
        reward = mean[arm] + noise * rng.normal()
        model.partial_fit(rows[arm : arm + 1], [reward])
        regret[t] = mean.max() - mean[arm]
    return model, np.cumsum(regret)


bandits = [make_bandit(seed) for seed in range(n_bandits)]
regrets = {
    strategy: np.array([run(strategy, bandit, seed=i)[1] for i, bandit in enumerate(bandits)])
    for strategy in ["greedy", "Thompson"]
}

fig, ax = plt.subplots(figsize=(7, 4))
for k, (strategy, curves) in enumerate(regrets.items()):
    ax.plot(curves.T, color=f"C{k}", lw=0.7, alpha=0.4)
    ax.plot(curves.mean(axis=0), color=f"C{k}", lw=2.5, label=f"{strategy} (mean of {n_bandits})")
ax.set_xlabel("round")
ax.set_ylabel("cumulative regret")
ax.legend()
ax.grid(alpha=0.3)
fig.tight_layout()

# %%
# Posterior samples for one context
# ---------------------------------
# The spread of the draws is what drives exploration. Early on the draws for the arms
# overlap and every arm gets played; as rewards accumulate the draws concentrate
# around the expected rewards (dotted lines) and the best arm wins almost every draw.
bandit = bandits[0]
x_probe = np.array([0.5, -1.0, 0.3])
rows = np.repeat(features(x_probe), m, axis=0)
fig, axes = plt.subplots(1, 3, figsize=(12, 3.2), sharey=True)
for ax, rounds in zip(axes, [8, 40, T]):
    model, _ = run("Thompson", bandit, seed=0, rounds=rounds)
    draws = model.sample_y(rows, n_samples=300, random_state=0)
    draws = draws.reshape(n_arms, m, -1).mean(axis=1)  # expected-reward draws per arm
    expected = bandit[0] @ x_probe + bandit[1]
    for arm in range(n_arms):
        ax.hist(draws[arm], bins=30, color=f"C{arm}", alpha=0.5, label=f"arm {arm}")
        ax.axvline(expected[arm], color=f"C{arm}", ls=":")
    ax.set_title(f"after {rounds} rounds")
    ax.set_xlabel("sampled expected reward")
axes[0].legend()
fig.tight_layout()

for strategy, curves in regrets.items():
    final = curves[:, -1]
    print(f"{strategy:9s} regret after {T} rounds: mean {final.mean():6.1f}, "
          f"worst {final.max():6.1f} over {n_bandits} bandits")
plt.show()
