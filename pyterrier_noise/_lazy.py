"""One lazy-loading helper for every package of pyterrier-noise (PEP 562).

A package lists its public names and the modules that define them; :func:`attach` gives it the
module-level ``__getattr__``, ``__dir__`` and ``__all__``.  A name's module is imported the first
time the name is used (``pkg.name`` or ``from pkg import name``), and the value is then kept in the
package's namespace, so ``import pyterrier_noise`` (and any subpackage) loads no numerical library
until something is used.  In the spirit of scientific-python's ``lazy_loader.attach``::

    __getattr__, __dir__, __all__ = attach(__name__, {
        "flips": "RandomFlips RankBiasedFlips",     # module (relative to the package) -> names
        ".._warnings": ["PerturbationWarning"],    # leading dots: relative as in an import
    }, submodules=["flips"])

Standard library only.
"""
from __future__ import annotations

import importlib
import pkgutil
import sys
from typing import Any, Callable, Iterable, Mapping

__all__ = ["attach"]


def _module_path(module: str) -> str:
    """``"flips"`` -> ``".flips"``; a name with leading dots is relative as written."""
    return module if module.startswith(".") else f".{module}"


def attach(package: str, names: Mapping[str, str | Iterable[str]], submodules: Iterable[str] = ()
           ) -> tuple[Callable[[str], Any], Callable[[], list[str]], list[str]]:
    """``__getattr__``, ``__dir__`` and ``__all__`` for the package ``package``.

    Args:
        package: the package's ``__name__``.
        names: module -> the public names it defines (a list, or one string of names separated by
            whitespace).  A module without leading dots is a module of the package; leading dots
            make it relative as in an import statement (``".._warnings"``).
        submodules: modules of the package listed by ``dir(pkg)``.  Any module of the package
            is reachable as an attribute (``pkg.module``) before anything imported it.

    Returns:
        ``(__getattr__, __dir__, __all__)``: ``__all__`` lists the names in the order given.
    """
    where: dict[str, str] = {}
    for module, listed in names.items():
        for name in (listed.split() if isinstance(listed, str) else listed):
            if name in where:
                raise ValueError(f"{package}: {name!r} is listed for both {where[name]!r} and {module!r}")
            where[name] = _module_path(module)
    modules = frozenset(submodules)
    public = list(where)
    found: list[frozenset[str]] = []   # the package's modules, listed on the first unknown name

    def is_module(name: str) -> bool:
        if name in modules:
            return True
        if name.startswith("__"):
            return False
        if not found:
            path = getattr(sys.modules[package], "__path__", ())
            found.append(frozenset(m.name for m in pkgutil.iter_modules(path)))
        return name in found[0]

    def __getattr__(name: str) -> Any:
        if name in where:
            value = getattr(importlib.import_module(where[name], package), name)
            sys.modules[package].__dict__[name] = value
            return value
        if is_module(name):
            return importlib.import_module(f"{package}.{name}")
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def __dir__() -> list[str]:
        return sorted(set(sys.modules[package].__dict__) | set(public) | modules)

    return __getattr__, __dir__, public
