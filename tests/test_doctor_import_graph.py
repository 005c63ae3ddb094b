"""The doctor's modules import each other without cycles (issue 19), function-level imports included."""

from __future__ import annotations

import ast
from pathlib import Path

import agentgrpo.doctor

ROOT = Path(agentgrpo.doctor.__file__).resolve().parent
PACKAGE = "agentgrpo.doctor"


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    parts = parts[:-1] if parts[-1] == "__init__" else parts
    return ".".join((PACKAGE, *parts))


def import_graph() -> dict[str, set[str]]:
    """``{module: modules of the doctor it imports}`` (``from pkg import mod`` counts as importing ``mod``)."""
    modules = {_module_name(p): p for p in ROOT.rglob("*.py")}
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for name, path in modules.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                targets = [f"{node.module}.{a.name}" for a in node.names] + [node.module]
            for target in targets:
                if target in modules and target != name:
                    graph[name].add(target)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every cycle found by a depth-first search (each reported once, from its first module)."""
    found, state = [], {}

    def visit(node, stack):
        state[node] = "open"
        for nxt in sorted(graph[node]):
            if state.get(nxt) == "open":
                found.append(stack[stack.index(nxt) :] + [nxt])
            elif nxt not in state:
                visit(nxt, stack + [nxt])
        state[node] = "done"

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])
    return found


def test_cycle_finder_finds_a_planted_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == [["a", "b", "c", "a"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_doctor_has_no_import_cycles():
    graph = import_graph()
    assert f"{PACKAGE}.readers.notebook" in graph[f"{PACKAGE}.readers.formats"]
    # a package's __init__ importing its own submodules is how a package is made, not a cycle
    parent_edges = {(m, t) for m, ts in graph.items() for t in ts if t.startswith(m + ".")}
    pruned = {m: {t for t in ts if (m, t) not in parent_edges} for m, ts in graph.items()}
    assert cycles(pruned) == []
