"""The shape of the house: no import cycles, modules of a readable size, packages that say what
they are and what they may import, and the simulator used only through its public faces."""

from __future__ import annotations

import ast
import importlib
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"
PACKAGE = SRC / "kubemedic"
MAX_LINES = 600
SIM_FACES = {
    "kubemedic.sim.machinery",
    "kubemedic.sim.apiserver",
    "kubemedic.sim.cluster",
    "kubemedic.sim.scenarios",
}


def module_name(path: Path) -> str:
    parts = path.relative_to(SRC).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def imported(path: Path, name: str) -> Iterator[tuple[str, list[str], int]]:
    """Every import in the module, wherever it is (top level, function body, TYPE_CHECKING):
    the module imported from, the names taken, the line."""
    is_package = path.name == "__init__.py"
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, [], node.lineno
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".")
                if not is_package:
                    base = base[:-1]
                base = base[: len(base) - node.level + 1]
                target = ".".join([*base, node.module] if node.module else base)
            else:
                target = node.module or ""
            yield target, [a.name for a in node.names], node.lineno


def graph() -> dict[str, set[str]]:
    found = modules()
    edges: dict[str, set[str]] = {name: set() for name in found}
    for name, path in found.items():
        for target, names, _ in imported(path, name):
            if not target.startswith("kubemedic"):
                continue
            for sub in names:  # ``from package import module``
                if f"{target}.{sub}" in found:
                    edges[name].add(f"{target}.{sub}")
            if target in found and target != name:
                edges[name].add(target)
    return edges


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan). A package's
    ``__init__`` re-exporting its own modules is not a cycle: submodules import each other by
    full path, which runs the ``__init__`` but does not depend on what it exports."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0

    def visit(node: str) -> None:
        nonlocal counter
        index[node] = low[node] = counter
        counter += 1
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(edges.get(node, ())):
            if nxt.startswith(node + "."):
                continue
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def test_no_import_cycle_inside_src_counting_deferred_and_type_checking_imports() -> None:
    assert cycles(graph()) == []


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"p": {"p.m"}, "p.m": {"q"}, "q": set()}) == []


def test_no_module_is_over_600_lines() -> None:
    long = {
        name: n
        for name, path in modules().items()
        if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert long == {}


@pytest.mark.parametrize(
    "package", sorted(name for name, path in modules().items() if path.name == "__init__.py")
)
def test_every_package_says_what_it_is_and_what_it_may_import(package: str) -> None:
    path = modules()[package]
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")))
    assert doc, f"{package} has no docstring"
    assert "May import" in doc, f"{package}'s docstring does not say what it may import"


@pytest.mark.parametrize("package", sorted(SIM_FACES))
def test_simulator_faces_are_small_sorted_and_complete(package: str) -> None:
    module = importlib.import_module(package)
    exported = list(module.__all__)
    # constants, then classes, then functions, each group sorted (ruff's isort-style order)
    assert exported == sorted(exported, key=lambda n: (not n.isupper(), not n[:1].isupper(), n))
    assert len(exported) <= 16
    for name in exported:
        assert getattr(module, name) is not None


def test_cli_demo_and_bench_use_only_the_simulators_public_faces() -> None:
    users = [
        p
        for p in [*PACKAGE.rglob("*.py"), *(ROOT / "bench").glob("*.py")]
        if "sim" not in p.relative_to(ROOT).parts[:3] or p.parts[-2] == "bench"
    ]
    users = [p for p in users if not p.is_relative_to(PACKAGE / "sim")]
    faces = {name: set(importlib.import_module(name).__all__) for name in SIM_FACES}
    wrong = []
    for path in users:
        name = module_name(path) if path.is_relative_to(SRC) else path.stem
        for target, names, line in imported(path, name):
            if not target.startswith("kubemedic.sim"):
                continue
            where = f"{path.relative_to(ROOT)}:{line}"
            if target == "kubemedic.sim":
                wrong.extend(
                    f"{where} imports kubemedic.sim.{n}"
                    for n in names
                    if f"kubemedic.sim.{n}" not in faces
                )
                continue
            if target not in faces:
                wrong.append(f"{where} imports {target}")
                continue
            wrong.extend(f"{where} imports {target}.{n}" for n in names if n not in faces[target])
    assert wrong == []
