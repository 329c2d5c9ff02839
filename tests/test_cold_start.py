"""Cold start: ``import skbong`` is light, and the explicit compilation cache makes a
second process compile nothing.

Each case runs a fresh interpreter: what is imported and what is compiled are facts of a
new process, and JAX keeps compiled programs in memory for the life of this one.
"""

import json
import os
import subprocess
import sys
import textwrap

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _run(script, *args):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JAX_", "SKBONG_"))}
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    env["SKBONG_CACHE"] = "0"  # JAX's cache is under test here, not skbong's own
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script), *args],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_import_loads_neither_jax_nor_sklearn():
    got = _run(
        """
        import json, sys
        import skbong
        heavy = sorted(m for m in ("jax", "sklearn", "scipy", "pandas") if m in sys.modules)
        names = {n: type(getattr(skbong, n)).__name__ for n in skbong.__all__}
        print(json.dumps({"heavy": heavy, "names": names, "dir": sorted(dir(skbong))}))
        """
    )
    assert got["heavy"] == []
    # every public name resolves on first use, and dir() lists it
    assert set(got["names"]) == {
        "BongClassifier", "BongPoissonRegressor", "BongRegressor", "DivergenceWarning",
        "NonFiniteUpdateError", "OutliersWarning",
        "SkippedRowsWarning", "StreamingPipeline", "VariationalClassifier",
        "VariationalRegressor", "enable_compilation_cache", "expected_failed_checks",
        "fit_partitions", "make_streaming_pipeline", "merge_posteriors",
        "set_compilation_cache", "__version__",
    }
    assert got["names"]["BongRegressor"] == "type" and got["names"]["__version__"] == "str"
    assert set(got["names"]) <= set(got["dir"])


def test_unknown_attribute_raises_attribute_error():
    import skbong

    with pytest.raises(AttributeError, match="no attribute 'BongRegresor'"):
        skbong.BongRegresor  # noqa: B018


_FIT = """
    import collections, json, sys
    import jax
    events = collections.Counter()
    jax.monitoring.register_event_listener(lambda name, **kw: events.update([name]))
    import numpy as np
    import skbong
    if sys.argv[1] != "-":
        skbong.enable_compilation_cache(sys.argv[1])
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 3))
    clf = skbong.BongClassifier(random_state=0).fit(X, (X[:, 0] > 0).astype(int))
    clf.predict_proba(X[:2])
    print(json.dumps({
        "hits": events["/jax/compilation_cache/cache_hits"],
        "misses": events["/jax/compilation_cache/cache_misses"],
        "requests": events["/jax/compilation_cache/compile_requests_use_cache"],
        "cache_dir": jax.config.jax_compilation_cache_dir,
    }))
"""


def test_second_process_compiles_nothing(tmp_path):
    cache = str(tmp_path / "cache")
    first = _run(_FIT, cache)
    second = _run(_FIT, cache)
    assert first["cache_dir"] == cache
    assert first["misses"] == first["requests"] > 0  # a fresh cache: everything compiled
    # a default fit and predict_proba compile six programs: the prior, the stream (the
    # prior bank's filters in one program), fit's refinement passes (a Newton step in
    # closed form, and the log posterior that accepts it), the predictive's
    # parameter draws (the transform of standard normals drawn on the host, made once
    # per belief and kept, so that the predictive's later calls neither draw nor
    # transform) and the predictive; each extra one costs a cold start 0.1-1 s
    assert first["requests"] <= 6
    assert os.listdir(cache)
    # the same programs, all loaded from disk
    assert second["requests"] == first["requests"]
    assert (second["hits"], second["misses"]) == (first["requests"], 0)


def test_skbong_changes_no_jax_setting_unless_asked():
    got = _run(_FIT, "-")
    assert got["cache_dir"] is None
    assert got["hits"] == 0


def test_default_cache_dir_follows_the_environment(tmp_path, monkeypatch):
    from skbong.engine.cache import default_cache_dir

    monkeypatch.delenv("SKBONG_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert default_cache_dir() == os.path.join(str(tmp_path), "skbong", "jax")
    monkeypatch.setenv("SKBONG_CACHE_DIR", str(tmp_path / "mine"))
    assert default_cache_dir() == str(tmp_path / "mine")
