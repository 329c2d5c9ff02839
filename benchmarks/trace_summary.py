"""Where a device's time goes, from a ``jax.profiler`` Perfetto trace (``bench_gpu.py --trace``).

For every traced process whose name contains ``--process`` (default ``GPU``: the device's
kernel streams): the number of kernels, their summed time, the span from the first
kernel's start to the last one's end (busy / span shows how much of the wall time the
device computed, the rest being launch gaps and waits), and the kernels that took the
most time in all, grouped by name.

Usage: ``python benchmarks/trace_summary.py TRACE.json.gz [...] [--process GPU] [--top 20]
[--steps N]`` (``--steps``: also print the figures per step of the traced stream).
"""

import argparse
import collections
import gzip
import json


def summarise(path, process="GPU", top=20, steps=None):
    """Print the summary of one trace file; returns (n_kernels, busy_us, span_us)."""
    with gzip.open(path) as f:
        data = json.load(f)
    events = data["traceEvents"] if isinstance(data, dict) else data
    names = {e["pid"]: e["args"]["name"] for e in events
             if e.get("ph") == "M" and e.get("name") == "process_name"}
    pids = {pid for pid, name in names.items() if process in name}
    kernels = [e for e in events if e.get("ph") == "X" and e.get("pid") in pids]
    if not kernels:
        print(f"{path}: no events in a process named like {process!r}; processes: "
              f"{sorted(set(names.values()))}")
        return 0, 0.0, 0.0
    busy = sum(e["dur"] for e in kernels)
    span = max(e["ts"] + e["dur"] for e in kernels) - min(e["ts"] for e in kernels)
    per = f"; per step: {len(kernels) / steps:.0f} kernels, {busy / steps:.1f} µs busy, " \
          f"{span / steps:.1f} µs span" if steps else ""
    print(f"\n{path}: {len(kernels)} kernels, busy {busy:.0f} µs over a span of {span:.0f} µs "
          f"({busy / span:.0%}){per}")
    by = collections.defaultdict(lambda: [0, 0.0])
    for e in kernels:
        by[e["name"]][0] += 1
        by[e["name"]][1] += e["dur"]
    print(f"{'µs':>10} {'share':>6} {'count':>6}  kernel")
    for name, (n, t) in sorted(by.items(), key=lambda kv: -kv[1][1])[:top]:
        print(f"{t:10.1f} {t / busy:6.1%} {n:6d}  {name[:100]}")
    return len(kernels), busy, span


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("traces", nargs="+")
    p.add_argument("--process", default="GPU")
    p.add_argument("--top", type=int, default=20)
    p.add_argument("--steps", type=int, default=None)
    args = p.parse_args()
    for path in args.traces:
        summarise(path, args.process, args.top, args.steps)


if __name__ == "__main__":
    main()
