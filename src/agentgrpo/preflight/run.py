"""Preflight inside `agentgrpo train`: audit the rewards, then check the signal, before GRPO spends compute.

Writes ``preflight.json`` into the run directory (the doctor's report shows it). A failed audit stops the
run (``strict_preflight``, on by default); with ``strict_preflight: false`` it is printed and recorded and the
run trains anyway. Kept small on purpose:
``TRAIN_PROMPTS`` x the training group size rollouts, a few seconds on the demo.
"""

from __future__ import annotations

import json
from pathlib import Path

from agentgrpo.errors import UserError
from agentgrpo.rundir import PREFLIGHT, read_json

AUDIT_PROMPTS = 50
TRAIN_FIDELITY = 16  # sampled episodes re-rendered for the token fidelity check
TRAIN_PROMPTS = 16  # signal-check prompts during `train` (k = num_generations); `agentgrpo check` samples more


def run_preflight(plan, task, model_path: str, run_dir: Path, say=print) -> dict:
    """Audit + signal check for a resolved config; returns (and writes) the preflight record."""
    from agentgrpo.preflight.audit import audit, format_audit
    from agentgrpo.preflight.signal import format_signal, signal_check
    from agentgrpo.preflight.target import from_config

    target = from_config(plan, task, plan.rewards.fresh(), f"run {Path(run_dir).name}")
    say("preflight: reward audit")
    audited = audit(target, n_prompts=min(AUDIT_PROMPTS, plan.run.train_size), progress=False)
    say_lines(format_audit(audited, examples=True), say, only_findings=True)
    record = {"audit": audited}
    _write(run_dir, record)
    if not audited["ok"] and plan.run.strict_preflight:
        raise UserError(
            f"preflight: the reward audit failed (see {Path(run_dir) / PREFLIGHT}); fix the rewards, "
            "or set strict_preflight: false to train anyway"
        )
    say(f"preflight: signal check ({TRAIN_PROMPTS} prompts x {target.num_generations} samples)")
    record["signal"] = signal_check(
        target,
        n_prompts=min(TRAIN_PROMPTS, plan.run.train_size),
        k=target.num_generations,
        model_path=model_path,
        progress=False,
        fidelity=TRAIN_FIDELITY,
    )
    for line in format_signal(record["signal"]).splitlines()[1:]:
        say(f"  {line}")
    _write(run_dir, record)
    return record


def say_lines(text: str, say, only_findings: bool) -> None:
    lines = text.splitlines()
    if only_findings:  # the table is in preflight.json and `agentgrpo audit`; print what needs attention
        keep, on = [], False
        for line in lines:
            on = on or line.startswith(("EXPLOITS", "lenient", "GOLD", "gold:", "note:"))
            if on and not line.startswith("each reward alone"):
                keep.append(line)
            elif line.startswith("each reward alone"):
                on = False
        lines = keep if keep and keep[-1] == lines[-1] else [*keep, lines[-1]]
    for line in lines:
        say(f"  {line}")


def _write(run_dir: Path, record: dict) -> None:
    (Path(run_dir) / PREFLIGHT).write_text(json.dumps(record, indent=1, default=str))


def read_preflight(run_dir: Path) -> dict | None:
    try:
        return read_json(Path(run_dir) / PREFLIGHT)
    except ValueError:
        return None
