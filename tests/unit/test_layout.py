"""The house's shape, read from the source: arrows point inward and no module imports itself
back through others (every import counts, the lazy ones inside functions too)."""

from __future__ import annotations

import ast
from pathlib import Path

import agentcore

PACKAGE = Path(agentcore.__file__).parent

# What each layer may import from the project (besides itself, config and logs). The MCP
# face may forward to a running service through the client; the client stands alone; the
# frameworks' integrations are clients of a running service and reach it only through it.
INWARD = {
    "domain": set(),
    "services": {"domain"},
    "adapters": {"domain", "services"},
    "api": {"domain", "services", "bootstrap", "client"},
    "client": set(),
    "integrations": {"client"},
}


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path, modules: set[str]) -> set[str]:
    """The project modules a module imports, anywhere in it but under ``TYPE_CHECKING``
    (``from package import module`` is an import of that module, not of the package's
    ``__init__``)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    typing_only = {
        id(node)
        for block in ast.walk(tree)
        if isinstance(block, ast.If) and "TYPE_CHECKING" in ast.unparse(block.test)
        for statement in block.body
        for node in ast.walk(statement)
    }
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                submodule = f"{node.module}.{alias.name}"
                found.add(submodule if submodule in modules else node.module)
    return found & modules


def _graph() -> dict[str, set[str]]:
    modules = {_module_name(path): path for path in PACKAGE.rglob("*.py")}
    return {name: _imports(path, set(modules)) - {name} for name, path in modules.items()}


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in graph[node]:
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
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

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_module_imports_itself_back() -> None:
    assert _circles(_graph()) == []


def test_the_circle_check_sees_a_circle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _circles(graph) == [["a", "b", "c"]]


def _layer(module: str) -> str:
    return [*module.split("."), ""][1]


def test_layers_import_only_inward() -> None:
    wrong = [
        f"{source} imports {target}"
        for source, targets in _graph().items()
        for target in targets
        if (layer := _layer(source)) in INWARD
        and (other := _layer(target)) != layer
        and other not in INWARD[layer] | {"", "config", "logs"}
    ]
    assert wrong == []


def test_entry_points_are_leaves() -> None:
    """The CLI and the worker start things; nothing but the CLI imports them."""
    importers = {
        source
        for source, targets in _graph().items()
        for target in targets
        if _layer(target) in {"worker", "cli"} and _layer(source) != "cli"
    }
    assert importers == set()
