"""`model: tiny` goes the way its path goes, for every task and for a plain dataset (issue 35, item 4): the
README says every model form takes the same path. On a task it was not SFT'd for it is a warning, never a
refusal."""

from __future__ import annotations

import json

import pytest

from agentgrpo.errors import ConfigError
from agentgrpo.plan import resolve_plan
from agentgrpo.tasks import get_task, task_names
from agentgrpo.tiny.build import SHIPPED_SFT, warm_start
from agentgrpo.training.checks import check_model
from agentgrpo.training.models import resolve_model

WARNING = "'tiny' was SFT'd on the calculator task only"


def _shipped(target: dict) -> str:
    """The checkpoint 'tiny' means for a target: the task's own warm start, else the calculator's."""
    return str(warm_start(target.get("task", "")) or SHIPPED_SFT)


def _outcome(data: dict) -> tuple[str, list[str]]:
    """('accepted', warnings) or ('refused', problems), the shipped checkpoint's path written as 'tiny'."""
    try:
        plan = resolve_plan(data, cuda_available=False)
    except ConfigError as err:
        return "refused", sorted(p.replace(_shipped(data), "tiny") for p in err.problems)
    return "accepted", [w for w in plan.warnings if WARNING not in w]


def _targets(tmp_path) -> dict[str, dict]:
    data = tmp_path / "data.jsonl"
    data.write_text("".join(json.dumps({"prompt": f"What is {i} + {i}?", "answer": str(2 * i)}) + "\n"
                            for i in range(40)))
    targets = {name: {"task": name} for name in task_names()}
    targets["plain dataset"] = {"dataset_name": str(data), "rewards": ["exact_answer"]}
    return targets


def test_every_task_and_a_plain_dataset_take_tiny_as_they_take_its_path(tmp_path):
    targets = _targets(tmp_path)
    assert len(targets) == len(task_names()) + 1 >= 9
    for name, target in targets.items():
        by_name = _outcome({**target, "model": "tiny", "max_steps": 2})
        by_path = _outcome({**target, "model": _shipped(target), "max_steps": 2})
        assert by_name == by_path, (name, by_name, by_path)
        if by_name[0] == "accepted":
            warned = resolve_plan({**target, "model": "tiny", "max_steps": 2}, cuda_available=False).warnings
            assert any(WARNING in w for w in warned) == (warm_start(target.get("task", "")) is None), (name, warned)
    accepted = [name for name, target in targets.items()
                if _outcome({**target, "model": "tiny", "max_steps": 2})[0] == "accepted"]
    assert {"calculator", "calculator-hard", "wordle", "function-calling", "plain dataset"} <= set(accepted)


@pytest.mark.parametrize("name", task_names())
def test_the_model_resolves_to_the_shipped_checkpoint_for_every_task(name):
    """The task's own warm start where it has one (the calculator's for calculator), else the calculator's."""
    task = get_task(name)
    shipped = str(warm_start(name) or SHIPPED_SFT)
    assert resolve_model("tiny", task) == resolve_model(shipped, task) == shipped
    assert check_model("tiny", task) == check_model(shipped, task) == []


def test_check_samples_tiny_on_another_task_with_a_note_not_a_partial_report():
    """`agentgrpo check wordle --model tiny` was a partial report (the model 'could not be loaded')."""
    from agentgrpo.preflight.signal import signal_check
    from agentgrpo.preflight.target import resolve

    report = signal_check(resolve("wordle", model="tiny"), n_prompts=2, k=2, fidelity=False, progress=False)
    assert report["ok"] is not None and "error" not in report, report.get("error")
    assert report["model"] == str(SHIPPED_SFT)
    assert any(WARNING in n for n in report["notes"]), report["notes"]
