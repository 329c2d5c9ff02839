"""Test-session setup: one persistent JAX compilation cache shared by the xdist workers.

The suite compiles the same engine programs in both workers (``-n 2``); with a cache
directory common to the session, a program one worker compiled is loaded by the other.
This configures JAX for the test processes only (the library never changes JAX's
configuration); the directory is a fresh temporary one per session, removed at the end.
"""

import os
import shutil
import tempfile

import jax

_ENV = "SKBONG_TEST_JAX_CACHE"


def pytest_configure(config):
    if not hasattr(config, "workerinput") and _ENV not in os.environ:  # the controller
        os.environ[_ENV] = tempfile.mkdtemp(prefix="skbong-jax-cache-")
        config._skbong_cache_owner = True
    jax.config.update("jax_compilation_cache_dir", os.environ[_ENV])
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", -1)


def pytest_unconfigure(config):
    if getattr(config, "_skbong_cache_owner", False):
        shutil.rmtree(os.environ.pop(_ENV), ignore_errors=True)
