"""Test-session setup: one persistent JAX compilation cache shared by the xdist workers.

The suite compiles the same engine programs in both workers (``-n 2``); with a cache
directory common to the session, a program one worker compiled is loaded by the other.
This configures JAX for the test processes only, through the library's explicit switch
(:func:`skbong.enable_compilation_cache`; importing skbong changes no JAX setting); the directory is a fresh temporary one per session, removed at the end.
"""

import collections
import os
import shutil
import tempfile

import jax
import pytest

from skbong import enable_compilation_cache

_ENV = "SKBONG_TEST_JAX_CACHE"


def pytest_configure(config):
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
