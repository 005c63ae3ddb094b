"""The rewards `agentgrpo audit/check --reward ...` builds are the ones training builds from the same specs
(preflight/target.py builds them with training's own `reward_specs.build_task_rewards`)."""

from __future__ import annotations

import random

import pytest

from agentgrpo.errors import ConfigError, UserError
from agentgrpo.plan import resolve_plan
from agentgrpo.preflight.target import resolve
from agentgrpo.tasks import checks as task_checks
from agentgrpo.tasks import get_task

FILE_REWARD = """
def longer(completions, **kwargs):
    return [float(len(str(c))) for c in completions]
"""
CANDIDATES = ["correct_answer", "well_formed", "tags_format", "tool_call_count", "numeric_answer", "FILE:longer"]


def _specs(rng: random.Random, file_path) -> list[str]:
    names = rng.sample(CANDIDATES, rng.randint(1, 4))
    weights = [rng.choice([1.0, 0.5, 0.0, 2.0]) for _ in names]
    if all(w == 0 for w in weights):
        weights[0] = 1.0
    return [f"{n.replace('FILE', str(file_path))}={w:g}" for n, w in zip(names, weights, strict=True)]


@pytest.mark.parametrize("seed", range(4))
def test_preflight_rewards_are_trainings(seed, tmp_path):
    rng = random.Random(seed)
    file_path = tmp_path / "my_rewards.py"
    file_path.write_text(FILE_REWARD)
    flags = _specs(rng, file_path)
    target = resolve("calculator", reward_specs=flags)
    specs = [{"name": f.rpartition("=")[0], "weight": float(f.rpartition("=")[2])} for f in flags]
    plan = resolve_plan({"model": "tiny", "task": "calculator", "max_steps": 1, "rewards": specs,
                        "runs_dir": str(tmp_path / "runs")})
    got, want = target.rewards, plan.rewards
    assert (got.names, got.weights, got.shadow_names) == (want.names, want.weights, want.shadow_names), flags
    task = get_task("calculator")
    rows = task_checks.sample_rows(task, 3)
    completions = task_checks.sample_completions(task, rows)
    columns = {k: [r[k] for r in rows] for k in rows[0] if k != "prompt"}
    assert got.score(completions, **columns) == want.score(completions, **columns)


def test_an_unknown_reward_is_named_with_the_choices():
    with pytest.raises((ConfigError, UserError), match="corect_answer"):
        resolve("calculator", reward_specs=["corect_answer"])
