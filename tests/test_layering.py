"""The layering the README claims, enforced: the import contracts in .importlinter (run with `lint-imports`)
and no import cycles inside the package (every import statement counts, lazy ones included)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "src"

pytest.importorskip("importlinter")
grimp = pytest.importorskip("grimp")


def lint_imports(src: Path, config: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(src)}
    exe = shutil.which("lint-imports") or "lint-imports"
    return subprocess.run([exe, "--no-cache", "--config", str(config)], cwd=src.parent, env=env,
                          capture_output=True, text=True, timeout=600)


def test_the_import_contracts_hold():
    result = lint_imports(SRC, ROOT / ".importlinter")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    assert "0 broken" in result.stdout


def test_a_planted_violation_breaks_the_contract(tmp_path):
    """The contracts bite: a doctor module that imports TRL and the trainer is refused."""
    src = tmp_path / "src"
    shutil.copytree(SRC / "agentgrpo", src / "agentgrpo", ignore=shutil.ignore_patterns("*.so", "__pycache__",
                                                                                         "assets", "_native.c"))
    planted = src / "agentgrpo" / "doctor" / "planted.py"
    planted.write_text("import trl\nfrom agentgrpo.training import grpo\n")
    result = lint_imports(src, ROOT / ".importlinter")
    assert result.returncode == 1, result.stdout[-2000:]
    assert "agentgrpo.doctor.planted -> trl" in result.stdout
    assert "agentgrpo.doctor.planted -> agentgrpo.training.grpo" in result.stdout


def cycles(graph, package: str = "agentgrpo") -> list[frozenset[str]]:
    """Every set of modules that import each other in a ring (strongly connected, size > 1), Tarjan's way."""
    modules = sorted(m for m in graph.modules if m == package or m.startswith(package + "."))
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[frozenset[str]] = []
    counter = 0
    for root in modules:
        if root in index:
            continue
        work = [(root, iter(sorted(graph.find_modules_directly_imported_by(root))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            for child in children:
                if not (child == package or child.startswith(package + ".")):
                    continue
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.find_modules_directly_imported_by(child)))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    component = set()
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.add(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(frozenset(component))
    return found


def _graph():
    sys.path.insert(0, str(SRC))
    try:
        return grimp.build_graph("agentgrpo", cache_dir=None)
    finally:
        sys.path.remove(str(SRC))


def test_the_cycle_finder_finds_planted_rings():
    graph = grimp.ImportGraph()
    for name in ("p", "p.a", "p.b", "p.c", "p.d", "p.e"):
        graph.add_module(name)
    for importer, imported in (("p.a", "p.b"), ("p.b", "p.c"), ("p.c", "p.a"), ("p.c", "p.d"), ("p.d", "p.e"),
                               ("p.e", "p.d")):
        graph.add_import(importer=importer, imported=imported)
    assert sorted(map(sorted, cycles(graph, "p"))) == [["p.a", "p.b", "p.c"], ["p.d", "p.e"]]


def test_no_import_cycles_at_all():
    assert [sorted(c) for c in cycles(_graph())] == []
