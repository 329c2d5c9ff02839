"""Test-run setup: one program cache shared by the xdist workers.

The suite compiles the same engine programs in both workers (``-n 2``); with a cache
directory common to the run, a program one worker compiled is loaded by the other.
That is skbong's own program cache, on by default (:func:`skbong.set_compilation_cache`),
so the whole suite runs as users do, loading programs from disk; its
``SKBONG_CACHE_DIR`` is a fresh temporary directory per run, removed at the end, so that
no test reads or writes the user's home.

The suite is bound by compiling (about 1,900 tests, most of them building programs of
new shapes), so the test processes compile with two XLA:CPU options added to
``XLA_FLAGS`` before JAX starts its backend (children inherit them):
``--xla_backend_optimization_level=0`` (no LLVM optimisation) and
``--xla_cpu_use_fusion_emitters=false`` (XLA's elemental emitters instead of its MLIR
fusion emitters, which took most of the rest: the 13 stream programs of the default
classifier's scikit-learn checks compiled in 3.4 instead of 9.7 s). The programs are
the same XLA programs; only their code generation differs, and with it the last bits of
some results (fused multiply-adds, reduction orders), which every tolerance here must
absorb anyway. On the 2-core machine the suite took 1,228 s with XLA's defaults, 887 s
with the first option and 543–650 s with both.
``SKBONG_TEST_XLA_DEFAULT=1`` keeps XLA's default code generation, the users'; a flag
the user already set in ``XLA_FLAGS`` is kept too. The suite passes both ways. (The
fusion emitters are not turned off for users: their programs run up to 2.2× slower
without them, e.g. the full family at P = 100 at 7.4 instead of 3.3 µs per step.)
"""

import collections
import os
import shutil
import tempfile

import jax
import pytest

from skbong.engine.program import clear as clear_programs

_PROGRAMS_ENV = "SKBONG_CACHE_DIR"
_FAST_COMPILE = ("--xla_backend_optimization_level=0", "--xla_cpu_use_fusion_emitters=false")
"""The XLA options the test processes compile with (module docstring)."""


def pytest_configure(config):
    flags = os.environ.get("XLA_FLAGS", "")
    if not os.environ.get("SKBONG_TEST_XLA_DEFAULT"):
        chosen = [f for f in _FAST_COMPILE if f.split("=")[0] not in flags]
        os.environ["XLA_FLAGS"] = " ".join([flags, *chosen]).strip()
    if not hasattr(config, "workerinput") and not os.environ.get("SKBONG_TEST_CACHE"):
        os.environ["SKBONG_TEST_CACHE"] = "1"  # the controller: one folder for the run
        os.environ[_PROGRAMS_ENV] = tempfile.mkdtemp(prefix="skbong-programs-")
        config._skbong_cache_owner = True


QUICK_LANE = frozenset({
    "test_conjugate.py", "test_errors.py", "test_estimators.py", "test_estimators_mc.py",
    "test_imports.py", "test_linalg.py", "test_mutants.py", "test_names.py", "test_passes.py", "test_models.py", "test_paper_merge.py", "test_pipeline.py",
    "test_plotting.py", "test_posterior.py", "test_precision.py", "test_progress.py",
    "test_refine.py", "test_robustness.py", "test_special_cases.py", "test_split.py",
    "test_stream.py", "test_variational_stopping.py",
})
"""The modules of the quick lane, ``python -m pytest -m "not slow"`` (under two minutes on
two cores): the closed forms and identities of the conjugate case, the stream, the
estimators' contract and errors, the special cases and the refinement. Every other
module is marked ``slow`` at collection (the whole suite runs them all); so is any test
marked ``slow`` itself."""


def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.path.name not in QUICK_LANE:
            item.add_marker(pytest.mark.slow)


def pytest_unconfigure(config):
    if getattr(config, "_skbong_cache_owner", False):
        os.environ.pop("SKBONG_TEST_CACHE", None)
        shutil.rmtree(os.environ.pop(_PROGRAMS_ENV), ignore_errors=True)


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


@pytest.fixture(autouse=True, scope="module")
def _fresh_programs_per_module():
    """Drop the compiled programs after each test module: a worker of the whole suite
    otherwise holds every program it built (several GB of XLA:CPU code and buffers).
    Programs still come back from the run's program cache when a later module needs
    them."""
    yield
    jax.clear_caches()
    clear_programs()
