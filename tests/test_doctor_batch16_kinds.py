"""The kinds of error of blind batch 16, as generated scenarios (each fails on the doctor before its fix).

- A reward that falls materially over the run (the policy stuck in one penalised action) is a failure, a stall
  dated where the fall began, and a failure that begins after the fall (a KL rise at the end) does not explain it
  away; before, "reward falling" was a warning, explained by the later KL blow-up. Guard: a fall smaller than
  what the samples differ by is no "reward falling" failure.
- A task objective that sits at its best with every sample paying it (its logged spread 0) on most late steps
  learned the task, however high its few logs before the proxies' rise happened to be; before, "the gain came
  from the proxies" from step 4. Guard: an objective on a low plateau (its samples still differ) beside rising
  proxies is still hacking.
"""

from __future__ import annotations

import numpy as np
import pytest

from agentgrpo.doctor.diagnose import diagnose
from agentgrpo.doctor.finding import FAILURE, WARNING
from agentgrpo.doctor.table import MetricTable


def _falling_run(seed: int, drop: float, kl_late: bool) -> tuple[MetricTable, int]:
    """One prompt a step, 4 samples: reward about 0.28 until the fall, then ``drop`` lower; KL rising to ~5 over
    the last fifth when ``kl_late``. Returns the table and the step the fall began."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(150, 300))
    start = int(n * rng.uniform(0.15, 0.3))
    rows = []
    for i in range(1, n + 1):
        level = 0.28 - drop * min(max(i - start, 0) / (0.1 * n), 1.0)
        kl = 0.3 + (5.0 * (i - 0.8 * n) / (0.2 * n) if kl_late and i > 0.8 * n else 0.0)
        rows.append({"step": i, "reward": level + rng.normal(0, 0.08), "reward_std": abs(rng.normal(0.2, 0.05)),
                     "kl": kl * float(np.exp(rng.normal(0, 0.2))), "completions/mean_length": 29.0 + rng.normal(0, 1)})
    return MetricTable.from_records(rows), start


@pytest.mark.parametrize("seed", range(6))
def test_a_material_fall_is_a_failure_dated_where_it_began(seed):
    table, start = _falling_run(seed, drop=0.38, kl_late=seed % 2 == 0)
    report = diagnose(table)
    stall = report.get("stall")
    assert stall.status == FAILURE and "falling" in stall.verdict, report.headline
    assert abs(stall.onset - start) <= 0.15 * int(table.steps[-1]), (stall.onset, start)


@pytest.mark.parametrize("seed", range(4))
def test_a_tiny_significant_fall_stays_a_warning(seed):
    table, _ = _falling_run(seed, drop=0.05, kl_late=False)
    for name, col in table.columns.items():
        if name == "reward_std":
            table.columns[name] = col * 0 + 0.9  # samples differ by far more than the fall
    report = diagnose(table)
    stall = report.get("stall")
    assert stall.state != "falling", report.headline  # a warning when significant; a flat stall when not


def _saturating_objective_run(seed: int, plateau: float | None) -> MetricTable:
    """Udacity-like: one prompt a step, 8 samples; proxies rise 0.9 -> 4.4 from step 4 to 25; the correct answer
    (0/1 a sample) is high on the first 3 steps by chance, then about 0.5, then 1.0 for every sample on most late
    steps (``plateau`` None), or a low plateau at ``plateau`` whose samples still differ."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(50, 120))
    rows = []
    for i in range(1, n + 1):
        proxy = 0.9 + 3.5 * min(max(i - 4, 0) / 21, 1.0) + rng.normal(0, 0.2)
        if i <= 3:
            p = 0.94
        elif plateau is not None:
            p = plateau
        else:
            p = 0.5 + 0.5 * min(max(i - 10, 0) / (0.4 * n), 1.0)
        samples = (rng.random(8) < p).astype(float)
        if plateau is None and i > 0.6 * n and rng.random() < 0.75:
            samples[:] = 1.0  # solved: every sample right
        rows.append({"step": i, "reward": proxy + samples.mean(), "reward_std": 1.0,
                     "rewards/correct_answer_reward_func/mean": samples.mean(),
                     "rewards/correct_answer_reward_func/std": samples.std(ddof=1),
                     "rewards/format_reward_func/mean": proxy / 2, "rewards/counting_reward_func/mean": proxy / 2,
                     "completions/mean_length": 100.0 + rng.normal(0, 3)})
    return MetricTable.from_records(rows)


@pytest.mark.parametrize("seed", range(6))
def test_an_objective_at_its_best_is_no_hacking(seed):
    report = diagnose(_saturating_objective_run(seed, None))
    assert report.get("hacking").status != FAILURE, report.headline


@pytest.mark.parametrize("seed", range(4))
def test_an_objective_on_a_low_plateau_beside_rising_proxies_is_hacking(seed):
    report = diagnose(_saturating_objective_run(seed, 0.06))
    assert report.get("hacking").status in (FAILURE, WARNING), report.headline
    assert "hacking" in [str(f.detector) for f in report.failures], report.headline
