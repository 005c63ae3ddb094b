"""The run directory: everything one run leaves behind, as plain files.

    runs/<name>/
      config.yaml         the resolved config (agentgrpo options + the GRPOConfig fields set)
      metrics.jsonl       one JSON object per logged step, appended and flushed as it happens
      completions.jsonl   samples of completions with their per-reward scores
      summary.json        the trainer's end-of-run summary (runtime, ...)
      eval.json           held-out results: {stage: {mode: summary}}
      checkpoints/        TRL checkpoints (resume from here; each has TRL's trainer_state.json); final/ holds
                          the trained model (final-merged/: a LoRA adapter merged into its base)
      curves.png          the main training curves
      preflight.json      what `agentgrpo train` checked before GRPO (reward audit, signal, token fidelity)
      doctor_live.jsonl   the live doctor's findings, as they happened
      heal.jsonl          each heal, planned then done; segments/<n>/ keeps what a rollback set aside
      cost.json           a Hugging Face job's cost

Each file's name is defined here and only here (tests/test_rundir_names.py checks it).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

METRICS = "metrics.jsonl"
COMPLETIONS = "completions.jsonl"
EVAL = "eval.json"
CONFIG = "config.yaml"
SUMMARY = "summary.json"
CHECKPOINTS = "checkpoints"
FINAL = "final"
MERGED = "final-merged"
CURVES = "curves.png"
PREFLIGHT = "preflight.json"
LIVE_DOCTOR = "doctor_live.jsonl"
HEAL_LOG = "heal.jsonl"
SEGMENTS = "segments"
COST = "cost.json"
TRAINER_STATE = "trainer_state.json"  # in each checkpoint-N (TRL's name)


def new_run_dir(runs_dir: str | Path, run_name: str | None, task: str, *, resume: bool) -> Path:
    """Create ``runs_dir/run_name`` (default name: ``<task>-<YYYYmmdd-HHMMSS>``).

    An existing run is only reused when resuming, so no history is ever appended to by accident.
    """
    name = run_name or f"{task}-{time.strftime('%Y%m%d-%H%M%S')}"
    return open_run_dir(Path(runs_dir) / name, resume=resume)


def open_run_dir(path: Path, *, resume: bool) -> Path:
    """Create the run directory ``path``; an existing run is only reused when resuming."""
    from agentgrpo.errors import UserError

    path = Path(path)
    if (path / METRICS).exists() and not resume:
        raise UserError(f"run directory {path} already holds a run; pass --resume true to continue it, "
                        "or choose another --run_name.")
    if resume and not path.exists():
        raise UserError(f"cannot resume: {path} does not exist.")
    path.mkdir(parents=True, exist_ok=True)
    return path


def read_config(run_dir: Path) -> dict[str, Any]:
    """The run's config.yaml ({} when there is none)."""
    import yaml  # here: the doctor reads this module's names without loading YAML

    path = Path(run_dir) / CONFIG
    return (yaml.safe_load(path.read_text()) or {}) if path.exists() else {}


def write_config(run_dir: Path, config: dict[str, Any]) -> Path:
    import yaml

    path = Path(run_dir) / CONFIG
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def append_jsonl(path: Path, record: dict[str, Any]) -> None:
    """Append one record and flush it to the OS, so a killed run keeps every line written so far."""
    with open(path, "a", encoding="utf-8") as f:
        f.write(json.dumps(record, default=_jsonable) + "\n")
        f.flush()


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """Records up to the last complete line (a run killed mid-write leaves a partial last line)."""
    records = []
    if not Path(path).exists():
        return records
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            break
    return records


GENERATED_TOKENS = "dynamic_sampling/generated_tokens"  # logged under dynamic_sampling: every round, refills too


def step_gaps(rows: list[dict[str, Any]]) -> list[int]:
    """The optimizer steps each logged row stands for: the steps since the previous row (the first: 1).

    >>> step_gaps([{"step": 1}, {"step": 2}, {"step": 5}])
    [1, 1, 3]
    """
    gaps, prev = [], None
    for row in rows:
        step = int(row["step"])
        gaps.append(1 if prev is None else max(1, step - prev))
        prev = step
    return gaps


def generated_tokens(rows: list[dict[str, Any]], completions_per_step: int) -> int:
    """Completion tokens generated over the logged ``rows`` (in step order): `GENERATED_TOKENS` where a row
    logs it (dynamic sampling counts every round it sampled, refill rounds included), else the mean completion
    length times the completions of one step; a row stands for the steps since the previous one (a logged value
    is the mean over its logging window).

    >>> generated_tokens([{"step": 1, "completions/mean_length": 10.0}, {"step": 2, GENERATED_TOKENS: 700.0}], 32)
    1020
    """
    total = 0.0
    for row, gap in zip(rows, step_gaps(rows), strict=True):
        counted = row.get(GENERATED_TOKENS)
        if isinstance(counted, int | float) and counted == counted:
            total += counted * gap
        else:
            length = row.get("completions/mean_length") or row.get("completion_length") or 0
            total += float(length) * completions_per_step * gap
    return int(round(total))


def write_eval(run_dir: Path, stage: str, results: dict[str, Any]) -> Path:
    """Merge ``{stage: results}`` into eval.json."""
    path = Path(run_dir) / EVAL
    data = json.loads(path.read_text()) if path.exists() else {}
    data[stage] = results
    path.write_text(json.dumps(data, indent=1, default=_jsonable))
    return path


def read_eval(run_dir: Path) -> dict[str, Any]:
    path = Path(run_dir) / EVAL
    return json.loads(path.read_text()) if path.exists() else {}


def last_checkpoint(run_dir: Path) -> Path | None:
    ckpts = sorted((Path(run_dir) / CHECKPOINTS).glob("checkpoint-*"), key=lambda p: int(p.name.split("-")[-1]))
    return ckpts[-1] if ckpts else None


def _jsonable(value: Any) -> Any:
    if hasattr(value, "item"):
        return value.item()
    return str(value)
