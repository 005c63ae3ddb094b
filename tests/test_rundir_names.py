"""Each file name of a run directory is typed once, in `agentgrpo.rundir`; every other module names it
through rundir's constant (a grep over the AST of src/, with a planted literal proving the check bites)."""

from __future__ import annotations

import ast
from pathlib import Path

from agentgrpo import rundir

PACKAGE = Path(__file__).resolve().parent.parent / "src" / "agentgrpo"
NAMES = {value: name for name, value in vars(rundir).items()
         if name.isupper() and isinstance(value, str) and value and " " not in value}


def typed_names(source: str, names=None) -> list[tuple[int, str]]:
    """(line, name) of each run-directory name written as a string: a file name with an extension anywhere,
    a directory name where a path is joined (``path / "checkpoints"``) or formatted (``f"{d}/segments"``)."""
    names = NAMES if names is None else names
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            if "." in node.value and node.value in names:
                found.append((node.lineno, node.value))
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            found += [(node.lineno, side.value) for side in (node.left, node.right)
                      if isinstance(side, ast.Constant) and side.value in names and "." not in side.value]
        elif isinstance(node, ast.JoinedStr):
            for part in node.values:
                if isinstance(part, ast.Constant) and isinstance(part.value, str):
                    found += [(node.lineno, n) for n in names
                              if any(f"/{n}" == piece or f"{n}/" == piece or f"/{n}/" in piece
                                     for piece in (part.value, part.value.rstrip("/") + "/"))]
    return sorted(set(found))


def test_the_names_are_rundirs():
    assert {"config.yaml", "metrics.jsonl", "completions.jsonl", "eval.json", "checkpoints", "heal.jsonl",
            "segments", "preflight.json", "trainer_state.json", "doctor_live.jsonl", "cost.json"} <= set(NAMES)
    assert len(NAMES) == len(set(NAMES.values())), "two constants for one name"


def test_each_run_directory_name_is_typed_once():
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name == "rundir.py" and path.parent == PACKAGE:
            continue
        hits = typed_names(path.read_text())
        if hits:
            found[str(path.relative_to(PACKAGE))] = hits
    assert found == {}, f"use agentgrpo.rundir's constants ({', '.join(sorted(NAMES.values()))}): {found}"


def test_planted_literals_are_found():
    source = '''
from pathlib import Path
"""A docstring naming config.yaml is prose."""
event = {"event": "final"}
a = Path(run_dir) / "config.yaml"
b = run_dir / "checkpoints" / name
c = f"{run_dir}/segments/{n}"
d = ("metrics.jsonl", "other.txt")
e = "checkpoints"
'''
    assert typed_names(source) == [(5, "config.yaml"), (6, "checkpoints"), (7, "segments"), (8, "metrics.jsonl")]
