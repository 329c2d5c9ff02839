"""``[source]`` links for the methods an estimator names in its class body.

An estimator is composed: ``BongRegressor`` names ``predict = face.predict`` (a function
of ``regression_face.py``) and ``posterior_var_ = property(posterior.posterior_var)``.
``sphinx.ext.viewcode`` finds a documented method's module from the function's
``__module__``, then looks for the method's full name (``BongRegressor.predict``) among
the names that module defines, where it is ``predict``: no link. These two event
handlers give it the link: a property is followed to its getter's module, and each
module's names gain one alias ``Class.name`` for every public class that names one of
its functions, pointing at that function's lines.
"""

import importlib
import inspect

from sphinx.pycode import ModuleAnalyzer

PUBLIC_MODULES = ("skbong", "skbong.adapters", "skbong.pipeline")
"""The modules whose classes the API pages document."""


def _function(obj):
    """The function behind a class attribute (a property's getter), or ``None``."""
    if isinstance(obj, property):
        obj = obj.fget
    obj = inspect.unwrap(obj) if callable(obj) else None
    return obj if inspect.isfunction(obj) else None


def _lookup(modname, fullname):
    """The object ``fullname`` in module ``modname``, class attributes unbound."""
    obj = importlib.import_module(modname)
    for part in fullname.split("."):
        obj = inspect.getattr_static(obj, part) if isinstance(obj, type) else getattr(obj, part)
    return obj


def follow(app, modname, fullname):
    """``viewcode-follow-imported``: the module that defines a property's getter."""
    try:
        attr = _lookup(modname, fullname)
    except (AttributeError, ImportError):
        return None
    func = _function(attr) if isinstance(attr, property) else None
    return func.__module__ if func is not None else None


def _public_classes():
    for name in PUBLIC_MODULES:
        module = importlib.import_module(name)
        for cls in vars(module).values():
            if isinstance(cls, type) and cls.__module__.startswith("skbong"):
                yield cls


def find_source(app, modname):
    """``viewcode-find-source``: a skbong module's code and names, with the aliases
    ``Class.name`` of the functions public classes name."""
    if not modname.startswith("skbong"):
        return None
    analyzer = ModuleAnalyzer.for_module(modname)
    analyzer.find_tags()
    tags = dict(analyzer.tags)
    for cls in _public_classes():
        for name in dir(cls):
            func = _function(inspect.getattr_static(cls, name, None))
            if func is not None and func.__module__ == modname and func.__qualname__ in tags:
                tags.setdefault(f"{cls.__name__}.{name}", tags[func.__qualname__])
    return analyzer.code, tags


def setup(app):
    app.connect("viewcode-follow-imported", follow)
    app.connect("viewcode-find-source", find_source)
