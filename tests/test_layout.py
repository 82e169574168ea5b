"""The house rules of LAYOUT.md, checked on the package's own source (AST), and the public API.

One concern per module (no module over 800 lines), no import cycle, no private name imported across
subpackages, argparse and printing only in ``cli/``, no global matplotlib or warnings state changed
by library code, a lazy top-level package whose public names all resolve (also at ``pt.noise``).
"""
from __future__ import annotations

import ast
import importlib
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

import pyterrier_noise as pn

PKG = Path(pn.__file__).resolve().parent
MODULES = sorted(p for p in PKG.rglob("*.py"))
MAX_LINES = 800
SHARED_HELPERS = {"_validation", "_warnings", "_progress", "_plot"}


def _dotted(path: Path) -> str:
    rel = path.relative_to(PKG.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _subpackage(dotted: str) -> str:
    parts = dotted.split(".")
    return parts[1] if len(parts) > 1 else ""


def _resolve(module: str, is_package: bool, level: int, name: str | None) -> str:
    base = module.split(".") if is_package else module.split(".")[:-1]
    if level > 1:
        base = base[: len(base) - (level - 1)]
    return ".".join(base + ([name] if name else []))


def _imports(path: Path, top_level_only: bool):
    """(target module, imported names, line) of every package-internal import of one file."""
    tree = ast.parse(path.read_text())
    me, is_pkg = _dotted(path), path.name == "__init__.py"
    nodes = tree.body if top_level_only else list(ast.walk(tree))
    for node in nodes:
        if isinstance(node, ast.If) and top_level_only:   # `if TYPE_CHECKING:` blocks are not imports at run time
            continue
        if isinstance(node, ast.ImportFrom) and node.level > 0:
            target = _resolve(me, is_pkg, node.level, node.module)
            yield target, [a.name for a in node.names], node.lineno
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("pyterrier_noise"):
            yield node.module, [a.name for a in node.names], node.lineno


def test_no_module_over_the_size_limit():
    long = {str(p.relative_to(PKG)): n for p in MODULES if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert not long, f"modules over {MAX_LINES} lines (one concern per module): {long}"


def test_no_private_name_crosses_a_subpackage():
    bad = []
    for path in MODULES:
        me = _subpackage(_dotted(path))
        for target, names, line in _imports(path, top_level_only=False):
            there = _subpackage(target)
            if there in SHARED_HELPERS or there == me:
                continue
            if target == "pyterrier_noise" and set(names) <= SHARED_HELPERS | {"__version__"}:
                continue
            private = [n for n in names if n.startswith("_") and n != "__version__"]
            private += [target] if any(part.startswith("_") for part in target.split(".")[2:]) else []
            if private:
                bad.append(f"{path.relative_to(PKG)}:{line} imports {private} from {target}")
    assert not bad, "\n".join(bad)


def test_no_import_cycle_between_modules():
    """Module-level imports form a DAG (imports inside functions are allowed to be lazy)."""
    graph: dict[str, set[str]] = {}
    known = {_dotted(p) for p in MODULES}
    for path in MODULES:
        me = _dotted(path)
        deps = graph.setdefault(me, set())
        for target, names, _ in _imports(path, top_level_only=True):
            for cand in [f"{target}.{n}" for n in names] + [target]:
                if cand in known and cand != me:
                    deps.add(cand)
                    break
    # a package's __init__ importing its own modules is the face of the package, not a cycle
    seen, stack, cycles = set(), [], []

    def visit(node):
        if node in stack:
            cycles.append(stack[stack.index(node):] + [node])
            return
        if node in seen:
            return
        seen.add(node)
        stack.append(node)
        for d in graph.get(node, ()):
            if node.startswith(d + ".") :       # a module importing its own package's __init__
                continue
            visit(d)
        stack.pop()

    for n in sorted(graph):
        visit(n)
    real = [c for c in cycles if not all(x.endswith("__init__") for x in c)]
    assert not real, f"import cycles: {real}"


def _calls(tree: ast.AST):
    for node in ast.walk(tree):
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
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
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
        for node in ast.walk(tree):
            if (isinstance(node, ast.Assign) and any(isinstance(t, ast.Attribute) and t.attr == "formatwarning"
                                                     for t in node.targets) and rel.parts[0] != "cli"):
                bad.append(f"{rel}:{node.lineno} replaces warnings.formatwarning")
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
    assert set(pn.__all__) - {"InputError", "NoiseWarning", "CoercionWarning", "PerturbationWarning",
                              "CorrectionWarning"} <= exported


def test_pt_noise_gives_subpackages_and_names():
    pt = pytest.importorskip("pyterrier")
    assert pt.noise.ties.TieBanding is pn.ties.TieBanding
    assert pt.noise.judges.RandomFlips is pn.RandomFlips
    assert pt.noise.RBPBase is pn.measures.RBPBase
    for sub in ("judges", "experiments", "selection", "ties", "report", "stats", "correction", "crowd", "io"):
        assert getattr(pt.noise, sub).__name__ == f"pyterrier_noise.{sub}"


@pytest.mark.parametrize("old, new", [("perturbation", "judges"), ("robustness", "experiments"),
                                      ("uncertainty", "experiments"), ("session", "selection")])
def test_old_module_names_are_deprecated_aliases(old, new):
    with pytest.warns(DeprecationWarning, match=f"pyterrier_noise.{new}"):
        mod = getattr(pn, old)
    assert mod.__name__ == f"pyterrier_noise.{new}"


def test_every_warning_is_a_noise_warning():
    import pyterrier_noise._warnings as w
    classes = [c for c in vars(w).values() if isinstance(c, type) and issubclass(c, Warning)]
    assert {c.__name__ for c in classes} >= {"NoiseWarning", "CoercionWarning", "PerturbationWarning",
                                            "CorrectionWarning"}
    assert all(issubclass(c, pn.NoiseWarning) for c in classes)
    # and no other module defines a warning class of its own
    for path in MODULES:
        for node in ast.walk(ast.parse(path.read_text())):
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
    with pytest.warns(pn.CoercionWarning, match="1 duplicate judgment"):
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
