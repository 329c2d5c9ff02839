"""Models: flat parameter layout, prior means, and user-supplied JAX models (a small CNN)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from skbong import BongClassifier, BongRegressor
from skbong import engine as E


@pytest.mark.parametrize(
    "hidden, fit_intercept, expected",
    [
        ((), True, 3 * 2 + 2),
        ((), False, 3 * 2),
        ((5,), True, 3 * 5 + 5 + 5 * 2 + 2),
        ((4, 3), True, 12 + 4 + 12 + 3 + 6 + 2),
    ],
)
def test_mlp_parameter_count_matches_the_flat_vector(hidden, fit_intercept, expected):
    model = E.MLP(3, 2, hidden, "relu", fit_intercept)
    assert model.n_params() == expected
    assert model.flat_init(jax.random.PRNGKey(0)).shape == (expected,)
    assert model.apply(jnp.zeros(expected), jnp.ones((4, 3))).shape == (4, 2)


def test_prior_means():
    linear = E.MLP(3, 2, (), "identity")
    assert not np.any(np.asarray(linear.flat_init(jax.random.PRNGKey(1))))
    net = E.MLP(3, 2, (8,), "tanh")
    a, b = net.flat_init(jax.random.PRNGKey(1)), net.flat_init(jax.random.PRNGKey(1))
    np.testing.assert_array_equal(a, b)
    assert np.std(np.asarray(a)) > 0.1  # a LeCun-normal draw, not zeros
    assert not np.array_equal(a, net.flat_init(jax.random.PRNGKey(2)))


def test_linear_model_is_x_times_w_plus_b():
    model = E.MLP(3, 2, (), "identity")
    theta = jnp.arange(8.0)
    x = jnp.asarray([[1.0, 2.0, 3.0]])
    w, b = np.arange(6.0).reshape(3, 2), np.arange(6.0, 8.0)
    np.testing.assert_allclose(model.apply(theta, x), np.asarray(x) @ w + b)


def _cnn_init(key, n_features, n_outputs):
    k1, k2 = jax.random.split(key)
    return {
        "conv": jax.random.normal(k1, (2, 1, 3, 3)) / 3.0,
        "dense": jax.random.normal(k2, (2 * 6 * 6, n_outputs)) / np.sqrt(72.0),
        "bias": jnp.zeros(n_outputs),
    }


def _cnn_apply(params, x):
    images = x.reshape(-1, 1, 8, 8)
    h = jax.lax.conv_general_dilated(images, params["conv"], (1, 1), "VALID")
    h = jax.nn.relu(h).reshape(x.shape[0], -1)
    return h @ params["dense"] + params["bias"]


def test_user_model_cnn_streams_through_the_classifier():
    from sklearn.datasets import load_digits

    X, y = load_digits(n_class=3, return_X_y=True)
    X = X[:150] / 16.0
    y = y[:150]
    clf = BongClassifier(model=(_cnn_init, _cnn_apply), rank=5, prior_variance=0.1, random_state=0)
    clf.fit(X[:120], y[:120])
    assert clf.n_params_ == 2 * 9 + 72 * 3 + 3
    assert clf.score(X[120:], y[120:]) > 0.8
    proba = clf.predict_proba(X[120:])
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=1e-6)


def _mlp_init(key, n_features, n_outputs):
    return E.MLP(n_features, n_outputs, (4,), "tanh")._tree(key, jnp.float32)


def _mlp_apply(params, x):
    h = jnp.tanh(x @ params[0][0] + params[0][1])
    return h @ params[1][0] + params[1][1]


def test_user_model_equals_the_builtin_mlp(monkeypatch):
    """The same network given as a user model gives the same posterior (float32: the
    user ``init`` draws in float32, so the built-in must too for identical priors).

    A user model's prior variance is σ₀² for every parameter (its layers are unknown);
    the built-in MLP scales weights by fan-in and gives the output bias its own variance.
    The user model is given the built-in's variances here, so that what is compared is
    the rest of the path (initialiser, flattening, apply, Jacobians)."""
    builtin_vars = E.MLP(3, 1, (4,), "tanh").prior_variances
    monkeypatch.setattr(E.UserModel, "prior_variances", lambda self, v, b=None: builtin_vars(v, b))
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 3))
    y = np.sin(X[:, 0])
    common = dict(family="diag", prior_variance=0.3, random_state=0, dtype="float32")
    builtin = BongRegressor(hidden_layer_sizes=(4,), activation="tanh", **common).fit(X, y)
    user = BongRegressor(model=(_mlp_init, _mlp_apply), **common).fit(X, y)
    np.testing.assert_allclose(user.posterior_mean_, builtin.posterior_mean_, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(user.posterior_var_, builtin.posterior_var_, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(
    "hidden, activation, fit_intercept, likelihood",
    [
        ((), "identity", True, "gaussian"),
        ((), "identity", False, "bernoulli"),
        ((5,), "tanh", True, "categorical"),
        ((4, 3), "relu", True, "gaussian"),
    ],
)
def test_mlp_grad_moments_equal_per_row_gradients(hidden, activation, fit_intercept, likelihood):
    """The MLP's Goodfellow-trick moments against per-row gradients from autodiff (rows of different weights, one of them padding). A wrong layer
    input, a missing square, an unweighted bias or a flat layout out of order fails."""
    with jax.enable_x64(True):
        n_out = {"gaussian": 2, "bernoulli": 1, "categorical": 3}[likelihood]
        model = E.MLP(3, n_out, hidden, activation, fit_intercept)
        rng = np.random.default_rng(0)
        theta = jnp.asarray(rng.normal(size=model.n_params()))
        x = jnp.asarray(rng.normal(size=(6, 3)))
        if likelihood == "gaussian":
            y = jnp.asarray(rng.normal(size=(6, n_out)))
        else:
            y = jnp.asarray(np.eye(max(n_out, 2))[rng.integers(0, max(n_out, 2), 6)][:, -n_out:])
        w = jnp.asarray([1.0, 2.0, 0.5, 0.0, 1.0, 3.0])
        lik = E.likelihoods.LIKELIHOODS[likelihood]

        def row_log_lik(f):
            return jax.vmap(lik.log_prob, in_axes=(0, 0, None))(y, f, 0.7)

        values, first, second = model.grad_moments(theta, x, row_log_lik, w)

        # per-row gradients as the rows of the Jacobian of the (n,) row values
        grads = np.asarray(jax.jit(jax.jacrev(lambda th: row_log_lik(model.apply(th, x))))(theta))
        np.testing.assert_allclose(values, row_log_lik(model.apply(theta, x)), rtol=1e-13)
        np.testing.assert_allclose(first, np.asarray(w) @ grads, rtol=1e-12, atol=1e-13)
        np.testing.assert_allclose(second, np.asarray(w) @ grads**2, rtol=1e-12, atol=1e-13)
