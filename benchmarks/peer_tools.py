"""The GRPO diagnosis packages on the package index, each as: what it reads, how a run is converted to it,
what the converted file reads back as (through the peer's own loader), and what its findings mean in the
doctor's failure modes. Used by ``benchmarks/peers.py``.

Conversion starts from the doctor's `MetricTable` of a run (every format the doctor reads), so no peer is
charged for a format it cannot parse: each gets the run in the form its own documentation asks for:

* **rldoctor** 0.2.0 (``rl_doctor.ingest.load_run``): a JSON Lines log with TRL's metric names (which its
  alias table lists first), a value only where one was logged (NaN/Inf only where the log had them).
* **rlprobe** 0.1.0 (``rlprobe doctor RUN_DIR``): a recording written with its own ``RunWriter``
  (``manifest.json`` + ``steps.parquet`` of ``StepRecord`` rows; components as ``reward_components``,
  the rest as ``extra``; ``nan_count`` = the metrics logged as NaN/Inf at that step).
* **rlwatch** 0.5.1: every step fed through ``RLWatch.log_step`` (what its TRL callback does), which stores
  the metrics in its SQLite database and raises its alerts.

``FIELDS[peer]`` maps the doctor's canonical names to the peer's fields; `compare` checks that what the peer
reads back equals the doctor's column (same steps, same values), so a conversion bug is caught, not counted.
``MODES[peer]`` maps each peer detector to the doctor's modes it is taken to name, generously: a detector
counts for every mode its name or docstring covers (docs/doctor.md, "The doctor against its peers").
"""

from __future__ import annotations

import json
import math
import time
from pathlib import Path

import numpy as np

VERSIONS = {"rldoctor": "0.2.0", "rlprobe": "0.1.0", "rlwatch": "0.5.1"}
MODULES = {"rldoctor": "rl_doctor", "rlprobe": "rlprobe", "rlwatch": "rlwatch"}
PIP = "pip install " + " ".join(f"{k}=={v}" for k, v in VERSIONS.items())

# The doctor's canonical name -> the field the peer reads it as (rldoctor: its canonical field, reached
# through the TRL key written; rlprobe: the StepRecord field; rlwatch: the log_step argument).
FIELDS: dict[str, dict[str, str]] = {
    "rldoctor": {
        "reward": "reward_mean",
        "reward_std": "reward_std",
        "frac_reward_zero_std": "zero_var_group_frac",
        "kl": "kl",
        "entropy": "entropy",
        "completions/mean_length": "response_len_mean",
        "completions/max_length": "response_len_max",
        "completions/clipped_ratio": "response_len_clip_ratio",
        "grad_norm": "grad_norm",
        "loss": "policy_loss",
        "learning_rate": "lr",
        "clip_ratio/region_mean": "pg_clipfrac",
        "clip_ratio/low_mean": "pg_clipfrac_low",
        "clip_ratio/high_mean": "pg_clipfrac_high",
        "eval/reward": "eval_score",
    },
    "rlprobe": {
        "reward": "reward_mean",
        "reward_std": "reward_std",
        "frac_reward_zero_std": "zero_variance_group_frac",
        "kl": "kl_mean",
        "entropy": "entropy_mean",
        "completions/mean_length": "completion_len_mean",
        "completions/max_length": "completion_len_max",
        "completions/clipped_ratio": "truncation_rate",
        "grad_norm": "grad_norm",
        "loss": "loss",
        "learning_rate": "lr",
        "clip_ratio/region_mean": "clip_fraction",
    },
    "rlwatch": {
        "reward": "reward_mean",
        "reward_std": "reward_std",
        "kl": "kl_divergence",
        "entropy": "entropy",
        "grad_norm": "grad_norm",
        "loss": "loss",
        "learning_rate": "learning_rate",
        "clip_ratio/region_mean": "clip_fraction",
    },
}
# TRL's reward_std is the mean of the per-group stds: rlprobe's group_reward_std_mean as well.
RLPROBE_ALSO = {"group_reward_std_mean": "reward_std"}

# Peer detector -> the doctor's modes it names (generous: every mode the detector's own description covers).
MODES: dict[str, dict[str, tuple[str, ...]]] = {
    "rldoctor": {
        "advantage_collapse": ("zero_variance", "stall"),
        "entropy_collapse": ("collapse",),
        "reward_hacking": ("hacking",),
        "length_pathology": ("length", "hacking"),
        "clip_saturation": ("instability",),
        "kl_drift": ("kl",),
        "gradient_pathology": ("instability", "kl"),
        "reward_composition": ("hacking",),
        "plateau": ("stall", "regression"),
    },
    "rlprobe": {
        "KL_BLOWUP": ("kl",),
        "ENTROPY_COLLAPSE": ("collapse",),
        "REWARD_HACK_LENGTH": ("length", "hacking"),
        "FORMAT_GAMING": ("hacking",),
        "CLIP_SATURATION": ("instability",),
        "DEGENERATE_GROUPS": ("zero_variance", "collapse"),
        "ADV_COLLAPSE": ("zero_variance", "collapse"),
        "VALUE_DIVERGENCE": ("instability",),
        "GRAD_PATHOLOGY": ("instability", "kl"),
        "TRUNCATION_STARVE": ("length",),
        "REPETITION_SPIRAL": ("collapse",),
        "REWARD_STD_DEATH": ("zero_variance", "collapse", "stall"),
        "REF_POLICY_DRIFT_ASYMMETRY": ("kl",),
        "THROUGHPUT_ROT": (),
    },
    "rlwatch": {
        "entropy_collapse": ("collapse",),
        "kl_explosion": ("kl",),
        "reward_hacking": ("hacking",),
        "advantage_variance": ("zero_variance", "collapse"),
        "loss_nan": ("instability",),
        "gradient_norm_spike": ("instability", "kl"),
        "reward_mean_drift": ("hacking", "regression", "stall"),
    },
}
# The peer's severities, lowest first; its top one is what it calls critical (our failure).
SEVERITIES = {
    "rldoctor": ("INFO", "WARNING", "CRITICAL"),
    "rlprobe": ("info", "warn", "critical"),
    "rlwatch": ("warning", "critical"),
}


def modes_named(peer: str, findings: list[dict], level: str) -> list[str]:
    """The doctor's modes a peer's findings name at or above ``level`` ('critical': its top severity only;
    'warn': its warning level and above); an unknown detector name raises (a new peer version to map).

    >>> modes_named("rlwatch", [{"detector": "kl_explosion", "severity": "warning"}], "warn")
    ['kl']
    >>> modes_named("rlwatch", [{"detector": "kl_explosion", "severity": "warning"}], "critical")
    []
    """
    order = SEVERITIES[peer]
    floor = len(order) - 1 if level == "critical" else order.index(order[-2])
    out: dict[str, None] = {}
    for f in findings:
        if order.index(f["severity"]) < floor:
            continue
        if f["detector"] not in MODES[peer]:
            raise KeyError(f"{peer}: detector {f['detector']!r} has no mapping in MODES; add one")
        out.update(dict.fromkeys(MODES[peer][f["detector"]]))
    return list(out)


def raised(peer: str, findings: list[dict], level: str) -> list[str]:
    """The peer detectors that fired at or above ``level`` (a healthy run must raise none)."""
    order = SEVERITIES[peer]
    floor = len(order) - 1 if level == "critical" else len(order) - 2
    return sorted({f["detector"] for f in findings if order.index(f["severity"]) >= floor})


def onset_of(peer: str, findings: list[dict], modes: tuple[str, ...], level: str) -> int | None:
    """The earliest step a peer gives for a finding that names one of ``modes`` (None: it gives none)."""
    order = SEVERITIES[peer]
    floor = len(order) - 1 if level == "critical" else len(order) - 2
    steps = [
        f["step"]
        for f in findings
        if f.get("step") is not None
        and order.index(f["severity"]) >= floor
        and set(MODES[peer].get(f["detector"], ())) & set(modes)
    ]
    return min(steps) if steps else None


# ---- conversion (no peer needed) ----------------------------------------------------------------------


def _logged_nan(table) -> dict[str, set[int]]:
    return {k: set(v) for k, v in table.meta.get("nan_steps", {}).items()}


def records(table) -> list[dict]:
    """The table as per-step records with the doctor's canonical (TRL) names: a value where one was logged
    (finite or infinite), NaN where NaN was logged, nothing where nothing was."""
    nan_at = _logged_nan(table)
    cols = {k: v for k, v in table.columns.items()}
    out = []
    for i, step in enumerate(table.steps.tolist()):
        rec: dict = {"step": int(step)}
        for name, col in cols.items():
            v = float(col[i])
            if not math.isnan(v) or step in nan_at.get(name, ()):
                rec[name] = v
        out.append(rec)
    return out


def write_jsonl(table, path: Path) -> Path:
    """rldoctor's input: JSON Lines (``NaN``/``Infinity`` tokens as Python's json writes and reads them)."""
    path.write_text("".join(json.dumps(r) + "\n" for r in records(table)), encoding="utf-8")
    return path


def rlprobe_rows(recs: list[dict]) -> list[dict]:
    """rlprobe StepRecord keyword arguments per step of `records` (built into models by the child)."""
    fields = FIELDS["rlprobe"]
    rows = []
    for rec in map(dict, recs):
        row: dict = {"step": rec.pop("step"), "reward_components": {}, "extra": {}}
        bad = sum(1 for v in rec.values() if not math.isfinite(v))
        for name, value in rec.items():
            if name in fields:
                row[fields[name]] = value
            elif name.startswith("rewards/") and name.endswith("/mean") and name.count("/") == 2:
                row["reward_components"][name.split("/")[1]] = value
            else:
                row["extra"][name] = value
        for field, name in RLPROBE_ALSO.items():
            if name in rec:
                row[field] = rec[name]
        if bad:
            row["nan_count"] = bad
        rows.append(row)
    return rows


def rlwatch_calls(recs: list[dict]) -> list[tuple[int, dict]]:
    """(step, log_step keyword arguments) per step of `records`, as rlwatch's TRL callback passes them."""
    fields = FIELDS["rlwatch"]
    return [(int(rec["step"]), {fields[k]: v for k, v in rec.items() if k in fields}) for rec in recs]


def expected(table, peer: str) -> dict[str, tuple[list[int], list[float]]]:
    """What the peer should read back: per peer field, the steps and values logged (NaN as a value)."""
    out = {}
    nan_at = _logged_nan(table)
    for name, field in FIELDS[peer].items():
        if name not in table.columns:
            continue
        col = table.columns[name]
        keep = ~np.isnan(col) | np.isin(table.steps, sorted(nan_at.get(name, ())))
        if keep.any():
            out[field] = (table.steps[keep].tolist(), col[keep].tolist())
    return out


# What each peer's reader keeps out of its series: rldoctor keeps NaN and Inf apart (``Run.nonfinite_steps``,
# checked separately); rlprobe reads NaN as missing (``nan_count`` carries it); rlwatch's SQLite stores NaN
# as NULL.
DROPS = {"rldoctor": "nonfinite", "rlprobe": "nan", "rlwatch": "nan"}


def compare(want: dict, got: dict, drop: str = "") -> list[str]:
    """Mismatches between what was written and what the peer read back (empty: the conversion is exact).
    ``drop``: the written values the peer's series leaves out by design ("nan", "nonfinite" or "")."""
    problems = []
    for field, (steps, values) in want.items():
        if field not in got:
            problems.append(f"{field}: not read")
            continue
        gs, gv = got[field]
        if drop:
            kept = math.isfinite if drop == "nonfinite" else (lambda v: not math.isnan(v))
            pairs = [(s, v) for s, v in zip(steps, values) if kept(v)]
            steps, values = [s for s, _ in pairs], [v for _, v in pairs]
        if [int(s) for s in gs] != [int(s) for s in steps]:
            problems.append(f"{field}: steps differ ({len(gs)} read, {len(steps)} written)")
            continue
        a, b = np.array(values, dtype=float), np.array(gv, dtype=float)
        same = (a == b) | (np.isnan(a) & np.isnan(b)) | np.isclose(a, b, rtol=1e-12, atol=0)
        if not same.all():
            i = int(np.argmin(same))
            problems.append(f"{field}: step {steps[i]} wrote {a[i]!r}, read {b[i]!r}")
    return problems


# ---- the peers themselves (run in a child process) ------------------------------------------------------


def _series(steps, values) -> tuple[list[int], list[float]]:
    keep = ~np.isnan(np.asarray(values, dtype=float))
    return np.asarray(steps)[keep].astype(int).tolist(), np.asarray(values, dtype=float)[keep].tolist()


def run_rldoctor(path: Path) -> dict:
    from rl_doctor.diagnosis import diagnose
    from rl_doctor.ingest import load_run

    start = time.perf_counter()
    run = load_run(str(path))
    result = diagnose(run)
    seconds = time.perf_counter() - start
    findings = [
        {"detector": f.detector, "severity": f.severity.name, "step": None, "summary": f.summary}
        for f in result.findings
        if f.severity.name in SEVERITIES["rldoctor"]
    ]
    got = {k: _series(run.steps, v) for k, v in run.series.items()}
    return {"seconds": seconds, "findings": findings, "read": got, "nonfinite": run.nonfinite_steps}


def convert_rlprobe(rows: list[dict], out: Path) -> Path:
    from rlprobe.schemas import RunManifest, StepRecord
    from rlprobe.storage import RunWriter

    manifest = RunManifest(run_id=out.name, created_at="1970-01-01T00:00:00", algorithm="grpo")
    with RunWriter(out, manifest) as writer:
        for row in rows:
            writer.add_step(StepRecord(**row))
    return out


def run_rlprobe(path: Path) -> dict:
    from rlprobe.doctor import diagnose
    from rlprobe.doctor.runview import RunView

    start = time.perf_counter()
    findings = diagnose(path)
    seconds = time.perf_counter() - start
    view = RunView.load(path)
    got = {f: _series(view.step_ids, view.series(f)) for f in FIELDS["rlprobe"].values()}
    return {
        "seconds": seconds,
        "findings": [
            {"detector": f.signature_id, "severity": f.severity, "step": f.first_step, "summary": f.explanation}
            for f in findings
        ],
        "read": got,
    }


def run_rlwatch(calls: list[tuple[int, dict]], out: Path) -> dict:
    import logging

    from rlwatch.config import RLWatchConfig
    from rlwatch.core import RLWatch

    logging.disable(logging.CRITICAL)
    config = RLWatchConfig(run_id="peer", framework="manual")
    config.storage.log_dir = str(out)
    start = time.perf_counter()
    monitor = RLWatch(config)
    monitor.start()
    findings = []
    for step, kwargs in calls:
        for a in monitor.log_step(step, **kwargs) or ():
            findings.append({"detector": a.detector, "severity": a.severity, "step": a.step, "summary": a.message})
    seconds = time.perf_counter() - start
    monitor.stop()
    import sqlite3

    con = sqlite3.connect(str(out / config.storage.db_name))
    got = {}
    for field in FIELDS["rlwatch"].values():
        rows = con.execute(f"SELECT step, {field} FROM metrics WHERE {field} IS NOT NULL ORDER BY step").fetchall()
        if rows:
            got[field] = ([r[0] for r in rows], [r[1] for r in rows])
    return {"seconds": seconds, "findings": findings, "read": got}
