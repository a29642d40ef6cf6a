"""The package's imports point down the layers and never go round in a circle."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "toolscript"

# A module of the first group may not import any module of the second, at any place
# (function bodies and TYPE_CHECKING blocks included).
UPPER = [
    "toolscript.cli",
    "toolscript.mcpface",
    "toolscript.execution",
    "toolscript.gateway",
    "toolscript.pipeline",
    "toolscript.upstream",
    "toolscript.codegen",
    "toolscript.search",
]

FORBIDDEN = [
    ("toolscript.upstream", "toolscript.gateway"),
    ("toolscript.upstream", "toolscript.cli"),
    ("toolscript.pipeline", "toolscript.gateway"),
    ("toolscript.pipeline", "toolscript.cli"),
    ("toolscript.codegen", "toolscript.gateway"),
    ("toolscript.codegen", "toolscript.upstream"),
    ("toolscript.codegen", "toolscript.pipeline"),
    ("toolscript.search", "toolscript.gateway"),
    ("toolscript.search", "toolscript.upstream"),
    ("toolscript.search", "toolscript.pipeline"),
    ("toolscript.gateway", "toolscript.cli"),
    ("toolscript.execution", "toolscript.cli"),
    ("toolscript.gateway", "toolscript.execution"),
    ("toolscript.gateway", "toolscript.mcpface"),
    ("toolscript.execution", "toolscript.mcpface"),
    ("toolscript.mcpface", "toolscript.cli"),
    ("toolscript.plumbing.paths", "toolscript.gateway"),
    ("toolscript.config", "toolscript.gateway"),
    ("toolscript.errors", "toolscript."),
    ("toolscript.plumbing.paths", "toolscript.config"),
    ("toolscript.store.savedscripts", "toolscript.gateway"),
    ("toolscript.store.savedscripts", "toolscript.execution"),
    ("toolscript.store.savedscripts", "toolscript.codegen"),
    ("toolscript.store.savedscripts", "toolscript.config"),
    # The top level: config and policy above what is kept on disk, above the plumbing.
    *[
        (low, high)
        for low, highs in [
            ("toolscript.plumbing", ["toolscript.store", "toolscript.config", "toolscript.policy"]),
            # other clients' configs: pure reading, below the trust records that hash them
            (
                "toolscript.otherclients",
                ["toolscript.store", "toolscript.config", "toolscript.policy"],
            ),
            ("toolscript.store", ["toolscript.config", "toolscript.policy"]),
            ("toolscript.config", []),
            ("toolscript.policy", ["toolscript.config"]),
        ]
        for high in [*highs, *UPPER]
    ],
]


def _modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def import_graph() -> dict[str, set[str]]:
    modules = _modules()
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text())):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*anchor, base] if base else anchor)
                targets = [
                    f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base
                    for alias in node.names
                ]
            for target in targets:
                if target in modules and target != name:
                    graph[name].add(target)
    return graph


def test_the_import_graph_has_no_cycle() -> None:
    graph = import_graph()
    assert len(graph) > 40
    state: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                cycles.append([*stack[stack.index(nxt) :], nxt])
            elif nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node)
    # A package's __init__ importing its own submodules is no cycle of meaning.
    cycles = [c for c in cycles if not all(m == c[0] or m.startswith(c[0] + ".") for m in c)]
    assert cycles == []


def test_imports_point_down_the_layers() -> None:
    wrong = [
        f"{module} imports {target}"
        for module, targets in import_graph().items()
        for target in targets
        for low, high in FORBIDDEN
        if (module == low or module.startswith(low + ".")) and target.startswith(high)
    ]
    assert wrong == []
