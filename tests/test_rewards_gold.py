"""The gold answer scores the maximum: for every built-in reward, and for every built-in task."""

import pytest

from agentgrpo.errors import UserError
from agentgrpo.rewards import REWARDS, get_reward
from agentgrpo.tasks import get_task, task_names

CALL = {"type": "function", "function": {"name": "calculate", "arguments": {"expression": "12*7"}}}
GOLD_EPISODE = [
    {"role": "assistant", "content": "", "tool_calls": [CALL]},
    {"role": "tool", "name": "calculate", "content": "84"},
    {"role": "assistant", "content": "<think>12*7</think>\n<answer>84</answer>"},
]

# reward name -> (params, the gold completion, dataset columns). Every registered reward must be here.
GOLD = {
    "exact_answer": ({}, GOLD_EPISODE, {"answer": ["84"]}),
    "numeric_answer": ({}, GOLD_EPISODE, {"answer": ["84"]}),
    "math_answer": ({}, r"\boxed{\frac{1}{2}}", {"answer": ["0.5"]}),
    "tags_format": ({}, GOLD_EPISODE, {}),
    "tags_format_strict": ({}, GOLD_EPISODE, {}),
    "json_valid": ({}, '{"answer": 84}', {}),
    "json_schema": ({"schema": {"type": "object", "required": ["answer"]}}, '{"answer": 84}', {}),
    "tool_called": ({"tool": "calculate", "arguments": {"expression": "12*7"}}, GOLD_EPISODE, {}),
    "tool_success": ({}, GOLD_EPISODE, {}),
    "tool_call_count": ({}, GOLD_EPISODE, {}),
    "tool_call_penalty": ({}, GOLD_EPISODE, {}),
    "code_tests_passed": (
        {"workers": 1},
        "```python\ndef f(x):\n    return 2 * x\n```",
        {"tests": [["assert f(2) == 4", "assert f(0) == 0"]]},
    ),
    "overlong_penalty": ({"max_length": 100, "cache": 20}, GOLD_EPISODE, {"completion_ids": [[1] * 30]}),
    "length_budget": ({"budget": 50}, GOLD_EPISODE, {"completion_ids": [[1] * 30]}),
    "repetition_penalty": ({}, GOLD_EPISODE, {}),
}


def test_every_builtin_reward_has_a_gold_case():
    assert set(GOLD) == set(REWARDS)


@pytest.mark.parametrize("name", sorted(GOLD))
def test_gold_scores_the_maximum(name):
    params, completion, columns = GOLD[name]
    reward = get_reward(name, **params)
    value = reward([completion], **columns)[0]
    if reward.max_reward is None:  # unbounded counts (logged as shadow rewards): only a number is expected
        assert isinstance(value, float)
    else:
        assert value == reward.max_reward


@pytest.mark.parametrize("task_name", task_names())
def test_every_builtin_task_validates_and_its_gold_tops_the_library_rewards(task_name):
    task = get_task(task_name)
    if task_name == "function-calling-hub":  # BFCL from the Hub; offline it names the shipped copy instead
        with pytest.raises(UserError, match="use task 'function-calling'"):
            task.eval_problems(20)
        return
    assert task.validate(n=20) == []  # the task's own rewards: gold earns 1.0
    rows = task.eval_problems(20)
    golds = [task.gold_completion(r) for r in rows]
    if "answer" in rows[0]:
        answers = [r["answer"] for r in rows]
        assert get_reward("exact_answer")(golds, answer=answers) == [1.0] * len(rows)
        assert set(get_reward("numeric_answer")(golds, answer=answers)) <= {1.0, None}
    assert set(get_reward("tool_success")(golds)) <= {1.0, None}
