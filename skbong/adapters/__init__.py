"""Networks from the JAX ecosystem as skbong models: flax (linen and nnx) and equinox.

An estimator's ``model`` is a pair ``init(key, n_features, n_outputs) -> params`` and
``apply(params, X) -> outputs``. The functions here turn a flax or equinox network into
such a model, an object with those two methods::

    from skbong import BongClassifier
    from skbong.adapters import from_flax

    clf = BongClassifier(model=from_flax(CNN(), input_shape=(8, 8, 1)))

A network given directly as ``model=`` is wrapped the same way, its inputs as they come,
shape ``(n, n_features)``. flax and equinox are optional (the ``jax-nn`` extra:
``pip install "skbong[jax-nn]"``); they are imported only when a network is wrapped.

**What is learned.** The floating-point parameters are learned: the ``"params"``
collection of a linen module, the :class:`flax.nnx.Param` variables of an nnx module,
the floating-point arrays of an equinox module. Everything else (batch-norm running
statistics, integer arrays, the module's structure and settings) is held fixed at its
value in the network, and the network runs in evaluation mode (dropout off, batch norm
from its running statistics): a linen module's ``__call__(x)`` must be deterministic;
nnx modules are switched with ``.eval()`` and equinox modules with
:func:`equinox.nn.inference_mode`. Stateful equinox layers (``eqx.nn.BatchNorm`` with
``eqx.nn.State``) are not supported.

**The prior mean** is the network's own initialisation. A linen module is initialised by
``module.init`` from the estimator's key, so ``random_state`` draws it, as it draws the
built-in networks. nnx and equinox modules are built already initialised (their
constructors run the initialisers from the caller's ``rngs`` or ``key``, and can take
any arguments), so the module's parameters when it is wrapped *are* the prior mean, and
``random_state`` does not change them: build the module from another key for another
draw.

**Equality, pickling and compiled programs.** An adapter compares equal, and hashes, by
value: the module's settings (linen), its graph and structure with a digest of its
arrays (nnx, equinox), and ``input_shape``. So a copy (``pickle``, ``copy.deepcopy``,
``sklearn.base.clone``) is the same model, and a fitted estimator keeps working after a
copy. Its ``init`` and ``apply`` compare the same way, so the clones of a grid search
share compiled programs. Pickling an adapter needs the network's classes importable by
name (defined at module level).
"""

import sys

import jax
import jax.numpy as jnp

from ._base import _digest, _import, _is_array, _Network, _to_host, _ValueMethod

__all__ = ["from_flax", "from_nnx", "from_equinox", "FlaxModel", "NNXModel", "EquinoxModel"]

class FlaxModel(_Network):
    """A flax linen module as an skbong model (made by :func:`from_flax`).

    ``init(key, n_features, n_outputs)`` runs ``module.init(key, x)`` on one zero row
    and returns its ``"params"`` collection; ``apply(params, X)`` runs
    ``module.apply`` on the rows of ``X`` reshaped to ``input_shape``, with the other
    collections (batch statistics) at their initial values.

    Parameters
    ----------
    module : flax.linen.Module
        The network; ``module(x)`` maps a batch ``(n, *input_shape)`` to ``(n, n_outputs)``.
    input_shape : tuple of int, default=None
        The shape of one row as the network takes it (e.g. ``(8, 8, 1)`` for 8×8 images
        with one channel); ``None``: the row as it is, ``(n_features,)``.
    """

    def __init__(self, module, input_shape=None):
        linen = _import("flax.linen")
        if not isinstance(module, linen.Module):
            raise TypeError(f"from_flax expects a flax.linen.Module, got {type(module).__name__}")
        super().__init__(input_shape)
        self.module = module
        self._label = type(module).__name__
        self._set_value()

    def _settings(self):
        return (self.module, self.input_shape)

    @_ValueMethod
    def init(self, key, n_features, n_outputs):
        """The ``"params"`` collection of ``module.init(key, x)``, the prior mean."""
        x = self._example(n_features, jnp.float32)
        variables = self.module.init(key, x)
        if "params" not in variables:
            raise ValueError(f"{self._label} has no parameters (no 'params' collection)")
        self._check_outputs(jax.eval_shape(self.module.apply, variables, x).shape, n_outputs)
        return variables["params"]

    @_ValueMethod
    def apply(self, params, X):
        """Outputs ``(n, n_outputs)`` for the rows of ``X``."""
        x = self._inputs(X)
        return self.module.apply({**self._constants(x), "params": params}, x)

    def _constants(self, x):
        """The collections other than ``"params"`` (batch statistics) at their initial
        values: ``module.init`` traced into the program that asks for them (its
        random draws are dead code there, which the compiler removes). Which collections
        there are is found once per input shape and dtype, none for most modules."""
        key = (x.shape[1:], jnp.dtype(x.dtype).name)
        cache = self.__dict__.setdefault("_cache_collections", {})
        zero = jnp.zeros((1, *x.shape[1:]), x.dtype)
        if key not in cache:
            shapes = jax.eval_shape(self.module.init, jax.random.PRNGKey(0), zero)
            cache[key] = tuple(n for n in shapes if n != "params")
        if not cache[key]:
            return {}
        variables = self.module.init(jax.random.PRNGKey(0), zero)
        return {n: variables[n] for n in cache[key]}


class NNXModel(_Network):
    """A flax nnx module as an skbong model (made by :func:`from_nnx`).

    The module (a copy, in evaluation mode) is split with ``nnx.split(module, nnx.Param,
    ...)``: ``init`` returns its :class:`~flax.nnx.Param` state, the prior mean (``key``
    is not used), and ``apply(params, X)`` merges them with the graph and the fixed rest
    of the state and calls the module on the rows of ``X``.

    Parameters
    ----------
    module : flax.nnx.Module
        The network, already initialised; ``module(x)`` maps a batch
        ``(n, *input_shape)`` to ``(n, n_outputs)``. It is copied: later changes to it
        do not reach the adapter.
    input_shape : tuple of int, default=None
        The shape of one row as the network takes it; ``None``: ``(n_features,)``.
    """

    def __init__(self, module, input_shape=None):
        nnx = _import("flax.nnx")
        if not isinstance(module, nnx.Module):
            raise TypeError(f"from_nnx expects a flax.nnx.Module, got {type(module).__name__}")
        super().__init__(input_shape)
        module = nnx.clone(module)
        module.eval()  # dropout off, batch norm from its running statistics
        graphdef, params, rest = nnx.split(module, nnx.Param, ...)
        self.graphdef = graphdef
        # as plain nested dicts: an nnx.State may lose its Variable wrappers in a deep copy
        self.params = jax.tree_util.tree_map(_to_host, nnx.to_pure_dict(params))
        self.rest = jax.tree_util.tree_map(_to_host, nnx.to_pure_dict(rest))
        self._label = type(module).__name__
        self._set_value()

    def _settings(self):
        return (self.graphdef, self.input_shape, _digest(self.params), _digest(self.rest))

    @_ValueMethod
    def init(self, key, n_features, n_outputs):
        """The module's parameters, the prior mean (``key`` is not used)."""
        return self._stored_params(n_features, n_outputs)

    @_ValueMethod
    def apply(self, params, X):
        """Outputs ``(n, n_outputs)`` for the rows of ``X``."""
        nnx = _import("flax.nnx")
        return nnx.merge(self.graphdef, params, self.rest)(self._inputs(X))


class EquinoxModel(_Network):
    """An equinox module as an skbong model (made by :func:`from_equinox`).

    The module (in inference mode) is split with ``eqx.partition(module,
    eqx.is_inexact_array)``: ``init`` returns its floating-point arrays, the prior mean
    (``key`` is not used), and ``apply(params, X)`` combines them with the static part
    and maps the module over the rows of ``X`` with :func:`jax.vmap` (an equinox module
    takes one example).

    Parameters
    ----------
    module : equinox.Module
        The network, already initialised; ``module(x)`` maps one example of shape
        ``input_shape`` to ``(n_outputs,)`` (or a scalar for one output).
    input_shape : tuple of int, default=None
        The shape of one example as the network takes it (e.g. ``(1, 8, 8)``,
        channels first, for ``eqx.nn.Conv2d``); ``None``: ``(n_features,)``.
    """

    def __init__(self, module, input_shape=None):
        eqx = _import("equinox")
        super().__init__(input_shape)
        module = eqx.nn.inference_mode(module)
        module = jax.tree_util.tree_map(_to_host, module)
        self.params, self.static = eqx.partition(module, eqx.is_inexact_array)
        self._label = type(module).__name__
        self._set_value()

    def _settings(self):
        leaves, static_def = jax.tree_util.tree_flatten(self.static)
        arrays = _digest([leaf for leaf in leaves if _is_array(leaf)])[0]
        others = tuple(leaf for leaf in leaves if not _is_array(leaf))
        return (static_def, others, self.input_shape, _digest(self.params)[0], arrays)

    @_ValueMethod
    def init(self, key, n_features, n_outputs):
        """The module's floating-point arrays, the prior mean (``key`` is not used)."""
        return self._stored_params(n_features, n_outputs)

    @_ValueMethod
    def apply(self, params, X):
        """Outputs ``(n, n_outputs)`` for the rows of ``X``."""
        eqx = _import("equinox")
        out = jax.vmap(eqx.combine(params, self.static))(self._inputs(X))
        return out.reshape(X.shape[0], -1)


def from_flax(module, input_shape=None):
    """A flax linen module as an skbong ``model``.

    Parameters
    ----------
    module : flax.linen.Module
        The network: ``module.apply(variables, x)`` maps a batch ``(n, *input_shape)``
        to ``(n, n_outputs)`` (for a classifier, one logit for two classes, one per
        class otherwise) and must be deterministic.
    input_shape : tuple of int, default=None
        The shape of one row as the network takes it (``(8, 8, 1)`` for 8×8 images
        with one channel, flax's channels-last layout); ``None``: ``(n_features,)``.

    Returns
    -------
    FlaxModel
        An object with ``init(key, n_features, n_outputs)`` (the ``"params"`` of
        ``module.init`` from the estimator's key: the prior mean) and
        ``apply(params, X)``; picklable, equal by value.

    Examples
    --------
    >>> import flax.linen as nn  # doctest: +SKIP
    >>> class CNN(nn.Module):  # doctest: +SKIP
    ...     @nn.compact
    ...     def __call__(self, x):
    ...         x = nn.relu(nn.Conv(4, (3, 3))(x))
    ...         return nn.Dense(10)(x.reshape(x.shape[0], -1))
    >>> clf = BongClassifier(model=from_flax(CNN(), input_shape=(8, 8, 1)))  # doctest: +SKIP
    """
    return FlaxModel(module, input_shape)


def from_nnx(module, input_shape=None):
    """A flax nnx module as an skbong ``model``.

    Parameters
    ----------
    module : flax.nnx.Module
        The network, already initialised: its :class:`~flax.nnx.Param` values are the
        prior mean. ``module(x)`` maps a batch ``(n, *input_shape)`` to
        ``(n, n_outputs)``; it is copied and run in evaluation mode (``.eval()``).
    input_shape : tuple of int, default=None
        The shape of one row as the network takes it; ``None``: ``(n_features,)``.

    Returns
    -------
    NNXModel
        An object with ``init(key, n_features, n_outputs)`` and ``apply(params, X)``;
        picklable, equal by value.
    """
    return NNXModel(module, input_shape)


def from_equinox(module, input_shape=None):
    """An equinox module as an skbong ``model``.

    Parameters
    ----------
    module : equinox.Module
        The network, already initialised: its floating-point arrays are the prior mean.
        ``module(x)`` maps one example of shape ``input_shape`` to ``(n_outputs,)``; it
        is mapped over the rows with :func:`jax.vmap`, in inference mode.
    input_shape : tuple of int, default=None
        The shape of one example as the network takes it (``(1, 8, 8)`` for 8×8 images
        with one channel, equinox's channels-first layout); ``None``: ``(n_features,)``.

    Returns
    -------
    EquinoxModel
        An object with ``init(key, n_features, n_outputs)`` and ``apply(params, X)``;
        picklable, equal by value.
    """
    return EquinoxModel(module, input_shape)


def _framework_of(model):
    """``"linen"``, ``"nnx"`` or ``"equinox"`` for a network of that library, else None.

    Only libraries already imported are looked at (a network's library is imported by
    the time the network exists), so this never imports flax or equinox."""
    linen, nnx, eqx = (sys.modules.get(m) for m in ("flax.linen", "flax.nnx", "equinox"))
    if linen is not None and isinstance(model, linen.Module):
        return "linen"
    if nnx is not None and isinstance(model, nnx.Module):
        return "nnx"
    if eqx is not None and isinstance(model, eqx.Module):
        return "equinox"
    return None


def _as_model(model):
    """``model`` as the estimators take it: a flax or equinox network given directly is
    wrapped (its inputs as they come); anything else is returned unchanged. An nnx or
    equinox module that already has callable ``init`` and ``apply`` follows skbong's
    protocol and is left as it is; a linen module's ``init`` and ``apply`` are flax's."""
    kind = _framework_of(model)
    if kind is None or isinstance(model, tuple):
        return model
    own = callable(getattr(model, "init", None)) and callable(getattr(model, "apply", None))
    if kind == "linen":
        return FlaxModel(model)
    if own:
        return model
    return NNXModel(model) if kind == "nnx" else EquinoxModel(model)
