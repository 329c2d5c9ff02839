"""A fitted estimator stays usable after pickle, deepcopy, another process, loky workers
and ``skops.io``; with a user ``model=``, equal structural parameters given in another
form are accepted and a different model is refused.

What is tested, and why:

* The structural parameters (``STRUCTURAL``) are compared by value
  (:func:`skbong._core.signature.structural_signature`), not by ``repr``: a function's or an object's
  ``repr`` holds its memory address, which changes in a copy and in another process.
  Functions and model objects are compared by their own ``==`` (identity by default),
  which pickle and deepcopy keep: the parameter and the fitted signature are copied in
  one object graph, and a module-level function is pickled by reference.
* After each round trip the copy predicts exactly what the original predicts
  (``np.array_equal``: the same compiled programs on the same numpy belief; in another
  process XLA compiles the same code on the same machine, as test_checkpoint asserts) and
  ``partial_fit`` continues.
* ``hidden_layer_sizes=[4]`` then ``(4,)``, ``np.array([4])`` or ``4`` (an int is one
  layer), and ``rank=np.int64(2)`` then ``2``, are the same parameters, while the fitted
  list edited in place is not; both estimator families share the comparison.
* Other functions, another model object, another lambda, and a function redefined
  under the same name (a re-run notebook cell: its shapes may differ): refused with the
  error that names ``model``.
* ``skops.io`` (optional: skipped without it) saves and loads every estimator, linear
  and network, after its predictions filled the caches (the sampled predictives' draws,
  keyed by tuples, which skops cannot save; the stream's memo of JAX arrays), trusting
  only the skbong types skops lists (no ``builtins.NoneType``, which skops cannot load);
  the loaded estimator predicts bit for bit what the original does, keeps draws again,
  and ``partial_fit`` continues both to the same belief. Saving leaves the original's
  caches in place.
"""

import copy
import pickle
import textwrap
import types

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _subprocess import run_pickled
from numpy.testing import assert_array_equal
from sklearn.model_selection import KFold, cross_validate

from skbong import (
    BongClassifier,
    BongPoissonRegressor,
    BongRegressor,
    VariationalClassifier,
    VariationalRegressor,
)

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")

N, D = 16, 3
RNG = np.random.default_rng(21)
X = RNG.normal(size=(N, D))
Y = X @ [1.0, -0.5, 0.2] + 0.1 * RNG.normal(size=N)
REFUSED = r"parameter\(s\) \['model'\] changed since the estimator was fitted"


def linear_init(key, n_features, n_outputs):
    return {"w": 0.1 * jax.random.normal(key, (n_features, n_outputs)), "b": jnp.zeros(n_outputs)}


def linear_apply(params, x):
    return x @ params["w"] + params["b"]


def other_apply(params, x):
    return jnp.tanh(x @ params["w"]) + params["b"]


def _redefined(fn):
    """``fn`` defined again: the same module, name and code, another function."""
    return types.FunctionType(fn.__code__, fn.__globals__, fn.__name__)


class LinearModel:
    """A user model object (``.init``, ``.apply``) without ``__eq__``: equal only to itself."""

    def __init__(self, scale=0.1):
        self.scale = scale

    def init(self, key, n_features, n_outputs):
        return {"w": self.scale * jax.random.normal(key, (n_features, n_outputs)), "b": jnp.zeros(n_outputs)}

    def apply(self, params, x):
        return x @ params["w"] + params["b"]


MODEL_OBJECT = LinearModel()
"""One instance for the tests that keep it (a model object's programs are compiled per
instance)."""


def _reg(**kw):
    return BongRegressor(family="diag", dtype="float64", random_state=0, **kw)


def _round_trips():
    return {"pickle": lambda e: pickle.loads(pickle.dumps(e)), "deepcopy": copy.deepcopy}


@pytest.mark.parametrize("how", ["pickle", "deepcopy"])
@pytest.mark.parametrize("model", ["functions", "object"])
def test_user_model_survives_a_copy(model, how):
    user = (linear_init, linear_apply) if model == "functions" else MODEL_OBJECT
    est = _reg(model=user).fit(X[:8], Y[:8])
    copied = _round_trips()[how](est)
    assert_array_equal(copied.predict(X), est.predict(X))
    copied.partial_fit(X[8:], Y[8:])
    est.partial_fit(X[8:], Y[8:])
    assert_array_equal(copied.posterior_mean_, est.posterior_mean_)


def test_lambda_model_survives_deepcopy():
    """A lambda is compared by identity: deepcopy keeps the same function object."""
    est = _reg(model=(linear_init, lambda p, x: x @ p["w"] + p["b"])).fit(X, Y)
    assert_array_equal(copy.deepcopy(est).predict(X), est.predict(X))


RESUME_SCRIPT = textwrap.dedent(
    """
    import pickle, sys
    sys.path.insert(0, {tests!r})
    import test_persistence as T

    with open(sys.argv[1], "rb") as fh:
        est = pickle.load(fh)
    first = est.predict(T.X)
    est.partial_fit(T.X[8:], T.Y[8:])
    with open(sys.argv[2], "wb") as fh:
        pickle.dump((first, est), fh)
    """
)


def test_user_model_in_a_fresh_process(tmp_path):
    est = _reg(model=(linear_init, linear_apply)).fit(X[:8], Y[:8])
    first, resumed = run_pickled(RESUME_SCRIPT, est, tmp_path)
    assert_array_equal(first, est.predict(X))
    est.partial_fit(X[8:], Y[8:])
    assert_array_equal(resumed.posterior_mean_, est.posterior_mean_)
    assert_array_equal(resumed.predict(X), est.predict(X))  # and back in this process


def test_user_model_from_loky_workers():
    """``cross_validate(n_jobs=2, return_estimator=True)``: the estimators were fitted in
    loky worker processes and come back pickled."""
    cv = KFold(2)
    est = _reg(model=(linear_init, linear_apply))
    res = cross_validate(est, X, Y, cv=cv, n_jobs=2, return_estimator=True)
    for fitted, (train, _) in zip(res["estimator"], cv.split(X)):
        here = _reg(model=(linear_init, linear_apply)).fit(X[train], Y[train])
        assert_array_equal(fitted.predict(X), here.predict(X))
        fitted.partial_fit(X[:8], Y[:8])


@pytest.mark.parametrize(
    "make",
    [
        lambda **kw: _reg(**kw),
        lambda **kw: VariationalRegressor(max_iter=1, dtype="float64", random_state=0, **kw),
    ],
    ids=["bong", "variational"],
)
def test_equal_structural_values_are_accepted(make):
    layers = [4]
    est = make(hidden_layer_sizes=layers, rank=np.int64(2)).fit(X, Y)
    expected = est.predict(X)
    for sizes in [(4,), np.array([4]), 4, [np.int64(4)]]:
        est.set_params(hidden_layer_sizes=sizes, rank=2)
        assert_array_equal(est.predict(X), expected)
    est.partial_fit(X, Y)
    layers.append(5)  # the very list the estimator was fitted with, edited in place
    with pytest.raises(ValueError, match=r"\['hidden_layer_sizes'\] changed"):
        est.set_params(hidden_layer_sizes=layers).predict(X)


@pytest.mark.parametrize(
    "fitted, other",
    [
        ((linear_init, linear_apply), (linear_init, other_apply)),
        (MODEL_OBJECT, LinearModel()),
        ((linear_init, linear_apply), (linear_init, _redefined(linear_apply))),
        ((linear_init, lambda p, x: x @ p["w"]), (linear_init, lambda p, x: x @ p["w"])),
    ],
    ids=["functions", "object", "lambda", "redefined"],
)
def test_a_different_model_is_refused(fitted, other):
    est = _reg(model=fitted).fit(X, Y)
    est.set_params(model=other)
    with pytest.raises(ValueError, match=REFUSED):
        est.predict(X)
    with pytest.raises(ValueError, match=REFUSED):
        est.partial_fit(X, Y)
    if isinstance(fitted, LinearModel):  # the variational estimators share the comparison
        var = VariationalRegressor(model=fitted, max_iter=1, dtype="float64", random_state=0)
        var.fit(X, Y).set_params(model=other)
        with pytest.raises(ValueError, match=REFUSED):
            var.predict(X)
        with pytest.raises(ValueError, match=REFUSED):
            var.partial_fit(X, Y)


# ---------------------------------------------------------------- skops.io
Y_CLASS = (Y > np.median(Y)).astype(int)
Y_COUNT = np.random.default_rng(5).poisson(np.exp(0.5 * Y))
SKOPS_CASES = {
    # predictive="mc" so that predictions fill the draws cache
    "regressor": (lambda: BongRegressor(predictive="mc", random_state=0), Y),
    "regressor-loo": (
        lambda: BongRegressor(calibration="loo", predictive="mc", random_state=0),
        Y,
    ),
    "regressor-net": (
        lambda: BongRegressor(hidden_layer_sizes=(3,), predictive="mc", random_state=0),
        Y,
    ),
    "classifier": (lambda: BongClassifier(predictive="linmc", random_state=0), Y_CLASS),
    "classifier-net": (
        lambda: BongClassifier(hidden_layer_sizes=(3,), predictive="mc", random_state=0),
        Y_CLASS,
    ),
    "poisson": (lambda: BongPoissonRegressor(predictive="mc", random_state=0), Y_COUNT),
    "variational-regressor": (
        lambda: VariationalRegressor(predictive="mc", max_iter=2, random_state=0),
        Y,
    ),
    "variational-classifier-net": (
        lambda: VariationalClassifier(hidden_layer_sizes=(3,), max_iter=2, random_state=0),
        Y_CLASS,
    ),
}


def _predictions(est):
    """Every prediction the estimator offers on X, which also fills its caches."""
    out = {"predict": est.predict(X)}
    if hasattr(est, "predict_proba"):
        out["predict_proba"] = est.predict_proba(X)
    else:
        out["std"] = est.predict(X, return_std=True)[1]
    if hasattr(est, "predict_interval"):
        out["interval"] = est.predict_interval(X)
    if hasattr(est, "predict_logpdf"):
        out["logpdf"] = est.predict_logpdf(X, Y)
    if hasattr(est, "predict_logpmf"):
        out["logpmf"] = est.predict_logpmf(X, Y_COUNT)
    return out


def _assert_same(a, b):
    assert a.keys() == b.keys()
    for name in a:
        assert_array_equal(np.asarray(a[name]), np.asarray(b[name]), err_msg=name)


@pytest.mark.parametrize("case", list(SKOPS_CASES))
def test_skops_round_trip(case):
    sio = pytest.importorskip("skops.io", reason="skops is optional (the [test] extra)")
    make, y = SKOPS_CASES[case]
    est = make().fit(X[:8], y[:8])
    before = _predictions(est)
    assert est._draws_cache, "the predictions should have kept draws"
    if case.endswith("-net") and not case.startswith("variational"):
        assert est._belief_memo is not None
    if case == "regressor-loo":
        assert est._loo_cache is not None
    draws = list(est._draws_cache)

    data = sio.dumps(est)
    untrusted = sio.get_untrusted_types(data=data)
    assert all(t.startswith("skbong.") for t in untrusted), untrusted
    loaded = sio.loads(data, trusted=untrusted)

    # saving left the original's caches as they were
    assert [d is e for d, e in zip(est._draws_cache, draws)] == [True] * len(draws)
    assert loaded._draws_cache == []  # kept again from the next sampled prediction
    _assert_same(_predictions(loaded), before)
    assert loaded._draws_cache
    _assert_same(_predictions(est), before)

    est.partial_fit(X[8:], y[8:])
    loaded.partial_fit(X[8:], y[8:])
    for a, b in zip(loaded._state, est._state):
        assert_array_equal(a, b)
    _assert_same(_predictions(loaded), _predictions(est))


def test_pickled_state_has_no_caches():
    """The state pickle and skops keep: the caches rebuilt on demand are left out, the
    draws start empty, and the parameter snapshot holds type names, not types."""
    linear = BongRegressor(predictive="mc", calibration="loo", random_state=0).fit(X, Y)
    network = BongRegressor(hidden_layer_sizes=(3,), random_state=0).fit(X, Y)
    seen = set()
    for est in (linear, network):
        _predictions(est)
        state = est.__getstate__()
        for name in ("_belief_memo", "_config_cache", "_prior_var_cache", "_loo_cache"):
            assert name not in state, name
            if getattr(est, name, None) is not None:
                seen.add(name)
        assert state is not est.__dict__ and state["_state"] is est._state
        assert not any(isinstance(v, type) for item in state["_checked"][0] for v in item)
    assert len(seen) == 4  # each cache was there to be left out
    assert linear.__getstate__()["_draws_cache"] == [] and linear._draws_cache
