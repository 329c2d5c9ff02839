"""skbong's on-disk cache of compiled programs (:mod:`skbong.engine.program`).

The processes that matter are fresh ones: a second process of the same fits loads every
program and compiles none, with bitwise the same results; a damaged or stale entry is
never used; an unwritable folder or ``SKBONG_CACHE=0`` writes nothing. The key's parts
(static arguments, dtypes, weak types) are checked in this process on small programs,
each by a call that a key without that part would answer from the wrong entry.
"""

import dataclasses
import hashlib
import importlib
import os
import pickle
import subprocess
import sys
import textwrap
import threading

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from skbong.engine import MLP, Config, UserModel, _store
from skbong.engine.program import program

P = importlib.import_module("skbong.engine.program")  # the module (``engine.program`` is the function)
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

_FITS = """
    import collections, pickle, sys
    import jax
    compiles = collections.Counter()

    def listen(event, duration, fun_name="", **kw):
        if event == "/jax/core/compile/backend_compile_duration":
            compiles[fun_name] += 1

    jax.monitoring.register_event_duration_secs_listener(listen)
    import numpy as np
    import skbong
    from skbong.engine import _store
    from skbong.engine.program import cache_info
    if sys.argv[2] == "jax":  # JAX's own persistent cache on, beside skbong's folder
        skbong.enable_compilation_cache(sys.argv[1] + ".jax")
    if sys.argv[2] == "stale":  # another environment (e.g. another jaxlib) in this process
        env = _store.environment()
        _store.environment = lambda: env + "\\nother"
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3))
    reg = skbong.BongRegressor().fit(X, X @ [1.0, -2.0, 0.5] + 0.1 * rng.normal(size=40))
    clf = skbong.BongClassifier().fit(X, (X[:, 0] > 0).astype(int) + (X[:, 1] > 0))
    out = {"reg": reg.predict(X[:5]), "proba": clf.predict_proba(X[:5]),
           "info": cache_info(), "compiles": sum(compiles.values())}
    with open(sys.argv[1], "wb") as f:
        pickle.dump(out, f)
"""


def _run(tmp_path, cache, mode="-", **env):
    """The fits of :data:`_FITS` in a fresh interpreter with the cache in ``cache``."""
    base = {k: v for k, v in os.environ.items() if not k.startswith(("JAX_", "SKBONG_"))}
    base.update(PYTHONPATH=ROOT + os.pathsep + base.get("PYTHONPATH", ""),
                SKBONG_CACHE_DIR=str(cache), **env)
    out = tmp_path / f"out-{mode}.pkl"
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(_FITS), str(out), mode],
                          capture_output=True, text=True, timeout=300, env=base)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return pickle.loads(out.read_bytes())


def _entries(cache):
    folder = cache / "programs"
    return sorted(folder.iterdir()) if folder.exists() else []


def _same(a, b):
    for name in ("reg", "proba"):
        assert a[name].dtype == b[name].dtype
        assert a[name].tobytes() == b[name].tobytes(), name  # bitwise


@pytest.mark.slow
def test_next_process_loads_every_program_and_damage_is_never_used(tmp_path):
    cache = tmp_path / "cache"
    first = _run(tmp_path, cache)
    n = first["info"]["compiles"]
    assert n > 0 and first["info"]["writes"] == n and first["info"]["disk_hits"] == 0
    assert len(_entries(cache)) == n
    # the next process: every program from disk, nothing compiled by XLA at all
    second = _run(tmp_path, cache)
    _same(first, second)
    assert second["info"] == {"disk_hits": n, "compiles": 0, "writes": 0, "bad_entries": 0}
    assert second["compiles"] == 0
    # one byte flipped in each entry: none is used, each is compiled and written again
    for path in _entries(cache):
        data = bytearray(path.read_bytes())
        data[len(data) // 2] ^= 0x40
        path.write_bytes(bytes(data))
    third = _run(tmp_path, cache)
    _same(first, third)
    assert third["info"] == {"disk_hits": 0, "compiles": n, "writes": n, "bad_entries": n}
    for path in _entries(cache):  # rewritten whole
        data = path.read_bytes()
        header = len(_store.MAGIC) + 4
        assert hashlib.sha256(data[header + 32:]).digest() == data[header:header + 32]
    # another environment (skbong source, jaxlib, device, XLA flags, ...): other keys
    stale = _run(tmp_path, cache, "stale")
    _same(first, stale)
    assert stale["info"] == {"disk_hits": 0, "compiles": n, "writes": n, "bad_entries": 0}
    assert len(_entries(cache)) == 2 * n


@pytest.mark.slow
def test_switched_off_by_the_environment(tmp_path):
    cache = tmp_path / "cache"
    got = _run(tmp_path, cache, SKBONG_CACHE="0")
    assert got["info"] == {"disk_hits": 0, "compiles": 0, "writes": 0, "bad_entries": 0}
    assert got["compiles"] > 0  # compiled by jax.jit, as without the cache
    assert not cache.exists()


@pytest.mark.slow
def test_steps_aside_for_jaxs_own_cache(tmp_path):
    """With JAX's persistent cache on, skbong's writes nothing: JAX's stores the
    programs, and an executable JAX's cache loaded, serialized again, is an entry whose
    fused kernels are missing when loaded ("Function ... not found", raised when a result
    is read). A later process without JAX's cache compiles and stores its own, and the
    next one loads them: the same numbers every time."""
    cache = tmp_path / "cache"
    cold, warm = _run(tmp_path, cache, "jax"), _run(tmp_path, cache, "jax")  # JAX's: hits
    idle = {"disk_hits": 0, "compiles": 0, "writes": 0, "bad_entries": 0}
    assert cold["info"] == idle and warm["info"] == idle and not _entries(cache)
    own = _run(tmp_path, cache)
    n = own["info"]["compiles"]
    assert n > 0 and own["info"]["writes"] == n
    again = _run(tmp_path, cache)
    assert again["info"] == {"disk_hits": n, "compiles": 0, "writes": 0, "bad_entries": 0}
    for got in (warm, own, again):
        _same(cold, got)


# -- the key, in this process -------------------------------------------------------------


@program(static_argnames=("n",), persist=True)  # outside skbong: persisted only if asked
def _scaled(x, y, n):
    """x · y · n."""
    return x * y * n


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """A fresh cache folder, this process's programs dropped before and after."""
    monkeypatch.setenv("SKBONG_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("SKBONG_CACHE", raising=False)
    P.clear()
    yield tmp_path / "programs"
    P.clear()


def _fresh_call(fn, *args, **kwargs):
    """``fn(...)`` with this process's programs dropped first: only the disk can serve it."""
    P.clear()
    return fn(*args, **kwargs)


def _pair(first, second):
    """Two calls that differ in one part of the key, each with only the disk to serve it:
    the second must compile its own program (a key without that part would load the
    first's, and answer wrongly or fail)."""
    _fresh_call(_scaled, *first[0], **first[1])
    got = _fresh_call(_scaled, *second[0], **second[1])
    assert P.cache_info() == {"disk_hits": 0, "compiles": 1, "writes": 1, "bad_entries": 0}
    return got


def test_the_key_holds_static_arguments_dtypes_and_weak_types(cache):
    f32 = np.ones(3, np.float32)
    # the static argument: n = 5, not the n = 3 program's 6
    got = _pair(((f32, 2.0), {"n": 3}), ((f32, 2.0), {"n": 5}))
    np.testing.assert_array_equal(got, np.full(3, 10.0, np.float32))
    # the dtype: int32 x, not the float32 program (whose call would fail)
    got = _pair(((f32, 2), {"n": 5}), ((np.ones(3, np.int32), 2), {"n": 5}))
    assert got.dtype == np.int32
    # the weak type: a strong float32 y promotes bfloat16 x to float32, a weak one not
    x16 = jnp.ones(3, jnp.bfloat16)
    weak, strong = jnp.asarray(2.0), jnp.float32(2.0)
    assert weak.aval.weak_type and not strong.aval.weak_type
    got = _pair(((x16, weak), {"n": 3}), ((x16, strong), {"n": 3}))
    assert got.dtype == jnp.float32
    assert _fresh_call(_scaled, x16, weak, n=3).dtype == jnp.bfloat16
    # the shape, and the static argument given by position: the n = 5 program
    got = _fresh_call(_scaled, np.ones(4, np.float32), 2.0, 5)
    np.testing.assert_array_equal(got, np.full(4, 10.0, np.float32))
    assert P.cache_info()["compiles"] == 1
    # each again, from disk; a numpy and a JAX array of one shape share an entry
    assert len(os.listdir(cache)) == 7
    got = _fresh_call(_scaled, jnp.ones(4, jnp.float32), 2.0, n=5)
    np.testing.assert_array_equal(got, np.full(4, 10.0, np.float32))
    assert P.cache_info() == {"disk_hits": 1, "compiles": 0, "writes": 0, "bad_entries": 0}
    got = _fresh_call(_scaled, f32, 2.0, n=3)
    np.testing.assert_array_equal(got, np.full(3, 6.0, np.float32))
    assert P.cache_info()["disk_hits"] == 1


def test_memory_fast_path_and_clear(cache):
    x = jnp.ones(3)
    first = _scaled(x, 2.0, n=1)
    again = _scaled(x, 2.0, n=1)
    np.testing.assert_array_equal(first, again)
    assert P.cache_info()["compiles"] == 1  # the second call: this process's program
    assert _scaled._cache_size() == 1
    P.clear()
    assert P.cache_info()["compiles"] == 0 and not _scaled._memory


def test_clear_cache_means_a_new_trace_in_memory_only(cache):
    """A program cleared because what its tracing reads was patched is never served from
    disk, nor written there, for the rest of the process."""
    factor = {"value": 2.0}

    @program(static_argnames="n", persist=True)
    def patched(x, n):
        return x * factor["value"] * n

    x = np.ones(2, np.float32)
    np.testing.assert_array_equal(patched(x, n=1), [2.0, 2.0])
    assert P.cache_info()["writes"] == 1
    factor["value"] = 3.0
    patched.clear_cache()
    np.testing.assert_array_equal(_fresh_call(patched, x, n=1), [3.0, 3.0])  # not the entry
    np.testing.assert_array_equal(patched(x, n=2), [6.0, 6.0])
    assert P.cache_info() == {"disk_hits": 0, "compiles": 0, "writes": 0, "bad_entries": 0}
    assert len(os.listdir(cache)) == 1 and patched._cache_size() == 2  # jax.jit's own


def test_only_skbong_functions_persist_unless_asked(cache):
    from skbong.engine import predictive

    assert predictive.predict_log_proba._persist and _scaled._persist
    assert not program(lambda x: x + 1)._persist  # no stable name, and its code not hashed

    def local(x):
        return x * 2

    local.__module__ = "skbong.engine.fake"  # even a closure inside skbong
    assert not program(local)._persist
    plain = program(_scaled.__wrapped__, static_argnames="n")  # a test module's: not hashed
    assert not plain._persist
    np.testing.assert_array_equal(plain(np.ones(2, np.float32), 2.0, n=2), [4.0, 4.0])
    assert not cache.exists() and P.cache_info()["compiles"] == 0


def test_program_keeps_the_jit_interface(cache):
    assert _scaled.__doc__ == "x · y · n." and _scaled.__wrapped__.__name__ == "_scaled"
    text = _scaled.lower(np.ones(2, np.float32), 1.0, n=2).as_text()
    assert "stablehlo.multiply" in text
    # under a transformation the arguments are tracers: jax.jit's own path, no entry
    got = jax.vmap(lambda v: _scaled(v, 2.0, n=3))(jnp.ones((2, 3)))
    np.testing.assert_array_equal(got, np.full((2, 3), 6.0, np.float32))
    assert not cache.exists() or not os.listdir(cache)


@dataclasses.dataclass(frozen=True)
class _Mine(MLP):
    """A user's subclass of a skbong model."""


def test_switched_off_in_process_and_user_models_never_stored(cache, monkeypatch):
    monkeypatch.setenv("SKBONG_CACHE", "0")
    assert _scaled(np.ones(2, np.float32), 1.0, n=2).shape == (2,)
    monkeypatch.delenv("SKBONG_CACHE")
    import skbong

    try:
        assert skbong.set_compilation_cache(False) is None
        assert _fresh_call(_scaled, np.ones(2, np.float32), 1.0, n=2).shape == (2,)
        moved = skbong.set_compilation_cache(True, cache.parent / "elsewhere")
        assert moved == str(cache.parent / "elsewhere")
    finally:
        P._cache._SETTINGS.update(enabled=None, directory=None)
    assert not cache.exists()
    with pytest.raises(TypeError, match="enabled must be a bool"):
        skbong.set_compilation_cache("no")
    # a user's model has no stable token: its configuration never reaches the disk
    user = UserModel(lambda k, d, c: np.zeros((d, c)), lambda p, x: x @ p, 3, 1)
    assert Config(model=user).cache_token() is None
    assert _store.token(Config(model=MLP(3, 1))) is not None
    assert _store.token(_Mine(3, 1)) is None  # its code is not skbong's
    assert _store.token(object()) is None and _store.token(len) is None
    assert _store.token((1, "a", None, 2.5, np.float32)) == (
        "(int:1,str:'a',NoneType:None,float:2.5,dtype:float32)"
    )


def test_unwritable_folder_keeps_programs_in_memory(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("SKBONG_CACHE_DIR", str(blocker / "cache"))
    monkeypatch.setattr(P, "_UNWRITABLE", set())
    P.clear()
    with pytest.warns(RuntimeWarning, match="cannot write to") as record:
        got = _scaled(np.ones(2, np.float32), 3.0, n=2)
        np.testing.assert_array_equal(got, np.full(2, 6.0, np.float32))
        got = _fresh_call(_scaled, np.ones(3, np.float32), 3.0, n=2)  # no second warning
    assert len(record) == 1
    np.testing.assert_array_equal(got, np.full(3, 6.0, np.float32))
    assert P.cache_info()["writes"] == 0 and blocker.read_text() == "not a folder"
    P.clear()


# -- the entries ---------------------------------------------------------------------------

_KEY = "program:f\nargs:float32[3]"
_SERIALIZED = (b"\x01\x02executable-bytes" * 20, "in_tree", "out_tree")


def test_entry_round_trip_and_every_damage_rejected():
    data = _store.encode(_KEY, _SERIALIZED)
    assert _store.decode(data, _KEY) == _SERIALIZED
    assert _store.decode(data, _KEY + " ") is None  # another key (a hash collision)
    body = len(_store.MAGIC) + 4 + 32
    flipped = bytearray(data)
    flipped[body + 60] ^= 1  # inside the executable's bytes: still a valid pickle
    assert pickle.loads(bytes(flipped[body:]))[1] != _SERIALIZED
    assert _store.decode(bytes(flipped), _KEY) is None
    version = bytearray(data)
    version[len(_store.MAGIC)] ^= 1
    assert _store.decode(bytes(version), _KEY) is None
    assert _store.decode(b"X" + data[1:], _KEY) is None
    assert _store.decode(data[: body + 10], _KEY) is None
    assert _store.decode(data[:10], _KEY) is None


def test_read_deletes_a_damaged_entry_and_write_is_atomic(tmp_path):
    _store.write(str(tmp_path), _KEY, _SERIALIZED)
    path = tmp_path / _store.entry_name(_KEY)
    assert os.listdir(tmp_path) == [path.name]  # no temporary file left
    assert _store.read(str(tmp_path), _KEY) == _SERIALIZED
    path.write_bytes(path.read_bytes()[:-1])
    assert _store.read(str(tmp_path), _KEY) is _store.DAMAGED and not path.exists()
    assert _store.read(str(tmp_path), _KEY) is None
    # writers and a reader of one large entry at once: the reader always sees a whole one
    big = (os.urandom(4 << 20), "in_tree", "out_tree")
    _store.write(str(tmp_path), _KEY, big)
    seen = []

    def writer():
        for _ in range(10):
            _store.write(str(tmp_path), _KEY, big)

    def reader():
        for _ in range(40):
            seen.append(_store.read(str(tmp_path), _KEY) == big)

    threads = [threading.Thread(target=f) for f in (writer, writer, reader)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert seen == [True] * 40
    assert os.listdir(tmp_path) == [path.name]


def test_evict_removes_the_least_recently_used_beyond_the_cap(tmp_path):
    names = []
    for i in range(4):
        key = f"k{i}"
        _store.write(str(tmp_path), key, (b"x" * 1000, i))
        names.append(_store.entry_name(key))
        os.utime(tmp_path / names[-1], (100 + i, 100 + i))
    os.utime(tmp_path / names[0], (200, 200))  # read most recently
    size = (tmp_path / names[0]).stat().st_size
    (tmp_path / "unrelated.txt").write_text("kept")
    _store.evict(str(tmp_path), 2 * size)
    assert sorted(os.listdir(tmp_path)) == sorted([names[0], names[3], "unrelated.txt"])


def test_context_token():
    from jax._src.config import trace_context

    text = _store.context_token(trace_context())
    assert text is not None and "0x" not in text  # no object address
    with jax.default_matmul_precision("bfloat16"):
        assert _store.context_token(trace_context()) != text
    assert _store.context_token((object(),)) is None
