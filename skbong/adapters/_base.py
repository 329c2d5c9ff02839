"""What the network adapters of :mod:`skbong.adapters` share: equality and hashing by
value (so copies of a model are the same model and share compiled programs), methods
that pickle by value, and the reshaping and width checks of :class:`_Network`.

flax and equinox are never imported here.
"""

import hashlib
import importlib
import math

import jax
import jax.numpy as jnp
import numpy as np

_INSTALL = 'pip install "skbong[jax-nn]"'


def _import(name):
    try:
        return importlib.import_module(name)
    except ImportError as err:  # pragma: no cover - depends on the environment
        raise ImportError(f"{name} is needed for this model; {_INSTALL} installs it") from err


class _ValueMethod:
    """A method whose bound form compares and hashes by its instance's value (``==``)
    rather than by the instance's identity, as Python's bound methods do: the engine's
    model holds the bound ``init`` and ``apply``, and ``jax.jit`` keys its compiled
    programs on that model's ``==`` and ``hash``. On the class it is the plain function
    (what autodoc documents)."""

    def __init__(self, fn):
        self.fn = fn

    def __get__(self, obj, owner=None):
        return self.fn if obj is None else _BoundMethod(obj, self.fn)


class _BoundMethod:
    __slots__ = ("obj", "fn", "__weakref__")

    def __init__(self, obj, fn):
        self.obj, self.fn = obj, fn

    def __call__(self, *args):
        return self.fn(self.obj, *args)

    def __eq__(self, other):
        return isinstance(other, _BoundMethod) and self.fn is other.fn and self.obj == other.obj

    def __hash__(self):
        return hash((self.fn, self.obj))

    def __repr__(self):
        return f"<{self.fn.__qualname__} of {self.obj!r}>"


def _to_host(leaf):
    """A JAX array as numpy (typed PRNG keys, which numpy cannot hold, as they are)."""
    if isinstance(leaf, jax.Array) and not jnp.issubdtype(leaf.dtype, jax.dtypes.prng_key):
        return np.asarray(leaf)
    return leaf


def _is_array(leaf):
    return isinstance(leaf, (np.ndarray, jax.Array))


def _digest(tree):
    """SHA-256 of a pytree's structure and of its array leaves' dtypes, shapes and bytes;
    the other leaves are returned aside (compared by their own ``==``)."""
    leaves, treedef = jax.tree_util.tree_flatten(tree)
    h, others = hashlib.sha256(str(treedef).encode()), []
    for leaf in leaves:
        if not _is_array(leaf):
            others.append(leaf)
            continue
        if jnp.issubdtype(leaf.dtype, jax.dtypes.prng_key):
            h.update(str(jax.random.key_impl(leaf)).encode())
            leaf = jax.random.key_data(leaf)
        leaf = np.ascontiguousarray(leaf)
        h.update(f"{leaf.dtype.str}{leaf.shape}".encode())
        h.update(leaf.tobytes())
    return h.hexdigest(), tuple(others)


def _hash_or_identity(value, obj):
    """``(value, hash)``; where ``value`` holds an unhashable setting, the adapter falls
    back to the identity of ``obj``."""
    try:
        return value, hash(value)
    except TypeError:
        value = ("identity", id(obj))
        return value, hash(value)


class _Network:
    """What the three adapters share: the reshaping of the rows of ``X`` into the
    network's input, the checks of the input and output widths, equality by value,
    and pickling without caches."""

    _value = ()
    _hash = 0
    _label = ""

    def __init__(self, input_shape):
        if input_shape is not None:
            input_shape = tuple(int(s) for s in np.atleast_1d(input_shape))
            if any(s < 1 for s in input_shape):
                raise ValueError(f"input_shape must hold positive sizes, got {input_shape}")
        self.input_shape = input_shape

    def _inputs(self, X):
        """The rows of ``X`` (n, n_features) in the network's input shape."""
        return X if self.input_shape is None else X.reshape(X.shape[0], *self.input_shape)

    def _example(self, n_features, dtype):
        """A zero input of one row, shape (1, *input_shape)."""
        shape = (n_features,) if self.input_shape is None else self.input_shape
        if math.prod(shape) != n_features:
            raise ValueError(
                f"input_shape={self.input_shape} holds {math.prod(shape)} values per row, but "
                f"X has {n_features} features"
            )
        return jnp.zeros((1, *shape), dtype)

    def _stored_params(self, n_features, n_outputs):
        """The parameters held by the adapter (the module as built: the prior mean of
        nnx and equinox), after checking the network's output width on one row."""
        params = jax.tree_util.tree_map(jnp.asarray, self.params)
        x = self._example(n_features, jnp.float32)
        self._check_outputs(jax.eval_shape(self.apply, params, x).shape, n_outputs)
        return params

    @staticmethod
    def _check_outputs(shape, n_outputs):
        width = math.prod(shape[1:])
        if width != n_outputs:
            raise ValueError(
                f"the network has {width} outputs per row where the estimator needs "
                f"{n_outputs}: one per regression target; for a classifier, one logit for "
                "two classes and one per class otherwise"
            )

    def __eq__(self, other):
        if self is other:
            return True
        return type(other) is type(self) and self._value == other._value

    def __hash__(self):
        return self._hash

    def __repr__(self):  # cheap: the estimator reads its parameters' repr on every call
        shape = "" if self.input_shape is None else f", input_shape={self.input_shape}"
        return f"{type(self).__name__}({self._label}{shape})"

    def _settings(self):
        """What the adapter is, by value (a tuple; a subclass's)."""
        raise NotImplementedError

    def _set_value(self):
        """Compute the value compared by ``==`` and its hash (again after unpickling:
        a hash of strings differs from one process to the next)."""
        self._value, self._hash = _hash_or_identity(self._settings(), self)

    def __getstate__(self):  # the value is computed again, caches are rebuilt
        skip = ("_value", "_hash")
        return {k: v for k, v in self.__dict__.items() if k not in skip and "_cache" not in k}

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._set_value()
