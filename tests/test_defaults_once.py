"""Every default of a plan's option is typed once (issue 37): agentgrpo's own options in `RunConfig`, the
GRPOConfig values agentgrpo sets in `GRPO_DEFAULTS` / `GRPO_DEFAULTS_CPU`, and TRL's own read from TRL (never
typed in agentgrpo). A grep over the package's syntax: a literal default for a name the plan knows (a
parameter default, a dataclass field, ``getattr(x, NAME, literal)``, ``d.get(NAME, literal)``,
``d.setdefault(NAME, literal)``, an entry of a ``*DEFAULTS*`` dict) is a definition site; each name has at most
one, and a planted duplicate is caught."""

from __future__ import annotations

import ast
import dataclasses
import shutil
from pathlib import Path

from agentgrpo.config import GRPO_DEFAULTS, GRPO_DEFAULTS_CPU, RunConfig, _grpo_fields, _peft_fields

PACKAGE = Path(__file__).resolve().parent.parent / "src" / "agentgrpo"
OURS = {f.name for f in dataclasses.fields(RunConfig)}
NAMES = OURS | set(_grpo_fields()) | set(_peft_fields())
# Where agentgrpo types a default, by kind: its own options in RunConfig, its GRPOConfig values in the dicts.
HOME = {**{name: ("config.py", "field") for name in OURS},
        **{name: ("config.py", "defaults-dict") for name in {*GRPO_DEFAULTS, *GRPO_DEFAULTS_CPU}}}
# The same word for another thing (not the option): each site named, with the reason.
OTHER_CONCEPT = {
    ("seed", "doctor/paired.py"): "a bootstrap's own seed (confidence intervals), not the run's",
    ("seed", "evaluation/passk.py"): "the bootstrap seed of pass@k's confidence interval, not the run's",
    ("seed", "tiny/build.py"): "the seed the shipped tiny model was built with",
    ("seed", "tiny/model.py"): "the tiny model's random initialisation",
    ("seed", "training/sft.py"): "the SFT warm start's demonstration order when no run passes one (the tiny build)",
    ("use_cpu", "launch/accelerate_cmd.py"): "a key of an accelerate config file, not GRPOConfig's field",
    ("flavor", "commands/jobs.py"): "what `jobs status` prints for a Hub job object without a flavor",
    ("task", "launch/hf_jobs.py"): "a job label's text where the config names no task",
    ("success_reward", "tasks/base.py"): "a task's own success reward (the option's default, None, means: the task's)",
}


def _literal(node) -> bool:
    if isinstance(node, ast.UnaryOp):
        node = node.operand
    return isinstance(node, ast.Constant) and node.value is not None  # None: no value, not a default


def _sites_in(tree: ast.AST) -> list[tuple[str, int, str]]:
    """(name, line, kind) of each literal default for a plan option name in one module."""
    sites = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            a = node.args
            positional = a.posonlyargs + a.args
            pairs = [*zip(positional[len(positional) - len(a.defaults):], a.defaults, strict=True),
                     *zip(a.kwonlyargs, a.kw_defaults, strict=True)]
            sites += [(arg.arg, node.lineno, "param") for arg, d in pairs
                      if d is not None and arg.arg in NAMES and _literal(d)]
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            value = node.value
            if isinstance(value, ast.Call) and getattr(value.func, "id", "") == "field":
                value = next((k.value for k in value.keywords if k.arg == "default"), None)
            if node.target.id in NAMES and value is not None and _literal(value):
                sites.append((node.target.id, node.lineno, "field"))
        elif isinstance(node, ast.Call):
            func = node.func
            called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            args = node.args
            if called in ("get", "setdefault") and len(args) == 2 and isinstance(args[0], ast.Constant) \
                    and args[0].value in NAMES and _literal(args[1]):
                sites.append((args[0].value, node.lineno, called))
            if called == "getattr" and len(args) == 3 and isinstance(args[1], ast.Constant) \
                    and args[1].value in NAMES and _literal(args[2]):
                sites.append((args[1].value, node.lineno, "getattr"))
        elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Dict) \
                and any(isinstance(t, ast.Name) and "DEFAULTS" in t.id for t in node.targets):
            sites += [(k.value, node.lineno, "defaults-dict") for k, v in zip(node.value.keys, node.value.values,
                                                                               strict=True)
                      if isinstance(k, ast.Constant) and k.value in NAMES and _literal(v)]
    return sites


def definition_sites(package: Path) -> dict[str, list[str]]:
    """Each option name -> its literal default sites ('path:line kind'), other concepts of the same word left out."""
    out: dict[str, list[str]] = {}
    for path in sorted(package.rglob("*.py")):
        where = path.relative_to(package).as_posix()
        for name, line, kind in _sites_in(ast.parse(path.read_text(encoding="utf-8"))):
            if (name, where) not in OTHER_CONCEPT:
                out.setdefault(name, []).append(f"{where}:{line} {kind}")
    return out


def problems(package: Path) -> list[str]:
    found = []
    for name, sites in sorted(definition_sites(package).items()):
        home = HOME.get(name)
        if home is None:
            found.append(f"{name}: TRL's default (read it from TRL: config.trl_default), typed at {sites}")
        elif len(sites) > 1 or not sites[0].startswith(home[0] + ":") or not sites[0].endswith(" " + home[1]):
            found.append(f"{name}: typed at {sites}; its one definition is {home[0]} ({home[1]})")
    return found


def test_every_default_the_plan_names_is_typed_once():
    assert problems(PACKAGE) == []
    sites = definition_sites(PACKAGE)
    literal = {f.name for f in dataclasses.fields(RunConfig) if isinstance(f.default, bool | int | float | str)}
    literal -= {"tool_timeout"}  # RunConfig reads it from agentgrpo.timeouts.DEFAULT_TOOL_TIMEOUT (one site there)
    assert literal | set(GRPO_DEFAULTS) | set(GRPO_DEFAULTS_CPU) <= set(sites)  # each found where it lives
    assert {"max_generation_rounds", "heal_max", "eval_size", "refill_round_size"} <= literal


def test_a_planted_duplicate_default_is_caught(tmp_path):
    copy = tmp_path / "agentgrpo"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("*.so", "__pycache__", "assets", "*.json"))
    planted = copy / "training" / "planted.py"
    planted.write_text("def refill(max_generation_rounds=4):\n    return max_generation_rounds\n\n\n"
                       "def sample(settings):\n    return settings.get('temperature', 1.0)\n\n\n"
                       "class Eval:\n    max_completion_length: int = 64\n")
    found = problems(copy)
    assert len(found) == 3, found
    assert any(p.startswith("max_generation_rounds: typed at") and "training/planted.py:1 param" in p for p in found)
    assert any(p.startswith("temperature: TRL's default") and "training/planted.py:6 get" in p for p in found)
    assert any(p.startswith("max_completion_length: TRL's default") and "planted.py:10 field" in p for p in found)
