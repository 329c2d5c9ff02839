"""Test-session setup: one persistent JAX compilation cache shared by the xdist workers.

The suite compiles the same engine programs in both workers (``-n 2``); with a cache
directory common to the session, a program one worker compiled is loaded by the other.
This configures JAX for the test processes only, through the library's explicit switch
(:func:`skbong.enable_compilation_cache`; importing skbong changes no JAX setting); the
directory is a fresh temporary one per session, removed at the end.

The suite is bound by compiling (about 1,900 tests, most of them building programs of
new shapes), so the test processes also compile with XLA's LLVM backend at optimisation
level 0 (``--xla_backend_optimization_level=0`` added to ``XLA_FLAGS`` before JAX starts
its backend; children inherit it). The programs are the same XLA programs; only LLVM's
code generation differs, and with it the last bits of some results (fused multiply-adds),
which every tolerance here must absorb anyway. On the 2-core machine this took the suite
from 1,228 to 887 s (stop 40). ``SKBONG_TEST_XLA_DEFAULT=1`` keeps XLA's default code
generation, the users' (the whole suite passed both ways at stop 40).
"""

import collections
import os
import shutil
import tempfile

import jax
import pytest

from skbong import enable_compilation_cache

_ENV = "SKBONG_TEST_JAX_CACHE"
_FAST_COMPILE = "--xla_backend_optimization_level=0"


def pytest_configure(config):
    flags = os.environ.get("XLA_FLAGS", "")
    if not os.environ.get("SKBONG_TEST_XLA_DEFAULT") and _FAST_COMPILE not in flags:
        os.environ["XLA_FLAGS"] = f"{flags} {_FAST_COMPILE}".strip()
    if not hasattr(config, "workerinput") and _ENV not in os.environ:  # the controller
        os.environ[_ENV] = tempfile.mkdtemp(prefix="skbong-jax-cache-")
        config._skbong_cache_owner = True
    enable_compilation_cache(os.environ[_ENV])


def pytest_unconfigure(config):
    if getattr(config, "_skbong_cache_owner", False):
        shutil.rmtree(os.environ.pop(_ENV), ignore_errors=True)


@pytest.fixture
def compiles():
    """Counts the XLA programs built while the test runs, by function name (JAX's public
    monitoring event of each backend compilation, a persistent-cache hit included): what
    a test of "programs compiled" means, where a jitted function's ``_cache_size()`` also
    counts dispatch signatures (numpy against JAX arguments) that share one program."""
    counts = collections.Counter()

    def listen(event, duration, fun_name="", **kwargs):
        if event == "/jax/core/compile/backend_compile_duration":
            counts[fun_name] += 1  # "jit(name)"

    jax.monitoring.register_event_duration_secs_listener(listen)
    yield counts
    jax.monitoring.unregister_event_duration_listener(listen)
