"""Score the doctor on a labelled corpus: a folder of logs and a labels file.

The labels file is JSON: ``{"_rule": ..., "<file>": {"label": str, "accept": [modes], "forbid": [modes],
"onset": step | null}}`` (keys starting with ``_`` are comments; ``"scored": false`` or a label containing
"unclear" marks a run that is reported, never scored). A run with an empty ``accept`` is healthy: it must
raise no failure. A labelled failure is *hit* when one of its accepted modes (any alias of a mode counts as
the mode) is among the report's failures; its onset error is |onset - labelled onset| / (last - first step)
for the earliest accepted failure. ``agentgrpo doctor --score DIR --labels FILE`` prints the table.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

from agentgrpo.doctor.modes import resolve
from agentgrpo.errors import UserError

ONSET_BOUND = 0.2  # onset error, as a share of the run's length
RECALL_BOUND = 0.9
HEALTHY, UNCLEAR, FAILING, UNREADABLE = "healthy", "unclear", "failure", "unreadable"


@dataclass(frozen=True)
class Label:
    """One run's label: its accepted and forbidden failure modes (canonical names) and onset."""

    file: str
    text: str
    accept: tuple[str, ...] = ()
    forbid: tuple[str, ...] = ()
    onset: int | None = None
    scored: bool = True

    @property
    def kind(self) -> str:
        """``unclear`` (not scored), ``healthy`` (no failure allowed) or ``failure``."""
        if not self.scored or "unclear" in self.text.lower():
            return UNCLEAR
        return FAILING if self.accept else HEALTHY

    @property
    def stratum(self) -> str:
        """The label's group for a stratified split: unclear, healthy, or the first accepted mode."""
        return self.accept[0] if self.kind == FAILING else self.kind


def _modes(value, file: str, field: str, source: Path) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(m, str) for m in value):
        raise UserError(f"{source}: {file}: '{field}' must be a list of failure-mode names, got {value!r}")
    try:
        return tuple(dict.fromkeys(resolve(m) for m in value))
    except ValueError as exc:
        raise UserError(f"{source}: {file}: '{field}': {exc}") from exc


def load_labels(path: str | Path) -> dict[str, Label]:
    """``{file: Label}`` from a labels file; a malformed entry is a UserError naming it."""
    source = Path(path)
    try:
        raw = json.loads(source.read_text(encoding="utf-8"))
    except OSError as exc:
        raise UserError(f"cannot read the labels file {source}: {exc.strerror or exc}") from exc
    except json.JSONDecodeError as exc:
        raise UserError(f"{source} is not JSON ({exc}); expected {{file: {{label, accept, onset}}}}") from exc
    if not isinstance(raw, dict):
        raise UserError(f"{source}: expected a JSON object {{file: {{label, accept, onset}}}}")
    labels = {}
    for file, entry in raw.items():
        if file.startswith("_"):
            continue
        if not isinstance(entry, dict) or not isinstance(entry.get("label"), str):
            raise UserError(f"{source}: {file}: expected {{'label': str, 'accept': [...], 'onset': step|null}}")
        onset = entry.get("onset")
        if onset is not None and (isinstance(onset, bool) or not isinstance(onset, int | float)):
            raise UserError(f"{source}: {file}: 'onset' must be a step number or null, got {onset!r}")
        labels[file] = Label(
            file,
            entry["label"],
            _modes(entry.get("accept", []), file, "accept", source),
            _modes(entry.get("forbid", []), file, "forbid", source),
            None if onset is None else int(onset),
            bool(entry.get("scored", True)),
        )
    return labels


@dataclass
class Scored:
    """The doctor's report on one labelled run, against its label."""

    label: Label
    verdict: str
    failures: list[str]
    warnings: list[str]
    onset: int | None
    onset_error: float | None
    headline: str

    @property
    def hit(self) -> bool:
        return bool(set(self.failures) & set(self.label.accept))

    @property
    def forbidden(self) -> list[str]:
        return [m for m in self.failures if m in self.label.forbid]

    @property
    def right(self) -> bool | None:
        """None for unclear runs; else whether the run meets its label (and the onset bound)."""
        if self.verdict == UNREADABLE:
            return False
        kind = self.label.kind
        if kind == UNCLEAR:
            return None
        if self.forbidden:
            return False
        if kind == HEALTHY:
            return not self.failures
        return self.hit and (self.onset_error is None or self.onset_error <= ONSET_BOUND)


def score_run(path: Path, label: Label) -> Scored:
    """Read and diagnose one run; an unreadable run scores as naming no failure."""
    from agentgrpo.doctor.diagnose import diagnose
    from agentgrpo.doctor.readers import read_run

    try:
        table = read_run(path).table
    except UserError as exc:
        why = str(exc).splitlines()[0].replace(f"{path}: ", "")  # e.g. a missing extra: tensorboard
        return Scored(label, UNREADABLE, [], [], None, None, why[:200])
    report = diagnose(table)
    failures = [f.detector for f in report.failures]
    hits = [f for f in report.failures if f.detector in label.accept]
    first = hits[0] if hits else (report.failures[0] if report.failures else None)
    onset = first.onset if first is not None else None
    error = None
    if hits and label.onset is not None and onset is not None:
        error = abs(onset - label.onset) / max(report.last_step - report.first_step, 1)
    return Scored(label, report.verdict, failures, [f.detector for f in report.warnings], onset, error, report.headline)


def score_dir(root: str | Path, labels: dict[str, Label]) -> list[Scored]:
    """Score every labelled file under ``root``; a labelled file that is absent is a UserError."""
    root = Path(root)
    missing = [name for name in labels if not (root / name).exists()]
    if missing:
        raise UserError(f"{len(missing)} labelled file(s) not in {root}: {', '.join(sorted(missing)[:5])}")
    return [score_run(root / name, labels[name]) for name in sorted(labels)]


@dataclass
class Totals:
    recall: dict[str, tuple[int, int]]  # accepted (first) mode -> (hits, labelled failures)
    hits: int
    failing: int
    false_on_healthy: list[str]
    healthy: int
    forbidden: list[str]
    onset_errors: list[float]
    late_onsets: list[str]
    unreadable: list[str]
    runs: int

    @property
    def overall(self) -> float:
        return self.hits / self.failing if self.failing else math.nan

    def missed_bounds(self) -> list[str]:
        """The acceptance bounds this corpus misses (empty: all hold)."""
        missed = []
        if self.failing and self.overall < RECALL_BOUND:
            missed.append(f"recall {self.overall:.2f} < {RECALL_BOUND}")
        if self.false_on_healthy:
            missed.append(f"failures on healthy runs: {', '.join(self.false_on_healthy)}")
        if self.forbidden:
            missed.append(f"forbidden modes raised: {', '.join(self.forbidden)}")
        if self.late_onsets:
            missed.append(f"onset error > {ONSET_BOUND}: {', '.join(self.late_onsets)}")
        return missed


def totals(rows: list[Scored]) -> Totals:
    failing = [r for r in rows if r.label.kind == FAILING]
    healthy = [r for r in rows if r.label.kind == HEALTHY]
    recall: dict[str, tuple[int, int]] = {}
    for r in failing:
        hit, n = recall.get(r.label.stratum, (0, 0))
        recall[r.label.stratum] = (hit + r.hit, n + 1)
    errors = [r.onset_error for r in failing if r.onset_error is not None]
    return Totals(
        recall=dict(sorted(recall.items())),
        hits=sum(r.hit for r in failing),
        failing=len(failing),
        false_on_healthy=[r.label.file for r in healthy if r.failures],
        healthy=len(healthy),
        forbidden=[f"{r.label.file} ({', '.join(r.forbidden)})" for r in rows if r.forbidden],
        onset_errors=errors,
        late_onsets=[r.label.file for r in failing if r.onset_error is not None and r.onset_error > ONSET_BOUND],
        unreadable=[f"{r.label.file} ({r.headline})" for r in rows if r.verdict == UNREADABLE],  # with the reason
        runs=len(rows),
    )


def _mark(row: Scored) -> str:
    if row.label.kind == UNCLEAR:
        return "(unclear)"
    if row.label.kind == HEALTHY:
        return "clean" if row.right else "FALSE"
    return ("hit" if row.right else "MISS") if row.hit or row.right is False else "MISS"


def table(rows: list[Scored], markdown: bool = False) -> str:
    """One line per run: label, verdict, failures (warnings), onset (label), onset error, hit/miss."""
    head = ["file", "label", "verdict", "failures (warnings)", "onset (label)", "onset error", "result"]
    lines = []
    if markdown:
        lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        modes = ", ".join(r.failures) or "—"
        if r.warnings:
            modes += f" ({', '.join(r.warnings)})"
        onset = f"{r.onset if r.onset is not None else '—'} ({r.label.onset if r.label.onset is not None else '—'})"
        err = f"{r.onset_error:.2f}" if r.onset_error is not None else "—"
        cells = [r.label.file, r.label.text, r.verdict, modes, onset, err, _mark(r)]
        if markdown:
            lines.append("| " + " | ".join(cells) + " |")
        else:
            lines.append(f"{cells[6]:9} {cells[0][:46]:46} {cells[2]:10} {modes[:44]:44} onset {onset} err {err}")
            lines.append(f"{'':9} label: {r.label.text[:70]}")
    return "\n".join(lines)


def summary(t: Totals) -> str:
    """The corpus totals: recall per mode, false failures, onset errors, unreadable files."""
    per_mode = ", ".join(f"{m} {h}/{n}" for m, (h, n) in t.recall.items()) or "—"
    worst = max(t.onset_errors) if t.onset_errors else math.nan
    return "\n".join(
        [
            f"recall {t.hits}/{t.failing} = {t.overall:.2f} (per mode: {per_mode})",
            f"failures on healthy runs {len(t.false_on_healthy)}/{t.healthy}"
            + (f": {', '.join(t.false_on_healthy)}" if t.false_on_healthy else ""),
            f"forbidden modes raised {len(t.forbidden)}" + (f": {', '.join(t.forbidden)}" if t.forbidden else ""),
            f"onset error max {worst:.2f}; over {ONSET_BOUND}: {len(t.late_onsets)}"
            + (f" ({', '.join(t.late_onsets)})" if t.late_onsets else ""),
            f"unreadable {len(t.unreadable)}/{t.runs}" + (f": {', '.join(t.unreadable)}" if t.unreadable else ""),
        ]
    )
