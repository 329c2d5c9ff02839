"""The four update rules as one loop (section 3, eqs. 3 and 31–34).

A rule is three switches: natural or plain gradient, with or without the KL term of
the online ELBO, one step or ``n_iter`` steps. BONG is one natural step at unit
rate without KL; BOG one plain step at rate α; BLR ``I`` natural steps on the ELBO;
BBB ``I`` plain steps on the ELBO. Each inner step re-estimates (g, G) at the current
iterate (the linearisation point of LIN-* and the sampling distribution of MC-*),
with the key ``fold_in(key, i)`` so that one-step rules and I = 1 share keys.
"""

from typing import NamedTuple

import jax

from .curvature import ESTIMATORS
from .families import FAMILIES


class Rule(NamedTuple):
    """Static description of an update rule."""

    natural: bool  # natural-gradient (BONG, BLR) or plain-gradient (BOG, BBB) steps
    kl: bool  # online-ELBO objective (BLR, BBB) or expected log-likelihood only
    unit_rate: bool  # BONG's step size is 1


RULES = {
    "bong": Rule(natural=True, kl=False, unit_rate=True),
    "bog": Rule(natural=False, kl=False, unit_rate=False),
    "blr": Rule(natural=True, kl=True, unit_rate=False),
    "bbb": Rule(natural=False, kl=True, unit_rate=False),
}


def update(config, predicted, x, y, w, hyper, key):
    """Posterior after one observation (a mini-batch), from the predicted belief.

    Parameters
    ----------
    config : Config
        Static configuration (rule, hessian, family, …).
    predicted : family state
        q_{t|t−1}, the belief after the predict step.
    x, y, w : arrays (b, d), (b, C), (b,)
        Inputs, targets and row weights of the mini-batch.
    hyper : Hyper
        Traced hyperparameters.
    key : PRNGKey
        Randomness of the MC estimators.
    """
    rule = RULES[config.rule]
    family = FAMILIES[config.family]
    estimate = ESTIMATORS[config.hessian]
    step = family.ngd if rule.natural else family.gd
    alpha = 1.0 if rule.unit_rate else hyper.learning_rate
    prior = predicted if rule.kl else None
    n_steps = config.n_iter if rule.kl else 1

    def inner(i, state):
        g, curv = estimate(
            config, family, state, x, y, w, hyper.obs_var, jax.random.fold_in(key, i)
        )
        return step(state, prior, g, curv, alpha)

    if n_steps == 1:
        return inner(0, predicted)
    return jax.lax.fori_loop(0, n_steps, inner, predicted)
