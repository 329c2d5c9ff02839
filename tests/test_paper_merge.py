"""Merging the JSON files of parallel paper-benchmark processes (``--merge``).

A long grid is split across processes that each write a file; ``merge_runs`` joins them
by (config, seed). It must keep every run once, refuse two different runs under one key
without writing anything, and keep the target's own record.
"""

import importlib.util
import json
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent / "benchmarks"


@pytest.fixture(scope="module")
def merge_runs():
    spec = importlib.util.spec_from_file_location("_bench_common", BENCH / "_common.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.merge_runs


def run(config, seed, nlpd):
    return {"config": config, "seed": seed, "evals": {"2000": {"nlpd_plugin": nlpd}}}


def record(command, runs, tuning=None, finished="2026-01-01 00:00:00"):
    return {
        "command": command,
        "finished": finished,
        "settings": {"configs": sorted({r["config"] for r in runs}), "seeds": 1},
        "machine": {"cpu_count": 2},
        "tuning": tuning or {},
        "runs": runs,
        "superseded_runs": [],
    }


def write(path, content):
    path.write_text(json.dumps(content))
    return path


def test_merge_keeps_each_run_once_and_records_the_commands(tmp_path, merge_runs):
    a = write(
        tmp_path / "a.json", record("run a", [run("x", 0, 0.5), run("y", 0, 0.7)], tuning={"x": 1})
    )
    # a --resume process starts from a copy: its repeat of ("x", 0) is the same run
    b = write(
        tmp_path / "b.json",
        record(
            "run b",
            [run("x", 0, 0.5), run("x", 1, 0.6)],
            tuning={"x": 2, "y": 3},
            finished="2026-01-02 00:00:00",
        ),
    )
    out = tmp_path / "all.json"
    merged = merge_runs(out, [a, b])
    assert json.loads(out.read_text()) == merged
    keys = [(r["config"], r["seed"]) for r in merged["runs"]]
    assert keys == [("x", 0), ("y", 0), ("x", 1)]
    assert merged["commands_merged"] == ["run a", "run b"]
    assert merged["command"] == "run a"  # the first source's record is the start
    assert merged["tuning"] == {"x": 1, "y": 3}  # an entry already there is kept
    assert merged["finished"] == "2026-01-02 00:00:00"
    # seeds recounted: x has two, y one
    assert merged["settings"]["configs"] == ["x", "y"]
    assert (
        merged["settings"]["seeds"] == "per configuration, see the runs (merged by (config, seed))"
    )

    c = write(tmp_path / "c.json", record("run c", [run("y", 1, 0.8)]))
    merged = merge_runs(out, [c, c])  # into an existing file; a repeated source adds nothing
    assert merged["command"] == "run a"
    assert merged["commands_merged"] == ["run a", "run b", "run c"]
    assert len(merged["runs"]) == 4
    assert merged["settings"]["seeds"] == 2

    # a source that is itself a merge brings all the commands that made it
    d = write(tmp_path / "d.json", record("run d", [run("x", 2, 0.4)]))
    e = write(tmp_path / "e.json", record("run e", [run("y", 2, 0.3)]))
    de = merge_runs(tmp_path / "de.json", [d, e])
    assert de["commands_merged"] == ["run d", "run e"]
    merged = merge_runs(out, [tmp_path / "de.json"])
    assert merged["commands_merged"] == ["run a", "run b", "run c", "run d", "run e"]
    assert len(merged["runs"]) == 6


def test_merge_refuses_two_different_runs_under_one_key(tmp_path, merge_runs):
    out = write(tmp_path / "all.json", record("run a", [run("x", 0, 0.5)]))
    before = out.read_bytes()
    other = write(tmp_path / "rerun.json", record("run b", [run("x", 1, 0.4), run("x", 0, 0.9)]))
    with pytest.raises(ValueError, match=r"'config': 'x', 'seed': 0.*all\.json.*rerun\.json"):
        merge_runs(out, [other])
    assert out.read_bytes() == before  # nothing written, not even the new seed
