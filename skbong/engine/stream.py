"""The stream driver: one compiled ``lax.scan`` over mini-batches, predict → update.

Inputs arrive as ``(T, b, ...)`` arrays: T steps of b rows. Rows with zero weight
are padding (a partial last mini-batch); a step whose rows are all padding leaves
the belief untouched, predict step included. An update that produces a non-finite
or invalid state is not applied: the step keeps the previous belief and reports
``ok = False`` (the caller decides whether to raise or skip).

Each step also reports the prequential (predict-then-update) plugin log-likelihood
of its rows under the belief before the update, and the plugin outputs f(x, μ).
"""

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from .families import FAMILIES
from .likelihoods import LIKELIHOODS
from .rules import update


def _select(flag, new, old):
    return jax.tree_util.tree_map(lambda a, b: jnp.where(flag, a, b), new, old)


def stream_step(config, state, mean0, hyper, x, y, w, key):
    """One predict → update step; returns ``(state, (log_lik, f, ok))``."""
    family = FAMILIES[config.family]
    lik = LIKELIHOODS[config.likelihood]
    active = jnp.any(w > 0)
    predicted = family.predict(state, mean0, hyper) if config.dynamic else state
    f = config.model.apply(predicted.mean, x)
    log_lik = jax.vmap(lik.log_prob, in_axes=(0, 0, None))(y, f, hyper.obs_var)
    new = update(config, predicted, x, y, w, hyper, key)
    ok = family.is_valid(new)
    return _select(active & ok, new, state), (log_lik, f, ok | ~active)


@partial(jax.jit, static_argnames=("config",))
def run_stream(config, state, mean0, hyper, xs, ys, ws, step0, key):
    """Stream T mini-batches through the learner in one compiled scan.

    Parameters
    ----------
    config : Config
        Static configuration.
    state : family state
        Belief before the first step.
    mean0 : array (P,)
        Prior mean (the OU attractor).
    hyper : Hyper
        Traced hyperparameters.
    xs, ys, ws : arrays (T, b, d), (T, b, C), (T, b)
        Inputs, targets and row weights (0 = padding).
    step0 : int
        Global index of the first step; step t uses the key ``fold_in(key, step0 + t)``,
        so any chunking of a stream gives the same draws.
    key : PRNGKey
        Base key of the learner.

    Returns
    -------
    state : family state
        Belief after the last step.
    log_lik : array (T, b)
        Prequential plugin log-likelihood of each row.
    outputs : array (T, b, C)
        Plugin outputs f(x, μ_{t|t−1}) before each update.
    ok : array (T,) of bool
        False where an update was rejected as non-finite or invalid.
    """

    def body(carry, inp):
        x, y, w, t = inp
        return stream_step(config, carry, mean0, hyper, x, y, w, jax.random.fold_in(key, t))

    steps = step0 + jnp.arange(xs.shape[0])
    state, (log_lik, f, ok) = jax.lax.scan(body, state, (xs, ys, ws, steps))
    return state, log_lik, f, ok


CHUNK_SIZES = (512, 64, 8, 1)
"""Scan lengths that are ever compiled. A stream of T steps runs as a greedy sum of
512-, 64- and 8-step chunks; a remainder of 2–7 steps is padded with masked steps
to one more 8-step chunk, and a single step runs alone (the latency of one-row
``partial_fit``). So at most ``len(CHUNK_SIZES)`` programs exist per configuration
and input width, whatever the stream length or batch sizes."""


def chunk_plan(n_steps):
    """Scan lengths (from :data:`CHUNK_SIZES`, largest first) covering ``n_steps``.

    Their sum may exceed ``n_steps`` by up to 6 masked padding steps.
    """
    plan = []
    for size in CHUNK_SIZES[:-1]:
        count, n_steps = divmod(n_steps, size)
        plan.extend([size] * count)
    if n_steps == 1:
        plan.append(1)
    elif n_steps > 1:
        plan.append(CHUNK_SIZES[-2])
    return plan


def to_steps(x, y, w, batch_size):
    """Reshape host (numpy) rows into ``(T, b, ...)`` mini-batches; the last is padded
    with zero-weight rows."""
    n = x.shape[0]
    n_steps = -(-n // batch_size)
    pad = n_steps * batch_size - n
    if pad:
        x = np.concatenate([x, np.zeros((pad,) + x.shape[1:], x.dtype)])
        y = np.concatenate([y, np.zeros((pad,) + y.shape[1:], y.dtype)])
        w = np.concatenate([w, np.zeros((pad,), w.dtype)])
    return (
        x.reshape(n_steps, batch_size, *x.shape[1:]),
        y.reshape(n_steps, batch_size, *y.shape[1:]),
        w.reshape(n_steps, batch_size),
    )


def stream(config, state, mean0, hyper, x, y, w, batch_size, step0, key, callback=None):
    """Learn from host (numpy) rows ``x, y, w`` in order, ``batch_size`` rows per update.

    Runs :func:`run_stream` over the chunks of :func:`chunk_plan`, so the number of
    compiled programs stays bounded. ``callback(n_done, n_total)`` is called after
    each chunk (progress reporting).

    Returns
    -------
    state, log_lik (n,), outputs (n, C), ok (T,)
        As :func:`run_stream`, with per-row outputs trimmed of padding.
    """
    n = x.shape[0]
    xs, ys, ws = to_steps(x, y, w, batch_size)
    n_steps = xs.shape[0]
    plan = chunk_plan(n_steps)
    extra = sum(plan) - n_steps
    if extra:  # masked steps: zero weight, the belief is left untouched
        xs, ys, ws = (
            np.concatenate([a, np.zeros((extra,) + a.shape[1:], a.dtype)]) for a in (xs, ys, ws)
        )
    # A belief given as host (numpy) arrays stays on the host between chunks, so that every
    # chunk call passes the same argument types and hits the same cached program.
    on_host = all(isinstance(a, np.ndarray) for a in jax.tree_util.tree_leaves(state))
    parts, start = [], 0
    for size in plan:
        sl = slice(start, start + size)
        state, log_lik, f, ok = run_stream(
            config, state, mean0, hyper, xs[sl], ys[sl], ws[sl], step0 + start, key
        )
        if on_host:
            state = jax.tree_util.tree_map(np.asarray, state)
        parts.append((log_lik, f, ok))
        start += size
        if callback is not None:
            callback(min(start, n_steps), n_steps)
    log_lik = np.concatenate([np.asarray(p[0]) for p in parts]).reshape(-1)[:n]
    f = np.concatenate([np.asarray(p[1]) for p in parts]).reshape(sum(plan) * batch_size, -1)[:n]
    ok = np.concatenate([np.asarray(p[2]) for p in parts])[:n_steps]
    return state, log_lik, f, ok
