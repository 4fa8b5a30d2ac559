"""The modules of the torchpair package import each other without a circle.

Every import statement is read from the source with ``ast`` (module level and inside
functions alike: a function-local import is still a dependency, it only hides the circle
until the function runs), resolved to a module of the package, and the graph must be a DAG.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "torchpair"


def _module_name(path: Path) -> str:
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


# written by the build (torchpair/_build_config.py, the extension module torchpair/_C); a
# module even before the first build
GENERATED = ("torchpair._build_config", "torchpair._C")


def _modules() -> dict[str, Path]:
    modules = {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}
    for name in GENERATED:
        modules.setdefault(name, None)
    return modules


def _resolve(target: str, modules: dict) -> str | None:
    """The package module a dotted import target lands in (an attribute import such as
    ``from ._catalog import info`` lands in ``torchpair._catalog``)."""
    while target:
        if target in modules:
            return target
        target = target.rpartition(".")[0]
    return None


def import_graph() -> dict[str, set[str]]:
    modules = _modules()
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for name, path in modules.items():
        if path is None:
            continue
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            targets = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")
                    base = base[: len(base) - (node.level - 1)]
                    prefix = ".".join(base + ([node.module] if node.module else []))
                else:
                    prefix = node.module or ""
                # `from . import x` imports the module x; `from .m import f` the module m
                # (prefix.f resolves to m when f is not a module)
                targets = [f"{prefix}.{a.name}" for a in node.names]
            for t in targets:
                dep = _resolve(t, modules)
                if dep is not None and dep != name:
                    graph[name].add(dep)
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}  # 1: on the stack, 2: done
    stack: list[str] = []

    def visit(n):
        state[n] = 1
        stack.append(n)
        for m in sorted(graph[n]):
            if state.get(m) == 1:
                return stack[stack.index(m):] + [m]
            if m not in state:
                found = visit(m)
                if found:
                    return found
        stack.pop()
        state[n] = 2
        return None

    for n in sorted(graph):
        if n not in state:
            found = visit(n)
            if found:
                return found
    return None


def test_graph_is_read():
    g = import_graph()
    # the reader sees relative imports at module level and the registration edges
    assert "torchpair._params" in g["torchpair.lazy"]
    assert "torchpair.backends" in g["torchpair._keops"]
    assert "torchpair.lazy" in g["torchpair._keops"]
    assert "torchpair._keops" in g["torchpair"]


def test_no_import_cycle():
    cycle = find_cycle(import_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_detector_finds_a_cycle():
    """The checker itself: a function-local import back to an importer is a cycle."""
    g = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}
    assert find_cycle(g) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


@pytest.mark.parametrize("module", ["torchpair.backends", "torchpair._expression"])
def test_base_modules_import_no_torchpair_module(module):
    """The registry and the expression base class sit at the bottom of the graph: they import
    no other torchpair module, so any module may import them."""
    assert import_graph()[module] == set()
