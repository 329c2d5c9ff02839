"""The on-disk entries of skbong's program cache: keys, entry files and their folder.

A program is stored under a key that names everything its compiled code depends on,
computed without tracing: the program, a stable token of its static arguments, the
abstract signature of its array arguments, JAX's tracing context, and
:func:`environment` (skbong's source, the JAX, jaxlib, numpy and Python versions, the
device, XLA's flags). An entry file is :data:`MAGIC`, the format version, the SHA-256
of the payload and the payload (the pickled key text and serialized executable), and
is used only if all of them check out (:func:`read`).
"""

import enum
import functools
import hashlib
import os
import pickle
import platform
import sys
import tempfile

import numpy as np

MAGIC = b"SKBONG-PROGRAM\n"
FORMAT = 1
"""The entry format's version: an entry of another version is ignored."""

_HEADER = len(MAGIC) + 4 + 32
_SUFFIX = ".bin"


def token(value):
    """A stable text token of a static argument, or ``None`` where it has none.

    Plain values (``None``, bool, int, float, str), tuples of them, numpy dtypes and
    objects with a ``cache_token()`` method (skbong's own configurations and models)
    have one. Anything else (a user's function or network, an arbitrary object) has
    none, and its program is never stored: ``repr`` or ``id`` of an arbitrary object
    does not say what its code computes.
    """
    if value is None or isinstance(value, (bool, int, float, str)):
        return f"{type(value).__name__}:{value!r}"
    if isinstance(value, tuple):
        parts = [token(v) for v in value]
        return None if None in parts else f"({','.join(parts)})"
    if isinstance(value, np.dtype) or _is_scalar_type(value):
        return f"dtype:{np.dtype(value).name}"
    method = getattr(value, "cache_token", None)
    return method() if callable(method) and not isinstance(value, type) else None


def _is_scalar_type(value):
    """Whether ``value`` is a numpy scalar type (``np.float32``) or JAX's (``jnp.float32``)."""
    if not isinstance(value, type):
        return False
    return issubclass(value, np.generic) or type(value).__module__.startswith("jax.")


def fields_token(obj):
    """``cache_token`` of a frozen dataclass of skbong: its class and the :func:`token`
    of every field, or ``None`` if a field has none (e.g. a user's function) or the class
    is not skbong's own (a subclass: :func:`environment` hashes skbong's code only)."""
    if not type(obj).__module__.startswith("skbong."):  # a subclass: its code is not hashed
        return None
    parts = [f"{name}={token(getattr(obj, name))}" for name in obj.__dataclass_fields__]
    if any(part.endswith("=None") for part in parts):
        return None
    return f"{type(obj).__module__}.{type(obj).__qualname__}({','.join(parts)})"


def context_token(context):
    """A stable text of JAX's tracing context (the tuple ``jit`` keys its cache on),
    or ``None`` where an item has none (e.g. inside a named-axis or mesh context)."""
    parts = []
    for item in context:
        if isinstance(item, enum.Enum):
            parts.append(f"{type(item).__name__}.{item.name}")
        elif type(item).__name__ == "AxisEnv":
            if item.axis_sizes or item.spmd_axis_names or item.explicit_mesh_axis_names:
                return None
            parts.append("AxisEnv()")
        else:
            part = token(item)
            if part is None:
                return None
            parts.append(part)
    return ";".join(parts)


def _source_hash():
    """SHA-256 of every ``.py`` file of the installed skbong (paths and contents)."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    digest = hashlib.sha256()
    for folder, dirs, files in sorted(os.walk(root)):
        dirs.sort()
        for name in sorted(files):
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                digest.update(os.path.relpath(path, root).encode() + b"\0")
                with open(path, "rb") as f:
                    digest.update(f.read() + b"\0")
    return digest.hexdigest()


def _cpu_features():
    """The host CPU's feature flags (XLA:CPU compiles for them), where the OS says."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith(("flags", "Features")):
                    return " ".join(sorted(line.split(":", 1)[1].split()))
    except OSError:
        pass
    return f"{platform.machine()} {platform.processor()}"


@functools.cache
def environment():
    """The process-constant part of every key (computed once per process)."""
    import jax
    import jaxlib

    devices = jax.devices()
    return "\n".join([
        f"skbong-source:{_source_hash()}",
        f"jax:{jax.__version__} jaxlib:{jaxlib.__version__} numpy:{np.__version__}",
        f"python:{sys.version_info[:2]}",
        f"backend:{devices[0].platform} {devices[0].client.platform_version}",
        f"devices:{len(devices)} {sorted({d.device_kind for d in devices})}",
        f"x64:{jax.config.jax_enable_x64} precision:{jax.config.jax_default_matmul_precision}",
        f"XLA_FLAGS:{os.environ.get('XLA_FLAGS', '')}",
        f"LIBTPU_INIT_ARGS:{os.environ.get('LIBTPU_INIT_ARGS', '')}",
        f"cpu:{_cpu_features()}",
    ])


def entry_name(key_text):
    """The file name of the entry of ``key_text`` (its SHA-256)."""
    return hashlib.sha256(key_text.encode()).hexdigest() + _SUFFIX


def encode(key_text, serialized):
    """The bytes of an entry: the header, then the pickled ``(key_text, serialized)``."""
    payload = pickle.dumps((key_text, serialized), protocol=pickle.HIGHEST_PROTOCOL)
    return MAGIC + FORMAT.to_bytes(4, "little") + hashlib.sha256(payload).digest() + payload


def decode(data, key_text):
    """The ``serialized`` of an entry's bytes, or ``None`` unless its magic, version,
    checksum and key all match (the payload is unpickled only once its checksum
    matched)."""
    if len(data) < _HEADER or not data.startswith(MAGIC):
        return None
    if int.from_bytes(data[len(MAGIC):len(MAGIC) + 4], "little") != FORMAT:
        return None
    payload = data[_HEADER:]
    if hashlib.sha256(payload).digest() != data[len(MAGIC) + 4:_HEADER]:
        return None
    try:
        stored_key, serialized = pickle.loads(payload)
    except Exception:  # noqa: BLE001 - a foreign pickle: no entry
        return None
    return serialized if stored_key == key_text else None


DAMAGED = "damaged"
"""What :func:`read` returns for an entry that did not check out (and was deleted)."""


def read(directory, key_text):
    """The ``serialized`` stored for ``key_text`` in ``directory``, ``None`` where there
    is none, or :data:`DAMAGED` for an entry that does not check out (it is deleted). A
    hit refreshes the entry's modification time (the eviction order of :func:`evict`)."""
    path = os.path.join(directory, entry_name(key_text))
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return None
    serialized = decode(data, key_text)
    if serialized is None:
        discard(directory, key_text)
        return DAMAGED
    try:
        os.utime(path)
    except OSError:
        pass
    return serialized


def discard(directory, key_text):
    """Delete the entry of ``key_text`` if there is one (and if the folder allows)."""
    try:
        os.remove(os.path.join(directory, entry_name(key_text)))
    except OSError:
        pass


def write(directory, key_text, serialized):
    """Store an entry atomically (a temporary file in the same folder, then
    ``os.replace``): a concurrent reader sees the old entry, the new one or none, never
    part of one. Raises ``OSError`` where the folder cannot be written."""
    os.makedirs(directory, mode=0o700, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp-", suffix=_SUFFIX)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(encode(key_text, serialized))
        os.replace(tmp, os.path.join(directory, entry_name(key_text)))
    except BaseException:
        try:
            os.remove(tmp)
        except OSError:
            pass
        raise


def evict(directory, max_bytes):
    """Delete the least recently used entries until the folder holds at most
    ``max_bytes`` of them (files of another process vanishing meanwhile are skipped)."""
    entries = []
    with os.scandir(directory) as it:
        for entry in it:
            if entry.name.endswith(_SUFFIX) and not entry.name.startswith(".tmp-"):
                try:
                    stat = entry.stat()
                except OSError:
                    continue
                entries.append((stat.st_mtime, stat.st_size, entry.path))
    total = sum(size for _, size, _ in entries)
    for _, size, path in sorted(entries):
        if total <= max_bytes:
            break
        try:
            os.remove(path)
        except OSError:
            continue
        total -= size
