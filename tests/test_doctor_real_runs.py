"""Real public GRPO logs (tests/data/real-runs/: provenance in its README, labels in its labels.json; the
development / validation split in benchmarks/real_runs.py): the acceptance bounds on all 50, and each run
diagnosed in line with its label."""

from __future__ import annotations

import pytest

from agentgrpo.doctor.score import HEALTHY, UNCLEAR, load_labels, totals
from benchmarks.real_runs import HALVES, LABELS, LABELS_FILE, REAL_RUNS, judge, split

# Runs the doctor does not get right today, with the failure modes it reports instead (docs/doctor.md
# explains each miss).
KNOWN_MISSES: dict[str, list[str]] = {}


@pytest.fixture(scope="module")
def rows():
    return {name: judge(name) for name in sorted(LABELS)}


def test_acceptance_bounds_on_all_runs_and_each_half(rows):
    """Recall >= 0.9 (validation half and all 50), no failure on a healthy run, onsets within 20%."""
    for selected in (list(rows), [n for n in rows if HALVES[n] == "val"]):
        t = totals([rows[n] for n in selected])
        assert t.overall >= 0.9, (t.hits, t.failing)
        assert not t.false_on_healthy and not t.forbidden and not t.late_onsets and not t.unreadable
    t = totals(list(rows.values()))
    assert t.runs == 50 and t.healthy >= 13 and t.failing >= 30


def test_every_file_is_labelled():
    files = {p.name for p in REAL_RUNS.iterdir() if p.name not in ("README.md", "labels.json")}
    assert files == set(LABELS), f"unlabelled: {files - set(LABELS)}; labelled but absent: {set(LABELS) - files}"
    assert load_labels(LABELS_FILE) == LABELS


def test_split_is_stratified_and_fixed():
    assert split() == HALVES  # the seeded rule reproduces the committed split
    for stratum in {label.stratum for label in LABELS.values()}:
        members = [n for n, label in LABELS.items() if label.stratum == stratum]
        halves = {HALVES[n] for n in members}
        assert "dev" in halves and (len(members) == 1 or "val" in halves), stratum
    assert sum(h == "dev" for h in HALVES.values()) == 28


@pytest.mark.parametrize("name", sorted(LABELS))
def test_real_run_diagnosis(name, rows):
    row = rows[name]
    if name in KNOWN_MISSES:
        assert row.right is False and row.failures == KNOWN_MISSES[name], row.headline
    elif LABELS[name].kind == UNCLEAR:
        assert row.verdict != "unreadable", row.headline
    elif LABELS[name].kind == HEALTHY:
        assert not row.failures, row.headline
    else:
        assert row.right, (row.failures, row.onset, row.onset_error, row.headline)
