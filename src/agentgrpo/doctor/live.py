"""`LiveDoctorCallback`: the doctor's detectors during training, on the history of logged metrics.

Add it to a Trainer (``callbacks=[LiveDoctorCallback(every=10, stop_on=("hacking", "collapse"))]``). Every
``every`` logged training steps it runs the same detectors as ``agentgrpo doctor`` on what has been logged
so far; new warnings and failures are printed, sent to the ``agentgrpo.doctor`` logger, and appended to
``<run_dir>/doctor_live.jsonl`` when a run directory is given. When a failure named in ``stop_on`` is seen
on ``patience`` consecutive checks, it asks the Trainer to save a checkpoint and stop.

This is the only doctor module that imports transformers (for the `TrainerCallback` base class).
"""

from __future__ import annotations

import json
import logging
import math
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

import numpy as np
from transformers.trainer_callback import TrainerCallback

from agentgrpo.doctor import names
from agentgrpo.doctor.diagnose import Report, diagnose
from agentgrpo.doctor.finding import FAILURE, WARNING
from agentgrpo.doctor.modes import resolve
from agentgrpo.doctor.table import MetricTable, to_float
from agentgrpo.doctor.tail import JsonlTail
from agentgrpo.rundir import LIVE_DOCTOR

log = logging.getLogger("agentgrpo.doctor")


class History:
    """Logged metrics as growing numpy columns (capacity doubles as they fill). Each log is parsed once,
    when it arrives; a check takes views of the filled rows, so it parses nothing and copies nothing:
    ``rows_parsed`` counts the rows parsed, the measure that a check's cost does not grow with the run."""

    def __init__(self):
        self._steps = np.zeros(64, dtype=np.int64)
        self._columns: dict[str, np.ndarray] = {}
        self._names: dict[str, str] = {}
        self.n = 0
        self.rows_parsed = 0

    @property
    def steps(self) -> list[int]:
        return self._steps[: self.n].tolist()

    @property
    def last_step(self) -> int | None:
        return int(self._steps[self.n - 1]) if self.n else None

    def _grow(self) -> None:
        size = 2 * len(self._steps)
        self._steps = np.resize(self._steps, size)
        for name, col in self._columns.items():
            grown = np.full(size, math.nan)
            grown[: len(col)] = col
            self._columns[name] = grown

    def add(self, step: int, logs: Mapping) -> None:
        """Append one log (merged into the last row when it is for the same step, e.g. an eval log)."""
        self.rows_parsed += 1
        if not self.n or self._steps[self.n - 1] != step:
            if self.n == len(self._steps):
                self._grow()
            self._steps[self.n] = step
            self.n += 1
        row = self.n - 1
        for key, value in logs.items():
            name = self._names.get(key) or self._names.setdefault(key, names.canonical(key))
            number = to_float(value)
            if number is None or name == "step":
                continue
            col = self._columns.get(name)
            if col is None:
                col = self._columns[name] = np.full(len(self._steps), math.nan)
            col[row] = number

    def table(self, meta: dict) -> MetricTable:
        """The history as a `MetricTable` of views (no copy)."""
        return MetricTable(self._steps[: self.n], {k: v[: self.n] for k, v in self._columns.items()}, dict(meta))


class LiveDoctorCallback(TrainerCallback):
    """Run the doctor's detectors every ``every`` logged steps during training.

    Args:
        every: logged training steps between checks.
        stop_on: failure modes that stop training (detector names or aliases: hacking, collapse, length,
            kl, tools, stall). Empty: never stop, only warn.
        run_dir: where to append ``doctor_live.jsonl`` (None: no file).
        reward_weights: ``{reward name: weight}``; weight 0 marks shadow rewards for the hacking detector.
            Default: the ``rewards`` list of ``<run_dir>/config.yaml`` when there is one.
        min_steps: logged steps before the first check (short histories say little).
        patience: consecutive checks a finding must persist before it is reported, and a failure before
            training is stopped (a single check's finding may be noise in a short history).
        print_fn: where warnings are printed (default ``print``; None to print nothing).
    """

    def __init__(
        self,
        every: int = 10,
        stop_on: Iterable[str] = (),
        run_dir: str | Path | None = None,
        reward_weights: Mapping[str, float] | None = None,
        min_steps: int = 20,
        patience: int = 2,
        print_fn: Callable[[str], None] | None = print,
    ):
        if every < 1 or patience < 1:
            raise ValueError("every and patience must be >= 1")
        self.every, self.min_steps, self.patience = every, min_steps, patience
        self.stop_on = {resolve(s) for s in stop_on}
        self.run_dir = Path(run_dir) if run_dir is not None else None
        self._weights = dict(reward_weights) if reward_weights is not None else None
        self.meta = {"source": "live", "format": "live"}
        self.print_fn = print_fn
        self.history = History()
        self.report: Report | None = None
        self.stopped_by: str | None = None
        self.stopped_finding = None  # the Finding that stopped training (what a heal acts on)
        self._train_logs = 0
        self._seen: set[tuple[str, str]] = set()  # (detector, status) already reported
        self._streak: dict[str, int] = {}  # detector -> consecutive checks it was flagged
        self._tail: JsonlTail | None = None
        # how a check diagnoses the history (a healed segment's doctor reads a stall with its lineage)
        self.judge: Callable[[MetricTable], Report] = diagnose

    # ---- Trainer events -----------------------------------------------------------------------------------
    def on_train_begin(self, args, state, control, **kwargs):
        """Resumed (global_step > 0): start from the run's whole metrics.jsonl, not just the steps to come."""
        if state.global_step > 0 and self.run_dir is not None and not self.history.n:
            self.load_history(int(state.global_step))
        return control

    def load_history(self, up_to_step: int) -> int:
        """Feed the records of ``<run_dir>/metrics.jsonl`` up to ``up_to_step`` into the history (a resumed
        run's steps before the resume); returns how many were read."""
        from agentgrpo.rundir import METRICS

        return self.feed(JsonlTail(self.run_dir / METRICS).poll(), up_to_step)

    def feed(self, records: Iterable[Mapping], up_to_step: int | None = None) -> int:
        """Add records of a metrics.jsonl (with ``step``) to the history; returns how many were added."""
        n = 0
        for record in records:
            step = record.get("step")
            if not isinstance(step, int | float) or names.SUMMARY_KEYS & record.keys():
                continue
            if up_to_step is not None and step > up_to_step:
                continue
            logs = {k: v for k, v in record.items() if k not in ("step", "epoch", "time")}
            self.history.add(int(step), logs)
            if names.REWARD in logs or any(k.startswith("rewards/") for k in logs):
                self._train_logs += 1
            n += 1
        return n

    def follow(self, path: str | Path) -> Report | None:
        """Watch a run from outside its trainer: read only what was appended to its metrics.jsonl since the
        last call (`JsonlTail`), and check when ``every`` new training logs have arrived. Returns the
        report of a check, else None."""
        if self._tail is None or self._tail.path != Path(path):
            self._tail = JsonlTail(path)
        before = self._train_logs
        self.feed(self._tail.poll())
        if self._train_logs >= self.min_steps and self._train_logs // self.every > before // self.every:
            return self.check(self.history.last_step or 0)
        return None

    def on_log(self, args, state, control, logs=None, **kwargs):
        if not logs or names.SUMMARY_KEYS & logs.keys():
            return control
        self.history.add(int(state.global_step), logs)
        if names.REWARD not in logs and not any(k.startswith("rewards/") for k in logs):
            return control
        self._train_logs += 1
        if self._train_logs >= self.min_steps and self._train_logs % self.every == 0:
            self.check(int(state.global_step), control)
        return control

    def on_train_end(self, args, state, control, **kwargs):
        if self._train_logs >= 2:
            self.check(int(state.global_step), None, final=True)
        return control

    # ---- checks ------------------------------------------------------------------------------------------
    def check(self, step: int, control=None, final: bool = False) -> Report:
        """Diagnose the history now; report what is new; stop training if asked to. Returns the report."""
        if "shadow" not in self.meta:
            self._set_weights()
        report = self.judge(self.history.table(self.meta))
        self.report = report
        flagged = {f.detector: f for f in report.findings if f.status in (FAILURE, WARNING)}
        self._streak = {d: self._streak.get(d, 0) + 1 for d in flagged}
        for f in flagged.values():
            key = (f.detector, f.status)
            if key not in self._seen and (self._streak[f.detector] >= self.patience or final):
                self._seen.add(key)
                self._emit(step, f, "detected")
        if control is not None and not final:
            self._maybe_stop(step, report, control)
        if final:
            self._write(
                {"step": step, "event": "final", "verdict": report.verdict, "headline": report.headline,
                 "steps_seen": self.history.n, "first_step": int(self.history.table({}).steps[0])}
            )
        return report

    def _set_weights(self) -> None:
        """Reward weights as given, else from ``<run_dir>/config.yaml`` (written before training starts)."""
        weights = self._weights
        if self.run_dir is not None:
            from agentgrpo.doctor.readers import rundir
            from agentgrpo.rundir import read_config

            config = read_config(self.run_dir, notes=[])
            if weights is None:
                weights = rundir.reward_weights(config)
            cap = rundir.length_cap(config)
            if cap is not None:
                self.meta["max_completion_length"] = cap
        weights = weights or {}
        self.meta["reward_weights"] = weights
        self.meta["shadow"] = sorted(k for k, w in weights.items() if w == 0)

    def _maybe_stop(self, step: int, report: Report, control) -> None:
        for f in report.failures:
            if f.detector in self.stop_on and self._streak.get(f.detector, 0) >= self.patience:
                control.should_save = True
                control.should_training_stop = True
                self.stopped_by, self.stopped_finding = f.detector, f
                self._emit(step, f, "stopping training (checkpoint saved first)")
                return

    def _emit(self, step: int, finding, action: str) -> None:
        onset = f", onset step {finding.onset}" if finding.onset is not None else ""
        line = (
            f"[agentgrpo doctor] step {step}: {finding.status.upper()} {finding.detector}: {finding.verdict}"
            f" (confidence {finding.confidence:.2f}{onset}) — {action}"
        )
        detail = "; ".join(finding.evidence[:3])
        log.info("%s | %s", line, detail)
        if self.print_fn is not None:
            self.print_fn(
                line
                + (f"\n    {detail}" if detail else "")
                + (f"\n    fix: {finding.fix}" if finding.fix else "")
            )
        self._write({"step": step, "event": action, **finding.to_dict()})

    def _write(self, record: dict) -> None:
        if self.run_dir is None:
            return
        self.run_dir.mkdir(parents=True, exist_ok=True)
        with open(self.run_dir / LIVE_DOCTOR, "a", encoding="utf-8") as fh:
            fh.write(json.dumps({"time": time.time(), **record}, default=str) + "\n")
            fh.flush()
