"""The layering the README claims, enforced: the import contracts in .importlinter (run with `lint-imports`:
the floors, and who may import TRL, the trainer, the sandbox), no module imported by name (``importlib``,
``__import__``) outside the entry points, and no import cycles inside the package (every import counts:
lazy ones, and those made by name)."""

from __future__ import annotations

import ast
import configparser
import os
import re
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


def _copy_of_the_package(tmp_path) -> Path:
    src = tmp_path / "src"
    shutil.copytree(SRC / "agentgrpo", src / "agentgrpo", ignore=shutil.ignore_patterns("*.so", "__pycache__",
                                                                                         "assets", "_native.c"))
    return src


def test_a_planted_violation_breaks_the_contract(tmp_path):
    """The contracts bite, each kind: a doctor module that imports TRL and the trainer (forbidden), the bottom
    floor importing TRL's classes from training/ again and a reward importing the plan (floors)."""
    src = _copy_of_the_package(tmp_path)
    (src / "agentgrpo" / "doctor" / "planted.py").write_text("import trl\nfrom agentgrpo.training import grpo\n")
    config = src / "agentgrpo" / "config.py"
    config.write_text(config.read_text() + "\n\ndef planted():\n    from agentgrpo.training import models\n")
    (src / "agentgrpo" / "rewards" / "planted.py").write_text("from agentgrpo import plan\n")
    result = lint_imports(src, ROOT / ".importlinter")
    assert result.returncode == 1, result.stdout[-2000:]
    said = " ".join(result.stdout.split())  # lint-imports wraps its lines
    assert "agentgrpo.doctor.planted -> trl" in said
    assert "agentgrpo.doctor.planted -> agentgrpo.training.grpo" in said
    assert "(top floor first) BROKEN" in said and "import TRL BROKEN" in said and "sandbox code BROKEN" in said
    assert "agentgrpo.config is not allowed to import agentgrpo.training" in said
    assert "agentgrpo.config -> agentgrpo.training.models" in said
    assert "agentgrpo.rewards is not allowed to import agentgrpo.plan" in said
    assert "agentgrpo.rewards.planted -> agentgrpo.plan" in said


def test_only_training_and_trl_config_may_import_trl():
    """The TRL contract names every other top-level module (a new module is not silently free to import TRL),
    and the floors contract places every module (``exhaustive``)."""
    contracts = configparser.ConfigParser()
    contracts.read(ROOT / ".importlinter")
    listed = set(contracts["importlinter:contract:trl-in-training-only"]["source_modules"].split())
    package = SRC / "agentgrpo"
    top = {f"agentgrpo.{p.stem}" for p in package.glob("*.py") if p.stem != "__init__"}
    top |= {f"agentgrpo.{p.parent.name}" for p in package.glob("*/__init__.py")}
    assert listed == top - {"agentgrpo.training", "agentgrpo.trl_config"}
    assert contracts["importlinter:contract:floors"]["exhaustive"].strip() == "True"


# --- imports by name ------------------------------------------------------------------------------------

# The entry points: the CLI finds its commands by name. Everywhere else a module imports another with an
# import statement, which grimp, lint-imports and the cycle check see.
ENTRY_POINTS = ("agentgrpo.cli", "agentgrpo.commands")


def imports_by_name(source: str, package: str = "agentgrpo", modules: set[str] | None = None
                    ) -> list[tuple[int, list[str]]]:
    """Each ``importlib.import_module(...)`` / ``__import__(...)`` call that can import a module of
    ``package``, as (line, the modules it can import).

    The name is read from a string (``"agentgrpo.plan"``), the fixed start of an f-string
    (``f"agentgrpo.commands.{name}"``: every module under it) or, for a name computed at run time, the
    package's module names written as strings elsewhere in the module (a lookup table, say); a relative
    name (``".plan"``) is the package's. ``modules``: the package's modules (prefixes are expanded against
    them); a name outside the package does not count. Not seen: a name assembled from pieces none of which
    is written whole (``".".join(["agentgrpo", "plan"])``); a reviewer sees those.
    """
    tree = ast.parse(source)
    by_name = {"__import__"}
    importlib_names = {"importlib"}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "importlib":
            by_name |= {a.asname or a.name for a in node.names if a.name in ("import_module", "__import__")}
        elif isinstance(node, ast.Import):
            importlib_names |= {a.asname or a.name for a in node.names if a.name == "importlib"}
    docstrings = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant)}
    ours = re.compile(rf"^{re.escape(package)}(\.[A-Za-z_][A-Za-z0-9_]*)*$")
    written = sorted({n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)
                      and id(n) not in docstrings and ours.match(n.value)})

    def targets(arg: ast.expr) -> list[str]:
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
            return [arg.value] if ours.match(arg.value) or arg.value.startswith(".") else []
        if isinstance(arg, ast.JoinedStr):
            head = arg.values[0] if arg.values else None
            prefix = head.value if isinstance(head, ast.Constant) else ""
            if not (prefix + ".").startswith(package + "."):
                return written
            return sorted(m for m in (modules or {prefix}) if m.startswith(prefix)) or [prefix + "*"]
        return written

    found = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and node.args):
            continue
        func = node.func
        named = isinstance(func, ast.Name) and func.id in by_name
        attribute = (isinstance(func, ast.Attribute) and func.attr in ("import_module", "__import__")
                     and isinstance(func.value, ast.Name) and func.value.id in (importlib_names | {"builtins"}))
        if named or attribute:
            hit = targets(node.args[0])
            if hit:
                found.append((node.lineno, hit))
    return sorted(found)


def by_name_imports(src: Path, package: str = "agentgrpo", modules: set[str] | None = None
                    ) -> dict[str, list[tuple[int, list[str]]]]:
    """``imports_by_name`` for every module of ``package`` under ``src``: module -> its by-name imports."""
    found = {}
    for path in sorted((src / package).rglob("*.py")):
        parts = path.relative_to(src).with_suffix("").parts
        module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        hits = imports_by_name(path.read_text(), package, modules)
        if hits:
            found[module] = hits
    return found


def outside_entry_points(found: dict) -> dict:
    return {m: hits for m, hits in found.items() if not any(m == e or m.startswith(e + ".") for e in ENTRY_POINTS)}


def test_the_by_name_finder_sees_each_form():
    """Planted by-name imports in synthetic sources are found; names outside the package are not."""
    modules = {"agentgrpo.plan", "agentgrpo.commands.a", "agentgrpo.commands.b"}
    cases = {
        'import importlib\ndef f():\n    return importlib.import_module("agentgrpo.plan").resolve_plan\n':
            [(3, ["agentgrpo.plan"])],
        'def f():\n    return __import__("agentgrpo.plan")\n': [(2, ["agentgrpo.plan"])],
        'from importlib import import_module as im\nx = im("agentgrpo.plan")\n': [(2, ["agentgrpo.plan"])],
        'import importlib as il\nx = il.import_module(f"agentgrpo.commands.{n}")\n':
            [(2, ["agentgrpo.commands.a", "agentgrpo.commands.b"])],
        'import importlib\nT = {"x": "agentgrpo.plan"}\ndef g(n):\n    return importlib.import_module(T[n])\n':
            [(4, ["agentgrpo.plan"])],
        'import builtins\nx = builtins.__import__("agentgrpo")\n': [(2, ["agentgrpo"])],
        'import importlib\nx = importlib.import_module(".plan", __package__)\n': [(2, [".plan"])],
        # not the package: a user's module, the standard library, a docstring naming a module
        'import importlib\ndef f(user):\n    "Like agentgrpo.plan."\n    return importlib.import_module(user)\n': [],
        'import importlib\nx = importlib.import_module("json")\ny = __import__("agentgrpo_other")\n': [],
        'from agentgrpo import plan\nx = plan.resolve_plan("agentgrpo.plan")\n': [],
    }
    for source, expected in cases.items():
        assert imports_by_name(source, modules=modules) == expected, source


def test_no_module_is_imported_by_name_outside_the_entry_points():
    found = by_name_imports(SRC)
    assert outside_entry_points(found) == {}
    assert "agentgrpo.cli" in found  # the finder does see the CLI's own (allowed) dispatch


def test_a_planted_by_name_import_is_refused(tmp_path):
    """The shim issue 37 removed (config.py importing the plan through importlib), planted in a copy."""
    src = _copy_of_the_package(tmp_path)
    config = src / "agentgrpo" / "config.py"
    config.write_text(config.read_text() + (
        "\n\ndef __getattr__(name):\n    import importlib\n\n"
        "    return importlib.import_module(\"agentgrpo.plan\").resolve_plan\n"))
    assert list(outside_entry_points(by_name_imports(src))) == ["agentgrpo.config"]


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


def _graph(src: Path = SRC, package: str = "agentgrpo"):
    """grimp's import graph of ``package`` under ``src``, with the imports made by name added."""
    sys.path.insert(0, str(src))
    try:
        graph = grimp.build_graph(package, cache_dir=None)
    finally:
        sys.path.remove(str(src))
    modules = {m for m in graph.modules if m == package or m.startswith(package + ".")}
    _compiled_modules(graph, src, package)
    for importer, hits in by_name_imports(src, package, modules).items():
        for _, targets in hits:
            for imported in targets:
                if imported in modules:
                    graph.add_import(importer=importer, imported=imported)
    return graph


def test_the_cycle_finder_finds_planted_rings():
    graph = grimp.ImportGraph()
    for name in ("p", "p.a", "p.b", "p.c", "p.d", "p.e"):
        graph.add_module(name)
    for importer, imported in (("p.a", "p.b"), ("p.b", "p.c"), ("p.c", "p.a"), ("p.c", "p.d"), ("p.d", "p.e"),
                               ("p.e", "p.d")):
        graph.add_import(importer=importer, imported=imported)
    assert sorted(map(sorted, cycles(graph, "p"))) == [["p.a", "p.b", "p.c"], ["p.d", "p.e"]]


def _compiled_modules(graph, src: Path, package: str) -> None:
    """grimp sees .py files only: ``from agentgrpo.sandbox import _native`` (a C extension) reads to it as an
    import of the package's ``__init__``. Such imports become imports of the extension module itself."""
    for ext in sorted((src / package).rglob("*.so")):
        parent = ".".join(ext.parent.relative_to(src).parts)
        name = f"{parent}.{ext.name.split('.')[0]}"
        graph.add_module(name)
        line = f"from {parent} import {name.rsplit('.', 1)[1]}"
        for importer in sorted(graph.find_modules_that_directly_import(parent)):
            details = graph.get_import_details(importer=importer, imported=parent)
            if details and all(d["line_contents"] == line for d in details):
                graph.remove_import(importer=importer, imported=parent)
                graph.add_import(importer=importer, imported=name)


def test_a_ring_closed_by_name_is_a_ring(tmp_path):
    """An import by name counts in the cycle check: a -> b by statement, b -> a by importlib."""
    pkg = tmp_path / "plantedring"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from plantedring import b\n")
    (pkg / "b.py").write_text("def f():\n    import importlib\n\n    return importlib.import_module('plantedring.a')\n")
    assert [sorted(c) for c in cycles(_graph(tmp_path, "plantedring"), "plantedring")] == [
        ["plantedring.a", "plantedring.b"]]


def test_an_import_of_a_compiled_module_is_not_an_import_of_its_package(tmp_path):
    pkg = tmp_path / "plantedext"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("def f():\n    from plantedext import a\n")
    (pkg / "a.py").write_text("from plantedext import _native\n")
    (pkg / "_native.cpython-311-x86_64-linux-gnu.so").write_bytes(b"")
    graph = _graph(tmp_path, "plantedext")
    assert graph.find_modules_directly_imported_by("plantedext.a") == {"plantedext._native"}
    assert cycles(graph, "plantedext") == []


def test_no_import_cycles_at_all():
    """Among modules, counting lazy imports and the CLI's imports of its commands by name."""
    graph = _graph()
    assert "agentgrpo.commands.train" in graph.find_modules_directly_imported_by("agentgrpo.cli")
    assert [sorted(c) for c in cycles(graph)] == []
