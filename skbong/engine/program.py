"""The engine's compiled programs: ``jax.jit`` with float32 matrix products in float32.

On GPUs with tensor cores, XLA's default precision computes a float32 matrix product
in TensorFloat-32 (a 10-bit mantissa, relative error ≈ 5e-4), and every Gram matrix,
Woodbury solve and Jacobian product of a belief update would carry that error into the
posterior: on an NVIDIA H200 the dlr family's float32 conjugate oracle
(``tests/test_conjugate.py``) was off by 6.1e-4 against its float32 tolerance of 1e-5.
So every program of skbong traces its body under
``jax.default_matmul_precision("highest")``, the user's model included, unless the user
chose a precision themselves (``jax_default_matmul_precision``, globally or with the
same context manager around the call): theirs is then kept. The context covers the
tracing of skbong's own programs only; JAX's configuration is never changed. On CPUs a
float32 product is computed in float32 either way, so nothing changes there.

Every program is also kept on disk, by default, so that a later process loads it in
milliseconds instead of compiling it (:func:`skbong.set_compilation_cache`): a call
looks its program up in memory under a key computed without tracing (the static
arguments, the tree structure, shapes, dtypes and weak types of the others, and JAX's
tracing context), and on a miss reads the disk entry of the same key extended by
:func:`._store.environment`, or compiles and writes one. Whatever cannot be keyed
stably (a user's model among the static arguments, a tracer among the others, a JAX
context such as a mesh, a backend with several devices, to whose assignment an
executable is bound) goes to ``jax.jit`` as before, in memory only.
"""

import functools
import inspect
import threading
import warnings
import weakref

import jax
import numpy as np

from . import _store
from . import cache as _cache

try:  # the tuple of configuration values that ``jax.jit`` keys its own cache on
    from jax._src.config import trace_context as _trace_context
except ImportError:  # pragma: no cover - another JAX: no disk cache, plain jit
    _trace_context = None
try:  # JAX's array type, whose ``aval`` (shape, dtype, weak type) is a cached attribute
    from jax._src.array import ArrayImpl as _ARRAY
except ImportError:  # pragma: no cover
    _ARRAY = None

_flatten = jax.tree_util.tree_flatten

__all__ = ["program", "PRECISION", "MAX_BYTES", "cache_info", "clear"]

PRECISION = "highest"
"""The matrix-product precision of skbong's programs where the user chose none."""

MAX_BYTES = 256 * 2**20
"""The most bytes of entries the program cache's folder keeps: beyond, the least
recently used are deleted after each write."""

_UNKEYED = object()
"""A dynamic argument with no stable signature (e.g. a tracer)."""

_DEFAULT = "<default>"
"""A static argument left to its default (the code fixes it)."""

_PROGRAMS = weakref.WeakSet()
_LOCK = threading.Lock()
_INFO = {"disk_hits": 0, "compiles": 0, "writes": 0, "bad_entries": 0}
_UNWRITABLE = set()  # folders that failed a write, warned about once


def cache_info():
    """Counts of this process's program lookups past the in-memory fast path.

    Returns
    -------
    dict
        ``disk_hits`` (programs loaded from disk), ``compiles`` (programs compiled for
        the cache), ``writes`` (entries written) and ``bad_entries`` (entries found
        damaged or stale, deleted and compiled again).
    """
    return dict(_INFO)


def clear():
    """Drop every program held in memory (the disk entries stay), as
    :func:`jax.clear_caches` does for JAX's, and reset :func:`cache_info`."""
    for prog in list(_PROGRAMS):
        prog._memory.clear()
    for name in _INFO:
        _INFO[name] = 0


def _full_precision(fn):
    """``fn`` traced under :data:`PRECISION`, or under the user's own choice if any."""

    @functools.wraps(fn)
    def traced(*args, **kwargs):
        if jax.config.jax_default_matmul_precision is not None:
            return fn(*args, **kwargs)
        with jax.default_matmul_precision(PRECISION):
            return fn(*args, **kwargs)

    return traced


def _array_sig(x):
    return (x.shape, x.dtype, False)


_SIG = {bool: type, int: type, float: type, complex: type, np.ndarray: _array_sig}
"""Signature of a dynamic leaf other than a JAX array (whose ``aval`` is its signature)
by its exact type: a Python scalar is weakly typed, its dtype fixed by
``jax_enable_x64`` (in the tracing context); a numpy array or scalar by shape and dtype.
Other types (a tracer, ...) have none: :data:`_UNKEYED`."""


def _leaf_sig(x):
    """The abstract signature of a dynamic argument leaf, or :data:`_UNKEYED`."""
    sig = _SIG.get(type(x))
    if sig is None:
        sig = _SIG[type(x)] = _array_sig if isinstance(x, np.generic) else _unkeyed
    return sig(x)


def _unkeyed(x):
    return _UNKEYED


def _leaf_text(sig):
    """:func:`_leaf_sig` (or a JAX array's ``aval``) as stable text."""
    if isinstance(sig, type):
        return f"py:{sig.__name__}"
    if isinstance(sig, tuple):  # a numpy array's: the text of a JAX array's aval, so
        # that the two share an entry (their programs are one)
        sig = jax.core.ShapedArray(sig[0], np.dtype(sig[1]))
    return repr(sig)


class Program:
    """A jitted function whose compiled programs are kept in memory and on disk.

    Called like the function; ``lower``, ``trace``, ``eval_shape`` and the other
    attributes of the :func:`jax.jit` object are those of the jitted function
    (``jitted``), and ``__wrapped__``, ``__doc__`` and ``__name__`` the function's.
    """

    def __init__(self, fn, static_argnames, persist=None):
        static_argnames = (static_argnames,) if isinstance(static_argnames, str) else tuple(static_argnames)
        self.jitted = jax.jit(_full_precision(fn), static_argnames=static_argnames)
        functools.update_wrapper(self, fn)
        self._name = f"{fn.__module__}.{fn.__qualname__}"
        if persist is None:  # skbong's own module-level functions: the key hashes their code
            persist = fn.__module__.startswith("skbong.") and "<" not in fn.__qualname__
        self._persist = bool(persist)
        params = list(inspect.signature(fn).parameters.values())
        positional = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        self._static = tuple(
            (name, positional.index(name) if name in positional else None) for name in static_argnames
        )
        self._static_names = frozenset(static_argnames)
        self._layouts = {}
        self._memory = {}
        _PROGRAMS.add(self)

    def __getattr__(self, name):  # lower, trace, eval_shape, ... of the jitted function
        if name == "jitted":
            raise AttributeError(name)
        return getattr(self.jitted, name)

    def __get__(self, obj, objtype=None):  # a plain function: not bound as a method
        return self

    def clear_cache(self):
        """Drop this program's compiled versions, as ``jax.jit``'s ``clear_cache`` does.

        A caller clears a program when its trace may now differ from its code (a module
        constant read at tracing, patched): from then on, in this process, it is plain
        :func:`jax.jit`, neither loaded from nor written to disk, whose key would not
        see the difference.
        """
        self.jitted.clear_cache()
        self._memory.clear()
        self._persist = False

    def _cache_size(self):
        """Compiled versions held in memory (``jax.jit``'s count plus this cache's)."""
        return self.jitted._cache_size() + len(self._memory)

    def _layout(self, n_args):
        """For calls with ``n_args`` positional arguments: the positions of the static
        ones (``None``: passed by keyword or left to the default) and of the others."""
        layout = self._layouts.get(n_args)
        if layout is None:
            statics = tuple(i if i is not None and i < n_args else None for _, i in self._static)
            dynamic = tuple(i for i in range(n_args) if i not in statics)
            layout = self._layouts[n_args] = (statics, dynamic)
        return layout

    def _split(self, args, kwargs):
        """``(statics, dynamic args, dynamic kwargs)`` of a call."""
        statics, dynamic = self._layout(len(args))
        if kwargs:
            static = tuple([
                kwargs.get(name, _DEFAULT) if i is None else args[i]
                for (name, _), i in zip(self._static, statics)
            ])
            kwargs = {k: v for k, v in kwargs.items() if k not in self._static_names}
        else:
            static = tuple([_DEFAULT if i is None else args[i] for i in statics])
        if len(dynamic) != len(args):
            args = tuple([args[i] for i in dynamic])
        return static, args, kwargs

    def __call__(self, *args, **kwargs):
        if not self._persist:
            return self.jitted(*args, **kwargs)
        statics, dyn_args, dyn_kwargs = self._split(args, kwargs)
        leaves, tree = _flatten((dyn_args, dyn_kwargs))
        sigs = tuple([x.aval if type(x) is _ARRAY else _leaf_sig(x) for x in leaves])
        key = (statics, tree, sigs, _trace_context and _trace_context())
        try:
            executable = self._memory.get(key)
        except TypeError:  # an unhashable static argument: jit says so
            return self.jitted(*args, **kwargs)
        if executable is not None:
            return executable(*dyn_args, **dyn_kwargs)
        return self._miss(key, args, kwargs, dyn_args, dyn_kwargs)

    def _disk_key(self, key):
        """The full text key of a call (its disk entry's), or ``None`` where some part
        has no stable text."""
        statics, tree, sigs, context = key
        if _trace_context is None or _UNKEYED in sigs or jax.config.jax_disable_jit:
            return None
        if jax.device_count() != 1:  # an executable is bound to its device assignment
            return None
        tokens = [_store.token(v) if v is not _DEFAULT else _DEFAULT for v in statics]
        context_text = _store.context_token(context)
        if None in tokens or context_text is None:
            return None
        names = [name for name, _ in self._static]
        return "\n".join([
            _store.environment(),
            f"program:{self._name}",
            "static:" + ";".join(f"{n}={t}" for n, t in zip(names, tokens)),
            f"tree:{tree}",
            "args:" + ";".join(map(_leaf_text, sigs)),
            f"context:{context_text}",
        ])

    def _miss(self, key, args, kwargs, dyn_args, dyn_kwargs):
        """A call whose program this process does not hold: load it, or compile it."""
        directory = None if _jax_cache_on() else _cache.program_cache_dir()
        key_text = None if directory is None else self._disk_key(key)
        if key_text is None:
            return self.jitted(*args, **kwargs)
        executable = _load(directory, key_text, key[1])
        if executable is not None:
            try:  # the first run, waited for: XLA reports a failed run when it is read
                out = jax.block_until_ready(executable(*dyn_args, **dyn_kwargs))
            except Exception:  # noqa: BLE001 - an entry that does not fit: compile
                _bad_entry(directory, key_text)
            else:
                self._memory[key] = executable
                _INFO["disk_hits"] += 1
                return out
        executable = self.jitted.lower(*args, **kwargs).compile()
        _INFO["compiles"] += 1
        self._memory[key] = executable
        _save(directory, key_text, executable)
        return executable(*dyn_args, **dyn_kwargs)


def _jax_cache_on():
    """Whether JAX's own persistent compilation cache is on (``jax_compilation_cache_dir``,
    set by the user or by :func:`skbong.enable_compilation_cache`). It then stores
    skbong's programs itself, and this cache steps aside: an executable that JAX's cache
    loaded, serialized again, gives an entry whose fused kernels are missing when loaded
    ("Function ... not found"), so nothing is written or read here."""
    return bool(jax.config.jax_compilation_cache_dir) and jax.config.jax_enable_compilation_cache


def _bad_entry(directory, key_text):
    _store.discard(directory, key_text)
    _INFO["bad_entries"] += 1


@functools.cache
def _runtime_ready():
    """Prepare what a loaded program calls into and its compilation would have prepared:
    the LAPACK kernels of XLA:CPU's linear algebra, set up on a program's first lowering
    (JAX does the same before running a deserialized export). A CPU program with a
    Cholesky or eigendecomposition loaded without it crashes the process. ``False``
    (nothing is loaded from disk) where this JAX has no such hook."""
    try:
        from jax._src.lax.linalg import initialize_lapack
    except ImportError:  # pragma: no cover - another JAX: compile, never load
        return False
    initialize_lapack()
    return True


def _load(directory, key_text, tree):
    """The executable stored for ``key_text``, or ``None`` (a damaged entry is
    deleted)."""
    from jax.experimental.serialize_executable import deserialize_and_load

    if not _runtime_ready():
        return None
    serialized = _store.read(directory, key_text)
    if serialized is None:
        return None
    if serialized is _store.DAMAGED:
        _INFO["bad_entries"] += 1
        return None
    try:
        executable = deserialize_and_load(*serialized)
        if executable.in_tree != tree:
            raise ValueError("the entry's argument structure differs")
    except Exception:  # noqa: BLE001 - any failure to load is a miss
        _bad_entry(directory, key_text)
        return None
    return executable


def _save(directory, key_text, executable):
    """Write the entry of a compiled program; where the folder cannot be written, warn
    once and keep programs in memory only."""
    from jax.experimental.serialize_executable import serialize

    if directory in _UNWRITABLE:
        return
    try:
        serialized = serialize(executable)
    except Exception:  # noqa: BLE001 - a program JAX cannot serialize stays in memory
        return
    try:
        with _LOCK:
            _store.write(directory, key_text, serialized)
            _store.evict(directory, MAX_BYTES)
    except OSError as err:
        _UNWRITABLE.add(directory)
        warnings.warn(
            f"skbong's compilation cache cannot write to {directory!r} ({err}); compiled "
            "programs are kept in memory only (skbong.set_compilation_cache moves or "
            "turns off the cache)",
            RuntimeWarning,
            stacklevel=4,
        )
        return
    _INFO["writes"] += 1


def program(fn=None, *, static_argnames=(), persist=None):
    """``jax.jit(fn, static_argnames=...)`` whose float32 products keep float32 precision
    and whose compiled programs are cached on disk (module docstring).

    Use as ``@program`` or ``@program(static_argnames=("config",))``.

    Parameters
    ----------
    fn : callable, optional
        The function to compile; omitted, a decorator is returned.
    static_argnames : str or tuple of str
        As for :func:`jax.jit`.
    persist : bool or None, default=None
        Whether its compiled programs are kept (in memory and on disk) under the cache's
        key. ``None``: for a module-level function of skbong, whose source the key
        hashes; a function elsewhere, a lambda or a closure is then plain
        :func:`jax.jit`, compiled in each process. ``True`` vouches that the code of
        ``fn`` and of what it calls does not change between processes sharing the
        cache (the key does not see it).

    Returns
    -------
    Program
        Called like ``fn``; its ``lower``, ``__wrapped__`` and docstring as
        :func:`jax.jit` gives them.
    """
    if fn is None:
        return functools.partial(program, static_argnames=static_argnames, persist=persist)
    return Program(fn, static_argnames, persist)
