"""A healed run that finishes normally ends with the best model of its lineage (issue 35).

A run that healed (its last heal in heal.jsonl is done and resumed) and then ran to its end compares its last
model with the lineage's complete checkpoints: checkpoints/, which holds those saved before each rollback and
after it (an abandoned segment's checkpoints are in segments/N/ and are never candidates). The shadow reward
decides when the run logs one (`rollback.shadow_scored`: the last model is scored like a checkpoint at the last
step, by the last logged steps); else held-out success ``score(path)``, at most `rollback.MAX_EVALUATED`
evaluations, the last model always among them. Ties keep the last model. An earlier checkpoint that wins
replaces final/ (copied as a stop copies it: model files, no trainer state); the last model moves to
segments/last/. The choice is recorded in heal.jsonl (`history.final_choice`). A run that never healed is left
as it is, and no evaluation is spent on it.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from agentgrpo.heal import history, rollback
from agentgrpo.rundir import CHECKPOINTS, FINAL, MERGED, METRICS, SEGMENTS, checkpoints, read_jsonl

LAST = "last"  # segments/last/: the last model of a finished run whose final/ is an earlier checkpoint


def healed(run_dir: str | Path) -> bool:
    """Whether the run healed and went on: every heal done, the last one resumed."""
    heals = history.heals(run_dir)
    return bool(heals) and all(h.get("status") == history.DONE for h in heals) and heals[-1].get("action") == "resume"


def choose(run_dir: str | Path, last_step: int, logged: list[Mapping], shadows: list[str],
           score: Callable[[Path], float] | None) -> dict[str, Any]:
    """The record of the final model's choice (not yet acted on): ``checkpoint_step`` None keeps the last model."""
    run_dir = Path(run_dir)
    pool = [c for c in checkpoints(run_dir / CHECKPOINTS) if c[0] < last_step]  # checkpoint-L is final/
    last = (last_step, run_dir / FINAL)
    record: dict[str, Any] = {"finished": int(last_step), "time": time.time(), "checkpoint": None,
                              "checkpoint_step": None, "chosen_by": None, "scores": {}}
    if not pool:
        record["reason"] = "no earlier complete checkpoint in its lineage: final/ is its last model"
        return record
    scored = rollback.shadow_scored(logged, shadows, [*pool, last]) if shadows else []
    of = ""
    if scored and scored[-1][1] == last_step and scored[-1][2] == last[1]:
        by = f"shadow {', '.join(shadows)}"
    elif score is not None:
        evaluated = rollback.spread([*pool, last], rollback.MAX_EVALUATED)
        scored = [(float(score(path)), step, path) for step, path in evaluated]
        by = "held-out success"
        of = ("" if len(evaluated) == len(pool) + 1
              else f"; {len(evaluated)} of {len(pool) + 1} candidates evaluated, evenly spaced")
    else:
        record["reason"] = ("no shadow reward logged for its last model and no held-out scorer: final/ is its last "
                            "model, not compared with the lineage's checkpoints")
        return record
    label = {step: ("the last model" if path == last[1] else f"checkpoint-{step}") for _v, step, path in scored}
    record["chosen_by"] = by
    record["scores"] = {label[step]: round(value, 6) for value, step, _path in scored}
    value, step, path = max(scored, key=lambda x: (x[0], x[1]))  # ties: the later, the last model last of all
    final_value = scored[-1][0]
    shown = ", ".join(f"{label[s]}: {v:.3f}" for v, s, _ in scored)
    if step == last_step:
        earlier = max(scored[:-1], key=lambda x: (x[0], x[1]), default=None)
        versus = f" (best earlier checkpoint: checkpoint-{earlier[1]}: {earlier[0]:.3f})" if earlier else ""
        record["reason"] = f"final/ is its last model: the highest {by}, {value:.3f}{versus}{of}"
    else:
        record["checkpoint"], record["checkpoint_step"] = str(path.relative_to(run_dir)), step
        record["reason"] = (f"checkpoint-{step} had the higher {by}: {value:.3f} vs {final_value:.3f} for the last "
                            f"model: final/ is checkpoint-{step} (the last model is kept in {SEGMENTS}/{LAST}/; "
                            f"{shown}{of})")
    return record


def apply(run_dir: str | Path, record: dict[str, Any], merge: Callable[[Path, Path], Any] | None = None) -> None:
    """Make the chosen checkpoint final/ (the last model moves to segments/last/final/); final-merged/, when the
    run wrote one, is merged again from the new final/ by ``merge(adapter_dir, out_dir)``, or without ``merge``
    moved to segments/last/ too (no final-merged/ is better than one of another model)."""
    if record.get("checkpoint_step") is None:
        return
    run_dir = Path(run_dir)
    kept = run_dir / SEGMENTS / LAST
    chosen = run_dir / (FINAL + ".chosen")
    shutil.rmtree(chosen, ignore_errors=True)
    rollback._model_from_checkpoint(run_dir / record["checkpoint"], chosen)  # copied before final/ moves
    shutil.rmtree(kept, ignore_errors=True)
    kept.mkdir(parents=True)
    os.replace(run_dir / FINAL, kept / FINAL)
    os.replace(chosen, run_dir / FINAL)
    merged = run_dir / MERGED
    if merged.is_dir():
        if merge is not None:
            fresh = run_dir / (MERGED + ".tmp")
            shutil.rmtree(fresh, ignore_errors=True)
            merge(run_dir / FINAL, fresh)
            shutil.rmtree(merged)
            os.replace(fresh, merged)
            record["reason"] += f"; {MERGED}/ merged again from it"
        else:
            os.replace(merged, kept / MERGED)
            record["reason"] += f"; the last model's {MERGED}/ moved to {SEGMENTS}/{LAST}/ with it"


def finish(run_dir: str | Path, config: Mapping, *, last_step: int | None = None,
           score: Callable[[Path], float] | None = None,
           merge: Callable[[Path, Path], Any] | None = None) -> dict[str, Any] | None:
    """For a run that healed and then finished (`healed`): choose its final model (`choose`), act on it
    (`apply`), and record it in heal.jsonl; returns the record. None (nothing done, nothing evaluated) for a
    run that never healed or has no final/. ``last_step``: the step the run finished at (default: the last
    logged one)."""
    run_dir = Path(run_dir)
    if not healed(run_dir) or not (run_dir / FINAL).is_dir():
        return None
    # final/ holds the last model, just saved: a note left by an earlier choice (a finished run resumed) is stale
    (run_dir / FINAL / rollback.NOTE).unlink(missing_ok=True)
    logged = [r for r in read_jsonl(run_dir / METRICS) if isinstance(r.get("step"), int | float)]
    if last_step is None:
        if not logged:
            return None
        last_step = int(max(r["step"] for r in logged))
    record = choose(run_dir, int(last_step), logged, rollback.shadow_rewards(config), score)
    apply(run_dir, record, merge)
    history.append(run_dir, record)
    return record
