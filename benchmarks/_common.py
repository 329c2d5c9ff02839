"""Shared helpers of the benchmark scripts (``benchmarks/*.py`` and the paper
reproductions in ``benchmarks/paper/``): cases, timing, machine notes, command-line
options, output, mean ± standard error, and the Gaussian algebra the paper scripts need.

Timing is min-of-repeats of wall-clock time around a blocked call, which is the
estimate least disturbed by other processes sharing the cores; the load average is
recorded next to every table so that a loaded run can be recognised.

A paper script, run as ``python benchmarks/paper/x.py``, puts ``benchmarks/`` on
``sys.path`` before importing this module.

The symmetric KL needs the whole covariance: :func:`dense_gaussian` reads the fitted
belief ``posterior_`` and, through the private ``_posterior_family()``, the family it
holds (its only private member read).
"""

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

ROOT = Path(__file__).resolve().parent  # benchmarks/
REPO = ROOT.parent
# SKBONG_SRC=/path/to/another/checkout compares two versions under the same conditions
sys.path.insert(0, os.environ.get("SKBONG_SRC", str(REPO)))

from skbong import engine as E  # noqa: E402

RESULTS = ROOT / "results"
PAPER_RESULTS = RESULTS / "paper"
DEFAULT_DATA = (REPO / ".." / "shared" / "data").resolve()
FIGURES = REPO / "doc" / "results"

# The headline cases (the authors' code's per-step times to beat); the MLPs use ReLU.
CASES = {
    "linreg10": dict(model=dict(n_features=9, n_outputs=1), likelihood="gaussian"),
    "linreg100": dict(model=dict(n_features=99, n_outputs=1), likelihood="gaussian"),
    "mlp881": dict(
        model=dict(n_features=21, n_outputs=1, hidden=(20, 20), activation="relu"),
        likelihood="gaussian",
    ),
    "mlp2410": dict(
        model=dict(n_features=64, n_outputs=10, hidden=(32,), activation="relu"),
        likelihood="categorical",
    ),
}


def parser(description, seeds=None):
    """Argument parser with the options every script shares (``--quick``, ``--out``).

    With ``seeds`` (the paper scripts) also ``--data-dir``, ``--seeds`` (default
    ``seeds``) and ``--figure``.
    """
    p = argparse.ArgumentParser(
        description=description, formatter_class=argparse.ArgumentDefaultsHelpFormatter
    )
    if seeds is not None:
        p.add_argument(
            "--data-dir",
            type=Path,
            default=DEFAULT_DATA,
            help="folder holding mnist/, uci/ and libsvm/ (default: ../shared/data from the "
            "repo root)",
        )
        p.add_argument("--seeds", type=int, default=seeds, help="number of seeds / splits / trials")
    p.add_argument("--quick", action="store_true", help="a small, fast version of the run")
    p.add_argument("--out", type=Path, default=None, help="JSON output path")
    if seeds is not None:
        p.add_argument(
            "--figure",
            type=Path,
            default=None,
            help="also write a figure to this path (PNG); default: no figure",
        )
    return p


def check_data(path, what):
    """Exit with a clear message when a data file is missing."""
    if not Path(path).exists():
        sys.exit(
            f"{what} not found at {path}; pass --data-dir pointing at the folder that holds "
            "mnist/, uci/ and libsvm/"
        )
    return Path(path)


def git_revision():
    """The checkout's short commit, with ``+dirty`` when skbong/ has uncommitted changes."""
    try:
        out = subprocess.run(
            ["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        )
        dirty = subprocess.run(
            ["git", "-C", str(REPO), "status", "--porcelain", "skbong"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        return out.stdout.strip() + ("+dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):  # pragma: no cover - not a checkout
        return None


def machine():
    """What the numbers were measured on, including the load at the time."""
    return {
        "platform": platform.platform(),
        "python": platform.python_version(),
        "jax": jax.__version__,
        "numpy": np.__version__,
        "devices": [str(d) for d in jax.devices()],
        "cpu": cpu_model(),
        "cpu_count": os.cpu_count(),
        "load_average": os.getloadavg(),
        "skbong_revision": git_revision(),
    }


def cpu_model():
    """The CPU's model name and whether it has AVX-512.

    XLA compiles for the host's vector instructions, so float32 results (and times)
    can differ in the last bits between CPUs; iterated or chaotic updates amplify that.
    """
    try:
        info = Path("/proc/cpuinfo").read_text()
    except OSError:
        return platform.processor() or "unknown"
    first = info.split("\n\n", 1)[0]  # the first processor's block
    fields = dict(
        (key.strip(), value.strip())
        for key, value in (line.split(":", 1) for line in first.splitlines() if ":" in line)
    )
    model = fields.get("model name", "unknown")
    flags = fields.get("flags", "").split()
    return f"{model}, {'with' if 'avx512f' in flags else 'no'} AVX-512"


def load_note():
    """The load average and core count, to print next to a table."""
    la = os.getloadavg()
    return f"load average {la[0]:.2f} {la[1]:.2f} {la[2]:.2f} on {os.cpu_count()} cores"


def header(title, settings):
    """Print what is about to be run (and return it for the JSON record)."""
    print(f"== {title}")
    print(f"   command: {' '.join(sys.argv)}")
    for k, v in settings.items():
        print(f"   {k}: {v}")
    print(f"   {load_note()}")
    return dict(settings)


def block(tree):
    """Wait for every array of a pytree (asynchronous dispatch)."""
    return jax.tree_util.tree_map(lambda a: a.block_until_ready(), tree)


def min_time(fn, repeats, min_total=0.0):
    """Minimum wall time and mean process-CPU time of ``fn()`` over at least ``repeats``
    calls and ``min_total`` seconds. (This VM updates the CPU clock of other threads at
    scheduler ticks, so single short CPU readings are unreliable; their mean is not.)"""
    best, total, cpu, n = float("inf"), 0.0, 0.0, 0
    while n < repeats or total < min_total:
        t0, c0 = time.perf_counter(), time.process_time()
        fn()
        dt, dc = time.perf_counter() - t0, time.process_time() - c0
        best, total, cpu, n = min(best, dt), total + dt, cpu + dc, n + 1
        if n >= 50 * max(repeats, 1):
            break
    return best, cpu / n


def interleaved(calls, budget):
    """Fastest wall time of each compiled call in ``calls`` (name -> function), the
    calls run in turn until ``budget`` seconds are spent, so that every one of them sees
    the same machine load. Compile them (call each once) before."""
    best = dict.fromkeys(calls, float("inf"))
    stop = time.perf_counter() + budget
    while time.perf_counter() < stop:
        for name, fn in calls.items():
            t0 = time.perf_counter()
            block(fn())
            best[name] = min(best[name], time.perf_counter() - t0)
    return best


def peak_rss_mib():
    """Peak resident set size of this process so far (MiB)."""
    kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return kb / 1024.0


def current_rss_mib():
    """Current resident set size (MiB), from /proc."""
    with open("/proc/self/statm") as f:
        pages = int(f.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def teacher(mlp, seed, x):
    """Outputs of a random network of the learner's architecture (a learnable stream)."""
    theta = E.MLP(mlp.n_features, mlp.n_outputs, mlp.hidden or (16,), "tanh").flat_init(
        jax.random.PRNGKey(seed + 1), jnp.float32
    )
    net = E.MLP(mlp.n_features, mlp.n_outputs, mlp.hidden or (16,), "tanh")
    return net.apply(theta, jnp.asarray(x, jnp.float32))


def make_problem(case, family, rule="bong", hessian="lin_hess", rank=10, n_iter=10,
                 mc_samples=10, batch=1, steps=512, dtype=np.float32, seed=0, model=None):
    """Config, prior state and a random ``(steps, batch, ·)`` stream for a case."""
    spec = CASES[case] if model is None else dict(model=model, likelihood=case)
    mlp = E.MLP(**spec["model"])
    cfg = E.Config(mlp, spec["likelihood"], family, rank, rule, hessian, n_iter, mc_samples)
    rng = np.random.default_rng(seed)
    d, c = mlp.n_features, mlp.n_outputs
    xs = (rng.normal(size=(steps, batch, d)) / np.sqrt(d)).astype(dtype)  # unit-norm rows
    f = np.asarray(teacher(mlp, seed, xs.reshape(-1, d))).reshape(steps, batch, c)
    if spec["likelihood"] == "categorical":
        ys = np.eye(c, dtype=dtype)[np.argmax(f, axis=-1)]
    elif spec["likelihood"] == "bernoulli":
        ys = (f > 0).astype(dtype)
    else:
        ys = (f + 0.1 * rng.normal(size=f.shape)).astype(dtype)
    ws = np.ones((steps, batch), dtype)
    # σ₀² = 0.1, R = 0.1, α = 0.1: every family stays finite on these streams
    hyper = E.Hyper(*(jnp.asarray(v, dtype) for v in (0.1, 0.1, 0.1, 1.0, 0.0)))
    mean0, state = E.prior(cfg, seed, hyper.prior_var, np.dtype(dtype))
    data = tuple(jnp.asarray(a) for a in (xs, ys, ws))
    return cfg, state, mean0, hyper, data


def time_stream(cfg, state, mean0, hyper, data, repeats=5, min_total=0.5):
    """First-call and min-of-repeats wall time of one ``run_stream`` call.

    Returns ``(compile_s, best_s, mean_cpu_s, ok_fraction)``: compile_s is the first call
    (trace, compile and one run) less one warm run; best_s the fastest warm call (wall
    time) and mean_cpu_s the mean process-CPU time of a warm call.
    """
    xs, ys, ws = data
    args = (cfg, state, mean0, hyper, xs, ys, ws, 0, jax.random.PRNGKey(0))
    t0 = time.perf_counter()
    out = block(E.run_stream(*args))
    first = time.perf_counter() - t0
    ok = float(np.mean(np.asarray(out[3])))
    best, cpu = min_time(lambda: block(E.run_stream(*args)), repeats, min_total)
    return max(first - best, 0.0), best, cpu, ok


def has_gpu():
    try:
        return any(d.platform == "gpu" for d in jax.devices())
    except RuntimeError:  # pragma: no cover
        return False


def write_json(payload, default_name, out, settings=None):
    """Write ``payload`` after the run record (command, finish time, ``settings`` when
    given, machine) to ``out``, by default ``results/<default_name>``.

    The record describes this run: it replaces same-named keys of ``payload`` (such as
    those of an earlier run's file read back and extended).
    """
    path = Path(out) if out is not None else RESULTS / default_name
    path.parent.mkdir(parents=True, exist_ok=True)
    record = {"command": " ".join(sys.argv), "finished": time.strftime("%Y-%m-%d %H:%M:%S")}
    if settings is not None:
        record["settings"] = settings
    record["machine"] = machine()
    record.update((k, v) for k, v in payload.items() if k not in record)
    path.write_text(json.dumps(record, indent=1, default=_jsonable))
    print(f"\nwrote {path}")
    return path


def _jsonable(v):
    if isinstance(v, (np.floating, np.integer)):
        return v.item()
    if isinstance(v, np.ndarray):
        return v.tolist()
    return str(v)


def table(rows, columns, formats=None):
    """Print a list of dicts as an aligned text table (a missing or None value is "-";
    ``formats`` maps a column to a format string for its numbers)."""
    formats = formats or {}

    def fmt(col, v):
        if v is None:
            return "-"
        f = formats.get(col)
        return f.format(v) if f and isinstance(v, (int, float)) else str(v)

    cells = [[fmt(c, r.get(c)) for c in columns] for r in rows]
    widths = [max(len(c), *(len(row[i]) for row in cells)) if cells else len(c)
              for i, c in enumerate(columns)]
    print("  ".join(c.rjust(w) for c, w in zip(columns, widths)))
    for row in cells:
        print("  ".join(v.rjust(w) for v, w in zip(row, widths)))


class Tee:
    """Write to the terminal and keep a copy for ``--out``."""

    def __init__(self, stream):
        self.stream, self.parts = stream, []

    def write(self, text):
        self.stream.write(text)
        self.parts.append(text)

    def flush(self):
        self.stream.flush()

    def text(self):
        return "".join(self.parts)


def mean_se(values):
    """Mean and standard error (sample std / √n; NaN for a single value) of finite values.

    Returns ``(mean, se, n_finite)``.
    """
    v = np.asarray([x for x in values if x is not None], dtype=float)
    v = v[np.isfinite(v)]
    if v.size == 0:
        return float("nan"), float("nan"), 0
    se = float(np.std(v, ddof=1) / np.sqrt(v.size)) if v.size > 1 else float("nan")
    return float(np.mean(v)), se, int(v.size)


def pm(values, digits=3):
    """``"mean ± se"`` of a list of values (the n is shown when some were not finite)."""
    m, s, n = mean_se(values)
    if n == 0:
        return "nan"
    text = f"{m:.{digits}f}" + (f" ± {s:.{digits}f}" if np.isfinite(s) else "")
    total = len(values)
    return text if n == total else f"{text} ({n}/{total})"


def merge_runs(out, sources, key=("config", "seed")):
    """Merge the runs of JSON files written by parallel processes into ``out``.

    A long grid is split across processes, each writing its own file (``--out``); this
    joins them. Runs are matched by ``key``: a run that ``out`` or an earlier source
    already holds unchanged is kept once (a ``--resume`` process starts from a copy of
    the finished runs), and a run that differs is an error naming both files, since
    keeping either silently would hide a rerun. Nothing is written when that happens.

    ``out`` keeps its own record (command, settings, machine); when it does not exist the
    first source's record is the start. Every source's command (or, for a source that is
    itself a merge, its ``commands_merged``) is appended to ``commands_merged``, tuning
    entries ``out`` lacks are added, and ``settings["configs"]`` and ``settings["seeds"]``
    are recounted from the merged runs.

    Parameters
    ----------
    out : path-like
        The JSON to merge into (created if absent).
    sources : list of path-like
        JSON files written by the same script, each with ``runs`` (and ``tuning``).
    key : tuple of str, default ("config", "seed")
        The run fields that identify a run.

    Returns
    -------
    record : dict
        What was written to ``out``.
    """
    out, sources = Path(out), [Path(s) for s in sources]
    loaded = [(s, json.loads(s.read_text())) for s in sources]
    if out.exists():
        record = json.loads(out.read_text())
    else:
        record = {**loaded[0][1], "runs": [], "superseded_runs": []}
    record.setdefault("tuning", {})
    record.setdefault("superseded_runs", [])
    commands = record.setdefault("commands_merged", [record["command"]] if out.exists() else [])
    held = {_run_key(r, key): (r, out) for r in record["runs"]}  # run and the file it came from
    for path, source in loaded:
        for run in source["runs"]:
            k = _run_key(run, key)
            if k not in held:
                held[k] = (run, path)
                record["runs"].append(run)
            elif held[k][0] != run:
                raise ValueError(
                    f"run {dict(zip(key, k))} differs between {held[k][1]} and "
                    f"{path}; remove the one to drop and merge again"
                )
        for name, value in source.get("tuning", {}).items():
            record["tuning"].setdefault(name, value)
        for run in source.get("superseded_runs", []):
            if run not in record["superseded_runs"]:
                record["superseded_runs"].append(run)
        # a source that is itself a merge brings every command that made it
        for command in source.get("commands_merged") or [source["command"]]:
            if command not in commands:
                commands.append(command)
        record["finished"] = max(record["finished"], source["finished"])
    settings = record.get("settings", {})
    if "configs" in settings:
        configs = list(dict.fromkeys(r["config"] for r in record["runs"]))
        counts = {sum(r["config"] == c for r in record["runs"]) for c in configs}
        settings["configs"] = configs
        settings["seeds"] = (
            counts.pop()
            if len(counts) == 1
            else "per configuration, see the runs (merged by (config, seed))"
        )
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(record, indent=1, default=_jsonable))
    print(f"merged {len(sources)} file(s) into {out}: {len(record['runs'])} runs")
    return record


def _run_key(run, key):
    return tuple(run[f] for f in key)


def pyplot():
    """matplotlib.pyplot with a non-interactive backend."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


# ------------------------------------------------------------ Gaussian algebra
def dense_gaussian(est):
    """The fitted belief of a Bong or Variational estimator as dense float64 arrays.

    Returns ``(mean, cov, prec)``. Reads the estimator's ``posterior_`` (see the module
    docstring): ``(mean, cov)`` with ``cov`` (P, P) or (P,) for the full and
    diagonal families, ``(mean, prec_diag, prec_lr)`` for DLR (the Bong estimators'
    ``family="dlr"``, the Variational estimators' ``solver="slang"``), precision Υ + W Wᵀ.
    """
    state = [np.asarray(a, dtype=np.float64) for a in est.posterior_]
    mean = state[0]
    if est._posterior_family() == "dlr":
        _, diag, w = state
        prec = np.diag(diag) + w @ w.T
        cov = _spd_inverse(prec)
    else:
        cov = state[1] if state[1].ndim == 2 else np.diag(state[1])
        cov = 0.5 * (cov + cov.T)
        prec = _spd_inverse(cov)
    return mean, cov, prec


def _spd_inverse(a):
    c = np.linalg.cholesky(a)
    inv_c = np.linalg.solve(c, np.eye(a.shape[0]))
    return inv_c.T @ inv_c


def symmetric_kl(a, b):
    """KL(a‖b) + KL(b‖a) for Gaussians given as ``(mean, cov, prec)`` triples.

    The log-determinants cancel: ½[tr(Λ_b Σ_a) + tr(Λ_a Σ_b) + δᵀ(Λ_a + Λ_b)δ] − P.
    """
    ma, sa, pa = a
    mb, sb, pb = b
    d = ma - mb
    p = ma.shape[0]
    return float(0.5 * (np.sum(pb * sa) + np.sum(pa * sb) + d @ (pa + pb) @ d) - p)


def gaussian_kl(a, b):
    """KL(a‖b) for Gaussians given as ``(mean, cov, prec)`` triples."""
    ma, sa, _ = a
    mb, _, pb = b
    d = ma - mb
    _, logdet_a = np.linalg.slogdet(sa)
    _, logdet_pb = np.linalg.slogdet(pb)
    return float(0.5 * (np.sum(pb * sa) + d @ pb @ d - ma.shape[0] - logdet_pb - logdet_a))


def run_tasks(fn, tasks, jobs):
    """``[fn(t) for t in tasks]``, in ``jobs`` spawned worker processes when ``jobs`` > 1
    (JAX is not fork-safe); returns the results, the wall seconds and the CPU seconds of
    this process and its workers."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    t0 = time.perf_counter()
    if jobs > 1:
        ctx = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(max_workers=jobs, mp_context=ctx) as pool:
            done = list(pool.map(fn, tasks))
    else:
        done = [fn(t) for t in tasks]
    cpu = sum(
        getattr(resource.getrusage(who), f)
        for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
        for f in ("ru_utime", "ru_stime")
    )
    return done, time.perf_counter() - t0, cpu
