"""The signal check's estimates, verdicts, its run on the tiny model, and its bad-input handling."""

from __future__ import annotations

import itertools
import random
import shutil

import pytest

from agentgrpo.errors import UserError
from agentgrpo.preflight.signal import (
    all_equal_probability,
    binary_mixed,
    format_signal,
    mixed_fraction,
    signal_check,
    verdict,
)
from agentgrpo.preflight.target import resolve


def test_exact_estimate_equals_enumerating_every_group():
    rng = random.Random(0)
    for _ in range(20):
        values = [rng.choice([0.0, 0.1, 1.0, 1.1]) for _ in range(rng.randint(2, 9))]
        for g in range(2, len(values) + 1):
            groups = list(itertools.combinations(values, g))
            brute = sum(len(set(grp)) == 1 for grp in groups) / len(groups)
            p, exact = all_equal_probability(values, g)
            assert exact and p == pytest.approx(brute)


def test_binary_formula_is_the_large_sample_limit():
    values = [1.0] * 300 + [0.0] * 700
    for g in (2, 4, 8, 16):
        assert mixed_fraction([values], g)[0] == pytest.approx(binary_mixed(0.3, g), abs=2e-3)


def test_verdicts_and_recommended_group_size():
    hard = verdict([[0.0] * 8] * 10, [0.0] * 10, train_k=8, generation_batch=32)
    assert hard["verdict"] == "too hard" and hard["recommended_k"] is None and "SFT" in hard["advice"]
    easy = verdict([[1.0] * 8] * 9 + [[1.0] * 7 + [0.0]], [1.0] * 9 + [7 / 8], train_k=8, generation_batch=32)
    assert easy["verdict"] == "too easy" and easy["mixed_at_train_k"] == pytest.approx(0.1)
    rare = [[1.0] + [0.0] * 15] * 10  # pass rate 1/16: groups of 8 are mixed half the time, of 16 always
    hardish = verdict(rare, [1 / 16] * 10, train_k=4, generation_batch=16)
    assert hardish["verdict"] == "too hard" and hardish["recommended_k"] == 8
    assert "num_generations >= 8" in hardish["advice"]
    edge = verdict([[1.0, 0.0] * 4] * 10, [0.5] * 10, train_k=8, generation_batch=32)
    assert edge["verdict"] == "at the edge of ability" and edge["useful_groups_per_step"] == pytest.approx(4.0)


def test_signal_check_on_the_tiny_model(calculator):
    import torch

    target = resolve("demo")
    state = torch.get_rng_state()
    report = signal_check(target, n_prompts=4, k=4, progress=False)
    assert torch.equal(state, torch.get_rng_state())  # training's random stream is left alone
    assert report["prompts"] == 4 and report["model"].endswith("calculator-sft")
    assert [m["exact"] for m in report["mixed_fraction"].values()] == [True, True, False, False]
    assert sum(report["pass_rates"]["histogram"].values()) == 4
    assert report["fidelity"]["checked"] > 0 and report["fidelity"]["ok"], report["fidelity"]
    assert report["verdict"]["train_k"] == 8 and 0 <= report["mean_reward"] <= 1.1
    assert "groups with mixed rewards" in format_signal(report)


def test_bad_input_is_clear(tmp_path, tiny_sft_dir):
    target = resolve("demo", ["--train_size", "3"])
    with pytest.raises(UserError, match="--k: 1 < 2"):
        signal_check(target, n_prompts=2, k=1)
    broken = tmp_path / "broken-model"
    shutil.copytree(tiny_sft_dir, broken)
    (broken / "model.safetensors").write_bytes(b"not weights")
    report = signal_check(target, n_prompts=10, k=2, model_path=str(broken), progress=False)
    assert report["ok"] is None and "could not be loaded" in report["error"]
    assert report["prompts"] == 3 and "training set has 3" in report["notes"][0]
    assert report["fidelity"]["ok"] and not report["fidelity"]["sampled"]  # partial: the template still checked
    assert "PARTIAL REPORT" in format_signal(report)
    missing = signal_check(target, n_prompts=2, k=2, model_path=str(tmp_path / "nothing"), progress=False)
    assert missing["ok"] is None and "tokenizer could not be loaded either" in missing["fidelity"]["error"]


def test_group_size_equal_to_k_is_trls_frac_reward_zero_std():
    """With g = k the estimate is exactly the observed share of groups TRL would log as non-zero std."""
    import torch

    rng = random.Random(1)
    groups = [[rng.choice([0.0, 0.1, 1.1]) if rng.random() < 0.7 else 1.1 for _ in range(8)] for _ in range(50)]
    rewards = torch.tensor(groups)
    is_std_zero = torch.isclose(rewards.std(dim=1), torch.zeros(50))  # as GRPOTrainer logs it
    assert mixed_fraction(groups, 8)[0] == pytest.approx(1 - is_std_zero.float().mean().item())


@pytest.mark.slow
def test_prediction_matches_the_first_training_steps(tmp_path, request):
    """The benchmark's measurement, one seed: predicted vs 1 - frac_reward_zero_std over 10 GRPO steps."""
    if "slow" not in (request.config.getoption("markexpr") or ""):
        pytest.skip("~20 s of GRPO: select with -m slow (benchmarks/preflight_signal.py measures two seeds)")
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from benchmarks.preflight_signal import measured, predicted

    pred, _ = predicted(42, 32, 16)
    meas, zero, _ = measured(42, 10, tmp_path)
    assert len(zero) == 10 and abs(pred - meas) <= 0.15, (pred, meas)


@pytest.mark.parametrize("seed", range(4))
def test_groups_mixed_only_on_a_format_reward_are_not_the_edge(seed):
    """Success never differs within a group (each prompt all-pass or all-fail) while a 0.1 format reward does:
    the trained reward is mixed, the eval's signal is not, so the verdict is not "at the edge"; the same groups
    with successes that differ are. Oracle: the binary formula 1 - p**g - (1-p)**g on each prompt's pass rate."""
    import random

    rng = random.Random(seed)
    n, k = 24, 8
    success = [[float(rng.random() < 0.4)] * k for _ in range(n)]          # all-or-nothing per prompt
    totals = [[s + 0.1 * (rng.random() < 0.5) for s in row] for row in success]
    rates = [sum(r) / k for r in success]
    v = verdict(totals, rates, train_k=8, generation_batch=32, success_groups=success)
    assert v["mixed_on_trained_reward_at_train_k"] >= 0.5
    assert v["mixed_on_success_at_train_k"] == pytest.approx(sum(binary_mixed(p, 8) for p in rates) / n) == 0.0
    assert v["verdict"] != "at the edge of ability" and "not on what the eval counts" in v["advice"]
    mixed_success = [[float(rng.random() < 0.5) for _ in range(k)] for _ in range(n)]
    totals2 = [[s + 0.1 * (rng.random() < 0.5) for s in row] for row in mixed_success]
    v2 = verdict(totals2, [sum(r) / k for r in mixed_success], train_k=8, generation_batch=32,
                 success_groups=mixed_success)
    assert v2["verdict"] == "at the edge of ability"
    assert v2["mixed_at_train_k"] == pytest.approx(min(v2["mixed_on_trained_reward_at_train_k"],
                                                       v2["mixed_on_success_at_train_k"]))
