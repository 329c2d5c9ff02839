"""Where skbong keeps compiled programs, and the switches of its two caches.

skbong compiles one program per static configuration and argument shapes (0.1–1 s each
on a CPU), and JAX keeps compiled programs in memory only. skbong therefore keeps its
own programs on disk, by default, in a folder of its own
(:func:`program_cache_dir`): a later process loads a program an earlier one compiled
instead of compiling it (:mod:`skbong.engine.program`). This touches no JAX setting and
caches skbong's programs only; :func:`set_compilation_cache` or ``SKBONG_CACHE=0``
turns it off.

:func:`enable_compilation_cache` is the older, explicit switch for JAX's own
persistent compilation cache, which is part of JAX's global configuration (it caches
every program of the process, the user's own included): skbong never turns it on by
itself.
"""

import os

import jax

_OFF = ("0", "false", "no", "off")
"""Values of ``SKBONG_CACHE`` that turn skbong's program cache off."""

_SETTINGS = {"enabled": None, "directory": None}
"""The choice made by :func:`set_compilation_cache` (``None``: not made; the environment
decides)."""


def _cache_root():
    """``$SKBONG_CACHE_DIR``, else ``$XDG_CACHE_HOME/skbong`` (``~/.cache/skbong``)."""
    if os.environ.get("SKBONG_CACHE_DIR"):
        return os.environ["SKBONG_CACHE_DIR"]
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "skbong")


def default_cache_dir():
    """``$SKBONG_CACHE_DIR``, else ``$XDG_CACHE_HOME/skbong/jax`` (``~/.cache/skbong/jax``):
    the directory of JAX's cache under :func:`enable_compilation_cache`."""
    if os.environ.get("SKBONG_CACHE_DIR"):
        return os.environ["SKBONG_CACHE_DIR"]
    return os.path.join(_cache_root(), "jax")


def program_cache_dir():
    """The directory of skbong's own program cache, or ``None`` where it is off.

    Read at each use (not on import): the directory given to
    :func:`set_compilation_cache`, else ``$SKBONG_CACHE_DIR/programs``, else
    ``$XDG_CACHE_HOME/skbong/programs`` (``~/.cache/skbong/programs``); ``None`` after
    ``set_compilation_cache(False)``, or, where that function was not called, when the
    environment variable ``SKBONG_CACHE`` is ``0``, ``false``, ``no`` or ``off``.

    Returns
    -------
    directory : str or None
    """
    enabled = _SETTINGS["enabled"]
    if enabled is None:
        enabled = os.environ.get("SKBONG_CACHE", "1").strip().lower() not in _OFF
    if not enabled:
        return None
    return _SETTINGS["directory"] or os.path.join(_cache_root(), "programs")


def set_compilation_cache(enabled=True, directory=None):
    """Turn skbong's on-disk cache of compiled programs on or off, or move it.

    The cache is on by default: each program skbong compiles (a fit's stream, a
    predictive, ...) is stored on disk, and a later process that needs the same
    program, for the same configuration, argument shapes and dtypes, skbong and JAX
    versions and device, loads it in milliseconds instead of compiling it (0.1–1 s
    each on a CPU). Only skbong's own programs are stored, in a folder of their own;
    JAX's configuration is not touched. A program of a user's model (a function, a
    flax or equinox network) is never stored: it is compiled in each process. An entry
    is checked (a checksum, the full key) before it is used, and a damaged or foreign
    one is ignored and replaced: the cache can make a first call faster, never its
    result different. Where the directory cannot be written, programs are kept in
    memory only (one warning). The oldest entries are removed beyond
    :data:`skbong.engine.program.MAX_BYTES` (256 MiB) in all.

    The choice holds for the rest of the process and takes precedence over the
    environment: without a call, the cache is on unless ``SKBONG_CACHE`` is ``0``,
    ``false``, ``no`` or ``off``, and its directory is ``$SKBONG_CACHE_DIR/programs``,
    else ``$XDG_CACHE_HOME/skbong/programs`` (``~/.cache/skbong/programs``). Programs
    already loaded in this process stay in use; delete the directory to reclaim the
    space. The directory should be as trusted as your home: its entries are unpickled.

    Parameters
    ----------
    enabled : bool, default=True
        Whether compiled programs are read from and written to disk.
    directory : str or path-like, default=None
        Where to keep them. ``None``: the default above.

    Returns
    -------
    directory : str or None
        The directory in use, ``None`` when the cache is off.

    Examples
    --------
    >>> import skbong
    >>> skbong.set_compilation_cache(False)  # compile in every process  # doctest: +SKIP
    >>> skbong.set_compilation_cache(True, "/tmp/skbong-programs")  # doctest: +SKIP
    '/tmp/skbong-programs'
    """
    if not isinstance(enabled, bool):
        raise TypeError(f"enabled must be a bool, got {enabled!r}")
    path = None if directory is None else os.path.abspath(os.fspath(directory))
    _SETTINGS.update(enabled=enabled, directory=path)
    return program_cache_dir()


def enable_compilation_cache(directory=None):
    """Store every compiled program of the process on disk, with JAX's persistent cache.

    skbong's own programs are already cached on disk by default
    (:func:`set_compilation_cache`), without this function. This one turns on JAX's
    persistent compilation cache for the whole process (it is JAX's global
    configuration: programs of other libraries and of the user's own code, a user's
    model included, are cached too), with no minimum compile time or size, so that
    skbong's small programs qualify. Call it once, before the first fit; a second call
    with another directory moves the cache. The cache is keyed by the program, the JAX
    version and the device, so a stale entry is never used; delete the directory to
    reclaim the space.

    Parameters
    ----------
    directory : str or path-like, default=None
        Where to keep the cache. ``None``: ``$SKBONG_CACHE_DIR`` if set, else
        ``$XDG_CACHE_HOME/skbong/jax`` (``~/.cache/skbong/jax``).

    Returns
    -------
    directory : str
        The directory in use (created if needed).

    Examples
    --------
    >>> import skbong
    >>> path = skbong.enable_compilation_cache()  # doctest: +SKIP
    >>> skbong.BongClassifier().fit(X, y)  # doctest: +SKIP

    In a fresh process the first ``fit`` of a configuration that any earlier process
    compiled loads its program instead of compiling it (measured in
    ``benchmarks/bench_latency.py``, :doc:`/performance`).
    """
    path = os.path.abspath(os.fspath(directory) if directory is not None else default_cache_dir())
    os.makedirs(path, exist_ok=True)
    jax.config.update("jax_compilation_cache_dir", path)
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", -1)
    jax.config.update("jax_enable_compilation_cache", True)
    return path


__all__ = [
    "default_cache_dir",
    "enable_compilation_cache",
    "program_cache_dir",
    "set_compilation_cache",
]
