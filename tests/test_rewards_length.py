"""Length rewards: DAPO soft over-long penalty, length budget, repetition penalty. One comment per case."""

import pytest

from agentgrpo.errors import ConfigError, UserError
from agentgrpo.rewards import get_reward

OVERLONG = [
    # valid: well inside the limit
    (10, 0.0),
    # valid: exactly at the start of the soft zone
    (80, 0.0),
    # valid: inside the soft zone, linear
    (95, -0.75),
    # valid: exactly at the limit
    (100, -1.0),
    # adversarial: past the limit (truncated)
    (5000, -1.0),
    # malformed: empty completion
    (0, 0.0),
]


@pytest.mark.parametrize("n_tokens,expected", OVERLONG)
def test_overlong_penalty(n_tokens, expected):
    reward = get_reward("overlong_penalty", max_length=100, cache=20)
    assert reward(["x"], completion_ids=[[1] * n_tokens]) == [pytest.approx(expected)]


def test_overlong_penalty_needs_lengths_and_valid_params():
    # without completion_ids a token-counting reward says how to fix it
    with pytest.raises(UserError, match="unit='chars'"):
        get_reward("overlong_penalty", max_length=100, cache=20)(["x"])
    # counting characters of the assistant's own text instead (tool outputs excluded)
    reward = get_reward("overlong_penalty", max_length=10, cache=5, unit="chars")
    completion = [{"role": "tool", "content": "y" * 1000}, {"role": "assistant", "content": "x" * 8}]
    assert reward([completion]) == [pytest.approx(-0.6)]
    # cache larger than the limit, and an unknown unit: both reported at once
    with pytest.raises(ConfigError) as err:
        get_reward("overlong_penalty", max_length=10, cache=20, unit="words")
    assert len(err.value.problems) == 2


BUDGET = [
    # valid: under budget
    ("x" * 10, 1.0),
    # valid: 50% over
    ("x" * 30, 0.5),
    # adversarial: far over
    ("x" * 10_000, 0.0),
    # malformed: empty
    ("", 1.0),
]


@pytest.mark.parametrize("text,expected", BUDGET)
def test_length_budget(text, expected):
    assert get_reward("length_budget", budget=20, unit="chars")([text]) == [pytest.approx(expected)]


REPETITION = [
    # valid: no repeated trigram
    ("the cat sat on the mat today", 0.0),
    # valid: too short for a trigram
    ("yes", 0.0),
    # malformed: empty
    ("", 0.0),
    # adversarial: one phrase looped
    ("the answer is 84 " * 50, None),
    # adversarial: repetition split across assistant turns still counts
    ([{"role": "assistant", "content": "go go go"}, {"role": "assistant", "content": "go go go"}], -0.75),
]


@pytest.mark.parametrize("text,expected", REPETITION)
def test_repetition_penalty(text, expected):
    out = get_reward("repetition_penalty")([text])[0]
    if expected is None:  # a loop: close to the full penalty
        assert -1.0 <= out < -0.9
    else:
        assert out == pytest.approx(expected)
