"""Every shared real run (tests/data/real-runs/) reads, with the metrics its README's `keys` column lists.

Verdicts on these runs are tested in test_doctor_real_runs.py; this file checks only what the readers give
the detectors: the format recognised, the steps read, and each listed metric under its canonical name.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from agentgrpo.doctor import names
from agentgrpo.doctor.readers import read_run

REAL_RUNS = Path(__file__).resolve().parent / "data" / "real-runs"

# The README's key codes, as canonical names.
CODES = {
    "R": names.REWARD,
    "Rs": names.REWARD_STD,
    "KL": names.KL,
    "H": names.ENTROPY,
    "L": names.LENGTH,
    "CL": names.CLIPPED,
    "Z": names.FRAC_ZERO_STD,
    "G": names.GRAD_NORM,
    "loss": names.LOSS,
    "clip": names.CLIP_REGION,
}
NEW_TRL = "R Rs L CL Z G"

# file -> (format prefix, steps, (first, last) step, metric codes present, number of reward components,
#          codes that must be absent)
EXPECTED = {
    "nips_rho100_s44_saturated.json": ("JSON step logs", 40, (5, 200), NEW_TRL + " H", 1, "KL"),
    "nips_dapo_rho10_s42.json": ("JSON step logs", 40, (5, 200), NEW_TRL + " H", 1, "KL"),
    "redteam_finance_zero_std.json": ("trainer_state.json", 100, (1, 100), NEW_TRL + " KL H", 1, ""),
    "unsloth_llama31_gsm8k_healthy.json": ("trainer_state.json", 250, (1, 250), "R Rs KL L G", 5, ""),
    "trl_dapo_vl3b_length_entropy_collapse.txt": ("console log", 49, (10, 490), "R H L CL Z G", 3, ""),
    "cas_wordle4090_stall.json": ("trainer_state.json", 400, (1, 400), NEW_TRL + " KL H", 1, ""),
    "unsloth_grammar_grpo_kl_blowup.txt": ("console log", 40, (10, 400), NEW_TRL + " KL", 1, ""),
    "tonywang_gsm8k_baseline_healthy.json": ("JSON step logs", 50, (1, 50), "R Rs L G clip", 2, "KL H"),
    "tonywang_gsm8k_lr1e-6_stall.json": ("JSON step logs", 50, (1, 50), "R Rs L G clip", 2, "KL H"),
    "unsloth_llama32_3b_adv_healthy.ipynb": ("notebook", 500, (1, 500), "R Rs KL L loss", 4, ""),
    "countdown_custom_grpo_healthy.jsonl": ("metrics.jsonl", 500, (1, 500), "R Rs Z L CL loss", 2, "KL H"),
    "tinker_synth_tools_qwen3_8b_healthy.log": ("text step lines", 100, (1, 100), "R loss", 0, "KL H L"),
    "unsloth_phi4_14b_stall.ipynb": ("notebook", 100, (1, 100), "R Rs KL L", 0, "CL"),
    "finqa_qwen7b_2400_stall.log": ("console log", 2400, (1, 2400), NEW_TRL + " H", 1, "KL"),
    "tinker_leetcode_llama1b_compile_hack.jsonl": ("metrics.jsonl", 45, (0, 44), "R H", 2, "KL L"),
    "unsloth_mistral7b_xmlcount_proxy.ipynb": ("notebook", 250, (1, 250), "R Rs KL L", 5, ""),
    "gemma4_billing_kl_blowup.ipynb": ("notebook", 39, (1, 39), "R Rs KL L CL", 7, ""),
    "unlearning_qwen15b_kl_nan_crash.log": ("console log", 458, (1, 458), NEW_TRL + " KL H", 3, ""),
    "govworkflow_len9_collapse.ipynb": ("notebook", 30, (5, 150), "R Rs KL L CL", 3, ""),
    "panacea_tooluse_truncation.log": ("console log", 300, (1, 300), NEW_TRL + " KL", 3, ""),
    "f1sim_zero_variance.json": ("trainer_state.json", 50, (10, 500), NEW_TRL + " KL", 1, ""),
    "watchdog_qwen3_8b_truncated.txt": ("console log", 200, (1, 200), NEW_TRL + " H", 2, "KL"),
    "basile_llama31_8b_unclear_proxy_drift.ipynb": ("notebook", 250, (1, 250), "R Rs KL L", 5, ""),
}


LOGS = sorted(p.name for p in REAL_RUNS.iterdir() if p.name not in ("README.md", "labels.json"))


def test_every_file_has_provenance():
    assert set(EXPECTED) <= set(LOGS)
    readme = (REAL_RUNS / "README.md").read_text(encoding="utf-8")
    assert all(f"| {name} |" in readme for name in LOGS), "every file needs its provenance row"


@pytest.mark.parametrize("name", LOGS)
def test_every_real_run_reads_with_a_reward(name):
    """All 50 (the third batch included) read on the default install, steps increasing, a reward logged."""
    table = read_run(REAL_RUNS / name).table
    assert np.all(np.diff(table.steps) > 0)
    assert len(table.series(names.REWARD)[1]) >= 10


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_real_run_reads_with_its_metrics(name):
    fmt, n_steps, (first, last), present, n_components, absent = EXPECTED[name]
    run = read_run(REAL_RUNS / name)
    table = run.table
    assert run.fmt.startswith(fmt), run.fmt
    assert len(table) == n_steps and (table.steps[0], table.steps[-1]) == (first, last)
    assert np.all(np.diff(table.steps) > 0)
    for code in present.split():
        _, values = table.series(CODES[code])
        assert len(values) >= 0.9 * n_steps, f"{CODES[code]}: {len(values)} of {n_steps} steps"
    for code in absent.split():
        assert not table.has(CODES[code]), f"{CODES[code]} should not be read from {name}"
    assert len(table.components()) == n_components, table.components()


def test_notebook_table_components_and_values():
    table = read_run(REAL_RUNS / "unsloth_llama32_3b_adv_healthy.ipynb").table
    assert table.components() == ["check_answer", "check_numbers", "match_format_approximately", "match_format_exactly"]
    assert table["reward"][0] == pytest.approx(-0.65625)
    assert table[names.LENGTH][0] == pytest.approx(242.4375)


def test_proxy_and_true_components_both_kept():
    """A component equal to the total is kept when the others do not add up to it (they are shadow rewards)."""
    table = read_run(REAL_RUNS / "tinker_leetcode_llama1b_compile_hack.jsonl").table
    assert table.components() == ["compilable_g", "correctness_f"]
    assert np.allclose(table["rewards/compilable_g/mean"], table["reward"])


def test_resumed_tinker_run_keeps_the_last_segment():
    run = read_run(REAL_RUNS / "tinker_leetcode_llama1b_compile_hack.jsonl")
    assert any("restart" in n and "superseded" in n for n in run.notes)
    # the final segment's step 0 (the 8th line of the file), not the first attempt's
    assert run.table["time/total"][0] == pytest.approx(880.5593440532684)


def test_placeholders_dropped_with_a_note():
    run = read_run(REAL_RUNS / "countdown_custom_grpo_healthy.jsonl")
    assert not run.table.has("entropy") and not run.table.has("kl")
    assert sum("placeholder" in n for n in run.notes) == 2
    assert any("truncated_count / rollout_count" in n for n in run.notes)


def test_logged_nan_is_named_with_its_step():
    run = read_run(REAL_RUNS / "unlearning_qwen15b_kl_nan_crash.log")
    assert run.table.meta["nan_steps"] == {"grad_norm": [458], "kl": [458]}
    assert any("grad_norm NaN at step 458" in n for n in run.notes)


def test_console_dicts_that_are_not_metrics_are_ignored():
    run = read_run(REAL_RUNS / "panacea_tooluse_truncation.log")
    assert not any("token_id" in k for k in run.table.names())
    assert run.table[names.LENGTH][0] == 256.0


def test_component_names_keep_their_spelling():
    table = read_run(REAL_RUNS / "redteam_finance_zero_std.json").table
    assert table.components() == ["FinancePoisonReward"]
