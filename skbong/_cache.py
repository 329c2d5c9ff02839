"""An explicit switch for a persistent compilation cache (:func:`enable_compilation_cache`).

skbong compiles one stream program per static configuration (about a second on a CPU);
JAX keeps compiled programs in memory only, so every new process pays again. JAX's
persistent compilation cache stores them on disk. It is part of JAX's global
configuration, so skbong never turns it on by itself (importing skbong changes no JAX
setting): a user, a script or a service that wants warm starts calls this function once.
"""

import os

import jax


def default_cache_dir():
    """``$SKBONG_CACHE_DIR``, else ``$XDG_CACHE_HOME/skbong/jax`` (``~/.cache/skbong/jax``)."""
    if os.environ.get("SKBONG_CACHE_DIR"):
        return os.environ["SKBONG_CACHE_DIR"]
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "skbong", "jax")


def enable_compilation_cache(directory=None):
    """Store compiled programs on disk, so that a later process skips their compilation.

    This turns on JAX's persistent compilation cache for the whole process (it is JAX's
    global configuration: programs of other libraries and of the user's own code are
    cached too), with no minimum compile time or size, so that skbong's small programs
    qualify. Call it once, before the first fit; a second call with another directory
    moves the cache. The cache is keyed by the program, the JAX version and the
    device, so a stale entry is never used; delete the directory to reclaim the space.

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


__all__ = ["default_cache_dir", "enable_compilation_cache"]
