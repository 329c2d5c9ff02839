"""Streaming rows into the belief: one transactional ``fit`` / ``partial_fit`` call.

Every call validates (with a fast path for plain numpy rows of a stream), runs the
compiled engine over its rows, checks the result once on the host (the family's
soundness check), and either commits the new belief with its counters or leaves the
estimator exactly as it was; a refused row raises with a diagnosis, or with
``on_error="skip"`` is replayed around and counted, with a warning.

This is the online estimators' driver: functions of the estimator ``est``, which its
``fit`` and ``partial_fit`` call (:func:`fit_rows`). They read the parameters, the
configuration and the belief through :class:`~skbong._online.base.BongBase`, the bank
through :mod:`skbong._online.bank`, and two functions the estimator names:
``est._encode_y`` (the targets) and ``est._observation(model)`` (its observation model's
choices, :class:`~skbong._online.observation.Observation`, whose ``window_rows`` is the
interval calibration's window).
"""

import warnings

import jax
import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.validation import _check_sample_weight, validate_data

from .. import engine
from .._core import inputs as _inputs
from .._core.guard import _check_not_forked
from ..engine.filter import newton as _newton
from ..exceptions import (
    DivergenceWarning,
    NonFiniteUpdateError,
    OutliersWarning,
    SkippedRowsWarning,
)
from . import bank as bank_module
from . import calibration as _calibration
from . import conjugate as _conjugate
from .bank import _MIN_WEIGHT, evidence_discount, evidence_path

REFINE_TOL = 1e-4
"""A filter of ``fit``'s further passes stops once its mean moves by at most this,
relative to 1 + max |θ̄| (:func:`_refine`)."""

DIVERGENCE_MIN_ROWS = 20
"""A call's rows of nonzero weight below which no divergence is diagnosed."""

DIVERGENCE_RATIO = 100.0
"""How many times the error of knowing nothing the one-step-ahead predictions' mean
squared error must reach to diagnose divergence (:class:`~skbong.DivergenceWarning`)."""

OUTLIER_GAP_NATS = 18.0
"""How far below the call's median row a row's one-step-ahead log predictive density
must fall to count as a gross outlier (:class:`~skbong.exceptions.OutliersWarning`):
a Gaussian density falls by z²/2, so 18 nats is about 6 standard deviations out."""

OUTLIER_MIN_ROWS, OUTLIER_MIN_FRACTION = 5, 0.005
"""The fewest such rows, and the smallest fraction of a call's rows, that make
``fit`` / ``partial_fit`` warn. On clean data (diabetes, the seven UCI regression sets,
a synthetic linear set; linear and one 50-unit layer) a call has at most two such rows,
a network's first predictions; with 1 % or 5 % of the targets moved by 20–50 noise s.d.,
2,000 rows have 16–21."""


def _is_sound(family, state):
    """Whether a belief (a tuple of numpy arrays) is usable: the family's once-per-call
    host check (:attr:`~skbong.engine.families.Family.host_check`; the dense families'
    Cholesky, the dlr variances), for the families whose per-step validity check does
    not guarantee it."""
    return family.host_check is None or family.host_check(state)


PASS_FAILURES = (SkippedRowsWarning, DivergenceWarning)
"""The warnings that mark a tempered pass of ``fit`` as failed (a row skipped or
refused, a diverging stream; :func:`_tempered`); any other warning raised during a pass
says nothing of the pass and is passed on to the caller."""


REFINE_HALVINGS = 10
"""How often ``fit``'s passes halve a filter's step that did not raise its log posterior
(:func:`_damped`) before the filter keeps its belief: steps down to 2⁻¹⁰ of Newton's."""

BELOW_PRIOR_NATS = 0.1
"""Nats per row by which a fitted linear classifier's log posterior on its rows may fall
below the prior mean's before ``fit`` warns (:class:`~skbong.exceptions.DivergenceWarning`):
an overshooting filter falls by several nats per row (a broad prior on iris: 10), while
on labels that carry no signal the fitted mean sits near the prior mean's value."""


def learn(est, config, X, Y, sample_weight, obs_var):
    """Stream rows into the belief; commit only if every update was valid.

    The compiled stream keeps the previous belief, and flags the step, wherever an
    update gives a non-finite state or one that fails the family's ``is_valid``. For
    the dense families a positive diagonal does not make Σ positive definite, and a
    Cholesky factorisation on every step would add O(P³) work to the O(P² C) Woodbury
    step; so the belief is checked once, after the call's stream (:func:`_is_sound`:
    Σ positive definite, or the dlr marginal variances positive). Only if that check
    fails is the call replayed from the belief before it (:func:`_replay`), to reject
    the steps that make it fail.
    """
    dt = est._jax_dtype()
    size, n_rows = int(est.batch_size), X.shape[0]
    X, Y, w, raw = _call_rows(est, X, Y, sample_weight)
    hyper = est._hyper(obs_var, config)
    noise = est._noise
    if config.learn_noise and noise is None:  # start learning from the value in use
        lead = () if est._log_evidence is None else (len(est._log_evidence),)
        a0 = np.full(lead + (len(obs_var),), engine.filter.noise.PRIOR_DOF, dt)
        noise = (a0, (a0 * obs_var).astype(dt))
    elif not config.learn_noise:
        noise = None
    if est._log_evidence is not None:
        return _learn_bank(est, config, hyper, X, Y, w, noise, obs_var, raw)
    (new_state, new_noise), ok, sound, z, log_lik = _run(est,
        config, (est._state, noise), hyper, X, Y, w, est._n_steps, _progress(est, n_rows)
    )
    absurd = np.isneginf(log_lik)
    pit = _pits(est, config, z, noise, w, ok)
    not_pd = None
    if not sound:  # the first pass's predictions came from beliefs that are replayed
        (new_state, new_noise), ok, not_pd, absurd = _replay(est, config, hyper, X, Y, w, noise)
        pit = None
    bad = np.flatnonzero(~ok)
    n_bad = int(np.minimum(size, n_rows - bad * size).sum()) if bad.size else 0  # real rows
    if bad.size and est.on_error == "raise":
        first = int(bad[0]) * size
        last = min(first + size, n_rows) - 1  # the last step may be padded
        rows = f"row {first}" if first == last else f"rows {first}..{last}"
        far = np.flatnonzero(absurd[first : last + 1])
        if far.size:
            raise _absurd_error(est, config, first + int(far[0]))
        what = (
            f"{config.impl.family.unsound} in {est._dtype_name()}"
            if not_pd is not None and not_pd[bad[0]]
            else "a non-finite or invalid posterior"
        )
        raise NonFiniteUpdateError(
            f"the update for {rows} of this batch gave {what} (family={config.family!r}, "
            f"rule={est.rule!r}, hessian={est.hessian!r}); nothing from this call was "
            f"applied. {_diagnosis(est, config, X)}"
        )
    step_far = np.zeros(ok.size, bool)  # steps refused for an absurd row
    np.logical_or.at(step_far, np.arange(n_rows) // size, absurd)
    step_far &= ~ok
    if step_far.any():
        _warn_absurd(est, np.flatnonzero(absurd & np.repeat(step_far, size)[:n_rows]))
    other = np.flatnonzero(~ok & ~step_far)
    n_bad_other = int(np.minimum(size, n_rows - other * size).sum())
    if n_bad_other:
        warnings.warn(
            f"{type(est).__name__} skipped {n_bad_other} of {n_rows} rows ({n_bad_other / n_rows:.1%}) "
            f"of this call (on_error='skip'): their updates gave a non-finite or invalid "
            f"posterior, so the model did not learn from them. {_diagnosis(est, config, X)}",
            SkippedRowsWarning,
            stacklevel=4,
        )
    # commit: nothing above changed the estimator
    learned = np.repeat(ok, size)[:n_rows]
    _record_calibration(est, config, pit, raw, Y, w, learned)
    est._state, est._noise = new_state, new_noise
    est._obs_var = np.asarray(obs_var, np.float64)
    est._n_steps += -(-n_rows // size)
    est.n_skipped_ += n_bad
    est.n_observations_ += int(n_rows)
    est._publish(config)
    if n_bad:
        kept = learned & (w > 0)
        _check_skipped(est, config, raw[kept], Y[kept], n_bad, n_rows)
    if sound and config.pit is None and config.impl.likelihood.additive_noise:
        _warn_if_diverging(est, config, X, Y, z, np.where(learned, w, 0))
    if sound:
        _warn_if_outliers(est, config, log_lik, np.where(learned, w, 0))


def _call_rows(est, X, Y, sample_weight):
    """A call's rows in the estimator's dtype: ``(X, Y, w, raw)``, X as the engine sees
    them (a network's standardisation), w the weights (ones without ``sample_weight``),
    and ``raw`` the rows the calibration window and the checks that predict keep (the
    user's, where the engine standardises them)."""
    dt = est._jax_dtype()
    w = np.ones(X.shape[0], dt) if sample_weight is None else np.asarray(sample_weight, dt)
    engine_X = _inputs.engine_inputs(est, X).astype(dt, copy=False)
    raw = engine_X if getattr(est, "_input_standardisation", None) is None else X
    return engine_X, Y.astype(dt, copy=False), w, raw


def _learn_bank(est, config, hyper, X, Y, w, noise, obs_var, raw):
    """:func:`learn` for the bank of filters (a prior bank and/or
    ``drift="auto"``).

    All K filters learn every row in one compiled program. A filter whose update is
    refused (non-finite, invalid or unsound, as in :func:`learn`) is dropped from
    the bank: its weight becomes zero for good (a warning says so). Only when no
    filter is left does the call fail, and then nothing is changed. The weight of a
    filter is proportional to exp of its cumulative log predictive density of the
    rows (the online evidence; the marginal likelihood in the conjugate case),
    discounted per row for networks (:func:`~skbong._online.bank.evidence_discount`).

    Where every filter is the exact conjugate posterior (:func:`conjugate_bank`) the
    K filters are computed in closed form from the rows' shared statistics
    (:mod:`skbong._online.conjugate`), and one filter, the reference (the live filter of
    highest evidence, the widest prior among equals), streams the rows for what needs
    them one at a time: the absurd rows it refuses, the updates it rejects and the
    one-step-ahead predictions that diagnose divergence.
    """
    size, n_rows = int(est.batch_size), X.shape[0]
    conjugate = conjugate_bank(est, config, X, w)
    live = np.isfinite(est._log_evidence)
    state, run_noise, run_hyper = est._state, noise, hyper
    if conjugate:  # the reference filter alone, as a filter outside a bank
        k = bank_reference(est, live)
        state = tuple(a[k] for a in est._state)
        run_noise = None if noise is None else tuple(a[k] for a in noise)
        run_hyper = _filters_of(hyper, k)
    judged = np.ones(1, bool) if conjugate else live  # the filters the rows are judged by

    since = np.full(len(live), n_rows + 1)  # filter k retired before row since[k] (n + 1: none)

    def run(w):
        nonlocal since
        if not conjugate:
            new, log_lik, z, ok, since = _stream_bank(est, config, hyper, X, Y, w, noise, live)
            return new, log_lik, z, ok
        with est._x64():
            new, log_lik, z, ok = engine.stream(
                config,
                est._engine_state(state, run_noise),
                est._prior_mean,
                run_hyper,
                X,
                Y,
                w,
                size,
                est._n_steps,
                est._key(1),
                callback=_progress(est, n_rows),
            )
        # as a bank of one: its filter on a leading axis
        return new, log_lik[None], np.asarray(z)[None], ok[None]

    def judges():  # (K, n): the filters that judge each row (a retired one no longer does)
        return judged[:, None] & (np.arange(n_rows)[None, :] < since[:, None])

    new, log_lik, z, ok = run(w)
    # a row absurd under every filter still in the bank is refused for all of them: with
    # on_error="skip" the call is run again with its weight 0 (it teaches nothing). A
    # filter that alone finds a row absurd refuses it, and is dropped below
    far = np.all(np.isneginf(log_lik) | ~judges(), axis=0)
    n_absurd = int(np.count_nonzero(far))
    if n_absurd:
        if est.on_error == "raise":
            raise _absurd_error(est, config, int(np.flatnonzero(far)[0]))
        _warn_absurd(est, np.flatnonzero(far))
        w = np.where(far, 0, w).astype(w.dtype)
        new, log_lik, z, ok = run(w)
    # with on_error="skip", a row whose update a filter still in the bank refuses is
    # left out for all of them (run again at weight 0), so that every filter learns
    # the same rows and their evidences stay comparable
    refused = np.zeros(n_rows, bool)
    if est.on_error == "skip":
        refused = np.repeat(~ok[judged].all(axis=0), size)[:n_rows] & (w > 0)
    if refused.any():
        warnings.warn(
            f"{type(est).__name__} skipped {refused.sum()} of {n_rows} rows "
            f"({refused.mean():.1%}) of this call (on_error='skip'): their updates gave a "
            "non-finite or invalid posterior under a filter of the bank, so no filter "
            f"learned from them. {_diagnosis(est, config, X)}",
            SkippedRowsWarning,
            stacklevel=4,
        )
        w = np.where(refused, 0, w).astype(w.dtype)
        new, log_lik, z, ok = run(w)
    if conjugate:
        rows = w > 0
        H = _conjugate.design(X[rows], config.model.fit_intercept)
        exact = _conjugate.update(
            est._state[0], est._state[1], noise, H, Y[rows, 0], obs_var
        )
        dt = est._state[0].dtype
        new_state = (exact.mean.astype(dt), exact.cov.astype(dt))
        new_noise = None if noise is None else tuple(a.astype(dt) for a in exact.noise)
        accepted = exact.ok & ok[0].all()
    else:
        new_state, new_noise = new if config.learn_noise else (new, None)
        new_state = tuple(np.asarray(a) for a in new_state)
        new_noise = None if new_noise is None else tuple(np.asarray(a) for a in new_noise)
        accepted = ok.all(axis=1)
    alive = live.copy()
    retired = live & (since <= n_rows)
    for k in np.flatnonzero(alive & ~retired):
        state_k = tuple(a[k] for a in new_state)
        alive[k] = bool(accepted[k]) and _is_sound(config.impl.family, state_k)
    priors, drifts = est._bank_spec().grid()
    if not alive.any():
        steps = [np.flatnonzero(~ok[k]) for k in np.flatnonzero(judged)]
        firsts = [int(b[0]) * size for b in steps if b.size]
        where = ""
        if firsts:
            first = min(firsts)
            last = min(first + size, n_rows) - 1  # the last step may be padded
            where = f" (the first at row {first})" if first == last else f" (the first at rows {first}..{last})"
        raise NonFiniteUpdateError(
            f"every filter of the bank (prior variances {np.unique(priors).tolist()}, drifts "
            f"{np.unique(drifts).tolist()}) refused an update of this batch{where}: it gave a "
            "non-finite or invalid posterior "
            f"(family={config.family!r}, rule={est.rule!r}, hessian={est.hessian!r}); "
            f"nothing from this call was applied. {_diagnosis(est, config, X)}"
        )
    dropped = live & ~alive & ~retired
    alive &= ~retired
    if dropped.any():
        warnings.warn(
            f"{type(est).__name__}: the filter(s) {est._bank_spec().describe(dropped)} "
            "were dropped from the bank: their updates gave a non-finite or invalid "
            "posterior on this batch. The others learned every row.",
            SkippedRowsWarning,
            stacklevel=4,
        )
    pit = path = None
    if conjugate:
        evidence = np.where(alive, est._log_evidence + exact.log_evidence, -np.inf)
    else:
        weighted = np.nan_to_num(log_lik.astype(np.float64)) * w[None, :]
        path = evidence_path(np.where(alive | retired, est._log_evidence, -np.inf), weighted,
                             evidence_discount(config.model))
        path[np.arange(path.shape[1])[None, :] >= since[:, None]] = -np.inf  # retired filters
        evidence = path[:, -1]
        if config.pit is not None:  # the mixture's PIT: each row under the weights before it
            pits = np.stack([
                _pits(est, config, z[k], None if noise is None else (noise[0][k],), w, ok[k])
                for k in range(len(z))
            ])
            pit = _calibration.mixture_pit(pits, path[:, :-1])
    # commit: nothing above changed the estimator (the filters left learned every row
    # not skipped)
    _record_calibration(est, config, pit, raw, Y, w, ~(far | refused))
    est._log_evidence = evidence
    est._state, est._noise = new_state, new_noise
    est._obs_var = np.asarray(obs_var, np.float64)
    est._n_steps += -(-n_rows // size)
    n_bad = n_absurd + int(refused.sum())
    est.n_skipped_ += n_bad
    est.n_observations_ += int(n_rows)
    est._publish(config)
    kept = ~(far | refused) & (w > 0)
    if n_bad:
        _check_skipped(est, config, raw[kept], Y[kept], n_bad, n_rows)
    if config.pit is None and config.impl.likelihood.additive_noise:
        # one-step-ahead predictions: the reference filter's, or the mixture's, each
        # row under the weights before it
        zs = np.asarray(z, np.float64).reshape(len(z), n_rows, -1)
        if conjugate:
            f = zs[0]
        else:
            before = path[:, :-1] - np.max(path[:, :-1], axis=0)
            mix = np.exp(before) / np.exp(before).sum(axis=0)
            f = np.einsum("kn,knc->nc", mix, zs)
        _warn_if_diverging(est, config, X, Y, f, w * kept)
    # the rows under the filter of highest evidence (the reference filter in closed form)
    best = 0 if conjugate else int(np.argmax(np.where(alive, evidence, -np.inf)))
    _warn_if_outliers(est, config, log_lik[best], w * kept)


def _stream_bank(est, config, hyper, X, Y, w, noise, live):
    """One call's rows through a bank streamed filter by filter (not in closed form):
    ``(new, log_lik, z, ok, since)``, the first four with a leading K.

    Every live filter learns every row, in one program (:func:`engine.stream` with
    ``bank=True``), except where the bank retires (:func:`~skbong._online.bank.retires`):
    at the global step counts of :func:`~skbong._online.bank.retire_boundaries` (64, 256,
    1024, …) the filters more than :data:`~skbong._online.bank.RETIRE_NATS` behind the
    best evidence are retired, and the rest of the call is streamed through the others
    alone (in a program of :data:`~skbong._online.bank.SUB_BANKS` filters, padded with
    retired ones whose results are dropped; one filter left streams as a single filter).
    ``since`` (K,): the row before which each filter was retired (n + 1 for none). A
    retired filter's rows from there on are not learned (its belief stays as it was
    retired, also where the whole bank's program or a padded one ran it): log density 0,
    output 0, every step ok; the caller takes it out of the bank. Bitwise, the call is the same whatever
    split of the rows into calls came before (the checks fall on the same global
    steps)."""
    size, n_rows, n_filters = int(est.batch_size), X.shape[0], len(live)
    n_steps, step0, key = -(-n_rows // size), est._n_steps, est._key(1)
    report = _progress(est, n_rows)
    retiring = bank_module.retires(est, config)
    checks = bank_module.retire_boundaries(step0, n_steps) if retiring else []
    belief = est._engine_state(est._state, noise)
    evidence = np.where(live, est._log_evidence, -np.inf)
    sound = live.copy()  # the filters whose every step so far was accepted
    since = np.full(n_filters, n_rows + 1)  # n + 1: not retired
    active = live.copy() if retiring else np.ones(n_filters, bool)  # the filters that stream
    pieces, start = [], 0
    while start < n_steps:
        end = next((b for b in checks if b > start), n_steps)
        rows = slice(start * size, min(end * size, n_rows))
        run = bank_module.sub_bank(active)  # indices of the program's filters (None: all)

        def callback(done, total, offset=start):
            report(offset + done, n_steps)

        sub, hyp, take = belief, hyper, None
        if run is not None:  # one filter streams as a single filter, more as a smaller bank
            take = run[0] if len(run) == 1 else run
            sub = jax.tree_util.tree_map(lambda a, k=take: np.asarray(a)[k], belief)
            hyp = _filters_of(hyper, take)
        with est._x64():
            sub, log_lik, z, ok = engine.stream(
                config, sub, est._prior_mean, hyp, X[rows], Y[rows], w[rows], size,
                step0 + start, key, callback=report and callback, bank=take is None or np.ndim(take) != 0,
            )
        if run is not None:  # scattered back onto the bank's axis
            sub = jax.tree_util.tree_map(lambda a, b, k=take: _with_rows(a, k, b), belief, sub)
            log_lik, z, ok = (
                _with_rows(np.zeros((n_filters,) + np.shape(a)[np.ndim(take):], np.asarray(a).dtype), take, a)
                for a in (log_lik, z, ok)
            )
        idle = ~active  # retired filters: the segment's rows are not theirs
        if idle.any():  # those the program ran (the whole bank, or padding) are undone
            sub = jax.tree_util.tree_map(
                lambda new, old, i=idle: _with_rows(new, i, np.asarray(old)[i]), sub, belief
            )
            log_lik = np.where(idle[:, None], 0, log_lik)
            z = np.where(idle[:, None, None], 0, z)
            ok = np.where(idle[:, None], True, ok)
        belief = sub
        pieces.append((log_lik, np.asarray(z), ok))
        if end in checks:
            weighted = np.nan_to_num(log_lik.astype(np.float64)) * w[None, rows]
            evidence = evidence_path(evidence, weighted, 1.0)[:, -1]
            sound &= ok.all(axis=1)
            best = np.max(np.where(sound & active, evidence, -np.inf))
            behind = active & sound & (evidence < best - bank_module.RETIRE_NATS)
            since[behind] = min(end * size, n_rows)
            active &= ~behind
        start = end
    log_lik, z, ok = (np.concatenate([p[i] for p in pieces], axis=1) for i in range(3))
    return belief, log_lik, z, ok, since


def _filters_of(hyper, take):
    """The bank's hyperparameters of its filters ``take``: the per-filter fields (those
    :func:`skbong.engine.filter.stream.run_bank` maps over) indexed, the shared ones kept."""
    per_filter = {"prior_var": np.ndim(hyper.prior_var) == 2, "drift": np.ndim(hyper.drift) > 0}
    return hyper._replace(**{k: getattr(hyper, k)[take] for k, on in per_filter.items() if on})


def _with_rows(a, k, rows):
    """A numpy copy of the stacked array ``a`` with its entries ``k`` replaced by ``rows``."""
    out = np.array(a)
    out[k] = np.asarray(rows)
    return out


def conjugate_bank(est, config, X, w):
    """Whether the bank's filters are exact conjugate posteriors that
    :mod:`skbong._online.conjugate` computes in closed form, and cheaper so: the linear model
    with one output, Gaussian noise (fixed, or learned with the conjugate coupled
    update), no prequential calibration (its PITs are per row), an exact family
    (``full``), ``rule="bong"`` with ``hessian="lin_hess"``,
    no drift, one row per step in float64, unit weights (a weight w scores one
    prediction w times, which no marginal likelihood does), and more than 2P rows (a
    closed form costs P³ per filter, a stream P² per row)."""
    lik = config.impl.likelihood
    n_params = est._state[0].shape[-1]
    return bool(
        engine.models.is_linear(config.model)
        and config.model.n_outputs == 1
        and lik.conjugate
        and config.pit is None
        and config.impl.family.exact_update
        and config.kalman_step
        and not config.dynamic  # no drift (drift="auto" included) nor process noise
        and (not config.learn_noise or (config.noise_discount == 1.0 and config.noise_coupled))
        and est._dtype_name() == "float64"
        and int(est.batch_size) == 1
        and X.shape[0] > 2 * n_params
        and np.all((w == 0) | (w == 1))
    )


def bank_reference(est, live):
    """The index of the filter that streams the rows of a closed-form bank: the live
    filter of highest evidence, the widest prior among equals (on a fresh bank the
    one whose predictive is the most lenient with a row)."""
    priors = est._bank_spec().grid()[0]
    order = np.lexsort((priors, np.where(live, est._log_evidence, -np.inf)))
    return int(order[-1])


def _check_skipped(est, config, X, Y, n_bad, n_rows):
    """Raise :class:`~skbong.exceptions.NonFiniteUpdateError` for a committed call that
    skipped ``n_bad`` of its ``n_rows`` rows (``on_error="skip"``) and left a model that
    predicts nonsense: one that has learned no row at all (its predictive is the
    prior's), or whose predictions at the call's rows it learned (``X``, ``Y``) are
    not finite or, with Gaussian noise, lie more than
    :data:`~skbong.engine.OUTLIER_Z` times the range of those targets plus the
    predictive standard deviation from them. Every
    accepted step was finite and valid, yet together they left no usable model. The
    caller (:func:`fit_rows`) restores the estimator as it was before the call."""
    if est.n_observations_ == est.n_skipped_:
        problem = "the model has learned no row at all (its predictive is the prior's)"
    elif not len(X):  # nothing learned from this call: the belief is the one before it
        return
    else:
        # the check itself: invalid values are what it looks for, not news to the caller
        with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
            if hasattr(est, "predict_proba"):
                outputs = (est.predict_proba(X),)
            else:
                outputs = est.predict(X, return_std=True)
        outputs = [np.asarray(a, np.float64).reshape(len(X), -1) for a in outputs]
        if all(np.all(np.isfinite(a)) for a in outputs):
            if not config.impl.likelihood.additive_noise:
                return
            mean, std = outputs
            spread = np.ptp(Y, axis=0) + std
            if np.all(np.abs(mean - Y) <= engine.OUTLIER_Z * spread):
                return
            problem = (
                f"its predictions at the rows it learned lie more than {engine.OUTLIER_Z:g} "
                "times their targets' range from them"
            )
        else:
            problem = "it predicts non-finite values at the rows it learned"
    raise NonFiniteUpdateError(
        f"{type(est).__name__} skipped {n_bad} of {n_rows} rows of this call "
        f"(on_error='skip') and {problem}, so nothing from this call was applied "
        f"(family={config.family!r}, rule={est.rule!r}, hessian={est.hessian!r}). "
        f"{_diagnosis(est, config, _inputs.engine_inputs(est, X))}"
    )


def _absurd_error(est, config, row):
    """The error for a call refused at ``row``, whose target is absurd under the
    one-step predictive (:data:`~skbong.engine.OUTLIER_Z`)."""
    return NonFiniteUpdateError(
        f"row {row} of this batch has a target more than {engine.OUTLIER_Z:g} "
        f"predictive standard deviations from the model's prediction for it "
        f"(family={config.family!r}); learning it would move the posterior by the whole "
        "residual, so nothing from this call was applied. Most likely: a corrupt target "
        "or an outlier (remove it, or pass on_error='skip' to leave such rows out with "
        "a warning); if the targets really are on this scale, start again with fit() on "
        "rows that show it, or standardise y (TransformedTargetRegressor)."
    )


def _warn_absurd(est, rows):
    """The :class:`~skbong.exceptions.SkippedRowsWarning` for absurd rows skipped."""
    listed = ", ".join(str(int(r)) for r in rows[:10]) + (", ..." if rows.size > 10 else "")
    warnings.warn(
        f"{type(est).__name__} skipped {rows.size} row(s) of this call (on_error='skip') "
        f"whose targets lie more than {engine.OUTLIER_Z:g} predictive standard "
        f"deviations from the model's prediction (rows {listed}): corrupt targets or "
        "outliers, not learned.",
        SkippedRowsWarning,
        stacklevel=5,
    )


def _warn_if_diverging(est, config, X, Y, f, w):
    """A :class:`~skbong.exceptions.DivergenceWarning` when the one-step-ahead
    predictions ``f`` (n, C) of the second half of a call's rows of nonzero weight
    ``w`` (zero for a refused row: its prediction was made at the input that broke
    the update; at least :data:`DIVERGENCE_MIN_ROWS` rows in all) have a mean squared error above
    :data:`DIVERGENCE_RATIO` times both the variance of their targets and their mean
    square, for some output: far worse than knowing nothing."""
    keep = w > 0
    n = int(keep.sum())
    if n < DIVERGENCE_MIN_ROWS:
        return
    y, f = Y[keep][n // 2 :].astype(np.float64), np.asarray(f)[keep][n // 2 :]
    mse = np.mean((y - f) ** 2, axis=0)
    base = np.maximum(np.var(y, axis=0), np.mean(y**2, axis=0))
    if not np.any(mse > DIVERGENCE_RATIO * base):
        return
    worst = float(np.max(mse / np.where(base > 0, base, np.finfo(np.float64).tiny)))
    warnings.warn(
        f"{type(est).__name__}: the one-step-ahead predictions of the last {len(y)} rows "
        f"of this call had {worst:.3g}× the mean squared error of predicting the "
        f"targets' mean: the updates are diverging (family={config.family!r}, "
        f"rule={est.rule!r}, hessian={est.hessian!r}), and the model has not learned "
        f"these rows although every update was finite. {_diagnosis(est, config, X)}",
        DivergenceWarning,
        stacklevel=4,
    )


def _warn_if_outliers(est, config, log_lik, w):
    """An :class:`~skbong.exceptions.OutliersWarning` when at least
    :data:`OUTLIER_MIN_ROWS` rows and :data:`OUTLIER_MIN_FRACTION` of a call's rows
    of nonzero weight ``w`` (at least :data:`DIVERGENCE_MIN_ROWS`) have a one-step-ahead
    log predictive density ``log_lik`` (n,) more than :data:`OUTLIER_GAP_NATS` below
    the call's median row: gross outliers under a Gaussian-noise regressor (a
    Student-t likelihood is robust to them, and other likelihoods have no y to be
    an outlier in)."""
    lik = config.impl.likelihood
    if not lik.additive_noise or lik.obs_dof != float("inf"):
        return
    keep = (w > 0) & np.isfinite(log_lik)
    n = int(keep.sum())
    if n < DIVERGENCE_MIN_ROWS:
        return
    gap = np.median(log_lik[keep]) - log_lik
    rows = np.flatnonzero(keep & (gap > OUTLIER_GAP_NATS))
    if rows.size < max(OUTLIER_MIN_ROWS, OUTLIER_MIN_FRACTION * n):
        return
    listed = ", ".join(str(r) for r in rows[:10]) + (", ..." if rows.size > 10 else "")
    warnings.warn(
        f"{type(est).__name__}: {rows.size} of the {n} rows of this call lie far out under "
        f"the one-step-ahead predictive (log density more than {OUTLIER_GAP_NATS:g} nats "
        f"below the median row's, about 6 standard deviations; rows {listed}): gross "
        "outliers in y, which pull a Gaussian likelihood's mean and noise toward them. "
        "They were learned; likelihood='student_t' learns as if they were not there.",
        OutliersWarning,
        stacklevel=4,
    )


def _diagnosis(est, config, X):
    """What most likely helps, read from the inputs as the engine sees them (a
    network's standardised with the first call's statistics) and the settings in use."""
    hints = []
    if X.size and float(np.max(np.abs(X))) > 50:
        where = (
            " after the standardisation with the first call's statistics (input_mean_, "
            "input_scale_; start with fit() on rows that show their spread)"
            if getattr(est, "_input_standardisation", None) is not None
            else ""
        )
        hints.append(
            f"the inputs reach |x| = {float(np.max(np.abs(X))):.3g}{where}: standardise them "
            "(e.g. make_streaming_pipeline(StandardScaler(), ...))"
        )
    if config.impl.family.advice:
        hints.append(config.impl.family.advice)
    n_params = config.model.n_params()
    if config.impl.family.low_rank and n_params <= 1024:
        hints.append(
            f"family='full' (P = {n_params}: the covariance itself, without the cancellation "
            "of the low-rank precision's variances)"
        )
    if not config.impl.rule.natural:
        hints.append(
            f"rule={est.rule!r} takes plain-gradient steps of size "
            f"learning_rate={est.learning_rate}: lower it, or use rule='bong' / 'blr'"
        )
    if not config.learn_noise and config.impl.likelihood.additive_noise:
        hints.append("a fixed obs_variance too small for the data: try obs_variance='auto'")
    hints.append(f"a smaller prior_variance (now {est._bank_spec().prior!r})")
    if est._dtype_name() == "float32":
        hints.append("dtype='float64'")
    return "Most likely to help: " + "; ".join(hints) + "."


def _pits(est, config, z, noise, w, ok):
    """The PITs (n, C) of a call's rows from the stream's standardised residuals ``z``
    (``Config.pit``), with the learned noise's degrees of freedom before each step
    (``noise``: the noise posterior at the call's start, or None when fixed); None
    without calibration."""
    if config.pit is None or z is None:
        return None
    size = int(est.batch_size)
    dof = None
    if noise is not None:
        dof = _calibration.step_dof(noise[0], w, size, ok, config.noise_discount)
    return _calibration.pit(z, dof, size)


def _record_calibration(est, config, pit, X, Y, w, learned):
    """Commit what a call adds to the interval calibration: its prequential PITs to
    the histogram (``Config.pit``), or the rows it learned (``learned`` (n,)) to the
    window of the last rows (the observation's ``window_rows``; rows of zero weight taught
    nothing and are not kept)."""
    if config.pit is not None and pit is not None:
        counts = getattr(est, "_pit_counts", None)
        delta = _calibration.discount(config)
        est._pit_counts = _calibration.add(counts, pit, w, est._n_out, delta)
    est._loo_cache = None
    size = est._observation(config.model).window_rows
    if size:
        keep = learned & (w > 0)
        rows = (X, Y, w) if keep.all() else (X[keep], Y[keep], w[keep])
        est._window = _calibration.window_add(getattr(est, "_window", None), *rows, size)


def _run(est, config, belief, hyper, X, Y, w, step0, callback=None):
    """Stream rows from ``belief = (state, noise)`` (tuples of numpy arrays; noise
    None when it is not learned) through the compiled engine; return the new belief
    in the same form, the per-step ``ok`` flags, whether the new belief is sound
    (:func:`_is_sound`: the family's ``end_check``, computed in the stream's own
    program, or else its ``host_check`` here), the per-row outputs (n, C) and the
    rows' one-step-ahead log predictive densities (n,), ``-inf`` where the stream
    refused a row as absurd (:data:`~skbong.engine.OUTLIER_Z`)."""
    with est._x64():
        new, log_lik, out, ok, sound = engine.stream(
            config,
            engine_belief(est, belief),
            est._prior_mean,
            hyper,
            X,
            Y,
            w,
            int(est.batch_size),
            step0,
            est._key(1),
            callback=callback,
            checked=True,
        )
        state, noise = new if config.learn_noise else (new, None)
        state = tuple(np.asarray(a) for a in state)
        noise = None if noise is None else tuple(np.asarray(a) for a in noise)
        est._belief_memo = (state, noise, new)
        if config.impl.family.end_check is None:
            sound = _is_sound(config.impl.family, state)
        return (state, noise), ok, sound, out, log_lik


def engine_belief(est, belief):
    """``belief = (state, noise)`` as the stream's argument: the JAX arrays it was read
    from when it is the last belief :func:`_run` returned (``_belief_memo``, checked by
    identity), so that a stream of calls passes its belief back without converting it
    (about 3 µs per array, and on a GPU a copy to the device); else the numpy arrays.
    The memo only ever pairs a belief with its own arrays, so it stays right through
    a rolled-back call, and it is not pickled
    (:meth:`~skbong._core.posterior.BeliefBase.__getstate__`)."""
    memo = getattr(est, "_belief_memo", None)
    if memo is not None and memo[0] is belief[0] and memo[1] is belief[1]:
        return memo[2]
    return est._engine_state(*belief)


def _replay(est, config, hyper, X, Y, w, noise):
    """Slow path of a call whose belief failed :func:`_is_sound` at its end.

    Replays the call from the belief before it, chunk by chunk as the stream ran
    (same programs, same keys, so the same states), checking the belief after each
    chunk; a chunk that ends unsound is replayed one step at a time and each step that
    leaves it unsound is rejected like a non-finite one: the belief stays as before
    that step. With ``on_error="raise"`` it stops at the first rejected step.

    Returns
    -------
    belief : (tuple of ndarray, tuple of ndarray or None)
        The belief and noise posterior after the accepted steps; the belief passes
        :func:`_is_sound`.
    ok : ndarray of bool (n_steps,)
        False for rejected steps (non-finite, invalid or unsound).
    not_pd : ndarray of bool (n_steps,)
        True for steps rejected by :func:`_is_sound` (e.g. Σ not positive definite).
    absurd : ndarray of bool (n_rows,)
        True for rows refused as absurd (:data:`~skbong.engine.OUTLIER_Z`).
    """
    size, n_rows = int(est.batch_size), X.shape[0]
    n_steps = -(-n_rows // size)
    ok, not_pd = np.ones(n_steps, bool), np.zeros(n_steps, bool)
    absurd = np.zeros(n_rows, bool)
    stop = est.on_error == "raise"
    state, start = (est._state, noise), 0

    def run(state, first, end):  # steps first..end-1 from ``state``
        rows = slice(first * size, min(end * size, n_rows))
        return _run(
            est, config, state, hyper, X[rows], Y[rows], w[rows], est._n_steps + first
        )

    for length in engine.chunk_plan(n_steps):
        end = min(start + length, n_steps)
        if start >= end:
            break
        new, ok_chunk, sound, _, log_lik = run(state, start, end)
        far = np.isneginf(log_lik)
        if sound:
            state, ok[start:end] = new, ok_chunk
            absurd[start * size : start * size + far.size] = far
        else:
            for t in range(start, end):
                new, ok_step, sound, _, log_lik = run(state, t, t + 1)
                far = np.isneginf(log_lik)
                absurd[t * size : t * size + far.size] = far
                if not ok_step[0]:
                    ok[t] = False
                elif not sound:
                    ok[t], not_pd[t] = False, True
                else:
                    state = new
                if stop and not ok[t]:
                    return state, ok, not_pd, absurd
        if stop and not ok.all():
            return state, ok, not_pd, absurd
        start = end
    return state, ok, not_pd, absurd


def _progress(est, n_rows):
    """The progress report of one pass over ``n_rows`` rows (``verbose``), a function of
    (steps done, steps in all); within ``fit``'s tempered passes, the share of the one
    report of all passes (:func:`_tempered` sets ``_pass_progress``)."""
    if not est.verbose:
        return None
    share = getattr(est, "_pass_progress", None)
    if share is not None:
        offset, total, report = share
        return lambda done, steps: report(offset + done, total)
    return _report(est, -(-n_rows // int(est.batch_size)))


def _report(est, total):
    """A tqdm bar of ``total`` steps named after the estimator (plain lines without
    tqdm), as a function of (steps done, steps in all)."""
    try:
        from tqdm.auto import tqdm
    except ImportError:  # pragma: no cover - optional extra
        tqdm = None
    if tqdm is None:
        return lambda done, total: print(f"[{type(est).__name__}] step {done}/{total}")
    bar = tqdm(total=total, desc=type(est).__name__, unit="step")

    def update(done, total):
        bar.update(done - bar.n)
        if done == total:
            bar.close()

    return update

# ------------------------------------------------------------- fit paths


def fit_rows(est, X, y, sample_weight, reset, **encode_kw):
    _check_not_forked()
    first = reset or not hasattr(est, "_state")
    # Every call is atomic. One that starts afresh rewrites the input checks
    # (n_features_in_, feature_names_in_), the target encoding (classes_,
    # obs_variance_, ...) and the belief; one that continues commits the belief and
    # its counters together at the end of _learn. A shallow copy of the attributes
    # (about a microsecond) restores all of it on any exception, KeyboardInterrupt
    # included; the fitted arrays are never modified in place, only replaced.
    backup = est.__dict__.copy()
    try:
        hidden = est._check_params()
        if first or not _is_plain_batch(est, X, y):
            X, y = validate_data(
                est,
                X,
                y,
                reset=first,
                dtype=[np.float64, np.float32],
                multi_output=True,
                y_numeric=est._y_numeric,
            )
        if sample_weight is not None:
            sample_weight = _check_sample_weight(sample_weight, X, dtype=np.float64)
            if not np.all(np.isfinite(sample_weight)):
                raise ValueError("sample_weight contains NaN or infinity")
            if np.any(sample_weight < 0):
                raise ValueError("sample_weight must be non-negative")
        Y, n_out, obs_var = est._encode_y(y, first, **encode_kw)
        if first:
            est._n_out = n_out
            if "refine" in est._parameter_constraints:  # the GLMs' fit (_refine)
                est.n_refine_passes_ = 0
            est.passes_ = 1
            config, passes = est._reset(X.shape[1], n_out, hidden, fit=reset)
            affine = _inputs.standardisation(
                config.model, X, sample_weight, est.fit_intercept
            )
            _inputs.publish(est, affine, X.shape[1])
        else:
            config, passes = est._config(hidden), 1
        fresh = est.__dict__.copy()  # the prior: where fit's further passes start
        if passes > 1:
            _tempered(est, config, X, Y, sample_weight, obs_var, passes, fresh)
        elif reset and _reference_pass(est, config, X, Y, sample_weight, obs_var):
            if _refine(est, config, X, Y, sample_weight, obs_var, fresh, reference=True):
                return est
            est.__dict__.clear()  # the bank's filters each make their own pass after all
            est.__dict__.update(fresh)
            learn(est, config, X, Y, sample_weight, obs_var)
        else:
            learn(est, config, X, Y, sample_weight, obs_var)
        if reset:
            _refine(est, config, X, Y, sample_weight, obs_var, fresh)
    except BaseException:
        est.__dict__.clear()
        est.__dict__.update(backup)
        raise
    return est


def _tempered(est, config, X, Y, sample_weight, obs_var, passes, fresh):
    """``fit``'s tempered passes (``passes`` > 1): every row learned once per pass at
    weight 1 / passes, the first pass in the given order, the others each in an order
    drawn from the estimator's seed.

    Tempering keeps the rows' total weight at one: for a conjugate model the passes give
    the one-pass posterior exactly (each pass multiplies the belief by the likelihood to
    the power 1 / passes), and for a network the later passes linearise each row at a
    mean that has seen all the data, not only the rows before it. The warnings of the
    first pass reach the caller (row numbers in the call's order); later passes repeat
    its judgement of the rows, so only warnings from elsewhere (a library's) are passed
    on. A pass that fails (it raises, skips a row, or diverges: :data:`PASS_FAILURES`)
    ends them: the estimator is restored to ``fresh`` and learns the rows in one pass at
    full weight, and a :class:`~sklearn.exceptions.ConvergenceWarning` says why."""
    n_rows = X.shape[0]
    weights = np.ones(n_rows) if sample_weight is None else np.asarray(sample_weight, np.float64)
    w = weights / passes
    rng = np.random.default_rng([est._seed, 3])
    why, first, later = None, [], []
    steps = -(-n_rows // int(est.batch_size))
    report = _report(est, passes * steps) if est.verbose else None  # one report of all passes
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for k in range(passes):
            order = np.arange(n_rows) if k == 0 else rng.permutation(n_rows)
            est._pass_progress = None if report is None else (k * steps, passes * steps, report)
            try:
                learn(est, config, X[order], Y[order], w[order], obs_var)
            except NonFiniteUpdateError as exc:
                why = str(exc)
            finally:
                del est._pass_progress
            failed = [c for c in caught if issubclass(c.category, PASS_FAILURES)]
            if why is None and failed:
                why = str(failed[0].message)
            (first if k == 0 else later).extend(caught)
            caught.clear()
            if why is not None:
                break
    if why is None:
        for c in first + [c for c in later if not c.category.__module__.startswith("skbong")]:
            warnings.warn(c.message, c.category, stacklevel=4)
        # one call's rows, counted once; the interval calibration's window keeps them at
        # their own weight (the prequential PITs were added at weight 1 / passes each time)
        est.n_observations_ = fresh["n_observations_"] + n_rows
        size = est._observation(config.model).window_rows
        if size:
            keep = weights > 0
            rows = (X[keep], Y[keep], weights[keep].astype(Y.dtype))
            est._window = _calibration.window_add(fresh.get("_window"), *rows, size)
        est.passes_ = passes
        return
    est.__dict__.clear()
    est.__dict__.update(fresh)
    est._init_prior(config, 1)  # the prior for one pass (auto_prior)
    learn(est, config, X, Y, sample_weight, obs_var)
    warnings.warn(
        f"{type(est).__name__}: fit's tempered passes (passes={passes}) stopped at pass "
        f"{k + 1}: {why} It learned the rows in one pass at full weight instead.",
        ConvergenceWarning,
        stacklevel=4,
    )


def _reference_pass(est, config, X, Y, sample_weight, obs_var):
    """``fit``'s one pass for a bank whose further passes run (:func:`_refine_passes`):
    the reference filter alone (:func:`bank_reference`) streams the rows, and every
    filter of the bank stands at its one-pass belief, from where the first further
    pass of each filter starts (with the prior mean, :func:`_first_pass`). The passes
    leave each filter at its own mode, and the bank is weighed by Laplace's evidence
    there (:func:`_laplace_weights`), so the filters' own one passes, which each
    linearise the likelihood at their own mean and share no work, are not needed.

    Taken only where the reference learned every row: returns False, with the estimator
    unchanged, where it refused one (a non-finite, invalid or unsound update), and then
    every filter makes its own pass (:func:`learn`), whose checks and warnings speak for
    the bank. :func:`_refine` with ``reference=True`` gives the bank back to :func:`learn`
    in the same way where a filter's first further pass does not raise its log posterior."""
    if est._log_evidence is None or not _refine_passes(est, config):
        return False
    n_rows = X.shape[0]
    X, Y, w, raw = _call_rows(est, X, Y, sample_weight)
    k = bank_reference(est, np.isfinite(est._log_evidence))
    state = tuple(a[k] for a in est._state)
    (new, _), ok, sound, _, log_lik = _run(
        est, config, (state, None), _filters_of(est._hyper(obs_var, config), k), X, Y, w,
        est._n_steps, _progress(est, n_rows),
    )
    if not (sound and ok.all() and np.all(np.isfinite(log_lik))):
        return False
    _record_calibration(est, config, None, raw, Y, w, np.ones(n_rows, bool))
    n_filters = len(est._log_evidence)
    est._state = tuple(np.ascontiguousarray(np.broadcast_to(a, (n_filters,) + a.shape))
                       for a in new)
    est._belief_memo = None
    est._obs_var = np.asarray(obs_var, np.float64)
    est._n_steps += -(-n_rows // int(est.batch_size))
    est.n_observations_ += int(n_rows)
    est._publish(config)
    return True


def _refine_passes(est, config):
    """How many further passes ``fit`` may take (``refine``): none where one pass is
    already exact (the Gaussian likelihood), where the linearisation is not LIN-HESS
    of a one-step BONG update (the passes take it undamped: ``backtrack`` guards the
    first pass only), for a family whose step projects (only the full covariance
    conditions exactly: :attr:`~skbong.engine.families.base.Family.exact_update`),
    for networks and user models (a Gauss–Newton
    step on a non-convex posterior from the prior's side may diverge), or where the
    belief drifts (a pass over a stream that changes has no fixed point)."""
    lik = config.impl.likelihood
    if (
        lik.additive_noise
        or config.learn_noise
        or not est.refine
        or not engine.models.is_linear(config.model)
        or not config.impl.family.exact_update
        or not config.kalman_step
        or config.dynamic
        or est.drift != 1.0
    ):
        return 0
    return int(est.refine)


def _log_joint(est, config, X, Y, w, obs_var, means=None):
    """The log posterior (up to a constant) at each filter's mean (or at ``means``,
    (K, P)), float64 (K,)."""
    dt = est._jax_dtype()
    means = np.atleast_2d(est._state[0] if means is None else means)
    prior_var = np.broadcast_to(est._prior_variances(config), means.shape).astype(dt)
    with est._x64():
        value = engine.filter.curvature.log_joint(
            config, means, np.asarray(est._prior_mean, dt), prior_var,
            _inputs.engine_inputs(est, X).astype(dt, copy=False), Y.astype(dt, copy=False),
            w.astype(dt), np.asarray(obs_var, dt),
        )
    return np.asarray(value, np.float64)


def _newton_blocks(est, config, X, Y, w, obs_var, n_filters):
    """What every pass of :func:`_newton_pass` reads, prepared once per ``fit``: the
    rows as blocks of :data:`~skbong.engine.filter.newton.BLOCK_ROWS` (one list per
    program call of up to 65,536 rows, with its length in blocks), the filters' prior
    means and variances (K, P) and the noise, in the estimator's dtype."""
    dt = est._jax_dtype()
    size = _newton.BLOCK_ROWS
    rows = (_inputs.engine_inputs(est, X).astype(dt, copy=False), Y.astype(dt, copy=False),
            np.asarray(w, dt))
    calls, start = [], 0
    for length in engine.filter.stream.chunk_plan(-(-X.shape[0] // size)):
        calls.append(([engine.filter.stream.step_buffer(a, start, length, size) for a in rows],
                      length))
        start += length
    shape = (n_filters, np.shape(est._state[0])[-1])
    means0 = np.ascontiguousarray(np.broadcast_to(est._prior_mean, shape), dt)
    prior_var = np.ascontiguousarray(np.broadcast_to(est._prior_variances(config), shape), dt)
    return calls, means0, prior_var, np.asarray(obs_var, dt)


def _newton_pass(est, config, blocks, points):
    """One pass of the iterated filter for each filter, linearised at its ``points`` row
    (K, P), from the prior, in closed form (:mod:`skbong.engine.filter.newton`) over the
    rows of :func:`_newton_blocks`: the means (K, P), covariances (K, P, P) and whether
    each is a usable belief (K,)."""
    calls, means0, prior_var, obs_var = blocks
    points = np.asarray(points, means0.dtype)
    k, p = points.shape
    with est._x64():
        carry = (np.zeros((k, p, p), means0.dtype), np.zeros((k, p), means0.dtype))
        for rows, length in calls:
            carry, (mean, cov, ok) = _newton.newton_pass(
                config, points, means0, prior_var, carry, *rows, obs_var, length
            )
        return np.asarray(mean), np.asarray(cov), np.asarray(ok)


def _first_pass(est, config, X, Y, w, obs_var, blocks, onepass, prior_mean, at_start):
    """The first further pass of each filter from its one-pass mean and from the prior
    mean (the bank's program, once per start), whose log posteriors are ``at_start``
    (2, K): per filter the start whose result has the higher log posterior, and that
    result with its log posterior, ``(point, mean, cov, ok, value)``. Where neither
    result beats both starts, the better start is taken, from which a shorter step must
    help (:func:`_damped`)."""
    results, values = [], []
    for start in (onepass, prior_mean):  # the bank's program, once per start
        mean, cov, ok = _newton_pass(est, config, blocks, start)
        value = np.where(ok, _log_joint(est, config, X, Y, w, obs_var, means=mean), -np.inf)
        results.append((start, mean, cov, ok, value))
        values.append(value)
    best = np.max(at_start, axis=0)
    better_start = at_start[1] >= at_start[0]
    prior = np.where(np.maximum(*values) > best, values[1] > values[0], better_start)
    return tuple(np.where(prior.reshape((-1,) + (1,) * (a.ndim - 1)), b, a)
                 for a, b in zip(*results))


def _refine(est, config, X, Y, sample_weight, obs_var, fresh, reference=False):
    """``fit``'s further passes: the iterated filter (:func:`~skbong.engine.filter.curvature.lin_hess`).

    Each pass starts again from the prior ``fresh`` (the estimator as it was before
    the first pass) and learns every row with the likelihood linearised at the
    previous pass's mean θ̄ (per filter of a bank), not at the moving mean: one
    Gauss–Newton (for these GLMs Newton / IRLS) step on the log posterior, which for
    the full covariance is the prior conditioned on the rows' expansions in any order,
    computed in closed form (:mod:`skbong.engine.filter.newton`). A filter keeps a pass
    only if it raises its log posterior (an undamped Newton step from far away can
    overshoot): else its step is shortened (:func:`_damped`), and if no shorter step
    helps the filter stays as it was. A filter takes no further pass once its step is
    within :data:`REFINE_TOL` (relative) or no step raises its log posterior; the passes
    stop when no filter is left, or after ``refine`` passes; a pass whose result is not
    a finite positive-definite belief for any filter is not kept, and a warning says so.
    So the result is never a worse mode estimate than one pass, and where the passes
    converge it is the mode with its Laplace-GGN precision. The first pass runs from the
    one-pass mean and from the prior mean, and each filter goes on from the better
    result (:func:`_first_pass`). A bank's filters are then weighed by Laplace's
    evidence (:func:`_laplace_weights`). With
    ``refine`` > 0 the linear model's result is then judged against the prior mean
    (:func:`_judge_against_prior`). ``n_refine_passes_`` counts the passes that
    changed the posterior.

    ``reference=True``: the bank stands at its reference filter's one pass
    (:func:`_reference_pass`). Returns False, having warned of nothing, where a
    filter's first further pass gives no usable belief that raises its log posterior
    (the filter would be left at another filter's belief); True otherwise."""
    if "refine" not in est._parameter_constraints:  # the regressor: one pass is exact
        return True
    est.n_refine_passes_ = 0
    passes = _refine_passes(est, config)
    # judged against the prior mean where fit may do more than one pass (refine=0 is
    # one pass, the same as partial_fit on these rows)
    judged = bool(est.refine) and engine.models.is_linear(config.model) and not config.dynamic
    if not passes and not judged:
        return True
    w = np.ones(X.shape[0]) if sample_weight is None else np.asarray(sample_weight)
    best = _log_joint(est, config, X, Y, w, obs_var)
    # the first pass runs from the one-pass mean and from the prior mean, and each
    # filter goes on from the better result: where the one pass overshot (a broad prior
    # along a row the belief already predicted with certainty), or where a few rows
    # of large leverage leave its mean where Newton's quadratic model is poor, the
    # step from the prior mean, where no probability is saturated, is the better one
    onepass = np.atleast_2d(est._state[0])
    prior_mean = np.broadcast_to(est._prior_mean, onepass.shape)
    at_prior = _log_joint(est, config, X, Y, w, obs_var, means=prior_mean)
    current = best.copy()  # each filter's log posterior at its kept mean
    best = np.maximum(best, at_prior)
    shapes = [np.shape(a) for a in est._state]
    size = onepass.shape  # (K, P): filters first, one filter included

    def stacked(state):
        return np.reshape(state[0], size), np.reshape(state[1], size + size[-1:])

    active = np.ones(size[0], bool)  # the filters still moving towards their modes
    blocks = _newton_blocks(est, config, X, Y, w, obs_var, size[0]) if passes else None
    for k in range(passes):
        kept = stacked(est._state)
        if k == 0:
            point, mean, cov, ok, value = _first_pass(
                est, config, X, Y, w, obs_var, blocks, onepass, prior_mean,
                np.stack([current, at_prior]),
            )
        else:
            point = kept[0]
            mean, cov, ok = _newton_pass(est, config, blocks, point)
            value = None
        ok = ok & active
        if reference and k == 0 and not ok.all():  # before the warning of an unusable pass
            return False
        if not ok.any():
            warnings.warn(
                f"{type(est).__name__}: fit kept {k} of up to {passes} further passes "
                f"(refine): pass {k + 1} was not kept, it gave a non-finite or not "
                f"positive-definite posterior (family={config.family!r}, "
                f"{est._dtype_name()})",
                ConvergenceWarning,
                stacklevel=4,
            )
            break
        # a filter whose step is within the tolerance has converged: it takes the step
        # if that raises its log posterior, and no further pass
        step = np.max(np.abs(mean.reshape(size) - point), axis=1)
        converged = step <= REFINE_TOL * (1.0 + np.max(np.abs(point), axis=1))
        est._state = (mean.reshape(shapes[0]), cov.reshape(shapes[1]))
        if value is None:
            value = _log_joint(est, config, X, Y, w, obs_var)
        value = np.where(ok, value, -np.inf)
        better = value > best
        if not better.all():
            value, better = _damped(est, config, X, Y, w, obs_var, point, value, best,
                                    ok & ~converged)
        if reference and k == 0 and not better.all():
            return False
        # the filters whose pass did not help keep their belief
        new = stacked(est._state)
        est._state = tuple(
            np.where(better.reshape((-1,) + (1,) * (a.ndim - 1)), a, b).reshape(shape)
            for a, b, shape in zip(new, kept, shapes)
        )
        active &= better & ~converged
        if not better.any():
            break
        est._publish(config)
        best = np.where(better, value, best)
        current = np.where(better, value, current)
        est.n_refine_passes_ = k + 1
        if not active.any():
            break
    if passes and est._log_evidence is not None:
        _laplace_weights(est, config, current, fresh)
    if judged:
        _judge_against_prior(est, config, current, at_prior, float(np.sum(w)))
    return True


def _laplace_weights(est, config, log_joint, fresh):
    """A refined bank's evidence of the rows of ``fit``: Laplace's, at each live filter's
    fitted posterior (:func:`~skbong._online.bank.laplace_evidence`; ``log_joint`` (K,)
    at its mean), in place of the sum of the first pass's one-step predictive
    densities. That sum scores each filter by its predictions along the pass, before it
    had seen the rows; the passes leave each filter at its mode with its Laplace
    precision, whose evidence scores the prior variance by the fitted model (the
    evidence framework), whatever the order of the rows. A retired or dropped filter
    stays out."""
    before = fresh.get("_log_evidence")
    before = np.zeros_like(est._log_evidence) if before is None else before
    prior_var = np.broadcast_to(est._prior_variances(config), np.shape(est._state[0]))
    laplace = bank_module.laplace_evidence(log_joint, prior_var, est._state[1])
    live = np.isfinite(est._log_evidence) & np.isfinite(laplace)
    if live.any():
        est._log_evidence = np.where(live, before + laplace, -np.inf)
        est._publish(config)


def _damped(est, config, X, Y, w, obs_var, point, value, best, ok):
    """Backtracking for the filters whose pass gave a usable belief (``ok``) that did not
    raise their log posterior above ``best`` (an undamped Newton step from θ̄ =
    ``point`` overshot): each takes the mean
    θ̄ + t (μ − θ̄) at the first t of ½, ¼, … (:data:`REFINE_HALVINGS` of them) that
    does, with the pass's covariance; the next pass linearises there. On a concave log
    posterior (a GLM with canonical link) the Newton direction μ − θ̄ ascends, so a
    small enough step succeeds and the passes go on to the mode. Returns the log
    posterior at each filter's mean and which filters improved."""
    shape = np.shape(est._state[0])
    new, point = np.atleast_2d(est._state[0]), np.atleast_2d(point)
    means, value = new.copy(), value.copy()
    todo = ok & ~(value > best)
    step = 1.0
    for _ in range(REFINE_HALVINGS):
        if not todo.any():
            break
        step /= 2
        trial = point + step * (new - point)
        at = _log_joint(est, config, X, Y, w, obs_var, means=trial)
        found = todo & (at > best)
        means[found], value[found] = trial[found], at[found]
        todo &= ~found
    if not np.array_equal(means, new):
        est._state = (means.reshape(shape), *est._state[1:])
    return value, value > best


def _judge_against_prior(est, config, value, at_prior, n_rows):
    """Judge the linear model's fitted means by their log posterior on the rows of
    ``fit`` (``value``, per filter) against the prior mean's (``at_prior``): a filter
    below it by more than :data:`BELOW_PRIOR_NATS` per row predicts worse than knowing
    nothing, an update having overshot (a broad prior meeting a row the belief already
    predicted with certainty). A bank drops such filters while others remain (their
    evidence, scored before each update, did not see the overshoot), and warns where
    predictions used them; a single filter, or a bank with none left, warns
    (:class:`~skbong.exceptions.DivergenceWarning`)."""
    below = value < at_prior - BELOW_PRIOR_NATS * n_rows
    if not below.any():
        return
    name = type(est).__name__
    if est._log_evidence is not None:
        live = np.isfinite(est._log_evidence)
        if (live & ~below).any():
            dropped = live & below
            if not dropped.any():
                return
            weight = float(np.sum(est._filter_weights()[dropped]))
            est._log_evidence = np.where(dropped, -np.inf, est._log_evidence)
            est._publish(config)
            if weight >= _MIN_WEIGHT:  # else no prediction used them: nothing changed
                warnings.warn(
                    f"{name}: the filter(s) {est._bank_spec().describe(dropped)} were "
                    "dropped from the bank: their fitted means explain the rows of fit "
                    "worse than the prior mean does (an update overshot). The others "
                    "carry the predictions.",
                    DivergenceWarning,
                    stacklevel=5,
                )
            return
    k = 0 if est._log_evidence is None else int(np.argmax(est._log_evidence))
    warnings.warn(
        f"{name}: the fitted posterior mean explains the rows of fit "
        f"worse than the prior mean does (log posterior {value[k]:.4g} against "
        f"{at_prior[k]:.4g}): an early update overshot and the filter did not recover. "
        "Most likely to help: a smaller prior_variance (or 'auto'), family='full' with "
        "refine > 0 (its first further pass also starts from the prior mean), or rule='blr'.",
        DivergenceWarning,
        stacklevel=5,
    )


def _is_plain_batch(est, X, y):
    """Whether ``validate_data`` would return X and y unchanged (so it can be skipped):
    finite float numpy rows of the fitted width, numeric numpy targets of the same
    length, and no feature names to check. The common case of a stream of
    ``partial_fit`` calls; anything else goes through ``validate_data``."""
    return (
        type(y) is np.ndarray
        and y.ndim in (1, 2)
        and y.dtype.kind in "biuf"
        and est._is_plain_rows(X)
        and y.shape[0] == X.shape[0]
        and (y.dtype.kind != "f" or bool(np.isfinite(y).all()))
    )


__all__ = ["fit_rows"]
