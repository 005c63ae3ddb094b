"""What a run directory records of its heals, as plain files the doctor and the report read:

    runs/<name>/
      heal.jsonl            one record per heal, written twice: status "planned" before anything is moved,
                            "done" after (a heal killed in between completes on --resume)
      segments/<n>/         the segment heal n abandoned, kept, never overwritten:
        metrics.jsonl       every metric it logged (the rows after the rollback step are the abandoned ones)
        completions.jsonl   its sampled completions
        checkpoints/        its checkpoints after the rollback step (never resumed from)
        final/              the model it ended with (a stop: the run's final/ is the rollback checkpoint)
      segments/last/final/  the last model of a healed run that finished, when an earlier checkpoint of its
                            lineage was better and became final/ (`agentgrpo.heal.final`; heal.jsonl records it)

metrics.jsonl itself always holds the lineage of the model the run ends with: the rows up to each rollback
step, then the segment that followed.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from agentgrpo.rundir import HEAL_LOG, METRICS, SEGMENTS, read_jsonl

PLANNED, DONE = "planned", "done"


def segment_dir(run_dir: str | Path, heal: int) -> Path:
    """Where heal number ``heal`` (1, 2, ...) keeps the segment it abandoned."""
    return Path(run_dir) / SEGMENTS / str(heal)


def read(run_dir: str | Path) -> list[dict[str, Any]]:
    """Every heal.jsonl record (a partial last line, from a kill mid-write, is left out)."""
    return [value for value in read_jsonl(Path(run_dir) / HEAL_LOG) if "heal" in value]


def final_choice(run_dir: str | Path) -> dict[str, Any] | None:
    """How a healed run that ran to its end chose its final model (the record `agentgrpo.heal.final` writes,
    keyed ``finished``), when no heal came after it; else None."""
    last = None
    for value in read_jsonl(Path(run_dir) / HEAL_LOG):
        if "heal" in value:
            last = None
        elif "finished" in value:
            last = value
    return last


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


def rollbacks(run_dir: str | Path) -> list[dict[str, Any]]:
    """The finished heals, each with the abandoned segment's metrics after its rollback step:
    ``{"heal", "mode", "onset", "checkpoint_step", "action", "abandoned": [records]}``."""
    out = []
    for h in heals(run_dir):
        if h.get("status") != DONE or h.get("checkpoint_step") is None:
            continue
        rows = read_jsonl(segment_dir(run_dir, int(h["heal"])) / METRICS)
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
    choice = final_choice(run_dir)
    if choice is not None:
        out.append(f"final model: the run finished at step {choice['finished']}; {choice.get('reason', '')}")
    return out


def segments(run_dir: str | Path) -> list[dict[str, Any]]:
    """Every training segment of the run, in order, each with the rows it logged itself and why it ended:
    ``{"segment", "start" (the checkpoint step it resumed from; 0: the start), "rows" (its own logged rows,
    steps after ``start``), "base" (its log's rows up to ``start``), "heal" (the heal that ended it, or None),
    "why"}``. A segment a heal abandoned is read from segments/N/metrics.jsonl (kept whole at the heal); the
    one the run went on with from metrics.jsonl. A run without heals is one segment."""
    run_dir = Path(run_dir)
    out: list[dict[str, Any]] = []
    start = 0
    ended = False
    for h in heals(run_dir):
        if h.get("status") != DONE:
            break  # an unfinished heal: its segment is still the run's metrics.jsonl
        kept = segment_dir(run_dir, int(h["heal"])) / METRICS
        rows = _rows(kept if h.get("checkpoint_step") is not None and kept.is_file() else run_dir / METRICS)
        out.append(_segment(len(out) + 1, start, rows, h, _why(h)))
        if h.get("action") != "resume":
            ended = True
            break
        start = int(h["checkpoint_step"])
    if not ended:
        pending_heal = pending(run_dir)
        rows = _rows(run_dir / METRICS)
        own = [r for r in rows if r["step"] > start]
        why = (f"heal {pending_heal['heal']} unfinished (completes on --resume)" if pending_heal is not None
               else f"ran to its end (step {int(own[-1]['step'])})" if own else "logged no step")
        choice = final_choice(run_dir) if pending_heal is None else None
        if choice is not None:
            why += f"; {choice.get('reason', '')}"
        out.append(_segment(len(out) + 1, start, rows, None, why))
    return out


def _rows(path: Path) -> list[dict]:
    rows = [r for r in read_jsonl(path) if isinstance(r.get("step"), int | float)]
    return sorted(rows, key=lambda r: r["step"])


def _segment(number: int, start: int, rows: list[dict], heal: dict | None, why: str) -> dict[str, Any]:
    return {"segment": number, "start": start, "rows": [r for r in rows if r["step"] > start],
            "base": [r for r in rows if r["step"] <= start], "heal": heal, "why": why}


def _why(h: dict) -> str:
    seen = f"heal {h['heal']}: {h.get('mode')} (onset step {h.get('onset')}) named at step {h.get('step')}"
    if h.get("action") == "resume":
        changed = ", ".join(f"{k} {short(v[0])} -> {short(v[1])}" for k, v in (h.get("changes") or {}).items())
        return f"{seen}; rolled back to checkpoint-{h.get('checkpoint_step')}, resumed with {changed}"
    if h.get("checkpoint_step") is None:
        return f"{seen}; stopped with no rollback"
    return f"{seen}; stopped: the run ends at checkpoint-{h['checkpoint_step']}"


def trained_tokens(segment: dict[str, Any]) -> int | None:
    """Tokens a segment trained on (TRL's ``num_tokens`` is cumulative and resumes with its checkpoint: the
    segment's last value minus the value at the step it resumed from); None when not logged."""
    own = [r["num_tokens"] for r in segment["rows"] if isinstance(r.get("num_tokens"), int | float)]
    if not own:
        return None
    before = [r["num_tokens"] for r in segment["base"] if isinstance(r.get("num_tokens"), int | float)]
    return int(max(own) - (before[-1] if before else 0))


def segment_lines(run_dir: str | Path, completions_per_step: int | None = None) -> list[str]:
    """Each segment of a healed run in words: its steps, (with ``completions_per_step``) its generated tokens,
    and why it ended; empty for a run without heals."""
    if not heals(run_dir):
        return []
    from agentgrpo.rundir import generated_tokens

    out = []
    for seg in segments(run_dir):
        rows = seg["rows"]
        span = f"steps {int(rows[0]['step'])}-{int(rows[-1]['step'])}" if rows else "no step logged"
        where = f"from checkpoint-{seg['start']}" if seg["start"] else "from the start"
        tokens = (f", {generated_tokens(rows, completions_per_step):,} tokens generated"
                  if completions_per_step else "")
        out.append(f"segment {seg['segment']} ({where}): {span}, {sum(_gaps(rows))} steps{tokens}; ended: "
                   f"{seg['why']}")
    return out


def _gaps(rows: list[dict]) -> list[int]:
    from agentgrpo.rundir import step_gaps

    return step_gaps(rows)


def short(value: Any) -> str:
    """A setting's value on one line (a reward list by its names)."""
    if isinstance(value, list):
        return "[" + ", ".join(str(v.get("name", v)) if isinstance(v, dict) else str(v) for v in value) + "]"
    return str(value)


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
