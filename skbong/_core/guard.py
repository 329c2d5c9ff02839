"""The fork guard: skbong refuses to compute in a process forked after JAX started."""

import os

# JAX starts a multithreaded runtime (XLA's thread pools) the first time it computes. A
# child created by os.fork() after that inherits the runtime's locks but not its
# threads, and its first JAX computation deadlocks (joblib's "multiprocessing" backend,
# multiprocessing's "fork" start method). A fork handler records in the child that the
# parent had started JAX; every entry point that would reach JAX then raises instead.

_FORKED_AFTER_JAX = False
"""True in a process forked after JAX had started in its parent."""

_ENGINE_USED = False
"""True once skbong has called JAX in this process (a fallback record for the check)."""

FORK_MESSAGE = (
    "skbong cannot compute in this process: it was created by os.fork() after JAX had "
    "started in the parent process (joblib's 'multiprocessing' backend, multiprocessing's "
    "'fork' start method, or a bare os.fork). JAX is multithreaded and deadlocks in such a "
    "child, so this call fails instead of hanging. Use joblib's default 'loky' backend, "
    "multiprocessing.get_context('spawn') or 'forkserver', or threads; or fork before the "
    "parent first uses JAX."
)


def _jax_started():
    """Whether this process has started a JAX backend.

    Reads JAX's backend registry without taking its lock (this runs in a freshly forked
    child, where a lock held by another parent thread would never be released); falls
    back to skbong's own record if that private name ever moves.
    """
    try:
        from jax._src import xla_bridge

        started = bool(xla_bridge._backends)
    except (ImportError, AttributeError):  # pragma: no cover - JAX internals moved
        started = False
    return started or _ENGINE_USED


def _after_fork_in_child():
    global _FORKED_AFTER_JAX
    if _jax_started():
        _FORKED_AFTER_JAX = True


if hasattr(os, "register_at_fork"):  # POSIX
    os.register_at_fork(after_in_child=_after_fork_in_child)


def _check_not_forked():
    """Raise RuntimeError in a child forked after JAX started (see :data:`FORK_MESSAGE`)."""
    global _ENGINE_USED
    if _FORKED_AFTER_JAX:
        raise RuntimeError(FORK_MESSAGE)
    _ENGINE_USED = True
