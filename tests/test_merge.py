"""Merging posteriors (``merge_posteriors``) and fitting on dask (``fit_partitions``).

The reference of the conjugate case is the closed-form normal–inverse-gamma posterior of
Bayesian linear regression (``nig_posterior`` of tests/test_noise.py, written from the
textbook formulas, nothing from skbong) and its marginal likelihood. Shards fitted from
the prior and merged must give it to float64 rounding of an O(n P²) computation (relative
1e-9, as tests/test_noise.py) for ``family="full"`` and for ``"dlr"`` with rank ≥ P, for
any partition of the rows: even, uneven, single rows, interleaved. Non-conjugate merges
have no closed form: natural-parameter addition must then be order-free and associative
(a merge of merges is the merge of all), to rounding.

Every refusal is checked by the reason it gives. dask runs on its synchronous and
threaded schedulers and on a thread-based LocalCluster (about a second to start); a
LocalCluster of spawned processes takes 15–25 s on a loaded 2-core machine, so it is
exercised by benchmarks/bench_merge.py instead.
"""

import pickle

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from test_noise import gaussian_log_evidence, nig_log_evidence, nig_posterior

import skbong._core.guard as guard
from skbong import (
    BongClassifier,
    BongRegressor,
    NonFiniteUpdateError,
    VariationalRegressor,
    fit_partitions,
    merge_posteriors,
)
from skbong._online.bank import PRIOR_GRID

da = pytest.importorskip("dask.array", reason="the 'dask' extra is not installed")
import dask  # noqa: E402

N, D, PRIOR_VAR, RTOL = 40, 3, 0.5, 1e-9
RNG = np.random.default_rng(0)
X = RNG.normal(size=(N, D))
Y = X @ np.array([1.0, -2.0, 0.5]) + 3.0 + 0.3 * RNG.normal(size=N)
Y_BIN = (Y > 3.0).astype(int)
WEIGHTS = RNG.integers(1, 4, size=N).astype(float)  # repeated rows
GROUP = RNG.integers(0, 3, size=N)

PARTITIONS = {
    "even": np.split(np.arange(N), 4),
    "uneven, single rows": np.split(np.arange(N), [1, 2, 17, 18]),
    "six single rows": np.split(np.arange(N), [1, 2, 3, 4, 5, 6]),
    "interleaved": [np.flatnonzero(GROUP == k) for k in range(3)],
}
EXACT = {"full": dict(family="full"), "dlr rank P": dict(family="dlr", rank=D + 1)}


def _reg(**kw):
    return BongRegressor(**{**dict(prior_variance=PRIOR_VAR, dtype="float64"), **kw})


def _shards(est, parts, y=Y, w=None, **kw):
    """One copy of ``est`` fitted from the prior on each part of the rows."""
    return [
        clone(est).partial_fit(X[i], y[i], sample_weight=None if w is None else w[i], **kw)
        for i in parts
    ]


def _dense_cov(est, k=None):
    """The belief's covariance as a dense matrix (one filter of a bank with k)."""
    state = est._state if k is None else tuple(a[k] for a in est._state)
    if est.family == "full":
        return state[1]
    _, diag, factor = state
    return np.linalg.inv(np.diag(diag) + factor @ factor.T)


def _close(actual, desired):
    desired = np.asarray(desired)
    assert_allclose(actual, desired, rtol=RTOL, atol=RTOL * np.abs(desired).max())


def _check_nig(est, w=None):
    """The belief is the closed-form NIG posterior of all rows: N(μ, (b / a) V), IG(a, b)."""
    mean, V, a, b = nig_posterior(X, Y, w)
    _close(est.posterior_mean_, mean)
    _close(_dense_cov(est), b / a * V)
    _close(est.obs_variance_, [b / a])
    _close(est.noise_dof_, [2 * a])


# ------------------------------------------------------------------ exact merges
@pytest.mark.parametrize("partition", PARTITIONS)
@pytest.mark.parametrize("family", EXACT)
def test_conjugate_merge_is_the_exact_posterior(family, partition):
    est = _reg(**EXACT[family])
    merged = merge_posteriors(_shards(est, PARTITIONS[partition]))
    _check_nig(merged)
    assert merged.n_observations_ == N


@pytest.mark.parametrize("obs_variance, family", [("auto", EXACT["full"]), (0.3, EXACT["dlr rank P"])])
def test_bank_weights_merge_to_the_marginal_likelihood(obs_variance, family):
    """Every filter of the prior bank is its prior's exact posterior, and its evidence the
    marginal likelihood of all rows: the weights merge exactly."""
    est = _reg(prior_variance="auto", obs_variance=obs_variance, **family)
    shards = _shards(est, PARTITIONS["uneven, single rows"])
    merged = merge_posteriors(shards)
    if obs_variance == "auto":
        ref = [nig_log_evidence(X, Y, v) for v in PRIOR_GRID]
        means = [nig_posterior(X, Y, prior_var=v)[0] for v in PRIOR_GRID]
    else:  # a fixed noise R: the NIG formulas with weights 1 / R are the Gaussian posterior
        ref = [gaussian_log_evidence(X, Y, v, obs_variance) for v in PRIOR_GRID]
        means = [nig_posterior(X, Y, np.full(N, 1 / obs_variance), v)[0] for v in PRIOR_GRID]
    _close(merged.log_evidence_, ref)
    for k, mean in enumerate(means):
        _close(merged._state[0][k], mean)
    weights = np.exp(np.array(ref) - max(ref))
    assert_allclose(merged.prior_weights_, weights / weights.sum(), atol=1e-9)
    # a filter dropped from the bank in one shard (its update failed) is dropped from the merge
    shards[1]._log_evidence = np.r_[-np.inf, shards[1]._log_evidence[1:]]
    second = shards[1]._state[1].copy()  # Σ (full) or Υ (dlr)
    second[0] = np.nan
    shards[1]._state = (shards[1]._state[0], second, *shards[1]._state[2:])
    dropped = merge_posteriors(shards)
    assert dropped.log_evidence_[0] == -np.inf and dropped.prior_weights_[0] == 0
    _close(dropped.log_evidence_[1:], ref[1:])


def test_diag_merge_is_exact_when_the_posterior_is_diagonal():
    """Rows with one non-zero input and no intercept keep every precision diagonal, so
    the diagonal family's one pass is exact too, and the merge must equal it."""
    onehot = np.eye(D)[GROUP] * X[:, :1]
    est = _reg(family="diag", fit_intercept=False)
    merged = merge_posteriors(
        [clone(est).fit(onehot[i], Y[i]) for i in PARTITIONS["uneven, single rows"]]
    )
    sequential = clone(est).fit(onehot, Y)
    _close(merged.posterior_mean_, sequential.posterior_mean_)
    _close(merged.posterior_var_, sequential.posterior_var_)
    _close(merged.obs_variance_, sequential.obs_variance_)


def _from_prior_mean(est, mean0):
    """``est`` (fitted from the zero-mean prior, fixed noise) as the exact posterior of the
    same rows from the prior N(mean0, Λ₀⁻¹): Λμ gains Λ₀ mean0."""
    lam0 = 1 / est._prior_variances(est._config())
    moved = clone(est).fit(X[:1], Y[:1])  # a fitted copy to hold the new belief
    moved.__dict__.update(est.__dict__)
    moved._prior_mean = mean0
    moved._state = (est._state[0] + est._state[1] @ (lam0 * mean0), est._state[1])
    return moved


def test_shards_of_priors_with_other_means_are_rebased():
    """q ∝ p₀ ∏ₖ qₖ / pₖ: each shard is divided by its own prior (as a Poisson intercept's
    prior is centred on each shard's mean count); exact for the conjugate model."""
    est = _reg(family="full", obs_variance=0.3)
    parts = PARTITIONS["uneven, single rows"]
    means0 = [np.r_[0.0, 0.0, 0.0, m] for m in (1.0, -2.0, 0.5, 4.0, 3.0)]
    merged = merge_posteriors([_from_prior_mean(s, m) for s, m in zip(_shards(est, parts), means0)])
    mean, V, _, _ = nig_posterior(X, Y, np.full(N, 1 / 0.3))
    lam0 = 1 / merged._prior_variances(merged._config())
    _close(merged.posterior_mean_, mean + V @ (lam0 * means0[0]))
    _close(merged._state[1], V)
    assert_array_equal(merged._prior_mean, means0[0])
    learned = [_from_prior_mean(s, m) for s, m in zip(_shards(_reg(family="full"), parts[:2]), means0)]
    with pytest.raises(ValueError, match="prior mean.*one prior"):
        merge_posteriors(learned)


def test_poisson_shards_merge_near_the_sequential_fit():
    from skbong import BongPoissonRegressor

    rng = np.random.default_rng(1)
    counts = rng.poisson(np.exp(0.5 + X @ [0.3, -0.2, 0.1]))
    est = BongPoissonRegressor(family="full", prior_variance=1.0, dtype="float64")
    fitted = fit_partitions(est, da.from_array(X, chunks=10), da.from_array(counts, chunks=10))
    assert len({s.prior_intercept_ for s in _shards(est, np.split(np.arange(N), 4), y=counts)}) == 4
    sequential = clone(est).fit(X, counts)
    assert abs(fitted.score(X, counts) - sequential.score(X, counts)) < 0.05


def test_merged_estimator_continues_and_pickles():
    est = _reg(family="full")
    merged = merge_posteriors(_shards(est, np.split(np.arange(30), [4, 5])))
    restored = pickle.loads(pickle.dumps(merged))
    merged.partial_fit(X[30:], Y[30:])
    _check_nig(merged)
    restored.partial_fit(X[30:], Y[30:])
    assert_array_equal(restored.posterior_mean_, merged.posterior_mean_)
    assert merged.n_observations_ == N and merged._n_steps == N


def test_weighted_shards_merge_exactly():
    merged = merge_posteriors(_shards(_reg(family="full"), PARTITIONS["even"], w=WEIGHTS))
    _check_nig(merged, WEIGHTS)


# ------------------------------------------------------------ non-conjugate merges
@pytest.fixture(scope="module")
def logistic_shards():
    est = BongClassifier(family="full", prior_variance=1.0, dtype="float64", random_state=0)
    parts = np.split(np.arange(N), [12, 13, 30])
    return _shards(est, parts, y=Y_BIN, classes=[0, 1])


def test_natural_parameter_addition_is_order_free_and_associative(logistic_shards):
    a, b, c, d = logistic_shards
    states = [pickle.dumps(s._state) for s in logistic_shards]
    one = merge_posteriors([a, b, c, d])
    for other in (merge_posteriors([d, b, a, c]), merge_posteriors([merge_posteriors([a, b]), merge_posteriors([c, d])])):
        assert_allclose(other.posterior_mean_, one.posterior_mean_, rtol=1e-10, atol=1e-12)
        assert_allclose(other._state[1], one._state[1], rtol=1e-10, atol=1e-12)
    alone = merge_posteriors([b])  # a merge of one posterior is that posterior
    assert_allclose(alone._state[1], b._state[1], rtol=1e-10)
    assert one.n_observations_ == N and one is not a
    assert [pickle.dumps(s._state) for s in logistic_shards] == states  # inputs unchanged
    assert one.score(X, Y_BIN) > 0.8


def test_low_rank_merge_projects_to_rank_r():
    """Below rank P the stacked factors are projected with the family's own projection:
    the rank stays R and the diagonal of the precision is kept."""
    shards = _shards(_reg(family="dlr", rank=2, obs_variance=0.3), PARTITIONS["even"])
    merged = merge_posteriors(shards)
    assert merged._state[2].shape == (D + 1, 2)
    prec = sum(np.diag(s._state[1]) + s._state[2] @ s._state[2].T for s in shards)
    prec -= 3 * np.diag(shards[0]._state[1] * 0 + 1 / merged._prior_variances(merged._config()))
    _, diag, factor = merged._state
    assert_allclose(diag + np.sum(factor**2, axis=1), np.diagonal(prec), rtol=1e-10)


# ------------------------------------------------------------------ refusals
@pytest.fixture(scope="module")
def pair():
    return _shards(_reg(family="full"), PARTITIONS["even"][:2])


@pytest.mark.parametrize(
    "change, match",
    [
        (dict(prior_variance=2.0), r"parameter\(s\) \['prior_variance'\].*differ.*share the prior"),
        (dict(family="diag"), r"\['family'\].*differ"),
        (dict(obs_variance=0.3), r"\['obs_variance'\].*differ"),
    ],
)
def test_refuses_different_parameters(pair, change, match):
    other = _reg(family="full").set_params(**change).fit(X[:5], Y[:5])
    with pytest.raises(ValueError, match=match):
        merge_posteriors([pair[0], other])


def test_refuses_a_structure_changed_after_its_fit(pair):
    other = clone(pair[1]).set_params(family="diag").fit(X[:5], Y[:5]).set_params(family="full")
    with pytest.raises(ValueError, match=r"\['family'\] changed since the estimator was fitted"):
        merge_posteriors([pair[0], other])


def test_ignores_prediction_parameters(pair):
    other = clone(pair[1]).set_params(predictive="plugin", verbose=0, random_state=3)
    merge_posteriors([pair[0], other.fit(X[20:], Y[20:])])


# Refusals decided by the parameters alone: fit_partitions checks them before any partition
# is computed (X here raises if it is), so they cost no fit.
def _never_computed(n=10):
    def boom():
        raise AssertionError("a partition was computed")

    return da.from_delayed(dask.delayed(boom)(), shape=(n, D), dtype=float)


@pytest.mark.parametrize(
    "params, y, match",
    [
        (dict(drift=0.99), Y, r"drift=0\.99.*time order matters"),
        (dict(process_noise=1e-3), Y, r"process_noise=0\.001.*time order matters"),
        (dict(noise_discount=0.99), Y, r"noise_discount=0\.99.*time order"),
        (dict(hidden_layer_sizes=(3,)), Y, r"noise_discount='auto'.*0\.99 for networks"),
        (
            dict(hidden_layer_sizes=(3,), noise_discount=1.0),
            Y,
            r"noise_posterior='auto'.*'factorised' for networks",
        ),
        (dict(noise_posterior="factorised"), Y, r"noise_posterior='factorised'.*Σ = ŝ V"),
        (dict(prior_variance="auto", family="dlr", rank=2), Y, r"prior bank.*rank=2 < P=4"),
        (dict(prior_variance="auto", family="diag"), Y, r"prior bank.*family='diag' is not exact"),
        (dict(prior_variance="auto", hessian="lin_ef"), Y, r"prior bank.*hessian='lin_ef'"),
        (dict(prior_variance="auto", batch_size=2), Y, r"prior bank.*batch_size=2"),
        (dict(prior_variance="bank", hidden_layer_sizes=(3,), obs_variance=1.0), Y, r"prior bank.*network"),
        ({}, np.c_[Y, Y], r"learned noise of 2 outputs"),
    ],
)
def test_refuses_what_time_order_or_inexact_evidence_forbid(params, y, match):
    est = _reg(**{"family": "full", **params})
    with pytest.raises(ValueError, match=match):
        fit_partitions(est, _never_computed(), da.from_array(y[:10], chunks=10))


@pytest.mark.parametrize("prior_variance", ["auto", "bank"])
def test_refuses_a_classifier_bank_before_fitting(prior_variance):
    """The linear classifier's default prior is a bank, whose evidence is not a marginal
    likelihood: refused, naming the remedy, before any partition is computed."""
    clf = BongClassifier(prior_variance=prior_variance)
    with pytest.raises(ValueError, match=r"prior bank.*bernoulli likelihood is not conjugate.*fixed prior_variance"):
        fit_partitions(clf, _never_computed(), da.from_array(Y_BIN[:10], chunks=10), classes=[0, 1])


def test_merge_posteriors_refuses_what_its_parameters_forbid(pair):
    """The same check in merge_posteriors (here a static fit whose drift was changed
    afterwards, which the next partial_fit would use)."""
    moved = clone(pair[0]).fit(X[:5], Y[:5]).set_params(drift=0.9)
    with pytest.raises(ValueError, match="time order matters"):
        merge_posteriors([moved, pair[0]])


def test_refuses_other_classes_inputs_and_estimators(pair, logistic_shards):
    clf = clone(logistic_shards[0])
    with pytest.raises(ValueError, match=r"classes_.*differs.*pass classes="):
        merge_posteriors([logistic_shards[0], clf.fit(X, Y_BIN + 1)])
    with pytest.raises(TypeError, match="one class"):
        merge_posteriors([pair[0], logistic_shards[0]])
    with pytest.raises(TypeError, match="online estimators.*VariationalRegressor"):
        merge_posteriors([VariationalRegressor()])
    with pytest.raises(NotFittedError):
        merge_posteriors([pair[0], _reg(family="full")])
    with pytest.raises(ValueError, match="at least one"):
        merge_posteriors([])
    pd = pytest.importorskip("pandas")
    named = _reg(family="full").fit(pd.DataFrame(X[:9], columns=list("abc")), Y[:9])
    with pytest.raises(ValueError, match="feature_names_in_"):
        merge_posteriors([pair[0], named])


def test_refuses_networks_with_different_prior_means():
    net = _reg(hidden_layer_sizes=(2,), obs_variance=0.5, family="diag")
    one, two = (clone(net).set_params(random_state=s).fit(X[:8], Y[:8]) for s in (0, 1))
    with pytest.raises(ValueError, match=r"prior mean.*one integer random_state.*0 and 1"):
        merge_posteriors([one, two])
    # a network's prior mean is not zero: a merge of one posterior must still be itself
    assert np.abs(one._prior_mean).max() > 0.1
    alone = merge_posteriors([one])
    assert_allclose(alone.posterior_mean_, one.posterior_mean_, rtol=1e-12, atol=1e-14)
    assert_allclose(alone.posterior_var_, one.posterior_var_, rtol=1e-12)
    assert np.isfinite(merge_posteriors([one, clone(one).fit(X[8:], Y[8:])]).posterior_mean_).all()


def test_refuses_networks_whose_auto_prior_differs():
    """A classifier network's prior_variance="auto" is σ₀² = 10 for fit's tempered
    passes and 3 for a first partial_fit: shards learned the two ways hold different
    priors, which the merge names rather than mixing."""
    labels = (Y > np.median(Y)).astype(int)
    net = BongClassifier(hidden_layer_sizes=(2,), family="diag", random_state=0)
    fitted = clone(net).fit(X[:8], labels[:8])
    streamed = clone(net).partial_fit(X[8:], labels[8:], classes=[0, 1])
    assert (fitted.prior_variance_, streamed.prior_variance_) == (10.0, 3.0)
    with pytest.raises(ValueError, match=r"prior variance.*differs.*fixed prior_variance"):
        merge_posteriors([fitted, streamed])
    assert merge_posteriors([fitted, clone(net).fit(X[8:], labels[8:])]).prior_variance_ == 10.0


def test_a_merge_that_is_not_a_gaussian_is_refused(pair):
    """Precisions below the prior's (possible for non-conjugate updates) can sum to an
    indefinite matrix: refused, nothing returned."""
    loose = clone(pair[0]).fit(X[:3], Y[:3])
    loose._state = (loose._state[0], 10 * np.diag(pair[0]._prior_variances(pair[0]._config())))
    with pytest.raises(NonFiniteUpdateError, match="not positive.definite.*fell below the prior"):
        merge_posteriors([loose, loose])


def test_refuses_in_a_child_forked_after_jax(pair, monkeypatch):
    monkeypatch.setattr(guard, "_FORKED_AFTER_JAX", True)
    with pytest.raises(RuntimeError, match=r"os\.fork\(\)"):
        merge_posteriors(pair)


# ------------------------------------------------------------------ dask
@pytest.mark.parametrize("weighted", [False, True])
def test_fit_partitions_is_exact_on_any_chunking(weighted):
    """Uneven row chunks with a single-row one, split columns, y chunked otherwise, and a
    tree of fan-in 2 (three levels)."""
    Xd = da.from_array(X, chunks=((7, 1, 20, 4, 8), (2, 1)))
    w = da.from_array(WEIGHTS, chunks=5) if weighted else None
    fitted = fit_partitions(_reg(family="full"), Xd, da.from_array(Y, chunks=10), sample_weight=w, split_every=2)
    _check_nig(fitted, WEIGHTS if weighted else None)
    assert fitted.n_observations_ == N and fitted.random_state is None


def test_fit_partitions_bank_and_empty_partitions():
    est = _reg(prior_variance="auto", family="full")
    Xd = da.from_array(X, chunks=((0, 15, 0, 25), (3,)))
    fitted = fit_partitions(est, Xd, da.from_array(Y, chunks=((0, 15, 0, 25),)))
    _close(fitted.log_evidence_, [nig_log_evidence(X, Y, v) for v in PRIOR_GRID])
    empty = da.zeros((0, D), chunks=((0,), (D,)))
    with pytest.raises(ValueError, match="every partition of X is empty"):
        fit_partitions(est, empty, da.zeros((0,), chunks=0))


def test_fit_partitions_classifier_is_the_merge_of_its_partitions(logistic_shards):
    """The labels are found in y (a partition holding one class is fine); the result is
    merge_posteriors of the partitions' fits and continues with partial_fit."""
    clf = BongClassifier(family="full", prior_variance=1.0, dtype="float64", random_state=0)
    chunks = ((12, 1, 17, 10), (3,))
    assert len(np.unique(Y_BIN[12:13])) == 1
    with dask.config.set(scheduler="synchronous"):
        fitted = fit_partitions(clf, da.from_array(X, chunks=chunks), da.from_array(Y_BIN, chunks=chunks[:1]))
    expected = merge_posteriors(logistic_shards)
    assert_array_equal(fitted.classes_, [0, 1])
    assert_allclose(fitted.posterior_mean_, expected.posterior_mean_, rtol=1e-12)
    fitted.partial_fit(X[:5], Y_BIN[:5])
    assert fitted.n_observations_ == N + 5


def test_fit_partitions_refuses_bad_input():
    Xd, yd = _never_computed(), da.zeros(10, chunks=10)
    with pytest.raises(TypeError, match="must be a dask array.*dask.array.from_array"):
        fit_partitions(_reg(), X, Y)
    with pytest.raises(ValueError, match="split_every"):
        fit_partitions(_reg(), Xd, yd, split_every=1)
    unknown = da.from_delayed(dask.delayed(np.zeros)(9), shape=(np.nan,), dtype=float)
    with pytest.raises(ValueError, match="partition 0 holds 10 rows of X, 9 of y"):
        fit_partitions(_reg(), da.zeros((10, D), chunks=10), unknown)


def test_fit_partitions_on_a_local_cluster():
    distributed = pytest.importorskip("distributed")
    with (
        distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None) as cluster,
        distributed.Client(cluster),
    ):
        fitted = fit_partitions(_reg(family="full"), da.from_array(X, chunks=9), da.from_array(Y, chunks=9))
    _check_nig(fitted)


def test_fit_partitions_on_a_dask_dataframe():
    dd = pytest.importorskip("dask.dataframe", reason="dask.dataframe needs pyarrow")
    pd = pytest.importorskip("pandas")
    frame = dd.from_pandas(pd.DataFrame(X, columns=list("abc")).assign(y=Y), npartitions=3)
    fitted = fit_partitions(_reg(family="full"), frame[list("abc")], frame["y"])
    _check_nig(fitted)
    assert list(fitted.feature_names_in_) == list("abc")


def test_network_learned_noise_merges_only_when_coupled():
    """A network's learned noise is factorised by default, which has no Σ = ŝ V to merge
    in; with noise_posterior="conjugate" (and no discount) its shards merge."""
    net = dict(hidden_layer_sizes=(3,), family="full", noise_discount=1.0, random_state=0)
    shards = [_reg(**net).fit(X[:20], Y[:20]), _reg(**net).fit(X[20:], Y[20:])]
    with pytest.raises(ValueError, match=r"noise_posterior='auto'"):
        merge_posteriors(shards)
    coupled = [clone(s).set_params(noise_posterior="conjugate") for s in shards]
    merged = merge_posteriors([coupled[0].fit(X[:20], Y[:20]), coupled[1].fit(X[20:], Y[20:])])
    assert np.isfinite(merged.obs_variance_).all() and merged.noise_dof_[0] > shards[0].noise_dof_[0]
