"""Test-session setup: one persistent JAX compilation cache shared by the xdist workers.

The suite compiles the same engine programs in both workers (``-n 2``); with a cache
directory common to the session, a program one worker compiled is loaded by the other.
This configures JAX for the test processes only, through the library's explicit switch
(:func:`skbong.enable_compilation_cache`; importing skbong changes no JAX setting); the directory is a fresh temporary one per session, removed at the end.
"""

import os
import shutil
import tempfile

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
