"""One heal, decided and carried out on the run directory.

`decide` reads the failure the live doctor named and the run's checkpoints, and returns the heal record:
resume from the last checkpoint *before* the onset (`checkpoint_before`) with the remedy's settings, or stop (with the
reason). `carry_out` acts on it: the abandoned segment's metrics, completions, later checkpoints and final
model move to ``segments/N/`` (kept), metrics.jsonl keeps the lineage up to the rollback step, config.yaml
gets the changed settings. Every step is atomic (a rename) and idempotent, so a heal killed at any point
completes when the run resumes (`finish_pending`): heal.jsonl holds the planned record before anything moves.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from agentgrpo.doctor.modes import Mode
from agentgrpo.heal import history
from agentgrpo.heal.remedies import HARMLESS, Situation, remedy_for
from agentgrpo.rundir import (
    CHECKPOINTS,
    COMPLETIONS,
    FINAL,
    LIVE_DOCTOR,
    METRICS,
    TRAINER_STATE,
    checkpoints,
    parse_jsonl,
    read_jsonl,
    write_atomic,
    write_config,
)

KEPT_LOGS = (METRICS, COMPLETIONS, LIVE_DOCTOR)
# Trainer state a checkpoint holds besides the model (left out of final/ when a stop makes it the model).
TRAINER_FILES = ("optimizer.pt", "scheduler.pt", TRAINER_STATE, "training_args.bin", "scaler.pt")
NOTE = "ROLLED_BACK_FROM"  # in final/ when it is a checkpoint's model: that checkpoint's name


# Steps between the doctor's onset and the rollback: the onset is a change point found in noisy per-step
# curves and can come late (the planted collapse, first logged at step 3, is named at step 5).
ONSET_MARGIN = 2


def checkpoint_before(folder: str | Path, onset: int) -> tuple[int, Path] | None:
    """The last complete checkpoint in ``folder`` whose weights produced no logged step near ``onset``.

    The completions logged at step s+1 are the first sampled from checkpoint-s's weights, so checkpoint-s
    comes before the onset when s + 1 < onset; it must also keep `ONSET_MARGIN` steps from it:
    s + 1 + ONSET_MARGIN < onset (onset 5: checkpoint-1 at the latest). checkpoint-0, the starting model
    (saved by `StartCheckpoint`), precedes every update, so it comes before any onset >= 1: nothing can have
    gone wrong earlier than the start.
    """
    before = [c for c in checkpoints(folder)
              if c[0] + 1 + ONSET_MARGIN < onset or (c[0] == 0 and onset >= 1)]
    return before[-1] if before else None


def decide(run_dir: str | Path, finding: Mapping, *, step: int, config: Mapping, setting: Callable[[str], Any],
           heal_rewards: list | None, heal_max: int, checkpoints_dir: str | Path | None = None,
           score: Callable[[Path], float] | None = None) -> dict[str, Any]:
    """The heal record for ``finding`` (a doctor finding as a dict: detector, onset, verdict, evidence) seen
    at ``step``: what to do and why. ``config`` is the run's config.yaml now; the record's ``config`` is the
    one to resume with. ``checkpoints_dir``: where the checkpoints are (default ``<run_dir>/checkpoints``).
    ``score(checkpoint_dir)``: a checkpoint's held-out success, used on a stop when the run has no shadow reward
    to choose its final model by (`choose_final`)."""
    folder = Path(checkpoints_dir) if checkpoints_dir is not None else Path(run_dir) / CHECKPOINTS
    done = [h for h in history.heals(run_dir) if h.get("status") == history.DONE]
    record = _new_record(run_dir, finding, step, folder)
    mode, onset = record["mode"], record["onset"]
    remedy = remedy_for(mode)
    record["remedy"] = remedy.fix
    first = finding.get("first_sign")  # the earliest sign the doctor cites, when before its onset
    before = min(int(onset), int(first)) if onset is not None and first is not None else onset
    record["first_sign"] = first
    target = checkpoint_before(folder, int(before)) if before is not None else None
    if onset is None:
        record["reason"] = "the doctor gave no onset step, so no checkpoint is known to come before the failure"
        return record
    if target is None:
        record["reason"] = _no_checkpoint_reason(folder, int(before), setting)
        return record
    record["checkpoint"] = _relative(target[1], run_dir)
    record["checkpoint_step"] = target[0]
    logged = [r for r in read_jsonl(Path(run_dir) / METRICS) if isinstance(r.get("step"), int | float)]
    rows = [r for r in logged if r["step"] <= target[0]]
    # the updates that may have broken it: the onset is a change point known to ONSET_MARGIN steps either way
    broke = [r for r in logged if target[0] < r["step"] <= int(onset) + ONSET_MARGIN]
    relapse = any("learning_rate" in (h.get("changes") or {}) for h in done if h.get("action") == "resume")
    changes = remedy.changes(Situation(setting=setting, heal_rewards=heal_rewards, rows=rows, broke=broke,
                                       relapse=relapse))
    _resume_or_stop(record, remedy, changes, [h for h in done if h.get("action") == "resume"], heal_max,
                    setting, config)
    if record["action"] == "stop":  # the run ends here: with the best model its lineage produced
        _end_at_best(record, run_dir, folder, int(before), logged, config, score)
    return record


def _new_record(run_dir: str | Path, finding: Mapping, step: int, folder: Path) -> dict[str, Any]:
    """The planned heal record of ``finding``, numbered after the heals before it: a stop until decided."""
    number = max([int(h["heal"]) for h in history.heals(run_dir)], default=0) + 1
    return {
        "heal": number, "status": history.PLANNED, "time": time.time(), "step": int(step),
        "mode": str(finding.get("detector") or finding.get("mode")), "onset": finding.get("onset"),
        "verdict": finding.get("verdict", ""), "evidence": list(finding.get("evidence") or []),
        "confidence": finding.get("confidence"), "action": "stop", "reason": "", "checkpoint": None,
        "checkpoint_step": None, "changes": {}, "config": None, "checkpoints_dir": _relative(folder, run_dir),
    }


def _resume_or_stop(record: dict[str, Any], remedy, changes: dict | None, resumed: list[dict], heal_max: int,
                    setting: Callable[[str], Any], config: Mapping) -> None:
    """Set the record's action: resume with the remedy's ``changes``, or stop (``heal_max`` heals ``resumed``
    already, a remedy that stops, or one already in place), with the reason."""
    mode, onset = record["mode"], record["onset"]
    if len(resumed) >= heal_max:
        record["reason"] = (f"heal_max ({heal_max}) reached: {len(resumed)} heal{'s' * (len(resumed) != 1)} "
                            "resumed already ("
                            + ", ".join(f"heal {h['heal']}: {h['mode']} at step {h.get('step')}" for h in resumed)
                            + f"), and this segment ended on {mode} (onset step {onset}). Raise heal_max or "
                            "change the recipe.")
    elif changes is None:
        record["reason"] = remedy.stop_reason
    elif not changes:
        record["reason"] = (f"the remedy for {mode} ({remedy.fix}) is already in place and {mode} came back "
                            f"(onset step {onset})")
    else:
        record["action"] = "resume"
        record["changes"] = {k: [setting(k) if k != "rewards" else config.get("rewards"), v]
                             for k, v in changes.items()}
        record["config"] = {**dict(config), **changes}


def _end_at_best(record: dict[str, Any], run_dir: str | Path, folder: Path, before: int, logged: list[Mapping],
                 config: Mapping, score: Callable[[Path], float] | None) -> None:
    """A stop: the record's checkpoint becomes the best model of the lineage (`choose_final`), and its reason
    says which and why."""
    mode = record["mode"]
    chosen = choose_final(folder, mode, before, logged, shadow_rewards(config), score)
    if chosen is not None:
        step_, path, why = chosen
        record["checkpoint"], record["checkpoint_step"] = _relative(path, run_dir), step_
        if why:
            record["chosen_by"] = why
    record["reason"] += f"; the run ends at checkpoint-{record['checkpoint_step']}"
    if "chosen_by" not in record:
        record["reason"] += (" (the latest checkpoint of its lineage: a " + mode + " leaves the model no worse)"
                             if Mode(mode) in HARMLESS else " (the last checkpoint before the onset)")


def candidates(folder: str | Path, mode: str, onset: int) -> list[tuple[int, Path]]:
    """The checkpoints a run that stops on ``mode`` may end at: those before the onset (as `checkpoint_before`
    counts), or for a failure that leaves the model no worse (`remedies.HARMLESS`: a stall) every complete
    checkpoint of the lineage."""
    if Mode(mode) in HARMLESS:
        return checkpoints(folder)
    return [c for c in checkpoints(folder) if c[0] + 1 + ONSET_MARGIN < onset or (c[0] == 0 and onset >= 1)]


def choose_final(folder: str | Path, mode: str, onset: int, logged: list[Mapping], shadows: list[str],
                 score: Callable[[Path], float] | None) -> tuple[int, Path, str] | None:
    """The checkpoint a stopped run ends at, among `candidates`: the highest shadow reward (`best_by_shadow`),
    else the highest held-out success ``score(path)`` (`best_by_eval`), else the latest candidate (``why``
    empty); None without a candidate."""
    pool = candidates(folder, mode, onset)
    if not pool:
        return None
    best = best_by_shadow(folder, onset, logged, shadows, pool=pool)
    if best is None and score is not None and len(pool) > 1:
        best = best_by_eval(pool, score)
    return best if best is not None else (*pool[-1], "")


# Held-out evals a stop may spend choosing its final model (each is a full eval of one checkpoint).
MAX_EVALUATED = 8


def spread(pool: list, n: int) -> list:
    """At most ``n`` items of ``pool``, evenly spaced, the first and the last included.

    >>> spread(list(range(10)), 4), spread([1, 2], 4)
    ([0, 3, 6, 9], [1, 2])
    """
    if len(pool) <= n:
        return list(pool)
    if n <= 1:
        return pool[-1:]
    return [pool[round(i * (len(pool) - 1) / (n - 1))] for i in range(n)]


def best_by_eval(pool: list[tuple[int, Path]], score: Callable[[Path], float]) -> tuple[int, Path, str]:
    """The checkpoint with the highest held-out success ``score(path)`` among at most `MAX_EVALUATED` of
    ``pool`` (`spread`); ties go to the later one."""
    scored = [(float(score(path)), step, path) for step, path in spread(pool, MAX_EVALUATED)]
    value, step, path = max(scored, key=lambda x: (x[0], x[1]))
    shown = ", ".join(f"checkpoint-{s}: {v:.3f}" for v, s, _ in scored)
    of = "" if len(scored) == len(pool) else f"; {len(scored)} of {len(pool)} candidates evaluated, evenly spaced"
    return step, path, f"highest held-out success: {value:.3f} at checkpoint-{step} ({shown}{of})"


# Logged steps around a checkpoint that estimate its shadow reward: step s+1 is the first sampled from
# checkpoint-s; one step is 1 batch of completions, so a window of 3 steps (s-1, s, s+1) is read.
SHADOW_WINDOW = 1


def shadow_rewards(config: Mapping) -> list[str]:
    """The run's shadow rewards (weight 0: logged, not trained), by the name TRL logs them under.

    >>> shadow_rewards({"rewards": [{"name": "m:proxy"}, {"name": "correct_answer", "weight": 0}]})
    ['correct_answer']
    """
    from agentgrpo.doctor.readers.rundir import reward_weights

    return sorted(name for name, weight in reward_weights(dict(config)).items() if weight == 0)


def best_by_shadow(folder: str | Path, onset: int, logged: list[Mapping],
                   shadows: list[str], pool: list[tuple[int, Path]] | None = None) -> tuple[int, Path, str] | None:
    """Among ``pool`` (default: the checkpoints before ``onset``, as `checkpoint_before` counts), the one whose
    shadow rewards (the true objective, watched and not trained) were highest: (step, path, why), or None
    without shadow rewards or logged values. A checkpoint's value is the mean, over the logged steps s-1 to
    s+1 (`SHADOW_WINDOW`), of the mean of its shadow rewards; ties go to the later checkpoint.

    A run that stops on a failure ends at this checkpoint: reward hacking can erode the true objective a few
    steps before the trained reward shows the exploit, so the last checkpoint before the dated onset is not
    always the best model the run had.
    """
    if not shadows:
        return None
    if pool is None:
        pool = [c for c in checkpoints(folder) if c[0] + 1 + ONSET_MARGIN < onset or (c[0] == 0 and onset >= 1)]
    scored = shadow_scored(logged, shadows, pool)
    if not scored:
        return None
    score, step, path = max(scored, key=lambda x: (x[0], x[1]))
    last = scored[-1]
    why = (f"highest shadow {', '.join(shadows)}: {score:.3f} at checkpoint-{step} (logged steps "
           f"{step - SHADOW_WINDOW}-{step + SHADOW_WINDOW}); the latest candidate, "
           f"checkpoint-{last[1]}: {last[0]:.3f}")
    return step, path, why


def shadow_scored(logged: list[Mapping], shadows: list[str], pool: list[tuple[int, Path]]) -> list[tuple]:
    """(value, step, path) of each of ``pool`` with a logged shadow value: the mean, over the logged steps s-1 to
    s+1 (`SHADOW_WINDOW`), of the mean of the shadow rewards ``rewards/<name>/mean``; in ``pool``'s order."""
    keys = [f"rewards/{name}/mean" for name in shadows]
    values: dict[int, float] = {}
    for row in logged:
        got = [row.get(k) for k in keys]
        if keys and all(isinstance(v, int | float) and v == v for v in got):
            values[int(row["step"])] = sum(got) / len(got)
    scored = []
    for step, path in pool:
        window = [values[s] for s in range(step - SHADOW_WINDOW, step + SHADOW_WINDOW + 1) if s in values]
        if window:
            scored.append((sum(window) / len(window), step, path))
    return scored


def _relative(path: Path, run_dir) -> str:
    """``path`` relative to the run directory when inside it (the run directory can move), else absolute."""
    try:
        return str(Path(path).resolve().relative_to(Path(run_dir).resolve()))
    except ValueError:
        return str(Path(path).resolve())


def _no_checkpoint_reason(folder, onset: int, setting) -> str:
    saved = checkpoints(folder)
    every = f"save_steps {setting('save_steps')}, save_strategy {setting('save_strategy')}"
    if not saved:
        return (f"no checkpoint before the onset (step {onset}): none was saved, not even the starting model "
                f"(checkpoint-0) ({every}); add StartCheckpoint(trainer) to the trainer's callbacks (agentgrpo "
                "train does) so a heal can always roll back to the start, and set save_steps below the onset")
    return (f"no checkpoint before the onset (step {onset}): the first is checkpoint-{saved[0][0]} ({every}); "
            f"a rollback needs a checkpoint-N with N + 1 + {ONSET_MARGIN} < {onset} (step N+1 is the first sampled "
            "from its weights, and the onset can come late); save more often (lower save_steps)")


def carry_out(run_dir: str | Path, record: Mapping, between: Callable[[str], None] | None = None) -> None:
    """Act on a planned heal record. Each step is a rename or an atomic rewrite and checks what is already
    done, so running it again after a kill at any point finishes the same heal. ``between(step_name)`` is
    called after each step (tests kill the process there)."""
    run_dir = Path(run_dir)
    seg = history.segment_dir(run_dir, int(record["heal"]))
    cut = record.get("checkpoint_step")
    for name in KEPT_LOGS:  # 1. the abandoned segment's logs, whole (copied once, before any truncation)
        if cut is not None and (run_dir / name).is_file() and not (seg / name).is_file():
            write_atomic(seg / name, (run_dir / name).read_text(encoding="utf-8"))
    _step(between, "logs kept")
    if cut is not None:  # 2. later checkpoints leave checkpoints/ (kept in the segment, never resumed from)
        for step, path in checkpoints(run_dir / record.get("checkpoints_dir", CHECKPOINTS), complete_only=False):
            if step > cut:
                (seg / CHECKPOINTS).mkdir(parents=True, exist_ok=True)
                os.replace(path, seg / CHECKPOINTS / path.name)
        _step(between, "checkpoints moved")
        for name in (METRICS, COMPLETIONS):  # 3. the lineage: rows up to the rollback step
            if (run_dir / name).is_file():
                write_atomic(run_dir / name, "".join(_lines_up_to(run_dir / name, cut)))
        _step(between, "logs cut")
    if cut is not None and (run_dir / FINAL).is_dir() and not (seg / FINAL).exists():  # 4. its final model, kept
        seg.mkdir(parents=True, exist_ok=True)
        os.replace(run_dir / FINAL, seg / FINAL)
    _step(between, "final kept")
    if record.get("action") == "resume" and record.get("config"):  # 5. the settings to go on with
        write_config(run_dir, dict(record["config"]))
    elif cut is not None and not (run_dir / FINAL).is_dir():  # a stop: the rollback checkpoint is the model
        _model_from_checkpoint(run_dir / record["checkpoint"], run_dir / FINAL)
    _step(between, "settings written")
    history.append(run_dir, {**dict(record), "status": history.DONE, "time_done": time.time()})


def _model_from_checkpoint(checkpoint: Path, final: Path) -> None:
    tmp = final.with_name(final.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.copytree(checkpoint, tmp, ignore=lambda _d, names: [n for n in names if n in TRAINER_FILES
                                                               or n.startswith("rng_state")])
    (tmp / NOTE).write_text(f"{checkpoint.name}\n", encoding="utf-8")
    os.replace(tmp, final)


def plan(run_dir: str | Path, record: Mapping) -> None:
    """Write the planned record (fsynced) before anything is moved."""
    history.append(run_dir, dict(record))


def finish_pending(run_dir: str | Path) -> dict[str, Any] | None:
    """A heal planned and not finished (the process was killed during it): carry it out now; returns its
    record (None when there was none)."""
    record = history.pending(run_dir)
    if record is None:
        return None
    carry_out(run_dir, record)
    return record


def _step(between, name: str) -> None:
    if between is not None:
        between(name)


def _lines_up_to(path: Path, cut: int) -> list[str]:
    """The lines of a run's JSON Lines log, as written, but those of a step after ``cut`` and those
    `parse_jsonl` cannot read (a record without a numeric step is kept)."""
    kept = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        records = parse_jsonl(line)[0]
        if records and not (isinstance(records[0].get("step"), int | float) and records[0]["step"] > cut):
            kept.append(line + "\n")
    return kept
