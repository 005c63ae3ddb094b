"""Module layering: tiny/ never imports training.models (which builds tiny models), so there is no circle."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "agentgrpo"


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            out.add(node.module)
        elif isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
    return out


def test_tiny_does_not_import_training_models():
    for path in (PACKAGE / "tiny").glob("*.py"):
        assert "agentgrpo.training.models" not in imported_modules(path), path.name
    assert "agentgrpo.tiny.build" in imported_modules(PACKAGE / "training" / "models.py")


def test_import_agentgrpo_stays_light():
    import subprocess
    import sys

    code = "import sys, agentgrpo; print('torch' in sys.modules, 'trl' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]
