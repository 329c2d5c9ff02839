"""The stream driver: one compiled ``lax.fori_loop`` over mini-batches, predict → update.

Inputs arrive as ``(T, b, ...)`` arrays: T steps of b rows. Rows with zero weight
are padding (a partial last mini-batch); a step whose rows are all padding leaves
the belief untouched, predict step included. An update that produces a non-finite
or invalid state is not applied: the step keeps the previous belief and reports
``ok = False`` (the caller decides whether to raise or skip).

Each step also reports the prequential (predict-then-update) plugin log-likelihood
of its rows under the belief before the update, and the plugin outputs f(x, μ).

A Gaussian-noise row whose target lies more than :data:`OUTLIER_Z` predictive standard
deviations from the one-step prediction (the linearised predictive for the linear model,
the noise alone for networks: :func:`_absurd_rows`) is *absurd*: no update is taken from it (the
step reports ``ok = False``, and the row's log-likelihood is −∞ so that the estimators
can say why). Under the model such a row has probability below 10⁻¹²; learning it
would move the mean by the whole residual and wreck the belief. The prior's own
predictive says nothing about the scale of the targets, so a fresh belief's first step
is not tested.
"""

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from ..models import is_linear
from ..outputs import output_jacobians
from ..program import program
from ..types import OUTLIER_Z, Hyper
from . import noise as noise_lib
from .rules import checked_update, checks_before_writing, update


def _select(flag, new, old):
    return jax.tree_util.tree_map(lambda a, b: jnp.where(flag, a, b), new, old)


def stream_step(config, state, mean0, hyper, x, y, w, key, tested=True):
    """One predict → update step; returns ``(state, (log_lik, f, ok))``.

    ``tested``: whether the step refuses absurd rows (:data:`OUTLIER_Z`; the stream
    passes false for a fresh belief's first step).

    With ``config.learn_noise`` the state is ``(belief, noise)``: the update uses the
    plug-in noise ŝ = b / a, then the noise posterior takes the conjugate increment
    and, with ``config.noise_coupled``, the covariance is rescaled by ŝ' / ŝ
    (:mod:`.noise`).
    """
    bound = _entry_bound(config, state)
    state, out, _ = _checked_step(config, state, mean0, hyper, x, y, w, key, bound, tested)
    return state, out


def _entry_bound(config, state):
    """The running bound that a family's ``checked_ngd`` carries between steps (``None``
    where the stream checks the written result instead)."""
    if not checks_before_writing(config):
        return None
    return config.impl.family.entry_bound(state[0] if config.learn_noise else state)


def _checked_step(config, state, mean0, hyper, x, y, w, key, bound, tested):
    """:func:`stream_step` carrying the bound of :func:`_entry_bound`."""
    family = config.impl.family
    belief, noise = state if config.learn_noise else (state, None)
    if noise is not None:
        hyper = hyper._replace(obs_var=noise_lib.variance(noise))
    active = jnp.any(w != 0)  # all-zero weights are padding; a NaN weight is not (refused)
    if bound is not None:
        # the certificate decides validity before the belief is written (O(P) work, and
        # the selection fuses into the update), no pass over the result is needed
        f = config.model.apply(belief.mean, x)
        log_lik = _log_lik(config, family, belief, noise, x, y, f, hyper.obs_var)
        absurd = _absurd_rows(config, family, belief, x, y, w, f, hyper.obs_var, tested)
        keep = active & ~jnp.any(absurd)
        finish = None if noise is None else partial(_noise_finish, config, noise, x, y, f, w)
        new, ok, bound, new_noise = checked_update(
            config, belief, x, y, w, hyper, key, keep, bound, finish
        )
        if noise is not None:
            new = (new, _select(keep & ok, new_noise, noise))
        out = f if config.pit is None else _residual(config, family, belief, x, y, f, hyper.obs_var)
        log_lik = jnp.where(absurd, -jnp.inf, log_lik)
        return new, (log_lik, out, (ok | ~active) & (keep | ~active)), bound
    predicted = family.predict(belief, mean0, hyper) if config.dynamic else belief
    f = config.model.apply(predicted.mean, x)
    log_lik = _log_lik(config, family, predicted, noise, x, y, f, hyper.obs_var)
    absurd = _absurd_rows(config, family, predicted, x, y, w, f, hyper.obs_var, tested)
    log_lik = jnp.where(absurd, -jnp.inf, log_lik)
    if config.pit is None:
        out = f
    else:  # under the predictive the estimator serves: the belief before the drift step
        f_now = config.model.apply(belief.mean, x) if config.dynamic else f
        out = _residual(config, family, belief, x, y, f_now, hyper.obs_var)
    new = update(config, predicted, x, y, w, hyper, key)
    if noise is not None:
        ratio, noise_ok, new_noise = _noise_finish(config, noise, x, y, f, w, new.mean)
        if ratio is not None:  # Σ = ŝ V: the factorised belief keeps Σ as it is
            new = family.scale(new, ratio)
        ok = family.is_valid(new) & noise_ok
        new = (new, new_noise)
    else:
        ok = family.is_valid(new)
    ok = ok & ~jnp.any(absurd)
    return _select(active & ok, new, state), (log_lik, out, ok | ~active), bound


def _absurd_rows(config, family, predicted, x, y, w, f, obs_var, tested):
    """Which rows (b,) of a step are absurd: a target of a Gaussian-noise model more than
    :data:`OUTLIER_Z` standard deviations of the one-step predictive (the scale of
    :func:`_scale2`) from its mean; never a row of zero weight, nor any row where
    ``tested`` is false or the likelihood has no additive noise.

    The linear model's scale is the linearised predictive's (parameter uncertainty and
    noise; J = φ costs nothing). A network's is the noise alone: its Jacobian and
    J Σ Jᵀ at every step made a (50,) dlr network's fit 1.4–1.6× slower, and the noise,
    learned from the first row on, is on the scale of the targets after that row."""
    if not config.impl.likelihood.additive_noise:
        return jnp.zeros(w.shape, bool)
    scale2 = _scale2(config, family, predicted, x, f, obs_var, linearised=is_linear(config.model))
    # a scale that overflows says nothing of the target (the input is what is extreme)
    far = jnp.isfinite(scale2) & ((y - f) ** 2 > OUTLIER_Z**2 * scale2)
    return jnp.any(far, axis=1) & (w != 0) & tested


def _noise_finish(config, noise, x, y, f, w, mean):
    """The noise posterior's update at the new mean μ' (the ``finish`` of a family's
    ``checked_ngd``, and the generic step's): ``(c, ok, noise')``, c the covariance
    ratio ŝ' / ŝ of the coupled belief (``None`` for the factorised one, whose
    covariance is not rescaled)."""
    new_noise = noise_lib.update(
        noise, y, f, config.model.apply(mean, x), w, config.noise_discount,
        config.impl.likelihood.obs_dof,
    )
    ratio = noise_lib.covariance_ratio(noise, new_noise) if config.noise_coupled else None
    return ratio, noise_lib.is_valid(new_noise), new_noise


def _log_lik(config, family, predicted, noise, x, y, f, obs_var):
    """The prequential log-likelihood of each row (see :func:`_run_stream`)."""
    lik = config.impl.likelihood
    if config.evidence and lik.additive_noise:
        return _gaussian_evidence(config, family, predicted, noise, x, y, f, obs_var)
    return jax.vmap(lik.log_prob, in_axes=(0, 0, None))(y, f, obs_var)


def _gaussian_evidence(config, family, predicted, noise, x, y, f, obs_var):
    """log p(yᵢ | xᵢ, past) under the linearised predictive of each row: Gaussian with
    variance diag(J Σ Jᵀ) + R, or with learned noise the Student-t with 2a degrees of
    freedom and that squared scale (:mod:`.noise`). For the linear-Gaussian model this is
    the exact one-step predictive, so its running sum is the log marginal likelihood.
    Student-t noise of ν degrees of freedom (``obs_dof``) gives a Student-t of ν, or of
    min(ν, 2a) with the learned noise, on the same squared scale."""
    scale2 = _scale2(config, family, predicted, x, f, obs_var, linearised=True)
    z2 = (y - f) ** 2 / scale2
    obs_dof = config.impl.likelihood.obs_dof
    if noise is None and obs_dof == float("inf"):
        return -0.5 * jnp.sum(z2 + jnp.log(2 * jnp.pi * scale2), axis=1)
    nu = obs_dof if noise is None else noise_lib.predictive_dof(noise, obs_dof)
    log_t = (
        jax.scipy.special.gammaln(0.5 * (nu + 1))
        - jax.scipy.special.gammaln(0.5 * nu)
        - 0.5 * jnp.log(nu * jnp.pi * scale2)
        - 0.5 * (nu + 1) * jnp.log1p(z2 / nu)
    )
    return jnp.sum(log_t, axis=1)


def _scale2(config, family, predicted, x, f, obs_var, linearised):
    """Each row's squared predictive scale, shaped as the outputs f (b, C):
    diag(J Σ Jᵀ) + R (the linearised predictive) or R (the plugin)."""
    if not linearised:
        return jnp.zeros_like(f) + obs_var
    _, jac = output_jacobians(config, predicted.mean, x)
    return jnp.diagonal(family.output_cov(predicted, jac), axis1=1, axis2=2) + obs_var


def _residual(config, family, belief, x, y, f, obs_var):
    """z = (y − f) / scale for each target under the one-step predictive ``config.pit`` of
    the belief before the row (scale² of :func:`_scale2`): the probability integral
    transform is u = F(z) with F the Student-t of the noise's 2a degrees of freedom, or
    the standard normal at a fixed noise, which the estimators evaluate on the host (the
    degrees of freedom before each step follow from the weights alone; a Student-t CDF
    in the program would add an incomplete-beta loop to every stream's compilation)."""
    scale2 = _scale2(config, family, belief, x, f, obs_var, config.pit == "linmc")
    return (y - f) / jnp.sqrt(scale2)


def _row(a, t):
    """Step t's slice of a stream array. The loop's 0 ≤ t < T needs no wrap of a negative
    index or bounds test, which ``a[t]`` and ``a.at[t].set`` add: three kernels per step
    on XLA:CPU (0–3 % of a full step at P = 100, within the noise alone)."""
    return jax.lax.dynamic_index_in_dim(a, t, keepdims=False, allow_negative_indices=False)


def _put(a, value, t):
    """``a`` with step t's slice set to ``value`` (:func:`_row`'s write)."""
    return jax.lax.dynamic_update_index_in_dim(a, value, t, 0, allow_negative_indices=False)


def _run_stream(config, state, mean0, hyper, xs, ys, ws, step0, key, length=None):
    """Stream mini-batches through the learner in one compiled loop.

    Parameters
    ----------
    config : Config
        Static configuration.
    state : family state, or ``(family state, NoiseState)`` with ``config.learn_noise``
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
    length : int, optional
        Number of steps to run (traced: one program serves every ``length <= T``); the
        steps from ``length`` on are not computed and report ``ok = True``, zero
        log-likelihood and zero outputs. Default: all T steps.

    Returns
    -------
    state : family state
        Belief after the last step.
    log_lik : array (T, b)
        Prequential log-likelihood of each row under the belief before its update: the
        plugin p(y | f(x, μ)), or with ``config.evidence`` (Gaussian likelihood) the
        linearised predictive density (:func:`_gaussian_evidence`).
    outputs : array (T, b, C)
        Plugin outputs f(x, μ_{t|t−1}) before each update.
    ok : array (T,) of bool
        False where an update was rejected as non-finite or invalid.
    """
    n_steps = xs.shape[0]
    dtype = jax.tree_util.tree_leaves(state)[0].dtype
    # each row's log-likelihood and outputs in one buffer (T, b, 1 + C): one write per step
    outputs = (jnp.zeros(ys.shape[:2] + (1 + ys.shape[2],), dtype), jnp.ones(n_steps, bool))

    def body(t, carry):
        belief, bound, (out, ok) = carry
        step_key = jax.random.fold_in(key, step0 + t)
        x, y, w = (_row(a, t) for a in (xs, ys, ws))
        tested = step0 + t > 0  # a fresh belief's first step is not tested
        belief, (ll, ft, okt), bound = _checked_step(
            config, belief, mean0, hyper, x, y, w, step_key, bound, tested
        )
        row = jnp.concatenate([ll[:, None].astype(dtype), ft.astype(dtype)], axis=1)
        return belief, bound, (_put(out, row, t), _put(ok, okt, t))

    stop = n_steps if length is None else jnp.minimum(length, n_steps)
    carry = (state, _entry_bound(config, state), outputs)
    state, _, (out, ok) = jax.lax.fori_loop(0, stop, body, carry)
    return state, out[..., 0], out[..., 1:], ok


run_stream = program(_run_stream, static_argnames=("config",))


@program(static_argnames=("config",))
def run_stream_checked(
    config, state, mean0, hyper, xs, ys, ws, step0, key, length=None, final=True
):
    """:func:`run_stream` and, in the same program, the family's ``end_check`` of the final
    belief (``True`` for a family without one, or where ``final`` is false: a chunk that
    is not the call's last, whose belief the next chunk replaces): what the estimators
    run, one dispatch per call. ``final`` is traced, so both kinds of chunk share one
    program; from :data:`BRANCH_FROM` on, the check runs only where ``final`` is true.
    Returns the outputs of :func:`run_stream` and that flag."""
    state, log_lik, f, ok = _run_stream(config, state, mean0, hyper, xs, ys, ws, step0, key, length)
    check = config.impl.family.end_check
    belief = state[0] if config.learn_noise else state
    if check is None:
        return state, log_lik, f, ok, jnp.asarray(True)
    if max(a.size for a in jax.tree_util.tree_leaves(belief)) < BRANCH_FROM:
        flag = jnp.logical_or(jnp.logical_not(final), check(belief))
    else:
        flag = jax.lax.cond(final, check, lambda _: jnp.asarray(True), belief)
    return state, log_lik, f, ok, flag


BRANCH_FROM = 16_384
"""Belief size (elements of its largest array) from which :func:`run_stream_checked`
branches on ``final`` (``lax.cond``) so that only a call's last chunk pays the family's
end check. Below it the check runs on every chunk and a non-final chunk's result is
discarded: a branch costs about 20 µs per call on XLA:CPU (a one-row ``partial_fit`` of
the default regressor: 94 against 72 µs for its program), more than the check of a
small belief (a P × P Cholesky at P < 128, ≤ 0.7 MFLOP, against ≥ 33 MFLOP for a
512-step chunk of the same family)."""


@program(static_argnames=("config",))
def run_bank(config, states, mean0, hyper, xs, ys, ws, step0, key, length=None):
    """:func:`run_stream` for a bank of K filters in one program (``vmap``).

    The filters differ in their prior variance and, where ``hyper.drift`` is a vector
    (K,), in their drift: ``states`` and ``hyper.prior_var`` carry a leading axis K;
    inputs, the other hyperparameters and the keys are shared. Returns the same as
    :func:`run_stream` with a leading K on every output.

    The filters run side by side (``vmap``), or, for a family with ``bank_in_turn``
    (dlr), one after another (``lax.map``): batched, the dlr step's k × k
    factorisations and products ran 1.4–2.6× slower per filter than in turn (a (50,)
    network's drift bank of 3 filters over 2,000 rows: 527 against 368 ms; its prior bank
    of 7: 786 against 525 ms; the linear model's drift bank, dlr: 361 against 140 ms;
    the full family's banks ran faster batched: 11 against 14 ms for the linear drift
    bank, 34 against 88 ms for its 21 filters of prior and drift).
    """
    def one(state, hyp):
        return _run_stream(config, state, mean0, hyp, xs, ys, ws, step0, key, length)

    if config.impl.family.bank_in_turn:
        per_filter = {"prior_var": hyper.prior_var}
        if jnp.ndim(hyper.drift):
            per_filter["drift"] = hyper.drift
        return jax.lax.map(lambda a: one(a[0], hyper._replace(**a[1])), (states, per_filter))

    axes = Hyper(
        prior_var=0,
        obs_var=None,
        learning_rate=None,
        drift=0 if jnp.ndim(hyper.drift) else None,
        process_noise=None,
    )
    return jax.vmap(one, in_axes=(0, axes))(states, hyper)


CHUNK_SIZES = (512, 64, 8)
"""Step buffers that are ever compiled. A stream of T steps runs in calls of 512 steps
and one call for the remaining ``T mod 512`` steps, which uses the smallest buffer that
holds them (the program's step count is a traced argument, so a buffer serves every
shorter length, a single step included). So at most ``len(CHUNK_SIZES)`` programs exist
per configuration and input width whatever the stream length or batch sizes, and a cold
``fit`` compiles one. (A one-step buffer would let XLA specialise the loop away and
contract the arithmetic differently, so that chunked and whole streams could differ in
the last bit.)"""


def chunk_plan(n_steps):
    """Step counts of the calls that cover ``n_steps``: 512 each, then the remainder."""
    full, rest = divmod(n_steps, CHUNK_SIZES[0])
    return [CHUNK_SIZES[0]] * full + ([rest] if rest else [])


def buffer_size(length):
    """The smallest compiled step buffer (:data:`CHUNK_SIZES`) that holds ``length`` steps."""
    return min(size for size in CHUNK_SIZES if size >= length)


def step_buffer(a, first, length, batch_size):
    """Host (numpy) rows ``a`` of steps ``first .. first + length - 1`` (``batch_size`` rows
    each) as the ``(buffer_size(length), batch_size, ...)`` buffer of a program call: a view
    where the rows fill it, else a copy padded with zero rows (weight 0)."""
    size = buffer_size(length)
    rows = a[first * batch_size : (first + length) * batch_size]
    pad = size * batch_size - rows.shape[0]
    if pad:
        rows = np.concatenate([rows, np.zeros((pad,) + a.shape[1:], a.dtype)])
    return rows.reshape(size, batch_size, *a.shape[1:])


def _fetch_early(results):
    """Start the device-to-host copies of a program's results (a tree of JAX arrays) together, so
    that the numpy conversions after it wait for the transfers once instead of one
    after another (on a GPU, 7 of them cost about 3.3 ms of a one-row ``partial_fit``).
    Nothing on the CPU, where a conversion copies nothing."""
    if jax.default_backend() != "cpu":
        for a in jax.tree_util.tree_leaves(results):
            a.copy_to_host_async()


def stream(
    config,
    state,
    mean0,
    hyper,
    x,
    y,
    w,
    batch_size,
    step0,
    key,
    callback=None,
    bank=False,
    checked=False,
):
    """Learn from host (numpy) rows ``x, y, w`` in order, ``batch_size`` rows per update.

    Runs :func:`run_stream` (:func:`run_bank` with ``bank=True``) over the chunks of
    :func:`chunk_plan`, so the number of compiled programs stays bounded.
    ``callback(n_done, n_total)`` is called after each chunk (progress reporting).
    ``checked=True`` (not with ``bank``) runs :func:`run_stream_checked` and adds its
    flag for the final belief to the results.

    Returns
    -------
    state, log_lik (n,), outputs (n, C), ok (T,)[, sound]
        As :func:`run_stream`, with per-row outputs trimmed of padding (numpy); a bank
        adds a leading K to each. ``sound`` (a Python bool) with ``checked=True``. The
        state is the program's (JAX arrays) whatever the belief was given as: numpy and
        JAX arrays of the same shapes share one compiled program.
    """
    n = x.shape[0]
    n_steps = -(-n // batch_size)
    parts, start, sound = [], 0, True
    run = run_bank if bank else run_stream_checked if checked else run_stream
    for length in chunk_plan(n_steps):
        chunk = [step_buffer(a, start, length, batch_size) for a in (x, y, w)]
        last = start + length == n_steps
        final = (last,) if checked else ()
        state, log_lik, f, ok, *flag = run(
            config, state, mean0, hyper, *chunk, step0 + start, key, length, *final
        )
        outs = (log_lik, f, ok)
        _fetch_early((outs, flag, state if last else ()))
        if bank:  # steps first: (T, K, ...)
            outs = tuple(np.moveaxis(np.asarray(a), 1, 0) for a in outs)
        parts.append(tuple(np.asarray(a)[:length] for a in outs))
        start += length
        if flag:  # the belief after this chunk; the last one's is the call's
            sound = bool(np.asarray(flag[0]))  # (bool() of a jax scalar costs 10× more)
        if callback is not None:
            callback(start, n_steps)
    extra = (sound,) if checked else ()
    if not parts:
        c = y.shape[1] if y.ndim == 2 else 1
        return (state, np.zeros(0, x.dtype), np.zeros((0, c), x.dtype), np.ones(0, bool), *extra)
    log_lik, f, ok = parts[0] if len(parts) == 1 else (
        np.concatenate([p[i] for p in parts]) for i in range(3)
    )
    if bank:  # filters first again: (K, n), (K, n, C), (K, T)
        log_lik, f, ok = (np.moveaxis(a, 1, 0) for a in (log_lik, f, ok))
    lead = log_lik.shape[: log_lik.ndim - 2]
    log_lik = log_lik.reshape(*lead, -1)[..., :n]
    f = f.reshape(*lead, n_steps * batch_size, -1)[..., :n, :]
    return (state, log_lik, f, ok, *extra)
