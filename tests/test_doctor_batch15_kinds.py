"""The kinds of error of blind batch 15, as generated scenarios (each fails on the doctor before its fix).

- ONE huge KL spike (10^5x the run's median) that KL comes back from at once is an outlier, named as a warning
  with its step and size; a blow-up's spikes recur (two or more), or KL does not come back (guards).
- A task objective that almost never pays (most late logs at its floor, a payout now and then) beside proxies
  that rose significantly in a reward that learned is reward hacking, however noisy its rare payouts make the
  bound on its own gain; before, only "stall: the task objective almost never pays" was named.
- Identical groups (one prompt a step, every sample the same) from the first log: neither the "one fixed output"
  nor the zero-variance groups developed, so the first does not explain the second away; both are failures.
- A run whose training reward gained early and then held, while the evaluation of the reward (``eval/reward``)
  kept rising, is still improving: no "stalled after an early gain".
"""

from __future__ import annotations

import numpy as np
import pytest

from agentgrpo.doctor.diagnose import diagnose
from agentgrpo.doctor.finding import FAILURE, WARNING
from agentgrpo.doctor.readers import read_run
from agentgrpo.doctor.table import MetricTable
from benchmarks import doctor_synthetic as synthetic


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("n", [200, 1000])
def test_one_recovered_kl_spike_is_a_warning_not_a_blowup(tmp_path, seed, n):
    case = synthetic.make("kl_lone_spike", n, seed, 0.8)
    report = diagnose(read_run(case.write(tmp_path)).table)
    kl = report.get("kl")
    assert kl.status == WARNING and not report.failures, report.headline
    assert f"at step {int(0.8 * n) + 1}" in " ".join(kl.evidence) and "outlier" in " ".join(kl.evidence)


@pytest.mark.parametrize("seed", range(3))
def test_recurring_or_unrecovered_kl_spikes_are_still_a_blowup(tmp_path, seed):
    case = synthetic.make("kl_spike", 400, seed, 0.6)  # two spikes of 10^5x
    assert diagnose(read_run(case.write(tmp_path / "a")).table).get("kl").status == FAILURE
    records = synthetic.make("kl_lone_spike", 400, seed, 0.6).records
    spike = max(range(len(records)), key=lambda i: records[i]["kl"])
    for r in records[spike:]:  # KL does not come back: it stays at the spike's size
        r["kl"] = records[spike]["kl"]
    table = MetricTable.from_records(records)
    assert diagnose(table).get("kl").status == FAILURE


def _unpaid_objective_run(seed: int) -> MetricTable:
    """One prompt a step, 4 samples: a format/verbosity proxy rises 1.2 -> 1.55 over the first half and holds;
    the objective (correct id, 0.125 per right sample) pays now and then (on about a third of early steps,
    a quarter late): too sparse for the bound on its gain to be tight."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(150, 300))
    records = []
    for i in range(n):
        proxy = 1.2 + 0.35 * min(i / (0.5 * n), 1.0) + rng.normal(0, 0.3)
        pays = rng.random() < (0.35 if i < n / 2 else 0.25)
        correct = 0.125 * rng.integers(1, 4) if pays else 0.0
        records.append({"step": i + 1, "reward": proxy + correct, "reward_std": abs(rng.normal(0.5, 0.2)),
                        "rewards/check_correct_cwe/mean": correct, "rewards/match_format_explanation/mean": proxy,
                        "completions/mean_length": 280.0 + rng.normal(0, 20)})
    return MetricTable.from_records(records)


@pytest.mark.parametrize("seed", range(6))
def test_a_proxy_rising_beside_an_objective_that_almost_never_pays_is_hacking(seed):
    report = diagnose(_unpaid_objective_run(seed))
    hacking = report.get("hacking")
    assert hacking.status == FAILURE, report.headline


def _identical_groups_run(seed: int) -> MetricTable:
    """One prompt a step, 4 samples, from the first step: most groups are one sample four times (shortest =
    longest, reward_std 0), the reward flat around 3.6 of 6.5; the rest differ."""
    rng = np.random.default_rng(seed)
    records = []
    for i in range(int(rng.integers(80, 200))):
        same = rng.random() < 0.7
        length = float(rng.integers(150, 280))
        lo, hi = (length, length) if same else (length - rng.integers(5, 60), length + rng.integers(5, 60))
        records.append({"step": i + 1, "reward": 3.6 + rng.normal(0, 0.5), "reward_std": 0.0 if same else 0.8,
                        "frac_reward_zero_std": 1.0 if same else 0.0, "completions/min_length": float(lo),
                        "completions/max_length": float(hi), "completions/mean_length": length,
                        "completions/clipped_ratio": 0.0})
    return MetricTable.from_records(records)


@pytest.mark.parametrize("seed", range(6))
def test_identical_groups_from_the_first_log_are_a_failure_beside_the_fixed_output(seed):
    report = diagnose(_identical_groups_run(seed))
    failed = {str(f.detector) for f in report.failures}
    assert "zero_variance" in failed, report.headline


@pytest.mark.parametrize("seed", range(4))
def test_a_heldout_reward_still_rising_after_an_early_gain_is_no_stall(tmp_path, seed):
    case = synthetic.make("early_gain_then_flat", 600, seed, 0.1)
    assert "stall" in [str(f.detector) for f in diagnose(read_run(case.write(tmp_path / "a")).table).failures]
    rng = np.random.default_rng(seed)
    n = len(case.records)
    for i, r in enumerate(case.records):
        if i % 10 == 0:
            r["eval/reward"] = 0.2 + 0.4 * i / n + float(rng.normal(0, 0.02))
    report = diagnose(MetricTable.from_records(case.records))
    assert "stall" not in [str(f.detector) for f in report.failures], report.headline
