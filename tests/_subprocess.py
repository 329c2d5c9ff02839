"""Run a script in a fresh Python process on a pickled payload (tests of persistence)."""

import os
import pickle
import subprocess
import sys


def run_pickled(script, payload, tmp_path):
    """Pickle ``payload`` to a file, run ``script`` (a template with ``{tests}``, the
    tests folder, taking the input and output paths as ``sys.argv[1:3]``) in a fresh
    interpreter, and return what it pickled to the output path."""
    src, out = tmp_path / "in.pkl", tmp_path / "out.pkl"
    src.write_bytes(pickle.dumps(payload))
    proc = subprocess.run(
        [sys.executable, "-c", script.format(tests=os.path.dirname(__file__)), str(src), str(out)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return pickle.loads(out.read_bytes())
