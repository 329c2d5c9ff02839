"""Sphinx configuration of the skbong documentation.

Build (offline; the gallery examples are executed):
``python -m sphinx -W --keep-going -b html doc doc/_build/html``.
Needs the ``docs`` extra: ``pip install ".[docs]"``.
"""

import ast
import re
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))  # make_combinations, composed_source, gallery_order

import composed_source  # noqa: E402
import make_combinations  # noqa: E402

import skbong  # noqa: E402

# The table of combinations is derived from the engine's name lists: regenerate it
# if the engine changed since it was written (a no-op otherwise).
make_combinations.write(quiet=True)


def _write_benchmark_scripts():
    """doc/_generated/benchmark_scripts.rst: one section per script benchmarks/*.py (not
    the ``_``-prefixed helpers), its text the script's module docstring (read with
    ``ast``, nothing is imported)."""
    parts = []
    scripts = sorted((HERE.parent / "benchmarks").glob("*.py"))
    for path in [p for p in scripts if not p.name.startswith("_")]:
        doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")))
        title = f"``{path.name}``"
        parts.append(f"{title}\n{'-' * len(title)}\n\n{doc or '(no description)'}\n")
    out = HERE / "_generated" / "benchmark_scripts.rst"
    out.parent.mkdir(exist_ok=True)
    text = "\n".join(parts) if parts else "No benchmark scripts found.\n"
    if not out.exists() or out.read_text(encoding="utf-8") != text:
        out.write_text(text, encoding="utf-8")


_write_benchmark_scripts()

# -- Project -----------------------------------------------------------------
project = "skbong"
author = "skbong developers"
copyright = "2024–2025, skbong developers"
release = skbong.__version__
version = ".".join(release.split(".")[:2])

# -- General -----------------------------------------------------------------
extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    # MathJax 3 shipped inside a pip package (the ``docs`` extra), copied to
    # _static/mathjax/ at the end of the build: maths renders with no network.
    "sphinx-mathjax-offline",
    "sphinx.ext.viewcode",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
]
templates_path = ["_templates"]
exclude_patterns = ["_build", "_generated", "Thumbs.db", ".DS_Store"]
default_role = "literal"
pygments_style = "sphinx"
nitpicky = False

# -- Maths -------------------------------------------------------------------
# The local copy of MathJax (set by sphinx-mathjax-offline too; stated here so that no
# page ever falls back to sphinx.ext.mathjax's default, a CDN URL). Checked by
# doc/check_render.py in a headless browser without network.
mathjax_path = "mathjax/tex-chtml.js"

# -- autodoc / autosummary / numpydoc ---------------------------------------
autosummary_generate = True
autodoc_typehints = "none"
autodoc_member_order = "groupwise"
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False


def _skip_namedtuple_fields(app, what, name, obj, skip, options):
    """Hide the "Alias for field number k" entries of NamedTuple fields: the class
    docstring's Attributes section documents them."""
    doc = getattr(obj, "__doc__", None) or ""
    if what == "class" and doc.startswith("Alias for field number"):
        return True
    return skip


_SKLEARN_REF = re.compile(r":(?:ref|term):`(?:([^`<]*?)\s*<([^`>]+)>|([^`]+))`")


def _unlink_sklearn_refs(app, what, name, obj, options, lines):
    """Methods inherited from scikit-learn (``score``, ``get_params``, ...) keep their
    docstrings, whose ``:ref:`` and ``:term:`` roles point into scikit-learn's own documentation; show
    their text instead of a broken link."""
    module = getattr(obj, "__module__", None) or ""
    if not module.startswith("sklearn"):
        return
    for i, line in enumerate(lines):
        lines[i] = _SKLEARN_REF.sub(
            lambda m: f"*{(m.group(1) or m.group(2) or m.group(3)).strip()}* (scikit-learn)", line
        )


def setup(app):
    app.connect("autodoc-skip-member", _skip_namedtuple_fields)
    app.connect("autodoc-process-docstring", _unlink_sklearn_refs)
    composed_source.setup(app)


# -- sphinx-gallery ------------------------------------------------------------
sphinx_gallery_conf = {
    "examples_dirs": "../examples",
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",
    "within_subsection_order": "gallery_order.ExampleOrder",
    "backreferences_dir": "gen_modules/backreferences",
    "doc_module": ("skbong",),
    "reference_url": {"skbong": None},
    "image_scrapers": ("matplotlib",),
    "matplotlib_animations": False,
    "remove_config_comments": True,
    "show_memory": False,
    "min_reported_time": 0,
    "abort_on_example_error": True,
    "plot_gallery": "True",
}

# -- HTML --------------------------------------------------------------------
html_theme = "furo"
html_title = f"skbong {release}"
html_static_path = []
html_theme_options = {"navigation_with_keys": True}
