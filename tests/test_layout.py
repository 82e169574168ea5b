"""The house rules of LAYOUT.md, checked on the package's own source (AST), and the public API.

One concern per module (no module over 800 lines), LAYOUT.md's layers and no import cycle at any level
(function-local imports included), no private name imported or private attribute read across
modules, argparse and printing only in ``cli/``, no global matplotlib or warnings state changed
by library code, a lazy top-level package whose public names all resolve (also at ``pt.noise``).
"""
from __future__ import annotations

import ast
import functools
import importlib
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Iterable

import pytest

import pyterrier_noise as pn

PKG = Path(pn.__file__).resolve().parent
MODULES = sorted(p for p in PKG.rglob("*.py"))
MAX_LINES = 800

# The layers of LAYOUT.md, from the bottom: a module imports only from its own layer or a lower one.
# The top-level private helpers sit at the bottom (they import nothing of the package but each other);
# synthetic.py makes collections from the standard library and numpy alone, a source of data like io.
# Subpackages of one layer may import each other, as long as the subpackages' import graph stays a DAG
# (test_no_import_cycle_between_subpackages).  The top-level package is the lazy face of every layer.
LAYERS = (
    ("_vocab", "_validation", "_warnings", "_lazy", "_progress", "_plot", "_output", "_arrow", "_pool", "_executor"),
    ("io", "synthetic"),
    ("engine",),
    ("measures", "stats"),
    ("judges", "ties"),
    ("experiments", "selection", "correction", "crowd"),
    ("report", "web", "reproduce"),
    ("cli", "__main__"),
)
LAYER = {unit: i for i, units in enumerate(LAYERS) for unit in units}

FOR_NOW: set = set()   # (module, private name) pairs allowed while work elsewhere lands; none now
# private names of other libraries, used where they have no public form
FOREIGN_PRIVATE = {"_actions", "_SubParsersAction", "_HelpAction", "_VersionAction",    # argparse's parser tree
                   "_qrels_dlc",                                                        # ir_datasets' qrels file
                   "_replace", "_asdict", "_fields", "_make", "_getframe", "_exit",    # namedtuple, sys, os
                   "_state", "_change_notifier"}   # multiprocessing's Pool, stopped by _pool.py after a kill


def _dotted(path: Path) -> str:
    rel = path.relative_to(PKG.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


KNOWN = {_dotted(p) for p in MODULES}


def _subpackage(dotted: str) -> str:
    parts = dotted.split(".")
    return parts[1] if len(parts) > 1 else ""


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _resolve(module: str, is_package: bool, level: int, name: str | None) -> str:
    base = module.split(".") if is_package else module.split(".")[:-1]
    if level > 1:
        base = base[: len(base) - (level - 1)]
    return ".".join(base + ([name] if name else []))


@functools.cache
def _tree(path: Path) -> ast.Module:
    """One module's syntax tree, parsed once for every test (the tests only read it)."""
    return ast.parse(path.read_text())


@functools.cache
def _walk(tree: ast.AST) -> tuple[ast.AST, ...]:
    """``ast.walk(tree)`` of a whole module's tree, listed once for every test that reads it."""
    return tuple(ast.walk(tree))


def _type_checking_only(tree: ast.AST) -> set[int]:
    """The nodes under ``if TYPE_CHECKING:``: read by type checkers, never run."""
    return {id(n) for node in _walk(tree) if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
            for stmt in node.body for n in ast.walk(stmt)}


def _imports(path: Path, typing: bool = True):
    """(target module, imported names, line) of every package-internal import of one file, at module
    level and inside functions alike (a lazy import is still a dependency); with ``typing`` also those
    under ``if TYPE_CHECKING:``."""
    tree = _tree(path)
    me, is_pkg = _dotted(path), path.name == "__init__.py"
    skip = set() if typing else _type_checking_only(tree)
    for node in _walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.ImportFrom) and node.level > 0:
            yield _resolve(me, is_pkg, node.level, node.module), [a.name for a in node.names], node.lineno
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "pyterrier_noise":
            yield node.module, [a.name for a in node.names], node.lineno
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "pyterrier_noise":
                    yield alias.name, [], node.lineno


def _imported_modules(target: str, names: list[str]) -> list[tuple[str, list[str]]]:
    """``from target import names`` as (module, names taken from it): ``from pkg import mod`` imports the
    module ``pkg.mod``, ``from mod import f`` takes ``f`` from ``mod``."""
    mods = [(f"{target}.{n}", []) for n in names if f"{target}.{n}" in KNOWN]
    rest = [n for n in names if f"{target}.{n}" not in KNOWN]
    return mods + ([(target, rest)] if rest or not names else [])


@functools.cache
def _graph(typing: bool = True) -> dict[str, dict[str, int]]:
    """module -> {imported module: line}.  A module importing its own package (``from . import x``: the
    package is loaded before its modules anyway) is not an edge."""
    graph: dict[str, dict[str, int]] = {}
    for path in MODULES:
        me = _dotted(path)
        deps = graph.setdefault(me, {})
        for target, names, line in _imports(path, typing):
            for module, _ in _imported_modules(target, names):
                if module in KNOWN and module != me and not me.startswith(module + "."):
                    deps.setdefault(module, line)
    return graph


def _cycles(graph: dict[str, Iterable[str]]) -> list[list[str]]:
    """The strongly connected parts of more than one node (Tarjan): each holds at least one cycle."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    parts: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            part = []
            while not part or part[-1] != v:
                part.append(stack.pop())
            if len(part) > 1:
                parts.append(sorted(part))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return parts


def _cycle_report(parts: list[list[str]], graph: dict[str, dict[str, int]]) -> list[str]:
    return ["  " + "; ".join(f"{a} -> {b} (line {line})" for a in part for b, line in graph[a].items() if b in part)
            for part in parts]


def test_no_module_over_the_size_limit():
    long = {str(p.relative_to(PKG)): n for p in MODULES if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert not long, f"modules over {MAX_LINES} lines (one concern per module): {long}"


def _helper_of(me: str, module: str) -> bool | None:
    """None if ``module`` is public; else whether it is a private helper module ``me`` may use: one of its
    own package (or of a package above it: the top-level helpers serve every subpackage)."""
    parts = module.split(".")
    first = next((k for k, part in enumerate(parts) if _private(part)), None)
    if first is None:
        return None
    home = ".".join(parts[:first])
    return me == home or me.startswith(home + ".")


def test_no_private_name_imported_from_another_module():
    """A ``_name`` is private to its module: no other module imports it, unless it comes from a private
    helper module (``_common.py``, ``_validation.py``) of the importer's own package, and no module
    imports another package's private helper module."""
    bad = []
    for path in MODULES:
        me, rel = _dotted(path), str(path.relative_to(PKG))
        for target, names, line in _imports(path):
            for module, taken in _imported_modules(target, names):
                own = _helper_of(me, module)
                private = [n for n in taken if _private(n) and (rel, n) not in FOR_NOW]
                if own is False:
                    bad.append(f"{rel}:{line} imports the private module {module}")
                elif own is None and private:
                    bad.append(f"{rel}:{line} imports {private} from {module}")
    assert not bad, "\n".join(bad)


def _own_attributes(tree: ast.AST) -> set[str]:
    """Private attribute names a module defines on its classes: methods and class attributes, names in
    ``__slots__``, and ``self._x`` / ``cls._x`` assigned in a method."""
    own: set[str] = set()
    for cls in (n for n in _walk(tree) if isinstance(n, ast.ClassDef)):
        for stmt in cls.body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                own.add(stmt.name)
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target] if isinstance(
                stmt, ast.AnnAssign) else []
            own |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
            if isinstance(stmt, ast.Assign) and any(getattr(t, "id", "") == "__slots__" for t in stmt.targets):
                own |= {c.value for c in ast.walk(stmt.value) if isinstance(c, ast.Constant)
                        and isinstance(c.value, str)}
        for node in ast.walk(cls):
            targets = (node.targets if isinstance(node, ast.Assign) else [node.target]
                       if isinstance(node, (ast.AnnAssign, ast.AugAssign)) else [])
            own |= {a.attr for t in targets for a in ast.walk(t) if isinstance(a, ast.Attribute)
                    and isinstance(a.value, ast.Name) and a.value.id in ("self", "cls")}
    return own


def test_no_private_attribute_read_across_modules():
    """``obj._x`` only where ``_x`` belongs: on ``self``, ``cls`` or ``super()``, or a private attribute
    that a class of the same module defines (another instance of it, a class attribute).  Another
    module's object is read through a public accessor (as private imports are forbidden)."""
    bad = []
    for path in MODULES:
        rel = str(path.relative_to(PKG))
        tree = _tree(path)
        own = _own_attributes(tree)
        for node in _walk(tree):
            if not isinstance(node, ast.Attribute) or not _private(node.attr) or node.attr in own:
                continue
            v = node.value
            if (isinstance(v, ast.Name) and v.id in ("self", "cls")) or (
                    isinstance(v, ast.Call) and getattr(v.func, "id", "") == "super"):
                continue
            if node.attr in FOREIGN_PRIVATE or (rel, node.attr) in FOR_NOW:
                continue
            bad.append(f"{rel}:{node.lineno} reads {ast.unparse(node)}")
    assert not bad, "\n".join(bad)


def test_no_import_cycle_between_modules():
    """The modules' import graph is a DAG: imports inside functions count (a lazy import that closes a
    cycle only hides it); imports under ``if TYPE_CHECKING:`` never run and do not."""
    graph = _graph(typing=False)
    parts = list(_cycles(graph))
    assert not parts, "import cycles:\n" + "\n".join(_cycle_report(parts, graph))


def test_no_import_cycle_between_subpackages():
    """Subpackages of one layer may import each other, but never both ways (type-only imports count;
    the top-level package, the lazy face of them all, is left out)."""
    graph: dict[str, dict[str, int]] = {}
    for module, deps in _graph(typing=True).items():
        for dep, line in deps.items():
            if "" != _subpackage(dep) != _subpackage(module) != "":
                graph.setdefault(_subpackage(module), {}).setdefault(_subpackage(dep), line)
    parts = _cycles(graph)
    assert not parts, f"subpackages importing each other: {parts}"


def test_each_layer_imports_only_its_own_or_lower():
    """LAYOUT.md's layers, type-only imports included: the report imports the capabilities, never the
    other way round; the engine knows no measure, the judges no experiment."""
    assert {_subpackage(m) for m in KNOWN} - {""} <= set(LAYER), "a module outside LAYERS: place it"
    bad = []
    for module, deps in sorted(_graph(typing=True).items()):
        me = _subpackage(module)
        if not me:                 # the top-level package: the lazy face of every layer
            continue
        for dep, line in deps.items():
            there = _subpackage(dep)
            if there and LAYER[there] > LAYER[me]:
                bad.append(f"{module}:{line} imports {dep} (layer {LAYER[there]} above {LAYER[me]})")
    assert not bad, "\n".join(bad)


def _calls(tree: ast.AST):
    for node in _walk(tree):
        if isinstance(node, ast.Call):
            f = node.func
            yield node, (f.id if isinstance(f, ast.Name) else f"{getattr(f.value, 'id', '?')}.{f.attr}"
                         if isinstance(f, ast.Attribute) else "?")


def test_command_line_concerns_stay_in_cli():
    bad = []
    for path in MODULES:
        rel = path.relative_to(PKG)
        if rel.parts[0] == "cli":
            continue
        tree = _tree(path)
        for node in _walk(tree):
            if isinstance(node, ast.Import) and any(a.name == "argparse" for a in node.names):
                bad.append(f"{rel}:{node.lineno} imports argparse")
            if isinstance(node, ast.ImportFrom) and node.module in ("argparse", "matplotlib.pyplot"):
                bad.append(f"{rel}:{node.lineno} imports from {node.module}")
            if isinstance(node, ast.Import) and any(a.name == "matplotlib.pyplot" for a in node.names):
                bad.append(f"{rel}:{node.lineno} imports matplotlib.pyplot")
        for node, name in _calls(tree):
            if name == "print" and rel.parts[-1] != "terminal.py":     # the terminal oracle talks to a person
                bad.append(f"{rel}:{node.lineno} prints")
            if name in ("matplotlib.use",):
                bad.append(f"{rel}:{node.lineno} switches matplotlib's backend")
        for node in _walk(tree):
            if (isinstance(node, ast.Assign) and any(isinstance(t, ast.Attribute) and t.attr == "formatwarning"
                                                     for t in node.targets) and rel.parts[0] != "cli"):
                bad.append(f"{rel}:{node.lineno} replaces warnings.formatwarning")
    assert not bad, "\n".join(bad)


def test_process_tuning_only_in_cli_process():
    """The garbage collector, malloc and the process's environment are set in cli/_process.py only."""
    bad = []
    for path in MODULES:
        rel = path.relative_to(PKG)
        if rel.as_posix() == "cli/_process.py":
            continue
        tree = _tree(path)
        for node in _walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                names = [a.name for a in node.names] + [getattr(node, "module", None) or ""]
                # _pool.py asks the kernel to end workers with their parent; io/native.py flushes C stdio
                if {"gc", "ctypes"} & {n.split(".")[0] for n in names} and rel.as_posix() not in ("_pool.py",
                                                                                                  "io/native.py"):
                    bad.append(f"{rel}:{node.lineno} imports gc or ctypes")
            if isinstance(node, ast.Attribute) and node.attr == "mallopt":
                bad.append(f"{rel}:{node.lineno} calls mallopt")
            if isinstance(node, ast.Attribute) and node.attr in ("putenv", "unsetenv"):
                bad.append(f"{rel}:{node.lineno} changes the environment")
            if isinstance(node, ast.Subscript) and isinstance(node.ctx, (ast.Store, ast.Del)) and \
                    getattr(node.value, "attr", "") == "environ":
                bad.append(f"{rel}:{node.lineno} changes os.environ")
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                    node.func.attr in ("setdefault", "update", "pop", "clear") and \
                    "environ" in (getattr(node.func.value, "attr", ""), getattr(node.func.value, "id", "")):
                bad.append(f"{rel}:{node.lineno} changes os.environ")
    assert not bad, "\n".join(bad)


def test_every_public_name_resolves_at_the_top_and_in_its_subpackage():
    missing = []
    for sub in pn.SUBPACKAGES:
        mod = importlib.import_module(f"pyterrier_noise.{sub}")
        for name in getattr(mod, "__all__", ()):
            if not hasattr(mod, name):
                missing.append(f"pyterrier_noise.{sub}.{name}")
    for name in pn.__all__:
        if not hasattr(pn, name):
            missing.append(f"pyterrier_noise.{name}")
    assert not missing, missing


def test_top_level_names_are_the_subpackages_names():
    """The lazy table of the top-level package holds the user-facing names of every capability."""
    for sub in pn.SUBPACKAGES:
        mod = importlib.import_module(f"pyterrier_noise.{sub}")
        for name in getattr(mod, "__all__", ()):
            if name in pn.__all__:
                assert getattr(pn, name) is getattr(mod, name), name
    exported = set().union(*(set(getattr(importlib.import_module(f"pyterrier_noise.{s}"), "__all__", ()))
                             for s in pn.SUBPACKAGES))
    assert set(pn.__all__) - {"InputError", "NoiseWarning"} <= exported


def test_top_level_holds_the_user_facing_names_only():
    """About fifty names at the top; constants (ALL_CAPS) and specialist helpers in their subpackage."""
    assert 40 <= len(pn.__all__) <= 60, len(pn.__all__)
    assert len(set(pn.__all__)) == len(pn.__all__)
    constants = [n for n in pn.__all__ if n.isupper() and len(n) > 1]
    assert not constants, constants


def _packages():
    return sorted(p for p in MODULES if p.name == "__init__.py")


# packages whose __init__ re-exports nothing: the command line (a table of command modules) and the
# engine's kernels (importing the package registers every kernel, so nothing there is lazy)
EAGER_PACKAGES = {"pyterrier_noise.cli", "pyterrier_noise.engine.kernels"}


def test_every_package_is_lazy_through_one_helper():
    """Every package's __init__ gets __getattr__, __dir__ and __all__ from _lazy.attach, and no other
    __getattr__ of its own."""
    bad = []
    for path in _packages():
        dotted = _dotted(path)
        if dotted in EAGER_PACKAGES:
            continue
        tree = _tree(path)
        attached = any(isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)
                       and getattr(node.value.func, "id", None) == "attach" for node in tree.body)
        own = [node.name for node in tree.body if isinstance(node, ast.FunctionDef)
               and node.name in ("__getattr__", "__dir__")]
        if not attached or own:
            bad.append(f"{dotted}: attach {'used' if attached else 'missing'}, own {own}")
    assert not bad, bad


def test_no_module_shadows_a_name_of_its_package():
    """``pkg.name`` is never ambiguous: no module of a package has the name of one of its public names
    (importing the module would replace the attribute)."""
    bad = []
    for path in _packages():
        dotted = _dotted(path)
        if dotted in EAGER_PACKAGES:
            continue
        mod = importlib.import_module(dotted)
        modules = {p.stem for p in path.parent.glob("*.py")} | {p.name for p in path.parent.iterdir() if p.is_dir()}
        bad += [f"{dotted}.{n}" for n in getattr(mod, "__all__", ()) if n in modules]
    assert not bad, bad


def test_pt_noise_gives_subpackages_and_names():
    pt = pytest.importorskip("pyterrier")
    assert pt.noise.ties.TieBanding is pn.ties.TieBanding
    assert pt.noise.judges.RandomFlips is pn.RandomFlips
    assert pt.noise.RBPBase is pn.measures.RBPBase
    for sub in ("judges", "experiments", "selection", "ties", "report", "stats", "correction", "crowd", "io"):
        assert getattr(pt.noise, sub).__name__ == f"pyterrier_noise.{sub}"


@pytest.mark.parametrize("old", ["perturbation", "robustness", "uncertainty", "session", "tie_kernels",
                                 "pairwise", "agreement", "errors"])
def test_flat_module_names_of_before_the_release_are_gone(old):
    with pytest.raises(AttributeError):
        getattr(pn, old)


def test_every_warning_is_a_noise_warning():
    import pyterrier_noise._warnings as w
    classes = [c for c in vars(w).values() if isinstance(c, type) and issubclass(c, Warning)]
    assert {c.__name__ for c in classes} >= {"NoiseWarning", "CoercionWarning", "PerturbationWarning",
                                            "CorrectionWarning"}
    assert all(issubclass(c, pn.NoiseWarning) for c in classes)
    assert pn.io.CoercionWarning is w.CoercionWarning and pn.judges.PerturbationWarning is w.PerturbationWarning
    assert pn.correction.CorrectionWarning is w.CorrectionWarning
    # and no other module defines a warning class of its own
    for path in MODULES:
        for node in _walk(_tree(path)):
            if isinstance(node, ast.ClassDef) and path.name != "_warnings.py":
                bases = {getattr(b, "id", getattr(b, "attr", "")) for b in node.bases}
                assert not bases & {"UserWarning", "Warning", "RuntimeWarning"}, f"{path}: {node.name}"


def test_import_is_lazy():
    """``import pyterrier_noise`` (and so ``import pyterrier``'s entry point) loads no heavy library."""
    code = ("import sys, pyterrier_noise; heavy = [m for m in ('pandas', 'numpy', 'scipy', 'matplotlib', "
            "'pyterrier', 'ir_measures', 'pyarrow') if m in sys.modules]; print(heavy)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_command_line_restores_warnings_formatting(tmp_path, capsys):
    """main() formats warnings as sentences while it runs and puts the caller's formatter back."""
    (tmp_path / "q").write_text("1 0 d1 1\n1 0 d1 0\n")            # a duplicate judgment: a CoercionWarning
    (tmp_path / "r").write_text("1 Q0 d1 1 2.0 x\n1 Q0 d2 2 1.0 x\n")
    before = warnings.formatwarning
    from pyterrier_noise.cli import main
    with pytest.warns(pn.io.CoercionWarning, match="1 duplicate judgment"):
        assert main(["eval", str(tmp_path / "q"), str(tmp_path / "r"), "-m", "P@1"]) == 0
    assert warnings.formatwarning is before
    assert capsys.readouterr().out.split() == ["r", "all", "P@1", "0.0000"]   # the last duplicate (label 0) kept


INTERNAL_REFERENCE = __import__("re").compile(
    r"\bseed ?00[0-4][ab]?\b|\bseed00[0-4]|\bnotes,? Sec\b|shared/spec/seed|\bseed notes?\b",
    __import__("re").IGNORECASE)


def test_words_for_people_cite_papers_not_internal_notes():
    """Docstrings, help, output, docs and examples cite papers by authors and year: no reference to the
    project's internal notes ("seed 002", "seed note A5", "notes Sec. 4") that a reader cannot follow."""
    root = PKG.parent
    files = [*MODULES, *sorted((root / "docs").glob("*.md")), *sorted((root / "examples").glob("*.py")),
             root / "README.md"]
    bad = [f"{path.relative_to(root)}:{i}: {line.strip()[:80]}" for path in files if path.exists()
           for i, line in enumerate(path.read_text().splitlines(), 1) if INTERNAL_REFERENCE.search(line)]
    assert not bad, "\n".join(bad)


def test_vocabulary_and_checks_sit_at_the_bottom():
    """``_vocab`` imports the standard library only (the command line builds its parsers from it before
    anything heavy is imported); ``_validation`` imports numpy and, of the package, ``_vocab`` and
    ``_warnings`` only."""
    allowed = {"_vocab": (set(), set()),
               "_validation": ({"pyterrier_noise._vocab", "pyterrier_noise._warnings"}, {"numpy"})}
    for name, (inside_ok, outside_ok) in allowed.items():
        path = PKG / f"{name}.py"
        inside = {target for target, _, _ in _imports(path)}
        assert inside <= inside_ok, (name, inside - inside_ok)
        nodes = list(_walk(_tree(path)))
        outside = {a.name.split(".")[0] for n in nodes if isinstance(n, ast.Import) for a in n.names}
        outside |= {n.module.split(".")[0] for n in nodes if isinstance(n, ast.ImportFrom) and n.level == 0}
        extra = outside - set(sys.stdlib_module_names) - {"__future__"} - outside_ok
        assert not extra, (name, extra)
def test_every_top_level_name_is_documented_with_an_example():
    """docs/api.md names every top-level name in its tables and uses it in a python example."""
    import re
    page = (PKG.parent / "docs" / "api.md").read_text()
    code = "\n".join(re.findall(r"```python\n(.*?)```", page, re.S))
    undocumented = [n for n in pn.__all__ if f"`{n}" not in page]
    unused = [n for n in pn.__all__ if not re.search(rf"\bpn\.{n}\b", code)]
    assert not undocumented and not unused, (undocumented, unused)
