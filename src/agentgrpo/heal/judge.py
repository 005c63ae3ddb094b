"""The doctor on a healed run: the final segment judged on its own steps, and a stall there read with the
lineage before it.

A final segment that resumes from a checkpoint the policy had already learned at starts with its reward near
the ceiling and holds it: judged alone, the stall detector sees a flat reward. Whether that is a stall is a
question about the lineage, not the segment: a plateau at the level the lineage reached before the rollback
is convergence (nothing was left to learn); a plateau below it, or a lineage that never learned, is a stall.
So a stall named on the final segment is read again on the lineage's reward (the rows up to the rollback,
then the segment), with the reward the final segment trains: where a heal switched the rewards, it is
recomputed from the new rewards' logged components and checked against the segment's own logged reward
(no context when it does not match). Only the stall reading changes; every other detector judges the final
segment alone, as before. The live doctor of a healed segment reads a stall the same way (`live_judge`), so
it does not stop a segment that holds its lineage's level.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path

import numpy as np

from agentgrpo.doctor import detectors, names
from agentgrpo.doctor.diagnose import Report, diagnose
from agentgrpo.doctor.finding import CONVERGED, FAILURE, OK, SATURATED, STATUS_ORDER, Finding
from agentgrpo.doctor.table import MetricTable
from agentgrpo.heal import history
from agentgrpo.rundir import METRICS, read_config, read_eval

MATCH = 1e-3  # the recomputed reward must match the segment's logged one to this (absolute, per step)


def read_healed(path, mapping=None):
    """The doctor's `Run` of ``path`` (`agentgrpo.doctor.read_run`); for a healed run that ended with a stop
    whose lineage logged no step of its last segment (metrics.jsonl empty, or cut to before the step that
    segment resumed from: a run that ends at checkpoint-0), the segment the stop abandoned instead, read from
    segments/N/metrics.jsonl with the run's config and eval, so the doctor judges what ended the run."""
    from agentgrpo.doctor import read_run
    from agentgrpo.errors import UserError

    run_dir = Path(str(path))
    stop = _stop_segment(run_dir) if run_dir.is_dir() else None
    try:
        run = read_run(path, mapping)
    except UserError:
        if stop is None:
            raise
        run = None
    start = history.final_segment_start(run_dir) if stop is not None else None
    if stop is None or (run is not None and (run.table.steps > (start or 0)).any()):
        return run
    from agentgrpo.doctor.readers.read import _apply_weights

    heal, log = stop
    segment = read_run(log, mapping)
    segment.source = run_dir
    segment.config, segment.eval = read_config(run_dir, notes=[]), read_eval(run_dir, notes=[])
    _apply_weights(segment)
    segment.notes.append(f"the run ended at checkpoint-{heal['checkpoint_step']} (heal {heal['heal']} stopped it) and "
                         f"its metrics.jsonl keeps no step of its last segment: the doctor reads the segment heal "
                         f"{heal['heal']} abandoned ({log.relative_to(run_dir)})")
    return segment


def _stop_segment(run_dir: Path):
    """(the heal that stopped the run, its kept segment's metrics.jsonl), or None."""
    done = [h for h in history.heals(run_dir) if h.get("status") == history.DONE]
    if not done or done[-1].get("action") == "resume" or done[-1].get("checkpoint_step") is None:
        return None
    log = history.segment_dir(run_dir, int(done[-1]["heal"])) / METRICS
    return (done[-1], log) if log.is_file() and log.stat().st_size else None


def diagnose_healed(run):
    """``(judged, report)``: the doctor's `Run` cut to the final segment (`history.judged_segment`) and its
    report, with a stall named there read against the lineage (see the module docstring)."""
    judged = history.judged_segment(run)
    report = diagnose(judged.table)
    if judged is run:
        return judged, report
    report, note = with_lineage(report, run.table, Path(run.source))
    return (dataclasses.replace(judged, notes=[*judged.notes, note]) if note else judged), report


def live_judge(run_dir: str | Path) -> Callable[[MetricTable], Report]:
    """The live doctor's diagnosis for a healed segment (it sees the segment's own steps): a stall it names
    is read with the lineage in ``run_dir``'s metrics.jsonl, as `agentgrpo doctor` reads it afterwards, so
    a segment that holds its lineage's level is not stopped as a stall."""
    def judge(table: MetricTable) -> Report:
        report = diagnose(table)
        stall = report.get("stall")
        if stall is None or stall.status != FAILURE or not len(table.steps):
            return report
        from agentgrpo.doctor import read_run

        lineage = read_run(run_dir).table
        keep = lineage.steps <= table.steps[-1]
        lineage = MetricTable(lineage.steps[keep], {k: v[keep] for k, v in lineage.columns.items()},
                              dict(lineage.meta))
        return with_lineage(report, lineage, Path(run_dir))[0]

    return judge


def with_lineage(report: Report, lineage: MetricTable, run_dir: Path) -> tuple[Report, str]:
    """``report`` (the final segment's) with a stall it names read on ``lineage`` (metrics.jsonl: the rows
    up to each rollback, then the segment), and a note on what was done ('' when there was no stall)."""
    stall = report.get("stall")
    start = history.final_segment_start(run_dir)
    if stall is None or stall.status != FAILURE or start is None:
        return report, ""
    context, how = lineage_reward(lineage, run_dir, start)
    if context is None:
        return report, f"the stall is not read with the lineage: {how}"
    read = diagnose(context, only=("stall", "convergence"))
    learned, conv = read.get("stall"), read.get("convergence")
    if learned.status != OK or conv is None or conv.state not in (CONVERGED, SATURATED):
        return report, f"the stall is read with the lineage before checkpoint-{start} ({how}): still a stall"
    held = Finding(detector=stall.detector, status=OK, verdict="no stall: the final segment holds the level "
                   f"its lineage reached before the rollback to checkpoint-{start}",
                   evidence=[*learned.evidence, f"read with the lineage ({how})",
                             f"judged alone, the segment: {stall.verdict}: {'; '.join(stall.evidence)}"])
    conv = dataclasses.replace(conv, evidence=[*conv.evidence, f"read with the lineage ({how})"])
    findings = [held if f is stall else conv if f.detector == conv.detector else f for f in report.findings]
    order = {name: i for i, name in enumerate(detectors.NAMES)}  # diagnose's order: status, then detector
    findings.sort(key=lambda f: (STATUS_ORDER[f.status], order.get(f.detector, len(order))))
    note = f"the stall on the final segment alone is read with the lineage before checkpoint-{start}: converged"
    return Report(findings, report.steps, report.first_step, report.last_step, dict(report.meta)), note


def lineage_reward(table: MetricTable, run_dir: Path, start: int) -> tuple[MetricTable | None, str]:
    """The lineage (``table``: metrics.jsonl, the rows up to each rollback, then the final segment) with the
    final segment's reward over every step, its components, and the segment's other metrics after ``start``
    (NaN before: they describe another segment's sampling); or (None, why not)."""
    steps = table.steps
    before, after = steps <= start, steps > start
    if not before.any():
        return None, f"the final segment starts at checkpoint-{start}: no lineage before it"
    if not after.any():
        return None, "the final segment logged no steps"
    keep = {}
    switched = [h for h in history.heals(run_dir) if h.get("status") == history.DONE
                and h.get("action") == "resume" and "rewards" in (h.get("changes") or {})]
    if not switched:
        reward, how = table.columns.get(names.REWARD), "the same rewards throughout"
        if reward is None:
            return None, "no reward logged"
    else:
        spec = switched[-1]["changes"]["rewards"][1]
        weights = logged_weights(spec)
        cols = {n: table.columns.get(f"rewards/{n}/mean") for n in weights}
        if not weights or any(c is None for c in cols.values()):
            return None, f"the rewards the heal switched to ({history.short(spec)}) are not all logged"
        reward = sum(w * cols[n] for n, w in weights.items())
        logged = table.columns.get(names.REWARD)
        ok = after & np.isfinite(reward) & (np.isfinite(logged) if logged is not None else False)
        if logged is None or not ok.any() or np.max(np.abs(reward[ok] - logged[ok])) > MATCH:
            return None, (f"the reward recomputed from {history.short(spec)} does not match the final segment's "
                          "logged reward")
        keep = {f"rewards/{n}/mean": cols[n] for n in weights}
        how = (f"reward = {' + '.join(f'{w:g} x {n}' for n, w in weights.items())} over the lineage, from its "
               f"logged components (the rewards heal {switched[-1]['heal']} switched to)")
    columns = {k: np.where(after, v, np.nan) for k, v in table.columns.items()}
    columns.update(keep)
    columns[names.REWARD] = np.asarray(reward, dtype=float)
    return MetricTable(steps.copy(), columns, dict(table.meta)), how


def logged_weights(spec) -> dict[str, float]:
    """``{name TRL logs it under: weight}`` for a rewards setting (a name, or a list of names and
    ``{name, weight, alias}`` dicts); weight-0 (shadow) rewards are left out."""
    if isinstance(spec, str):
        import yaml  # only here: the doctor reads a metrics file without YAML

        spec = yaml.safe_load(spec) if spec.strip().startswith("[") else [spec]
    out: dict[str, float] = {}
    for entry in spec or []:
        if isinstance(entry, str):
            name, weight = entry, 1.0
        elif isinstance(entry, dict) and entry.get("name"):
            name, weight = entry.get("alias") or entry["name"], float(entry.get("weight", 1.0))
        else:
            return {}
        name = str(name).rsplit(":", 1)[-1]
        if weight:
            out[name] = out.get(name, 0.0) + weight
    return out
