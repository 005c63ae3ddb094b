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

Each file's name is defined here and only here, and so is the one reader of each kind of file: JSON Lines
(`read_jsonl`, `parse_jsonl`), JSON (`read_json`; eval.json: `read_eval`), config.yaml (`read_config`,
`write_config`), the checkpoints (`checkpoints`); tests/test_rundir_names.py checks both.
"""

from __future__ import annotations

import json
import os
import time
from itertools import repeat
from pathlib import Path
from typing import Any

from agentgrpo import fastjson

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
CHECKPOINT_PREFIX = "checkpoint-"  # TRL's checkpoint-N folders


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


def read_config(run_dir: str | Path, notes: list[str] | None = None) -> dict[str, Any]:
    """The run's config.yaml ({} when there is none): the one reader of it.

    With ``notes`` (the doctor, a report: a run read as it is), a file that is unreadable or not a mapping
    gives {} and a note appended there; without, an unreadable file raises YAML's error.
    """
    path = Path(run_dir) / CONFIG
    if not path.is_file():
        return {}
    import yaml  # here: the doctor reads this module's names without loading YAML

    if notes is None:
        return yaml.safe_load(path.read_text()) or {}
    try:
        config = yaml.safe_load(path.read_text(encoding="utf-8", errors="replace"))
    except Exception as exc:
        notes.append(f"{path.name}: unreadable ({type(exc).__name__}: {exc}); reward weights unknown")
        return {}
    if not isinstance(config, dict):
        notes.append(f"{path.name}: not a mapping; reward weights unknown")
        return {}
    return config


def config_text(config: dict[str, Any]) -> str:
    """config.yaml's text for ``config`` (a job bundle carries the same file)."""
    import yaml

    return yaml.safe_dump(config, sort_keys=False)


def write_config(run_dir: str | Path, config: dict[str, Any]) -> Path:
    """Write the run's config.yaml, atomically (a heal rewrites it: a kill leaves the old file or the new)."""
    path = Path(run_dir) / CONFIG
    write_atomic(path, config_text(config))
    return path


def write_atomic(path: str | Path, text: str) -> None:
    """Replace ``path`` with ``text`` (written to a new temporary file in the same folder, fsynced, renamed):
    a kill leaves the old file or the new, never half of one. The file gets the permissions a plain write
    gives a new file (the umask's)."""
    import uuid  # here: the doctor reads runs without writing one

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.parent / f".{path.name}.{os.getpid()}-{uuid.uuid4().hex[:12]}.tmp"
    try:
        with open(tmp, "x", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def append_jsonl(path: Path, record: dict[str, Any]) -> None:
    """Append one record and flush it to the OS, so a killed run keeps every line written so far."""
    with open(path, "a", encoding="utf-8") as f:
        f.write(json.dumps(record, default=_jsonable) + "\n")
        f.flush()


def read_jsonl(path: str | Path) -> list[dict[str, Any]]:
    """The JSON objects of a JSON Lines file of the run directory ([] when it is absent): `parse_jsonl`."""
    path = Path(path)
    if not path.is_file():
        return []
    return parse_jsonl(path.read_text(encoding="utf-8", errors="replace"))[0]


def parse_jsonl(text: str) -> tuple[list[dict[str, Any]], list[str]]:
    """The JSON objects of a JSON Lines text, and notes on the lines that could not be read: the one JSONL
    decoder (the run directory's logs, the doctor's logs, the live doctor's tail).

    A broken last line is what a run killed mid-write leaves; it is dropped with a note. A line that is not a
    JSON object is skipped and counted. Values are decoded by `agentgrpo.fastjson` (one decode for the whole
    text when every line is whole; a bare NaN comes back as the string "NaN").

    >>> recs, notes = parse_jsonl('{"step": 1}\\n{"step": 2}\\n{"step": 3, "rew')
    >>> [r["step"] for r in recs], notes
    ([1, 2], ['last line is incomplete (a run stopped mid-write?): read the 2 complete records before it'])
    """
    records: list[dict] = []
    bad: list[int] = []
    lines = text.splitlines()
    last = len(lines)
    filled = list(filter(str.strip, lines))
    try:  # the common case, every line whole: one decode
        whole = fastjson.loads_lines(filled)
    except ValueError:  # not only a JSONDecodeError: e.g. an integer past Python's digit limit
        whole = None
    if whole is not None and all(map(isinstance, whole, repeat(dict))):
        return whole, []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            value = fastjson.loads(line)
        except ValueError:  # a JSONDecodeError, or a value Python will not build
            bad.append(number)
            continue
        if isinstance(value, dict):
            records.append(value)
        else:
            bad.append(number)
    notes = []
    if bad and bad[-1] == last:
        bad.pop()
        notes.append(
            "last line is incomplete (a run stopped mid-write?): "
            f"read the {len(records)} complete records before it"
        )
    if bad:
        shown = ", ".join(map(str, bad[:5])) + (" ..." if len(bad) > 5 else "")
        notes.append(f"skipped {len(bad)} unreadable line(s): {shown}")
    return records, notes


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
    data = read_eval(run_dir)
    data[stage] = results
    path.write_text(json.dumps(data, indent=1, default=_jsonable))
    return path


def read_json(path: str | Path) -> Any:
    """A JSON file of the run directory (eval.json, preflight.json, summary.json), None when it is absent: the
    one reader of them. Bad JSON raises ValueError (a JSONDecodeError, a UnicodeDecodeError)."""
    path = Path(path)
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


def read_eval(run_dir: str | Path, notes: list[str] | None = None) -> dict[str, Any]:
    """The run's eval.json ({} when there is none). With ``notes``, a file that is unreadable or not a mapping
    gives {} and a note appended there; without, bad JSON raises."""
    path = Path(run_dir) / EVAL
    if notes is None:
        return read_json(path) or {}
    try:
        data = read_json(path)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        notes.append(f"{path.name}: unreadable JSON ({exc}); evaluation results not used")
        return {}
    if data is None:
        return {}
    if not isinstance(data, dict):
        notes.append(f"{path.name}: expected a mapping of stage -> mode -> results; ignored")
        return {}
    return data


def checkpoints(folder: str | Path, complete_only: bool = True) -> list[tuple[int, Path]]:
    """(step, path) of the checkpoint-N directories in ``folder`` (a run's checkpoints/, a TRL output_dir), by
    step: the one checkpoint scanner. ``complete_only``: those with trainer_state.json (a checkpoint cut short
    while saving is never resumed from)."""
    out = []
    for path in Path(folder).glob(CHECKPOINT_PREFIX + "*"):
        tail = path.name[len(CHECKPOINT_PREFIX):]
        if path.is_dir() and tail.isdigit() and (not complete_only or (path / TRAINER_STATE).is_file()):
            out.append((int(tail), path))
    return sorted(out)


def last_checkpoint(run_dir: str | Path) -> Path | None:
    """The run's checkpoint with the highest step (complete or not), or None."""
    saved = checkpoints(Path(run_dir) / CHECKPOINTS, complete_only=False)
    return saved[-1][1] if saved else None


def _jsonable(value: Any) -> Any:
    if hasattr(value, "item"):
        return value.item()
    return str(value)
