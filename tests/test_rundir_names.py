"""Each file name of a run directory is typed once, in `agentgrpo.rundir`, and each kind of its files has one
reader there; every other module names a file through rundir's constant and reads it through rundir's reader
(greps over the AST of src/, with planted literals and planted second readers proving the checks bite)."""

from __future__ import annotations

import ast
from pathlib import Path

from agentgrpo import rundir

PACKAGE = Path(__file__).resolve().parent.parent / "src" / "agentgrpo"
# (CHECKPOINT_PREFIX, "checkpoint-", is a prefix, written in messages as checkpoint-{step}: the reader check
# below keeps checkpoint scanning in rundir)
NAMES = {value: name for name, value in vars(rundir).items()
         if name.isupper() and isinstance(value, str) and value and " " not in value and not value.endswith("-")}


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


# The one reader of each kind of run-directory file, in agentgrpo.rundir: JSON Lines (`parse_jsonl`, `read_jsonl`),
# config.yaml (`read_config`, `write_config`, `config_text`), JSON (`read_json`; eval.json: `read_eval`, `write_eval`),
# the checkpoints (`checkpoints`). A module that reads another kind of file line by line (a dataset, a tracker's
# files) is not a run-directory reader: each is named here with what it reads.
OTHER_FILES = {
    "tasks/dataset.py": "a task's JSONL dataset",
    "tasks/coding.py": "the coding task's problem set",
    "tasks/function_calling.py": "BFCL's question and answer files",
}
JSONL_NAMES = {"METRICS", "COMPLETIONS", "HEAL_LOG", "LIVE_DOCTOR"}
JSON_NAMES = {"EVAL", "PREFLIGHT", "SUMMARY", "COST"}
# (not read_json: the doctor's formats.read_json reads a JSON log of any trainer)
READERS = {"read_jsonl", "parse_jsonl", "read_config", "write_config", "read_eval", "write_eval", "checkpoints",
           "last_checkpoint"}
_YAML_CALLS = {"safe_load", "load", "safe_dump", "dump", "full_load", "unsafe_load"}


def _named(node: ast.AST) -> set[str]:
    """The names and attribute names ``node`` mentions."""
    return {n.id if isinstance(n, ast.Name) else n.attr for n in ast.walk(node)
            if isinstance(n, ast.Name | ast.Attribute)}


def _calls(node: ast.AST) -> set[str]:
    """The called function names (``json.loads`` -> ``json.loads`` and ``loads``) in ``node``."""
    out = set()
    for call in ast.walk(node):
        if isinstance(call, ast.Call):
            func = call.func
            if isinstance(func, ast.Attribute):
                out.add(func.attr)
                if isinstance(func.value, ast.Name):
                    out.add(f"{func.value.id}.{func.attr}")
            elif isinstance(func, ast.Name):
                out.add(func.id)
    return out


def _decodes_lines(node: ast.AST) -> bool:
    """A loop or comprehension over lines (``text.splitlines()``, ``fh.readlines()``, ``for n, line in ...``)
    whose body decodes JSON (a ``loads`` call)."""
    for loop in ast.walk(node):
        if isinstance(loop, ast.For):
            over, target, body = loop.iter, loop.target, loop.body
        elif isinstance(loop, ast.comprehension):
            over, target, body = loop.iter, loop.target, [node]
        else:
            continue
        by_line = any("line" in name for name in _named(over) | _named(target) | _calls(over))
        if by_line and any("loads" in _calls(part) for part in body):
            return True
    return False


def second_readers(source: str) -> list[tuple[int, str, str]]:
    """(line, function, what) of each function that reads a kind of run-directory file itself: decodes JSON
    line by line or a JSONL log it names; loads or dumps YAML beside ``CONFIG``; decodes JSON beside a JSON file's
    name (``EVAL``, ``PREFLIGHT``, ``SUMMARY``, ``COST``);
    scans checkpoint-N folders (a ``checkpoint-*`` glob or ``checkpoint-(\\d+)`` pattern, rundir's
    ``CHECKPOINT_PREFIX``)."""
    found = []
    for func in ast.walk(ast.parse(source)):
        if not isinstance(func, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        named, calls = _named(func), _calls(func)
        if func.name in READERS:
            found.append((func.lineno, func.name, "a reader of rundir's name"))
        if _decodes_lines(func) or (named & JSONL_NAMES and "loads" in calls):
            found.append((func.lineno, func.name, "JSON Lines"))
        if "CONFIG" in named and {f"yaml.{c}" for c in _YAML_CALLS} & calls:
            found.append((func.lineno, func.name, "config.yaml"))
        if named & JSON_NAMES and {"json.loads", "json.load"} & calls:
            found.append((func.lineno, func.name, "JSON"))
        patterns = [n.value for n in ast.walk(func) if isinstance(n, ast.Constant) and isinstance(n.value, str)]
        if "CHECKPOINT_PREFIX" in named or any(  # a glob or a regex: one word (prose that names one is not)
                p.lstrip("^*/").startswith("checkpoint") and not any(c.isspace() for c in p)
                and any(mark in p for mark in ("*", "\\d", "[0-9]")) for p in patterns):
            found.append((func.lineno, func.name, "checkpoints"))
    return sorted(set(found))


def test_each_kind_of_run_directory_file_has_one_reader():
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = str(path.relative_to(PACKAGE))
        if relative == "rundir.py":
            continue
        hits = [h for h in second_readers(path.read_text()) if not (h[2] == "JSON Lines" and relative in OTHER_FILES)]
        if hits:
            found[relative] = hits
    assert found == {}, f"read run-directory files through agentgrpo.rundir's readers: {found}"


def test_rundir_holds_each_reader():
    hits = {what for _line, _name, what in second_readers(Path(rundir.__file__).read_text())}
    assert hits == {"JSON Lines", "config.yaml", "checkpoints", "a reader of rundir's name"}, hits


def test_planted_second_readers_are_found():
    source = '''
import json, yaml
from pathlib import Path
from agentgrpo.rundir import CONFIG, EVAL, METRICS, read_jsonl

def rows(path):
    out = []
    for line in Path(path).read_text().splitlines():
        out.append(json.loads(line))
    return out

def heals(path):
    return [json.loads(x) for x in open(path).readlines()]

def metrics(run_dir):
    return json.loads("[" + ",".join((run_dir / METRICS).read_text().split()) + "]")

def config(run_dir):
    return yaml.safe_load((run_dir / CONFIG).read_text())

def save(run_dir, cfg):
    (run_dir / CONFIG).write_text(yaml.safe_dump(cfg))

def evals(run_dir):
    return json.loads((run_dir / EVAL).read_text())

def last(folder):
    return sorted(Path(folder).glob("checkpoint-*"))[-1]

def step(path):
    import re
    return int(re.search(r"checkpoint-(\\d+)", path.name).group(1))

def lines(text):
    out = []
    for number, line in enumerate(text.split("\\n"), start=1):
        out.append(json.loads(line))
    return out

def read_config(path):
    return {}

def fine(run_dir):
    """Reads checkpoint-* folders through rundir."""
    return read_jsonl(run_dir / METRICS), f"checkpoint-{3}", "no checkpoint-*/trainer_state.json here"
'''
    assert second_readers(source) == [
        (6, "rows", "JSON Lines"), (12, "heals", "JSON Lines"), (15, "metrics", "JSON Lines"),
        (18, "config", "config.yaml"), (21, "save", "config.yaml"), (24, "evals", "JSON"),
        (27, "last", "checkpoints"), (30, "step", "checkpoints"), (34, "lines", "JSON Lines"),
        (40, "read_config", "a reader of rundir's name")]
