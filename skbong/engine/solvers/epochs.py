"""The epoch driver of the batch solvers: one compiled ``lax.scan`` over the shuffled
mini-batches of a fixed data set.

An epoch draws a permutation of the N rows, pads it to T = ⌈N / M⌉ mini-batches of M
with an index to a zero-weight row, and runs T steps of the solver
(:data:`~skbong.engine.solvers.SOLVERS`), each from S fresh samples of q: step t's standard-normal draws come
from ``fold_in(key, t)``, generated a chunk of steps at a time (:func:`noise_chunks`). A step whose result is not valid
(non-finite, or a non-positive precision) is not applied: the state stays as before it
and the step is counted. Everything real-valued is traced (:class:`~skbong.engine.solvers.BatchHyper`),
so a grid over the prior, the rates or the noise reuses one program per data shape.
"""

import jax
import jax.numpy as jnp

from ..models import seeded_init
from ..program import program
from .posterior import kl_to_prior
from .registry import is_valid, solver


def _select(flag, new, old):
    return jax.tree_util.tree_map(lambda a, b: jnp.where(flag, a, b), new, old)


@program(static_argnames=("config", "shuffle", "learn_noise"))
def run_epoch(config, state, t0, x, y, w, hyper, key, shuffle=True, learn_noise=False):
    """One epoch of ``config.solver`` over the rows ``x, y, w``.

    Parameters
    ----------
    config : BatchConfig
        Static configuration.
    state : solver state
        Before the epoch.
    t0 : int
        Global index of the first step (the schedule and bias corrections count from it;
        step t draws its samples from ``fold_in(key, t)``).
    x, y, w : arrays (N, d), (N, C), (N,)
        The data set and row weights.
    hyper : BatchHyper
        Traced hyperparameters (``n_data`` is N, or a larger data set's size).
    key : PRNGKey
        The learner's base key (the permutation of the epoch starting at t0 uses ``fold_in(fold_in(key, 2³¹ − 1), t0)``).
    shuffle : bool
        Permute the rows (else take them in order).
    learn_noise : bool
        Also return the squared residuals at the samples (for the noise's EM update).

    Returns
    -------
    state : solver state
        After the epoch.
    nll : scalar
        Σ over the epoch's mini-batches of mean_s Σᵢ −wᵢ log p(yᵢ | θₛ): an estimate of the
        data term of the negative ELBO (each row once, under the q of its step).
    sq_resid : array (C,)
        Σ over the epoch of mean_s Σᵢ wᵢ (yᵢ − f(xᵢ, θₛ))² (zeros unless ``learn_noise``).
    n_bad : int
        Steps not applied (invalid result).
    """
    n, size, s = x.shape[0], config.batch_size, config.mc_samples
    n_steps = -(-n // size)
    n_params = jax.tree_util.tree_leaves(state)[0].shape[0]
    chunk, n_chunks = noise_chunks(n_steps, s * n_params)
    total = chunk * n_chunks  # steps past n_steps are padding: computed, never applied
    record = solver(config)
    order = (
        jax.random.permutation(jax.random.fold_in(jax.random.fold_in(key, 0x7FFFFFFF), t0), n)
        if shuffle
        else jnp.arange(n)
    )
    order = jnp.concatenate([order, jnp.full((total * size - n,), n, order.dtype)])
    real = (jnp.arange(total) < n_steps).reshape(n_chunks, chunk)
    xp = jnp.concatenate([x, jnp.zeros((1,) + x.shape[1:], x.dtype)])
    yp = jnp.concatenate([y, jnp.zeros((1,) + y.shape[1:], y.dtype)])
    wp = jnp.concatenate([w, jnp.zeros((1,), w.dtype)])

    def draw(t):
        return jax.random.normal(jax.random.fold_in(key, t), (s, n_params), x.dtype)

    def body(carry, inputs):
        state, t, nll, sq, bad = carry
        idx, is_real, eps = inputs
        xb, yb, wb = xp[idx], yp[idx], wp[idx]
        thetas = record.sample(state, hyper, eps)
        new, nll_t = record.step(config, state, thetas, eps, xb, yb, wb, hyper, t)
        ok = is_valid(config, new, hyper)
        if learn_noise:
            f = jax.vmap(config.model.apply, in_axes=(0, None))(thetas, xb)  # (S, M, C)
            sq_t = jnp.mean(jnp.einsum("smc,m->sc", (yb - f) ** 2, wb), axis=0)
            sq = sq + jnp.where(is_real, sq_t, 0.0)
        state = _select(ok & is_real, new, state)
        nll = nll + jnp.where(is_real, nll_t, 0.0)
        bad = bad + (~ok & is_real).astype(jnp.int32)
        return (state, t + 1, nll, sq, bad), None

    def chunk_body(carry, inputs):
        # the chunk's draws in one vectorised call: a step's own fold_in(key, t) drawn
        # inside the scan costs about ten times as much on the CPU
        eps = jax.vmap(draw)(carry[1] + jnp.arange(chunk))
        return jax.lax.scan(body, carry, inputs + (eps,))

    zero = jnp.zeros((), x.dtype)
    carry = (state, jnp.asarray(t0, jnp.int32), zero, jnp.zeros(y.shape[1:], x.dtype), 0)
    steps = (order.reshape(n_chunks, chunk, size), real)
    (state, _, nll, sq, bad), _ = jax.lax.scan(chunk_body, carry, steps)
    return state, nll, sq, bad


NOISE_BUDGET = 1 << 22
"""Most standard-normal draws held at once by :func:`run_epoch` (16 MiB in float32)."""


def noise_chunks(n_steps, per_step):
    """(steps per chunk, chunks) for an epoch of ``n_steps`` steps of ``per_step`` draws:
    chunks as even as possible, each within :data:`NOISE_BUDGET`, padding fewer steps
    than there are chunks."""
    most = max(1, min(n_steps, NOISE_BUDGET // max(per_step, 1)))
    n_chunks = -(-n_steps // most)
    return -(-n_steps // n_chunks), n_chunks


@program(static_argnames=("config",))
def init_state(config, mean, hyper):
    """q₀ of ``config.solver`` with the given starting mean."""
    return solver(config).init(config, mean, hyper)


@program(static_argnames=("config", "dtype"))
def prior(config, seed, hyper, dtype):
    """:func:`init_state` from the model's initial parameters (:func:`.models.seeded_init`,
    as :func:`skbong.engine.prior`), in one program: a first ``fit`` compiles one small
    program here, not one per operation of the initialiser."""
    return init_state(config, seeded_init(config.model, seed, dtype), hyper)


@program(static_argnames=("config",))
def posterior_and_kl(config, state, hyper):
    """The posterior q (MeanCov or DLRState) and KL(q ‖ prior)."""
    post = solver(config).posterior(state, hyper)
    return post, kl_to_prior(post, hyper.prior_prec)
