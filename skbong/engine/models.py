"""Models f(θ, X): linear, MLP, or a user's JAX ``init`` / ``apply`` pair.

A model is a small frozen, hashable object (so it can be a static argument of
``jax.jit`` and compares equal across scikit-learn clones). ``flat_init(key)``
returns the prior mean as a flat parameter vector θ₀ ∈ R^P and ``apply(θ, X)``
maps a flat vector and a batch ``X`` of shape ``(n, d)`` to outputs ``(n, C)``.
Parameter pytrees are flattened with :func:`jax.flatten_util.ravel_pytree`.
"""

import math
from collections.abc import Callable
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.flatten_util import ravel_pytree

from ._store import fields_token

OUTPUT_BIAS_VARIANCE = 100.0
"""Prior variance of the output biases (the intercepts) of a regression model, whatever
``prior_variance``: a broad prior of their own, so that a target far from zero costs the
weights nothing. (With the coupled learned noise, the linear model's default, it is in
units of the noise variance, see :mod:`.noise`, so raw-scale targets work.) Classifiers' logits have no raw scale: their
biases keep σ₀²."""

NETWORK_PRIOR_VARIANCE = 10.0
"""σ₀² of the built-in networks under ``prior_variance="auto"`` (fan-in scaled, see
:meth:`MLP.prior_variances`), online and batch alike. Against σ₀² = 1 (the
LeCun-normal scale) it gave a (32,) classifier's ``fit`` a lower test log-loss in 23 of
28 cases (14 classification sets, raw and standardised) and a (50,) regressor's a lower
NLL in 28 of 34 (17 regression sets); the batch solvers' own M-step settles at 0.4–5
and under-fits (:ref:`defaults`)."""

ONE_PASS_NETWORK_PRIOR_VARIANCE = 3.0
"""σ₀² under ``"auto"`` of a built-in network with a classification or count
likelihood that learns its first rows in one pass (``partial_fit``, ``passes=1``): the
linearised step of a non-Gaussian likelihood overshoots from a broad prior (at σ₀² = 10
one pass reached a test log-loss of 18 on a 3-class set that σ₀² = 3 learned to 0.37),
where ``fit``'s tempered passes take each row at a fraction of its weight. A Gaussian
likelihood's step is a Kalman update, which does not overshoot: regressors keep
:data:`NETWORK_PRIOR_VARIANCE`."""

USER_MODEL_PRIOR_VARIANCE = 1.0
"""σ₀² of a user model under ``"auto"``: every parameter gets it unscaled (the model's
layers are unknown)."""

ACTIVATIONS = {
    "relu": jax.nn.relu,
    "tanh": jnp.tanh,
    "gelu": jax.nn.gelu,
    "sigmoid": jax.nn.sigmoid,
    "identity": lambda z: z,
}


def _mlp_init(key, sizes, fit_intercept, dtype):
    """Layers as a list of (weight, bias) pairs; LeCun-normal weights, zero biases."""
    params = []
    keys = jax.random.split(key, len(sizes) - 1)
    for k, (n_in, n_out) in zip(keys, zip(sizes[:-1], sizes[1:])):
        w = jax.random.normal(k, (n_in, n_out), dtype) / jnp.sqrt(jnp.asarray(n_in, dtype))
        params.append((w, jnp.zeros((n_out,), dtype)))
    if not fit_intercept:  # only meaningful for the linear model
        params = [(w,) for w, _ in params]
    return params


def _mlp_forward(params, x, activation, shifts=None):
    """Outputs, and the input of every layer; ``shifts`` (one (n, width) array per layer)
    are added to the pre-activations, so that their gradient is the per-row δ."""
    act = ACTIVATIONS[activation]
    h, inputs = x, []
    for i, layer in enumerate(params):
        inputs.append(h)
        h = h @ layer[0] + (layer[1] if len(layer) > 1 else 0.0)
        if shifts is not None:
            h = h + shifts[i]
        if i < len(params) - 1:
            h = act(h)
    return h, inputs


def _mlp_apply(params, x, activation):
    return _mlp_forward(params, x, activation)[0]


def _unraveler(model, dtype):
    """The ``unravel`` of :func:`ravel_pytree` for ``model``, from shapes only."""
    shapes = jax.eval_shape(lambda k: model._tree(k, dtype), jax.random.PRNGKey(0))
    zeros = jax.tree_util.tree_map(lambda s: jnp.zeros(s.shape, s.dtype), shapes)
    return ravel_pytree(zeros)[1]


@dataclass(frozen=True)
class MLP:
    """Multi-layer perceptron; ``hidden=()`` is the linear (or logistic) model.

    Parameters
    ----------
    n_features, n_outputs : int
        Input and output widths.
    hidden : tuple of int
        Hidden layer sizes.
    activation : str
        One of ``relu``, ``tanh``, ``gelu``, ``sigmoid``, ``identity``.
    fit_intercept : bool
        Biases in every layer (always on for networks with hidden layers).

    Notes
    -----
    The prior mean is zero for the linear model and a LeCun-normal draw (zero
    biases) from the seed for networks, as in the paper.
    """

    n_features: int
    n_outputs: int
    hidden: tuple = ()
    activation: str = "relu"
    fit_intercept: bool = True

    def cache_token(self):
        """A stable text of this object for skbong's on-disk program cache (its class and
        fields), or ``None`` where a field has none (:func:`.program.program`)."""
        return fields_token(self)

    def _tree(self, key, dtype):
        sizes = (self.n_features, *self.hidden, self.n_outputs)
        return _mlp_init(key, sizes, self.fit_intercept or bool(self.hidden), dtype)

    def flat_init(self, key, dtype=jnp.float32):
        """Prior mean θ₀ as a flat vector (zeros for the linear model)."""
        flat, _ = ravel_pytree(self._tree(key, dtype))
        return jnp.zeros_like(flat) if not self.hidden else flat

    def n_params(self):
        """Number of parameters P."""
        sizes = (self.n_features, *self.hidden, self.n_outputs)
        bias = self.fit_intercept or bool(self.hidden)
        return sum(a * b + (b if bias else 0) for a, b in zip(sizes[:-1], sizes[1:]))

    def apply(self, theta, x):
        """Outputs ``(n, C)`` for a flat parameter vector and inputs ``(n, d)``."""
        return _mlp_apply(_unraveler(self, theta.dtype)(theta), x, self.activation)

    def grad_moments(self, theta, x, row_log_lik, w):
        """Per-row values ℓᵢ = ``row_log_lik(f(X, θ))`` (n,) and the weighted first and
        second moments of their gradients gᵢ = ∇θ ℓᵢ, Σᵢ wᵢ gᵢ and Σᵢ wᵢ gᵢ ∘ gᵢ (P,),
        without forming the n per-row gradients.

        A dense layer's gᵢ is the outer product of its input aᵢ and the gradient δᵢ of
        ℓᵢ at its pre-activation, so Σᵢ wᵢ gᵢ ∘ gᵢ = (a ∘ a)ᵀ (w δ ∘ δ) (Goodfellow,
        2015, "Efficient per-example gradient computations"): one backward pass and one
        more product per layer, where per-row gradients cost n backward passes.
        """
        params = _unraveler(self, theta.dtype)(theta)

        def total(shifts):
            out, inputs = _mlp_forward(params, x, self.activation, shifts)
            values = row_log_lik(out)
            return jnp.sum(values), (values, inputs)

        shifts = [jnp.zeros((x.shape[0], layer[0].shape[1]), theta.dtype) for layer in params]
        deltas, (values, inputs) = jax.grad(total, has_aux=True)(shifts)
        first, second = [], []
        for a, d, layer in zip(inputs, deltas, params):
            wd, wdd = w[:, None] * d, w[:, None] * d * d
            bias = len(layer) > 1
            first.append((a.T @ wd,) + ((jnp.sum(wd, axis=0),) if bias else ()))
            second.append(((a * a).T @ wdd,) + ((jnp.sum(wdd, axis=0),) if bias else ()))
        return values, ravel_pytree(first)[0], ravel_pytree(second)[0]

    def prior_variances(self, prior_var, output_bias_var):
        """Prior variance of each parameter, (P,) float64, for ``prior_variance`` σ₀².

        Networks (hidden layers): the weights of a layer with fan-in n get σ₀² / n, so
        σ₀² = 1 is the LeCun-normal initialisation distribution at any width; hidden
        biases σ₀². The linear model: weights σ₀². Output biases (intercepts):
        ``output_bias_var`` (:data:`OUTPUT_BIAS_VARIANCE` for regression).
        """
        sizes = (self.n_features, *self.hidden, self.n_outputs)
        bias = self.fit_intercept or bool(self.hidden)
        parts = []
        for i, (n_in, n_out) in enumerate(zip(sizes[:-1], sizes[1:])):
            last = i == len(sizes) - 2
            fan = n_in if self.hidden else 1
            parts.append(np.full(n_in * n_out, prior_var / fan))
            if bias:
                parts.append(np.full(n_out, output_bias_var if last else prior_var))
        return np.concatenate(parts)


def seeded_init(model, seed, dtype):
    """The model's initial parameters θ₀ (flat, (P,)) from the estimator's ``seed``, with
    the key ``fold_in(PRNGKey(seed), 0)``: the prior mean of the streaming estimators and
    the starting mean of the batch solvers."""
    return model.flat_init(jax.random.fold_in(jax.random.PRNGKey(seed), 0), dtype)


def is_linear(model):
    """Whether ``model`` is the linear (or logistic) model: an :class:`MLP` without
    hidden layers (not a network, not a user model)."""
    return isinstance(model, MLP) and not model.hidden


@dataclass(frozen=True)
class UserModel:
    """A user's JAX model given as ``init(key, n_features, n_outputs) -> params`` and
    ``apply(params, X) -> outputs`` (any pytree of parameters, e.g. a CNN).

    The prior mean is ``init`` drawn from the seed.
    """

    init: Callable
    apply_fn: Callable
    n_features: int
    n_outputs: int

    def _tree(self, key, dtype):
        tree = self.init(key, self.n_features, self.n_outputs)
        return jax.tree_util.tree_map(lambda a: jnp.asarray(a, dtype), tree)

    def flat_init(self, key, dtype=jnp.float32):
        """Prior mean θ₀: the user's ``init`` from ``key``, flattened."""
        flat, _ = ravel_pytree(self._tree(key, dtype))
        return flat

    def n_params(self):
        """Number of parameters P (from an abstract evaluation of ``init``)."""
        shapes = jax.eval_shape(lambda k: self._tree(k, jnp.float32), jax.random.PRNGKey(0))
        return int(sum(math.prod(s.shape) for s in jax.tree_util.tree_leaves(shapes)))

    def prior_variances(self, prior_var, output_bias_var=None):
        """Prior variance of each parameter: σ₀² for all, shape (P,) float64 (a user
        model's layers are unknown; ``output_bias_var`` is not used)."""
        return np.full(self.n_params(), float(prior_var))

    def apply(self, theta, x):
        """Outputs ``(n, C)`` of the user's ``apply`` at the flat vector θ."""
        out = self.apply_fn(_unraveler(self, theta.dtype)(theta), x)
        return out.reshape(x.shape[0], self.n_outputs)
