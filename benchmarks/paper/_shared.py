"""Helpers shared by the paper-reproduction scripts in ``benchmarks/paper/``.

Command-line options every script takes (``--data-dir``, ``--seeds``, ``--quick``,
``--out``, ``--figure``), a record of what was run and on what machine, mean ± standard
error, an aligned text table, JSON output, and the Gaussian algebra the scripts need
(the fitted belief as a dense mean / covariance / precision, symmetric KL divergence).

The estimators expose only the posterior mean and marginal variances publicly
(``posterior_mean_``, ``posterior_var_``); :func:`dense_gaussian` reads the fitted
belief kept in the private ``_state`` tuple (``(mean, cov)`` for the full and diagonal
families, ``(mean, prec_diag, prec_lr)`` for DLR and SLANG) and the family it holds
(``_posterior_family()``) because the symmetric KL needs the whole covariance. Those
are the only private members these scripts touch.
"""

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import jax
import numpy as np

REPO = Path(__file__).resolve().parents[2]
DEFAULT_DATA = (REPO / ".." / "shared" / "data").resolve()
RESULTS = REPO / "benchmarks" / "results" / "paper"
FIGURES = REPO / "doc" / "results"

sys.path.insert(0, str(REPO))  # run from a clean clone without installing


def parser(description, seeds=5):
    """Argument parser with the options every paper script shares."""
    p = argparse.ArgumentParser(
        description=description, formatter_class=argparse.ArgumentDefaultsHelpFormatter
    )
    p.add_argument(
        "--data-dir",
        type=Path,
        default=DEFAULT_DATA,
        help="folder holding mnist/, uci/ and libsvm/ (default: ../shared/data from the repo root)",
    )
    p.add_argument("--seeds", type=int, default=seeds, help="number of seeds / splits / trials")
    p.add_argument("--quick", action="store_true", help="a small, fast version of the run")
    p.add_argument("--out", type=Path, default=None, help="JSON output path")
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
    """What the numbers were measured on, including the load when the run started."""
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


def header(title, settings):
    """Print what is about to be run (and return it for the JSON record)."""
    print(f"== {title}")
    print(f"   command: {' '.join(sys.argv)}")
    for k, v in settings.items():
        print(f"   {k}: {v}")
    la = os.getloadavg()
    print(f"   load average {la[0]:.2f} {la[1]:.2f} {la[2]:.2f} on {os.cpu_count()} cores")
    return dict(settings)


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


def table(rows, columns):
    """Print a list of dicts as an aligned text table (values already formatted)."""
    cells = [[str(r.get(c, "-")) for c in columns] for r in rows]
    widths = [max([len(c)] + [len(row[i]) for row in cells]) for i, c in enumerate(columns)]
    print("  ".join(c.rjust(w) for c, w in zip(columns, widths)))
    for row in cells:
        print("  ".join(v.rjust(w) for v, w in zip(row, widths)))


def write_json(payload, default_name, out, settings):
    """Write ``payload`` with the run record to ``out`` (default results/paper/<name>)."""
    path = Path(out) if out is not None else RESULTS / default_name
    path.parent.mkdir(parents=True, exist_ok=True)
    record = {
        "command": " ".join(sys.argv),
        "finished": time.strftime("%Y-%m-%d %H:%M:%S"),
        "settings": settings,
        "machine": machine(),
        **payload,
    }
    path.write_text(json.dumps(record, indent=1, default=_jsonable))
    print(f"\nwrote {path}")
    return path


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


def _jsonable(v):
    if isinstance(v, (np.floating, np.integer)):
        return v.item()
    if isinstance(v, np.ndarray):
        return v.tolist()
    return str(v)


def pyplot():
    """matplotlib.pyplot with a non-interactive backend."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


# ------------------------------------------------------------ Gaussian algebra
def dense_gaussian(est):
    """The fitted belief of a Bong or Variational estimator as dense float64 arrays.

    Returns ``(mean, cov, prec)``. Reads the estimator's private ``_state`` (see the
    module docstring): ``(mean, cov)`` with ``cov`` (P, P) or (P,) for the full and
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
    import resource
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
