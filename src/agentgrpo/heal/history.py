"""What a run directory records of its heals, as plain files the doctor and the report read:

    runs/<name>/
      heal.jsonl            one record per heal, written twice: status "planned" before anything is moved,
                            "done" after (a heal killed in between completes on --resume)
      segments/<n>/         the segment heal n abandoned, kept, never overwritten:
        metrics.jsonl       every metric it logged (the rows after the rollback step are the abandoned ones)
        completions.jsonl   its sampled completions
        checkpoints/        its checkpoints after the rollback step (never resumed from)
        final/              the model it ended with (a stop: the run's final/ is the rollback checkpoint)

metrics.jsonl itself always holds the lineage of the model the run ends with: the rows up to each rollback
step, then the segment that followed.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from agentgrpo.rundir import HEAL_LOG, METRICS, SEGMENTS

PLANNED, DONE = "planned", "done"


def segment_dir(run_dir: str | Path, heal: int) -> Path:
    """Where heal number ``heal`` (1, 2, ...) keeps the segment it abandoned."""
    return Path(run_dir) / SEGMENTS / str(heal)


def read(run_dir: str | Path) -> list[dict[str, Any]]:
    """Every heal.jsonl record (a partial last line, from a kill mid-write, is left out)."""
    path = Path(run_dir) / HEAL_LOG
    if not path.is_file():
        return []
    records = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            value = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(value, dict) and "heal" in value:
            records.append(value)
    return records


def heals(run_dir: str | Path) -> list[dict[str, Any]]:
    """One record per heal, the latest status of each, in order."""
    latest: dict[int, dict] = {}
    for record in read(run_dir):
        latest[int(record["heal"])] = record
    return [latest[k] for k in sorted(latest)]


def pending(run_dir: str | Path) -> dict[str, Any] | None:
    """The heal that was planned and not finished (the process was killed during it), or None."""
    unfinished = [h for h in heals(run_dir) if h.get("status") != DONE]
    return unfinished[-1] if unfinished else None


def append(run_dir: str | Path, record: dict[str, Any]) -> None:
    """Append one record and fsync it: it is on disk before the heal acts."""
    path = Path(run_dir) / HEAL_LOG
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(json.dumps(record, default=str) + "\n")
        fh.flush()
        os.fsync(fh.fileno())


def write_atomic(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` in one step (a temporary file renamed over it): a kill leaves the old
    content or the new, never half of one."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def rollbacks(run_dir: str | Path) -> list[dict[str, Any]]:
    """The finished heals, each with the abandoned segment's metrics after its rollback step:
    ``{"heal", "mode", "onset", "checkpoint_step", "action", "abandoned": [records]}``."""
    out = []
    for h in heals(run_dir):
        if h.get("status") != DONE or h.get("checkpoint_step") is None:
            continue
        rows = _jsonl(segment_dir(run_dir, int(h["heal"])) / METRICS)
        cut = h["checkpoint_step"]
        out.append({**h, "abandoned": [r for r in rows if isinstance(r.get("step"), int | float) and r["step"] > cut]})
    return out


def lines(run_dir: str | Path) -> list[str]:
    """The heal history in words, one line per heal (empty for a run without heals)."""
    out = []
    for h in heals(run_dir):
        where = (f"rolled back to checkpoint-{h['checkpoint_step']}" if h.get("checkpoint_step") is not None
                 else "no rollback")
        if h.get("action") == "resume":
            changed = ", ".join(f"{k} {short(v[0])} -> {short(v[1])}" for k, v in (h.get("changes") or {}).items())
            then = f"resumed with {changed}"
        else:
            then = f"stopped: {h.get('reason', '')}" + (f"; chosen by the {h['chosen_by']}" if h.get("chosen_by")
                                                          else "")
        status = "" if h.get("status") == DONE else " (unfinished: completes on --resume)"
        out.append(f"heal {h['heal']}: step {h.get('step')}: {h.get('mode')} (onset step {h.get('onset')}); "
                   f"{where}; {then}{status}")
    return out


def short(value: Any) -> str:
    """A setting's value on one line (a reward list by its names)."""
    if isinstance(value, list):
        return "[" + ", ".join(str(v.get("name", v)) if isinstance(v, dict) else str(v) for v in value) + "]"
    return str(value)


def _jsonl(path: Path) -> list[dict]:
    if not path.is_file():
        return []
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            value = json.loads(line)
        except json.JSONDecodeError:
            break
        if isinstance(value, dict):
            out.append(value)
    return out


def final_segment_start(run_dir: str | Path) -> int | None:
    """The rollback step after which the final segment's own steps begin (the last finished heal that
    resumed), or None: the run has no such heal, so all of metrics.jsonl is its final segment."""
    resumed = [h for h in heals(run_dir) if h.get("status") == DONE and h.get("action") == "resume"
               and h.get("checkpoint_step") is not None]
    return int(resumed[-1]["checkpoint_step"]) if resumed else None


def judged_segment(run):
    """The doctor's `Run` cut to the final segment of a healed run directory (the steps after the last
    rollback it resumed from), with a note saying so; other runs are returned as they are."""
    import dataclasses

    from agentgrpo.doctor.table import MetricTable

    source = Path(run.source)
    start = final_segment_start(source) if source.is_dir() else None
    if start is None:
        return run
    keep = run.table.steps > start
    table = MetricTable(run.table.steps[keep], {k: v[keep] for k, v in run.table.columns.items()},
                        dict(run.table.meta))
    note = (f"healed run: the final segment is judged (steps after the rollback to checkpoint-{start}); "
            f"{len(heals(source))} heal(s) in heal.jsonl")
    return dataclasses.replace(run, table=table, notes=[*run.notes, note])
