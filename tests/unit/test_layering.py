"""The package's import structure: the layers of the README's "Layout"
table, bottom up, and no import circle between modules.

Every ``import`` and ``from ... import`` of ``emulator/`` counts, at module
level or inside a function, except those under ``if TYPE_CHECKING:`` (type
names only, never run). ``from P import name`` counts as an import of the
module ``P.name`` when there is one, else of ``P`` itself.
"""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx
import pytest

ROOT = Path(__file__).resolve().parents[2] / "emulator"

# Bottom up, as README.md's "Layout" table lists them: a package may import
# only packages before it.
LAYERS = ("speedups", "topology", "p4", "fidelity", "targets", "traffic", "network", "control",
          "exercise", "sim", "budget", "scenario", "measure", "view", "run", "cli")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in ROOT.rglob("*.py")}


def _type_checking_nodes(tree: ast.Module) -> set[int]:
    hidden: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            hidden.update(id(inner) for stmt in node.body for inner in ast.walk(stmt))
    return hidden


def import_graph() -> nx.DiGraph:
    """Module -> modules of the package it imports (see the docstring)."""
    modules = _modules()

    def resolve(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph = nx.DiGraph()
    graph.add_nodes_from(modules)
    for name, path in modules.items():
        tree = ast.parse(path.read_text(), str(path))
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        hidden = _type_checking_nodes(tree)
        for node in ast.walk(tree):
            if id(node) in hidden:
                continue
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[:len(package.split(".")) - node.level + 1]
                    base = ".".join(up + ([node.module] if node.module else []))
                targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base
                           for alias in node.names]
            for target in targets:
                resolved = resolve(target)
                if resolved and resolved != name and resolved.startswith("emulator"):
                    graph.add_edge(name, resolved)
    return graph


def _layer(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else None


def test_no_module_imports_itself_in_a_circle():
    circles = [sorted(c) for c in nx.strongly_connected_components(import_graph()) if len(c) > 1]
    assert circles == []


def test_every_package_has_a_layer():
    packages = {_layer(m) for m in _modules()} - {None}
    assert packages <= set(LAYERS), f"not in LAYERS: {sorted(packages - set(LAYERS))}"


def test_packages_import_only_layers_below_them():
    rank = {name: i for i, name in enumerate(LAYERS)}
    upward = sorted(f"{a} -> {b}" for a, b in import_graph().edges
                    if _layer(a) and _layer(b) and rank[_layer(b)] > rank[_layer(a)])
    assert upward == []


@pytest.mark.parametrize("source, expected", [
    ("import emulator.run.sim\n", "emulator.run.sim"),
    ("from emulator.scenario import load_scenario\n", "emulator.scenario"),
    ("from emulator.scenario import scale\n", "emulator.scenario.scale"),
    ("def f():\n    from emulator.run import run_scenario\n", "emulator.run"),
])
def test_imports_are_found_at_module_level_and_in_functions(tmp_path, monkeypatch, source,
                                                              expected):
    fake = tmp_path / "emulator"
    for package in ("", "run", "scenario", "measure"):
        (fake / package).mkdir(parents=True, exist_ok=True)
        (fake / package / "__init__.py").write_text("")
    for module in ("run/sim.py", "scenario/scale.py"):
        (fake / module).write_text("")
    (fake / "measure" / "probe.py").write_text(
        source + "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                 "    import emulator.cli\n")
    monkeypatch.setitem(globals(), "ROOT", fake)
    assert set(import_graph().successors("emulator.measure.probe")) == {expected}
