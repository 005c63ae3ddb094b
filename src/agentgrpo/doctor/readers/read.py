"""Format sniffing and the `Run` every reader returns."""

from __future__ import annotations

import csv
import io
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from agentgrpo.doctor import names
from agentgrpo.doctor.readers import rundir
from agentgrpo.doctor.readers.console import read_console
from agentgrpo.doctor.readers.jsontext import read_jsonl, recover_log_history
from agentgrpo.doctor.table import MetricTable
from agentgrpo.errors import UserError

RUN_FILES = ("metrics.jsonl", "trainer_state.json")


@dataclass
class Run:
    """A training run as the doctor sees it: metrics by step, plus config and evaluation when present."""

    table: MetricTable
    source: Path
    fmt: str
    config: dict = field(default_factory=dict)
    eval: dict = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @property
    def name(self) -> str:
        """A short name: the run directory, or the file's stem."""
        return self.source.name if self.source.is_dir() else self.source.stem


def read_run(path: str | Path) -> Run:
    """Read a run directory or a log file. Raises `UserError` saying what was found and what is missing."""
    path = Path(path)
    if not path.exists():
        raise UserError(f"{path}: no such file or directory")
    if path.is_dir():
        return _read_dir(path)
    return _read_file(path)


def _read_dir(path: Path) -> Run:
    log = _find_log(path)
    run = _read_file(log)
    run.source = path
    config, notes = rundir.read_config(path / "config.yaml")
    evaluation, eval_notes = rundir.read_eval(path / "eval.json")
    run.config, run.eval = config, evaluation
    run.notes += notes + eval_notes
    _apply_weights(run)
    cap = rundir.length_cap(config)
    if cap is not None:
        run.table.meta["max_completion_length"] = cap
    distinct = rundir.distinct_fraction(path / "completions.jsonl")
    if distinct:
        index = {int(s): i for i, s in enumerate(run.table.steps)}
        col = np.full(len(run.table), np.nan)
        for step, frac in distinct.items():
            if step in index:
                col[index[step]] = frac
        run.table.columns["completions/distinct_frac"] = col
    return run


def _find_log(path: Path) -> Path:
    for name in RUN_FILES:
        if (path / name).is_file():
            return path / name
    checkpoints = sorted(path.glob("checkpoint-*/trainer_state.json"), key=_checkpoint_step)
    if checkpoints:
        return checkpoints[-1]
    csvs = sorted(path.glob("*.csv"))
    if len(csvs) == 1:
        return csvs[0]
    found = ", ".join(sorted(p.name for p in path.iterdir())[:12]) or "nothing"
    raise UserError(
        f"{path}: no training log in this directory (found: {found}). Expected metrics.jsonl (agentgrpo), "
        "trainer_state.json or checkpoint-*/trainer_state.json (TRL), or one .csv export; "
        "or pass the log file itself."
    )


def _checkpoint_step(p: Path) -> int:
    match = re.search(r"checkpoint-(\d+)", str(p.parent.name))
    return int(match.group(1)) if match else -1


def _read_file(path: Path) -> Run:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise UserError(f"{path}: cannot read ({exc.strerror or exc})") from exc
    if not text.strip():
        raise UserError(f"{path}: the file is empty; no training step was logged (did the run start?)")
    suffix = path.suffix.lower()
    if suffix == ".jsonl":
        records, notes = read_jsonl(text)
        fmt = "metrics.jsonl"
    elif suffix == ".json":
        records, notes, fmt = _read_json(path, text)
    elif suffix in {".csv", ".tsv"}:
        records, notes = _read_csv(text, "\t" if suffix == ".tsv" else ",")
        fmt = "csv"
    else:
        records, notes, fmt = _sniff_text(text)
    table = records_to_table(records, path, fmt)
    return Run(table, path, fmt, notes=notes + table.meta.pop("notes", []))


def _read_json(path: Path, text: str) -> tuple[list[dict], list[str], str]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        records, why = recover_log_history(text)
        if records is None:
            raise UserError(f"{path}: not valid JSON and no readable record in it ({why})") from None
        return records, [why], "trainer_state.json (partial)"
    if isinstance(data, dict) and isinstance(data.get("log_history"), list):
        return [r for r in data["log_history"] if isinstance(r, dict)], [], "trainer_state.json"
    if isinstance(data, list) and data and all(isinstance(r, dict) for r in data):
        return data, [], "JSON step logs"
    if isinstance(data, dict):
        keys = ", ".join(list(data)[:10]) or "none"
        raise UserError(
            f"{path}: a JSON object but not a TRL trainer state (top-level keys: {keys}); "
            "expected a 'log_history' list, or a JSON array of per-step metric records"
        )
    raise UserError(
        f"{path}: JSON {type(data).__name__}, expected a trainer_state.json or an array of records"
    )


def _read_csv(text: str, delimiter: str) -> tuple[list[dict], list[str]]:
    rows = list(csv.reader(io.StringIO(text), delimiter=delimiter))
    if len(rows) < 2:
        return [], ["CSV has a header but no rows"]
    header = rows[0]
    keep = [i for i, h in enumerate(header) if not names.is_tracker_extra(h)]
    records, notes = [], []
    for number, row in enumerate(rows[1:], start=2):
        if len(row) != len(header):
            notes.append(f"CSV row {number} has {len(row)} fields, header has {len(header)}: skipped")
            continue
        records.append({header[i]: row[i] for i in keep if row[i] != ""})
    return records, notes


def _sniff_text(text: str) -> tuple[list[dict], list[str], str]:
    records, notes = read_jsonl(text)
    if records and len(records) >= sum(1 for line in text.splitlines() if line.strip()) // 2:
        return records, notes, "metrics.jsonl"
    records, notes = read_console(text)
    return records, notes, "console log"


def records_to_table(records: list[dict], source: Path | str, fmt: str) -> MetricTable:
    """A `MetricTable` from raw records: end-of-run summaries set aside, steps found or numbered.

    Raises `UserError` when nothing usable is there, naming what was found and what is missing.
    """
    notes: list[str] = []
    summaries = [r for r in records if names.SUMMARY_KEYS & r.keys()]
    steps_rows = [r for r in records if not (names.SUMMARY_KEYS & r.keys())]
    if not steps_rows:
        raise UserError(f"{source}: no per-step metric record found in this {fmt}")
    if not any(_has_step(r) for r in steps_rows):
        steps_rows = [dict(r, step=i + 1) for i, r in enumerate(steps_rows)]
        notes.append("records carry no step: numbered 1, 2, ... in file order")
    table = MetricTable.from_records(steps_rows, meta={"source": str(source), "format": fmt})
    if len(table) == 0:
        raise UserError(f"{source}: {len(steps_rows)} records, none with a numeric step")
    _drop_reward_aliases(table, notes)
    if not table.has(names.REWARD):
        _reward_from_components(table, notes)
    if not table.has(names.REWARD):
        found = ", ".join(table.names()[:12]) or "nothing numeric"
        raise UserError(
            f"{source}: {len(table)} logged steps but no reward metric (looked for reward, rewards/<f>/mean, "
            f"rewards/<f>, train/reward); found: {found}. Is this a GRPO run? The doctor judges runs by "
            "their reward curve."
        )
    table.meta["summary"] = summaries[-1] if summaries else {}
    table.meta["notes"] = notes
    return table


def _has_step(record: dict) -> bool:
    return any(names.canonical(k) == "step" for k in record)


def _drop_reward_aliases(table: MetricTable, notes: list[str]) -> None:
    """Drop ``rewards/<f>/mean`` columns that merely repeat ``reward`` when there are other components."""
    if not table.has(names.REWARD):
        return
    comps = table.components()
    total = table[names.REWARD]
    for comp in comps:
        col = table[f"rewards/{comp}/mean"]
        both = np.isfinite(col) & np.isfinite(total)
        if len(comps) > 1 and both.sum() >= 2 and np.allclose(col[both], total[both], rtol=1e-6, atol=1e-9):
            del table.columns[f"rewards/{comp}/mean"]
            table.columns.pop(f"rewards/{comp}/std", None)
            notes.append(f"rewards/{comp} repeats the total reward: treated as the total, not a component")


def _reward_from_components(table: MetricTable, notes: list[str]) -> None:
    comps = table.components()
    if comps:
        table.columns[names.REWARD] = np.sum([table[f"rewards/{c}/mean"] for c in comps], axis=0)
        notes.append("no 'reward' column: total reward = sum of the reward components (weights unknown)")


def _apply_weights(run: Run) -> None:
    weights = rundir.reward_weights(run.config)
    if not weights:
        return
    comps = set(run.table.components())
    lookup = {c.lower(): c for c in comps}
    resolved = {}
    for name, weight in weights.items():
        comp = name if name in comps else lookup.get(name.lower())
        if comp is None:
            run.notes.append(f"config reward {name!r} has no rewards/{name}/mean column in the log")
        else:
            resolved[comp] = weight
    run.table.meta["reward_weights"] = resolved
    run.table.meta["shadow"] = sorted(c for c, w in resolved.items() if w == 0)
