"""Real public GRPO logs (tests/data/real-runs/, provenance in its README; labels and the development /
validation split in benchmarks/real_runs.py): diagnosed in line with their labels."""

from __future__ import annotations

import pytest

from benchmarks.real_runs import HALVES, LABELS, REAL_RUNS, UNCLEAR, judge, split

# Runs the doctor does not get right today, with what it says instead (docs/doctor.md explains each).
# file -> failure modes reported
KNOWN_MISSES: dict[str, list[str]] = {
    # validation half: the task component (correctness_f 0.001 -> 0.005) rises significantly with the proxy,
    # so "did not follow" (a significance test) does not hold, though the rise is immaterial
    "tinker_leetcode_llama1b_compile_hack.jsonl": [],
}
# Unclear runs: what the doctor says (a failure or a warning is fine; it must say what it sees).
UNCLEAR_VERDICTS = {
    "watchdog_qwen3_8b_truncated.txt": {"failure"},  # learns, but 100% truncated: a length failure
    "basile_llama31_8b_unclear_proxy_drift.ipynb": {"healthy", "warning"},  # learning; the drift is not seen
}


def test_acceptance_per_half():
    """Recall over labelled failures >= 0.9 overall, no failure on a healthy run, onsets within 20%."""
    pytest.importorskip("nbformat", reason="notebooks need the notebook extra (nbformat)")
    rows = [judge(n) for n in sorted(LABELS)]
    failing = [r for r in rows if r.label.modes]
    assert sum(r.hit for r in failing) / len(failing) >= 0.9
    assert not [r.name for r in rows if r.label.group == "healthy" and r.modes]
    assert all(r.onset_error <= 0.2 for r in failing if r.onset_error is not None)


def test_every_file_is_labelled():
    files = {p.name for p in REAL_RUNS.iterdir() if p.name != "README.md"}
    assert files == set(LABELS), f"unlabelled: {files - set(LABELS)}; labelled but absent: {set(LABELS) - files}"


def test_split_is_stratified_and_fixed():
    assert split() == HALVES  # the seeded rule reproduces the committed split
    groups = {label.group for label in LABELS.values()}
    for group in groups:
        members = [n for n, label in LABELS.items() if label.group == group]
        halves = {HALVES[n] for n in members}
        assert "dev" in halves and (len(members) == 1 or "val" in halves), group


@pytest.mark.parametrize("name", sorted(LABELS))
def test_real_run_diagnosis(name):
    if name.endswith(".ipynb"):
        pytest.importorskip("nbformat", reason="notebooks need the notebook extra (nbformat)")
    row = judge(name)
    if name in KNOWN_MISSES:
        assert row.right is False and row.modes == KNOWN_MISSES[name], row.headline
    elif LABELS[name].group == UNCLEAR:
        assert row.verdict in UNCLEAR_VERDICTS[name], row.headline
    else:
        assert row.right, (row.modes, row.onset, row.onset_error, row.headline)
