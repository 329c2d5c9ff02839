"""Every Python code block of the README and the user guide runs.

Which blocks are Python, and which are not run:

* README.md: each fenced block opened by ```` ```python ````.
* doc/user_guide/*.rst: each ``.. code-block:: python`` (or ``.. code:: python``,
  ``.. sourcecode:: python``), and each ``::`` literal block, which Sphinx highlights as
  Python, except a command block: one whose every line starts with ``python ``, ``pip ``
  or ``$ `` (a shell command line, not run). A literal block that is neither runs, so a
  Python block mistaken for anything else fails rather than being passed over.
* A block that cannot run here (data on disk, a cluster, a process-wide setting) is
  preceded by a marker with the reason: the rst comment ``.. not-tested: <reason>``
  before its ``.. code-block::``, or ``<!-- not-tested: <reason> -->`` before a README
  fence. :data:`NOT_RUN` lists them with their reasons; a marker that precedes no block,
  and one not listed there, fail the test.

The blocks of one page run in order in one namespace (a page builds on its earlier
blocks), as a script would; an error names the page, the block's number and its line.
The pages that take long (:data:`SLOW_PAGES`) run in the slow lane.
"""

import re
import textwrap
from pathlib import Path
from typing import NamedTuple

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [
    "README.md",
    *sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "doc" / "user_guide").glob("*.rst")),
]

NOT_RUN = {
    ("doc/user_guide/practical.rst", 3): (
        "it turns on JAX's persistent compilation cache for the whole process"
    ),
    ("doc/user_guide/scaling_out.rst", 2): (
        "it reads X.zarr and y.zarr from disk and starts a cluster of worker processes"
    ),
}
"""The blocks marked not-tested, by (page, block number), with the marker's reason."""

SLOW_PAGES = {
    "doc/user_guide/networks.rst": "it compiles and streams three CNNs (about 10 s)",
    "doc/user_guide/sklearn_compat.rst": "check_estimator runs scikit-learn's checks twice (about 30 s)",
}
"""Pages whose blocks take long to run, with why."""

_COMMAND = re.compile(r"^(python |pip |\$ )")
_RST_START = re.compile(r"^(\s*)\.\. (?:code-block|code|sourcecode)::\s*(\S*)\s*$")
_RST_MARK = re.compile(r"^\s*\.\. not-tested:\s*(\S.*?)\s*$")
_MD_MARK = re.compile(r"^\s*<!-- not-tested:\s*(\S.*?)\s*-->\s*$")


class Block(NamedTuple):
    """One code block of a page: its 1-based number among the page's Python blocks, the
    line it starts on, its kind (``"python"``, ``"command"`` or another language), its
    code and, if marked not-tested, the reason."""

    number: int
    line: int
    kind: str
    code: str
    not_run: str | None


def _indent(line):
    return len(line) - len(line.lstrip())


def _marker(lines, start, pattern):
    """The reason of a marker on the last non-blank line before ``lines[start]``."""
    i = start - 1
    while i >= 0 and not lines[i].strip():
        i -= 1
    m = pattern.match(lines[i]) if i >= 0 else None
    return m.group(1) if m else None


def rst_blocks(text):
    """The code blocks of an rst page (module docstring's rule), Python ones numbered."""
    lines = text.splitlines()
    blocks, number, i = [], 0, 0
    while i < len(lines):
        line = lines[i]
        directive = _RST_START.match(line)
        literal = line.rstrip().endswith("::") and not line.lstrip().startswith(".. ")
        if not (directive or literal):
            i += 1
            continue
        indent, j = _indent(line), i + 1
        while directive and j < len(lines) and re.match(r"^\s+:[\w-]+:", lines[j]):
            j += 1  # the directive's options
        body = []
        while j < len(lines) and (not lines[j].strip() or _indent(lines[j]) > indent):
            body.append(lines[j])
            j += 1
        code = textwrap.dedent("\n".join(body)).strip("\n")
        if directive:
            kind = directive.group(2) or "python"
        elif all(_COMMAND.match(c) for c in code.splitlines() if c.strip()):
            kind = "command"
        else:
            kind = "python"
        if code:
            number += kind == "python"
            reason = _marker(lines, i, _RST_MARK) if directive else None
            blocks.append(Block(number if kind == "python" else 0, i + 1, kind, code, reason))
        i = j
    return blocks


def md_blocks(text):
    """The fenced code blocks of a Markdown page, Python ones numbered."""
    lines = text.splitlines()
    blocks, number, i = [], 0, 0
    while i < len(lines):
        m = re.match(r"^```(\w*)\s*$", lines[i])
        if not m:
            i += 1
            continue
        j = i + 1
        while not lines[j].startswith("```"):
            j += 1
        kind = m.group(1) or "text"
        number += kind == "python"
        reason = _marker(lines, i, _MD_MARK)
        code = "\n".join(lines[i + 1 : j])
        blocks.append(Block(number if kind == "python" else 0, i + 1, kind, code, reason))
        i = j + 1
    return blocks


def page_blocks(page):
    text = (ROOT / page).read_text(encoding="utf-8")
    return md_blocks(text) if page.endswith(".md") else rst_blocks(text)


def run_page(page):
    """Run the page's Python blocks in order in one namespace; fail naming the block."""
    namespace = {"__name__": "__docs__"}
    for block in page_blocks(page):
        if block.kind != "python" or block.not_run:
            continue
        where = f"{page}, block {block.number} (line {block.line})"
        try:
            exec(compile(block.code, where, "exec"), namespace)
        except Exception as exc:
            pytest.fail(f"{where} failed: {type(exc).__name__}: {exc}")


def _page_param(page):
    return pytest.param(page, marks=[pytest.mark.slow] if page in SLOW_PAGES else [], id=page)


RUNNABLE = [p for p in PAGES if any(b.kind == "python" and not b.not_run for b in page_blocks(p))]


@pytest.mark.parametrize("page", [_page_param(p) for p in RUNNABLE])
def test_page_code_runs(page):
    run_page(page)


def test_not_run_blocks_are_the_listed_ones():
    """Every not-tested marker precedes a Python block, and those blocks are exactly the
    listed ones, with their reasons."""
    marked = {}
    for page in PAGES:
        blocks = page_blocks(page)
        for b in blocks:
            if b.not_run:
                assert b.kind == "python", f"{page} line {b.line}: marker on a {b.kind} block"
                marked[page, b.number] = b.not_run
        pattern = _MD_MARK if page.endswith(".md") else _RST_MARK
        n_markers = sum(bool(pattern.match(line)) for line in (ROOT / page).read_text().splitlines())
        assert n_markers == sum(bool(b.not_run) for b in blocks), f"{page}: a marker precedes no block"
    assert marked == NOT_RUN


def test_every_page_is_read_and_the_slow_ones_exist():
    assert "README.md" in PAGES and "doc/user_guide/counts.rst" in PAGES
    assert set(SLOW_PAGES) <= set(RUNNABLE)
    for page in PAGES:  # a doctest would not be run by this module
        assert not any(line.lstrip().startswith(">>>") for line in (ROOT / page).read_text().splitlines()), page


SAMPLE_RST = """\
Title
=====

Some code::

   x = 1

.. code-block:: python
   :caption: two

   y = x + 1

     z = 0  # more indented, same block
After.

.. not-tested: needs a GPU

.. code-block:: python

   import cupy

Commands::

   python benchmarks/bench.py --out x.txt
   pip install skbong

.. code-block:: bash

   ls

Mixed::

   python -c 1
   x = 2
"""

SAMPLE_MD = """\
```bash
pip install .
```

```python
a = 1
```

<!-- not-tested: needs data -->
```python
open("missing")
```
"""


def test_extraction_rule_on_a_sample():
    blocks = rst_blocks(SAMPLE_RST)
    assert [(b.number, b.kind, b.not_run) for b in blocks] == [
        (1, "python", None),
        (2, "python", None),
        (3, "python", "needs a GPU"),
        (0, "command", None),
        (0, "bash", None),
        (4, "python", None),
    ]
    assert blocks[0].code == "x = 1" and blocks[0].line == 4
    assert blocks[1].code == "y = x + 1\n\n  z = 0  # more indented, same block"
    assert blocks[2].code == "import cupy"
    assert blocks[5].code == "python -c 1\nx = 2"
    md = md_blocks(SAMPLE_MD)
    assert [(b.number, b.kind, b.not_run, b.code) for b in md] == [
        (0, "bash", None, "pip install ."),
        (1, "python", None, "a = 1"),
        (2, "python", "needs data", 'open("missing")'),
    ]


def test_a_failing_block_names_its_page_and_number(tmp_path, monkeypatch):
    page = tmp_path / "page.rst"
    page.write_text("A::\n\n   x = 1\n\nB::\n\n   y = x + undefined\n")
    monkeypatch.setitem(globals(), "ROOT", tmp_path)
    with pytest.raises(pytest.fail.Exception, match=r"page\.rst, block 2 \(line 5\) failed: NameError"):
        run_page("page.rst")
