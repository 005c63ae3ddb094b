"""Real public GRPO logs (tests/data/real-runs/, provenance in its README; labels and the development /
validation split in benchmarks/real_runs.py): diagnosed in line with their labels."""

from __future__ import annotations

import pytest

from benchmarks.real_runs import HALVES, LABELS, REAL_RUNS, UNCLEAR, judge, split

# Runs the doctor does not get right today, with what it says instead (docs/doctor.md explains each).
# file -> failure modes reported
KNOWN_MISSES: dict[str, list[str]] = {}
# Formats the readers of branch doctor-readers do not read yet (to be emptied when they land).
AWAITING_READER = {
    "countdown_custom_grpo_healthy.jsonl",
    "gemma4_billing_kl_blowup.ipynb",
    "govworkflow_len9_collapse.ipynb",
    "tinker_leetcode_llama1b_compile_hack.jsonl",
    "tinker_synth_tools_qwen3_8b_healthy.log",
    "tonywang_gsm8k_baseline_healthy.json",
    "tonywang_gsm8k_lr1e-6_stall.json",
    "unsloth_llama32_3b_adv_healthy.ipynb",
    "unsloth_mistral7b_xmlcount_proxy.ipynb",
    "unsloth_phi4_14b_stall.ipynb",
    "watchdog_qwen3_8b_truncated.txt",
    "basile_llama31_8b_unclear_proxy_drift.ipynb",
}
# Unclear runs: what the doctor says (a failure or a warning is fine; it must say what it sees).
UNCLEAR_VERDICTS = {
    "watchdog_qwen3_8b_truncated.txt": {"failure", "warning", "unreadable"},
    "basile_llama31_8b_unclear_proxy_drift.ipynb": {"failure", "warning", "unreadable"},
}


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
    row = judge(name)
    if row.verdict == "unreadable" and name in AWAITING_READER:
        pytest.skip(f"reader pending on branch doctor-readers: {row.headline}")
    if name in KNOWN_MISSES:
        assert row.right is False and row.modes == KNOWN_MISSES[name], row.headline
    elif LABELS[name].group == UNCLEAR:
        assert row.verdict in UNCLEAR_VERDICTS[name], row.headline
    else:
        assert row.right, (row.modes, row.onset, row.onset_error, row.headline)
