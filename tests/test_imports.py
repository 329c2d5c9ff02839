"""The package's import graph has no circle: no module imports (at module level or
inside a function) one that imports it back, directly or through others. A circle is
what made the engine's configuration import its registries inside functions; the
configuration and its name checks now live in ``skbong.engine.config``, above the
families, rules, likelihoods and curvature estimators that build on ``engine.types``.

The graph is read from the source (``ast``), so the test sees every import, also those
a run would not reach. ``from . import x`` is an edge to the submodule ``x``; importing
a package is an edge to its ``__init__``."""

import ast
import pathlib

import skbong

ROOT = pathlib.Path(skbong.__file__).parent


def _modules():
    mods = {}
    for path in ROOT.rglob("*.py"):
        parts = ("skbong",) + path.relative_to(ROOT).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        mods[name] = path
    return mods


def _targets(mods, module, node):
    """The modules an import statement of ``module`` loads."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names if a.name in mods]
    package = module if mods[module].name == "__init__.py" else module.rsplit(".", 1)[0]
    base = package
    for _ in range(node.level - 1):
        base = base.rsplit(".", 1)[0]
    name = (base + "." + node.module if node.module else base) if node.level else node.module
    subs = [f"{name}.{a.name}" for a in node.names if f"{name}.{a.name}" in mods]
    if subs and len(subs) == len(node.names):  # from package import submodules
        return subs
    return ([name] if name in mods else []) + subs


def _graph():
    mods = _modules()
    edges = {m: set() for m in mods}
    for module, path in mods.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                edges[module].update(t for t in _targets(mods, module, node) if t != module)
    return edges


def _circles(edges):
    """The strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            part = []
            while True:
                w = stack.pop()
                on.discard(w)
                part.append(w)
                if w == v:
                    break
            if len(part) > 1:
                out.append(sorted(part))

    for v in edges:
        if v not in index:
            visit(v)
    return out


def test_the_import_graph_has_no_circle():
    edges = _graph()
    assert "skbong.engine.config" in edges["skbong.engine"]  # the graph is read
    assert _circles(edges) == []


def test_a_circle_is_found():
    """The check sees a circle where there is one (else the test above proves nothing)."""
    edges = _graph()
    edges["skbong.engine.types"].add("skbong.engine.config")  # the old function-level imports
    assert any("skbong.engine.types" in c and "skbong.engine.config" in c for c in _circles(edges))
