"""The import graph has five floors, each importing only the floors below it, and no import cycle:

1. ``dpharness.mechanisms`` -- exact mechanisms and laws;
2. ``dpharness.verifiers`` -- the auditing library (its core: everything but ``controls``);
3. ``dpharness.verifiers.controls`` (mechanisms with a known truth) and ``dpharness.adapters`` (libraries);
4. ``dpharness.bench`` -- the harness and its command line;
5. ``dpharness.testing`` -- the pytest plugin.


Every ``import`` / ``from ... import`` statement of every module (top level *and* inside functions,
since a lazy import is still a dependency) is read with :mod:`ast`, resolved to a module of the
``dpharness`` namespace, and checked against the layers. The source folders are found through the
installed package (``dpharness.<layer>.__path__``), so the test reads exactly what is imported.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

import dpharness

#: floor of each top-level part of the namespace (a longer prefix wins: controls sit above the verifier core)
FLOORS = {"dpharness.mechanisms": 1, "dpharness.verifiers": 2, "dpharness.verifiers.controls": 3, "dpharness.adapters": 3,
          "dpharness.bench": 4, "dpharness.testing": 5}
#: the folders mapped under the namespace (pyproject.toml's package-dir)
LAYERS = {"mechanisms": 1, "verifiers": 2, "bench": 4}
#: Generic names that must never be imported as top-level packages from inside the project.
GENERIC = set(LAYERS)


def _modules() -> dict[str, Path]:
    """dotted module name -> source file, for every module of the namespace."""
    out: dict[str, Path] = {"dpharness": Path(dpharness.__file__)}
    root = Path(dpharness.__file__).parent
    for f in root.rglob("*.py"):
        rel = f.relative_to(root).with_suffix("")
        parts = [p for p in rel.parts if p != "__init__"]
        if parts:
            out[".".join(["dpharness", *parts])] = f
    for layer in LAYERS:
        pkg = importlib.import_module(f"dpharness.{layer}")
        (base,) = pkg.__path__
        for f in Path(base).rglob("*.py"):
            rel = f.relative_to(base).with_suffix("")
            parts = [p for p in rel.parts if p != "__init__"]
            out[".".join(["dpharness", layer, *parts])] = f
    return out


def _imports(name: str, path: Path, known: set[str]) -> list[tuple[str, int, bool]]:
    """(imported dpharness module, line, at top level) for every import statement of a module."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    is_pkg = path.name == "__init__.py"
    package = name if is_pkg else name.rpartition(".")[0]
    top_level = {id(n) for n in tree.body}
    # Statements directly under `if TYPE_CHECKING:` are not executed: treat them as lazy.
    found: list[tuple[str, int, bool]] = []

    def resolve(mod: str) -> str | None:
        while mod and mod not in known:
            mod = mod.rpartition(".")[0]
        return mod or None

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                head = a.name.split(".")[0]
                assert head not in GENERIC, f"{path}:{node.lineno}: imports the generic top-level name {a.name!r}"
                if head == "dpharness":
                    target = resolve(a.name)
                    if target:
                        found.append((target, node.lineno, id(node) in top_level))
        elif isinstance(node, ast.ImportFrom):
            if node.level == 0:
                mod = node.module or ""
                assert mod.split(".")[0] not in GENERIC, f"{path}:{node.lineno}: imports the generic name {mod!r}"
                if not mod.startswith("dpharness"):
                    continue
            else:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                mod = ".".join(base + ([node.module] if node.module else []))
            for a in node.names:  # `from . import x` imports the submodule x when it is one
                sub = f"{mod}.{a.name}"
                target = sub if sub in known else resolve(mod)
                if target:
                    found.append((target, node.lineno, id(node) in top_level))
    return found


def _layer(module: str) -> int | None:
    """The floor of a module (None for the namespace root and ``__main__``, which sit on top)."""
    best = None
    for prefix, floor in FLOORS.items():
        if (module == prefix or module.startswith(prefix + ".")) and (best is None or len(prefix) > len(best[0])):
            best = (prefix, floor)
    return best[1] if best else None


MODULES = _modules()
GRAPH = {m: _imports(m, p, set(MODULES)) for m, p in MODULES.items()}


def test_every_floor_and_the_root_are_found():
    assert set(FLOORS) <= set(MODULES)
    assert {_layer(m) for m in MODULES} == {None, 1, 2, 3, 4, 5}
    assert sum(1 for m in MODULES if m.startswith("dpharness.mechanisms.")) >= 5
    assert sum(1 for m in MODULES if m.startswith("dpharness.bench.")) >= 5


def test_no_module_of_a_lower_layer_imports_a_higher_one():
    upward = []
    for mod, edges in GRAPH.items():
        lo = _layer(mod)
        if lo is None:
            continue
        for target, line, _ in edges:
            hi = _layer(target)
            if hi is not None and hi > lo:
                upward.append(f"{MODULES[mod]}:{line}: {mod} imports {target}")
    assert not upward, "imports that run up the layers:\n" + "\n".join(sorted(set(upward)))


def test_the_package_root_stays_light():
    # `import dpharness` must not pull in the harness (pandas, matplotlib, joblib ...).
    assert not [t for t, _, top in GRAPH["dpharness"] if top]


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def _package_of(mod: str) -> str:
    return mod if MODULES[mod].name == "__init__.py" else mod.rpartition(".")[0]


def test_no_import_cycle_between_modules():
    # A package's __init__ importing its own submodules (to re-export them) is not a cycle of
    # dependencies; every other edge counts, lazy (in-function) imports included.
    edges = {m: {t for t, _, _ in e if t != m and not (MODULES[m].name == "__init__.py" and t.startswith(m + "."))}
             for m, e in GRAPH.items()}
    cycles = _cycles(edges)
    assert not cycles, "import cycles:\n" + "\n".join(" <-> ".join(c) for c in cycles)


@pytest.mark.parametrize("floor", sorted(FLOORS))
def test_floors_import_cleanly_on_their_own(floor):
    # Each floor imports in a fresh interpreter without a module of a higher floor being loaded
    # (the catalogue of controls included: the verifier core loads it only when it is used).
    import subprocess
    import sys

    higher = sorted(p for p, lvl in FLOORS.items() if lvl > FLOORS[floor])
    code = (f"import sys, {floor}; bad = [m for m in sys.modules if any(m == h or m.startswith(h + '.') "
            f"for h in {higher!r})]; print(bad); sys.exit(1 if bad else 0)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          cwd=Path(__file__).parent)
    assert proc.returncode == 0, proc.stdout + proc.stderr
