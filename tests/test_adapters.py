"""Networks from flax (linen, nnx) and equinox as estimator models.

What is tested, and why:

* For each library, a small CNN on 8×8 digit images (a 3×3 convolution with 4 channels,
  batch norm where the library has it without extra state, ReLU, 2×2 average pooling, a
  dense layer to 3 logits) trained one pass by ``BongClassifier`` (``family="dlr"``, in
  float64) predicts what the same network predicts when written by hand in plain
  ``jax.numpy`` (no ``lax.conv``: shifted slices) as an explicit ``(init, apply)``
  pair starting from the same parameters: an independent reference for the adapter's
  flattening, input reshaping, fixed state (batch statistics) and evaluation mode.
* The prior mean is the library's own initialisation: ``module.init`` from the
  estimator's key for linen (so ``random_state`` draws it), the module's parameters as
  built for nnx and equinox.
* The fitted estimator survives ``pickle`` and ``copy.deepcopy`` (identical predictions,
  and ``partial_fit`` goes on identically); an adapter equals its copies by value, so
  clones share compiled programs, and differs from another network.
* A network given directly as ``model=`` is wrapped; a wrong output width or input shape
  is refused with a message that says what the estimator needs.
"""

import copy
import pickle

import equinox as eqx
import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx
from jax.flatten_util import ravel_pytree
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.base import clone
from sklearn.datasets import load_digits

from skbong import BongClassifier
from skbong import engine as E
from skbong.adapters import EquinoxModel, FlaxModel, NNXModel, from_equinox, from_flax, from_nnx

_digits = load_digits()
_keep = _digits.target < 3
X_ALL = (_digits.data[_keep] / 16.0)[:260]
Y_ALL = _digits.target[_keep][:260]
X, Y, X_TEST = X_ALL[:200], Y_ALL[:200], X_ALL[200:]
EPS = 1e-5  # flax's batch-norm epsilon


# ------------------------------------------------------------------ the networks
class LinenCNN(nn.Module):
    n_out: int = 3

    @nn.compact
    def __call__(self, x):
        x = nn.Conv(4, (3, 3))(x)
        x = nn.relu(nn.BatchNorm(use_running_average=True)(x))
        x = nn.avg_pool(x, (2, 2), (2, 2))
        return nn.Dense(self.n_out)(x.reshape(x.shape[0], -1))


class NNXCNN(nnx.Module):
    def __init__(self, n_out, rngs):
        self.conv = nnx.Conv(1, 4, (3, 3), rngs=rngs)
        self.bn = nnx.BatchNorm(4, rngs=rngs)
        self.drop = nnx.Dropout(0.5, rngs=rngs)
        self.lin = nnx.Linear(64, n_out, rngs=rngs)

    def __call__(self, x):
        x = nnx.relu(self.bn(self.conv(x)))
        x = self.drop(nnx.avg_pool(x, (2, 2), (2, 2)))
        return self.lin(x.reshape(x.shape[0], -1))


class EqxCNN(eqx.Module):
    conv: eqx.nn.Conv2d
    drop: eqx.nn.Dropout
    lin: eqx.nn.Linear

    def __init__(self, n_out, key):
        k1, k2 = jax.random.split(key)
        self.conv = eqx.nn.Conv2d(1, 4, 3, padding=1, key=k1)
        self.drop = eqx.nn.Dropout(0.5)
        self.lin = eqx.nn.Linear(64, n_out, key=k2)

    def __call__(self, x, key=None):  # one example, channels first (1, 8, 8)
        x = jax.nn.relu(self.conv(x))
        x = x.reshape(4, 4, 2, 4, 2).mean(axis=(2, 4))
        return self.lin(self.drop(x.reshape(-1), key=key))


def _nnx_cnn(n_out=3, seed=0):
    """The nnx CNN with running statistics that are not the identity (the adapter must
    keep them)."""
    net = NNXCNN(n_out, nnx.Rngs(seed))
    net.bn.mean[...] = NNX_MEAN
    net.bn.var[...] = NNX_VAR
    return net


# ------------------------------------------------- the reference, by hand in numpy style
def _conv3x3_same(x, kernel, bias):
    """x (n, 8, 8, c_in), kernel (3, 3, c_in, c_out): zero padding, shifted slices."""
    n, h, w, _ = x.shape
    xp = jnp.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0)))
    out = sum(xp[:, i : i + h, j : j + w, :] @ kernel[i, j] for i in range(3) for j in range(3))
    return out + bias


def _pool(x):  # (n, 8, 8, c) -> (n, 4, 4, c)
    n, h, w, c = x.shape
    return x.reshape(n, h // 2, 2, w // 2, 2, c).mean(axis=(2, 4))


def _batch_norm(x, mean, var, scale, bias):
    return (x - mean) / jnp.sqrt(var + EPS) * scale + bias


def linen_reference_apply(params, X):
    x = X.reshape(-1, 8, 8, 1)
    h = _conv3x3_same(x, params["Conv_0"]["kernel"], params["Conv_0"]["bias"])
    bn = params["BatchNorm_0"]
    h = _pool(jax.nn.relu(_batch_norm(h, 0.0, 1.0, bn["scale"], bn["bias"])))
    return h.reshape(h.shape[0], -1) @ params["Dense_0"]["kernel"] + params["Dense_0"]["bias"]


NNX_MEAN = np.array([0.1, -0.2, 0.3, 0.05], np.float32)  # as the module holds them
NNX_VAR = np.array([0.5, 2.0, 1.5, 0.8], np.float32)


def nnx_reference_apply(params, X):
    x = X.reshape(-1, 8, 8, 1)
    h = _conv3x3_same(x, params["conv"]["kernel"], params["conv"]["bias"])
    bn = params["bn"]
    h = _pool(jax.nn.relu(_batch_norm(h, NNX_MEAN, NNX_VAR, bn["scale"], bn["bias"])))
    return h.reshape(h.shape[0], -1) @ params["lin"]["kernel"] + params["lin"]["bias"]


def eqx_reference_apply(params, X):
    (w_conv, b_conv), (w_lin, b_lin) = params  # equinox's layouts: (out, in, kh, kw), (out, in)
    x = X.reshape(-1, 8, 8, 1)  # one channel: the same pixels as (1, 8, 8)
    h = _pool(jax.nn.relu(_conv3x3_same(x, w_conv.transpose(2, 3, 1, 0), b_conv.reshape(-1))))
    h = h.transpose(0, 3, 1, 2)  # equinox flattens channels first
    return h.reshape(h.shape[0], -1) @ w_lin.T + b_lin


def _constant_init(params):
    """An explicit ``init`` that returns ``params`` (as numpy) whatever the key."""
    params = jax.tree_util.tree_map(np.asarray, params)
    return lambda key, n_features, n_outputs: params


def _linen_prior(seed):
    """linen's own initialisation from the key the estimator gives its model."""
    key = jax.random.fold_in(jax.random.PRNGKey(seed), 0)
    return LinenCNN().init(key, jnp.zeros((1, 8, 8, 1)))["params"]


def _nnx_params(net):
    return nnx.to_pure_dict(nnx.state(net, nnx.Param))


def _eqx_params(net):
    return ((net.conv.weight, net.conv.bias), (net.lin.weight, net.lin.bias))


def _clf(model, random_state=0, **kw):
    return BongClassifier(model=model, dtype="float64", random_state=random_state, **kw)


# ------------------------------------------------------------ one CNN per library
def _case(kind):
    """(adapter, (reference init, reference apply), expected prior mean (a function of
    the fitted estimator))."""
    if kind == "linen":
        adapter = from_flax(LinenCNN(), input_shape=(8, 8, 1))

        def prior(est):
            return ravel_pytree(_linen_prior(est._seed))[0]

        def reference(est):
            return (_constant_init(_linen_prior(est._seed)), linen_reference_apply)

        return adapter, reference, prior
    if kind == "nnx":
        net = _nnx_cnn()
        adapter = from_nnx(net, input_shape=(8, 8, 1))
        params = _nnx_params(net)
        return (
            adapter,
            lambda est: (_constant_init(params), nnx_reference_apply),
            lambda est: ravel_pytree(params)[0],
        )
    net = EqxCNN(3, jax.random.PRNGKey(0))
    adapter = from_equinox(net, input_shape=(1, 8, 8))
    params = _eqx_params(net)
    return (
        adapter,
        lambda est: (_constant_init(params), eqx_reference_apply),
        lambda est: ravel_pytree(params)[0],
    )


@pytest.mark.parametrize("kind", ["linen", "nnx", "equinox"])
def test_cnn_matches_a_hand_written_reference_and_pickles(kind):
    adapter, reference, prior = _case(kind)
    est = _clf(adapter).fit(X, Y)
    # the prior mean is the library's own initialisation
    assert_allclose(est._prior_mean, prior(est), rtol=1e-7, atol=0)
    # the same network by hand, from the same parameters, learns the same posterior
    ref = _clf(reference(est)).fit(X, Y)
    assert_array_equal(ref._prior_mean, est._prior_mean)
    proba = est.predict_proba(X_TEST)
    assert_allclose(proba, ref.predict_proba(X_TEST), rtol=1e-7, atol=1e-10)
    assert_allclose(est.posterior_mean_, ref.posterior_mean_, rtol=1e-6, atol=1e-7)
    assert est.score(X_TEST, Y_ALL[200:]) > 0.6  # it learned something in one pass
    # pickling and deep copies round-trip, and go on learning identically
    for copied in (pickle.loads(pickle.dumps(est)), copy.deepcopy(est)):
        assert copied.model == adapter and copied.model is not adapter
        assert_array_equal(copied.predict_proba(X_TEST), proba)
        copied.partial_fit(X_TEST, Y_ALL[200:])
    est.partial_fit(X_TEST, Y_ALL[200:])
    assert_array_equal(copied.posterior_mean_, est.posterior_mean_)


def test_linen_prior_mean_follows_random_state():
    a = _clf(from_flax(LinenCNN(), input_shape=(8, 8, 1))).fit(X[:8], Y[:8])
    b = _clf(from_flax(LinenCNN(), input_shape=(8, 8, 1)), random_state=1).fit(X[:8], Y[:8])
    assert not np.allclose(a._prior_mean, b._prior_mean)
    assert_allclose(b._prior_mean, ravel_pytree(_linen_prior(b._seed))[0], rtol=1e-7)


@pytest.mark.parametrize(
    "make",
    [
        lambda: from_flax(LinenCNN(), input_shape=(8, 8, 1)),
        lambda: from_nnx(_nnx_cnn(), input_shape=(8, 8, 1)),
        lambda: from_equinox(EqxCNN(3, jax.random.PRNGKey(0)), input_shape=(1, 8, 8)),
    ],
    ids=["linen", "nnx", "equinox"],
)
def test_adapters_are_values(make):
    adapter = make()
    for copied in (pickle.loads(pickle.dumps(adapter)), copy.deepcopy(adapter), make()):
        assert copied == adapter and hash(copied) == hash(adapter)
        # the bound methods the engine keys its programs on compare the same way
        assert copied.init == adapter.init and hash(copied.apply) == hash(adapter.apply)
        assert copied.apply != adapter.init
    assert clone(_clf(adapter)).model == adapter
    assert "input_shape=" in repr(adapter) and "\n" not in repr(adapter)


def test_other_networks_are_other_models():
    assert from_flax(LinenCNN()) != from_flax(LinenCNN(), input_shape=(8, 8, 1))
    assert from_flax(LinenCNN(n_out=10)) != from_flax(LinenCNN())
    assert from_nnx(_nnx_cnn(seed=1)) != from_nnx(_nnx_cnn())
    other_stats = _nnx_cnn()
    other_stats.bn.var[...] = jnp.ones(4)
    assert from_nnx(other_stats) != from_nnx(_nnx_cnn())
    key = jax.random.PRNGKey(0)
    assert from_equinox(EqxCNN(3, jax.random.PRNGKey(1))) != from_equinox(EqxCNN(3, key))
    assert from_equinox(EqxCNN(3, key)) != from_flax(LinenCNN())


def test_clones_share_compiled_programs():
    adapter = from_equinox(EqxCNN(3, jax.random.PRNGKey(0)), input_shape=(1, 8, 8))
    _clf(adapter).fit(X[:16], Y[:16])
    before = E.run_stream_checked._cache_size()
    _clf(copy.deepcopy(adapter)).fit(X[:16], Y[:16])
    assert E.run_stream_checked._cache_size() == before


class LinenMLP(nn.Module):
    @nn.compact
    def __call__(self, x):
        return nn.Dense(1)(nn.tanh(nn.Dense(5)(x)))


class NNXLinear(nnx.Module):
    def __init__(self, rngs):
        self.lin = nnx.Linear(64, 1, rngs=rngs)

    def __call__(self, x):
        return self.lin(x)


@pytest.mark.parametrize(
    "network, wrapped",
    [
        (LinenMLP(), FlaxModel),
        (NNXLinear(nnx.Rngs(0)), NNXModel),
        (eqx.nn.Linear(64, "scalar", key=jax.random.PRNGKey(0)), EquinoxModel),
    ],
    ids=["linen", "nnx", "equinox"],
)
def test_a_network_given_directly_is_wrapped(network, wrapped):
    """Two classes: one logit; an equinox scalar output is that logit."""
    y = (Y[:40] == 1).astype(int)
    est = _clf(network).fit(X[:40], y)
    adapter = wrapped(network)
    via_adapter = _clf(adapter).fit(X[:40], y)
    assert_array_equal(est.predict_proba(X_TEST), via_adapter.predict_proba(X_TEST))
    assert est.n_params_ == ravel_pytree(adapter.init(jax.random.PRNGKey(0), 64, 1))[0].size


def test_wrong_shapes_are_refused_with_what_is_needed():
    with pytest.raises(ValueError, match=r"has 10 outputs per row where the estimator needs 3"):
        _clf(from_flax(LinenCNN(n_out=10), input_shape=(8, 8, 1))).fit(X[:8], Y[:8])
    with pytest.raises(ValueError, match=r"input_shape=\(7, 7, 1\) holds 49 values per row"):
        _clf(from_nnx(_nnx_cnn(), input_shape=(7, 7, 1))).fit(X[:8], Y[:8])
    with pytest.raises(TypeError, match="expects a flax.linen.Module"):
        from_flax(_nnx_cnn())
    with pytest.raises(ValueError, match="flax or equinox network"):
        _clf(object()).fit(X[:8], Y[:8])
