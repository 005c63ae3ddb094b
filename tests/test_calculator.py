"""The calculator task: safe tool, exact rewards, gold scores max, held-out set disjoint from training."""

from __future__ import annotations

import pytest

from agentgrpo.tasks.calculator import CalculatorEnv, correct_answer, safe_arithmetic, well_formed


@pytest.mark.parametrize("expression, value", [
    ("37 * 48 + 25", 1801),   # the task's own shape
    ("(2 + 3) * 4", 20),      # parentheses
    ("-5 + 2", -3),           # unary minus
])
def test_safe_arithmetic_valid(expression, value):
    assert safe_arithmetic(expression) == value


@pytest.mark.parametrize("expression", [
    "__import__('os').system('id')",  # adversarial: code execution
    "2 ** 100000",                    # adversarial: power bomb
    "10 ** 10 * 10 ** 10",            # too-large constants via power
    "1 / 0",                          # division is not offered
    "abc",                            # names
    "1 +",                            # malformed
    "9" * 300,                        # overlong input
])
def test_safe_arithmetic_rejects(expression):
    with pytest.raises(ValueError):
        safe_arithmetic(expression)


def test_env_counts_calls_and_failures():
    env = CalculatorEnv()
    env.reset(id="x")
    assert env.calculate("2 * 3") == "6"
    with pytest.raises(ValueError):
        env.calculate("import os")
    assert (env.calls, env.failures) == (2, 1)
    env.reset()
    assert (env.calls, env.failures) == (0, 0)


@pytest.mark.parametrize("completion, expected", [
    ("1801", 1.0),                                                        # exact
    ([{"role": "assistant", "content": "1801"}], 1.0),                    # conversational
    ("1800", 0.0),                                                        # wrong
    ("1801 or 1802", 0.0),                                                # adversarial: hedging
    ("The answer is 1801", 0.0),                                          # not a bare number
    ([{"role": "assistant", "content": "", "tool_calls": []},
      {"role": "tool", "name": "calculate", "content": "1801"}], 0.0),    # adversarial: answer only in tool output
    ("", 0.0),                                                            # empty
    ("１８０１", 1.0),                                                     # unicode digits are still the number
])
def test_correct_answer_table(completion, expected):
    assert correct_answer([completion], answer=["1801"]) == [expected]


def test_well_formed_table():
    assert well_formed(["42", "x42", "42\n", ""]) == [1.0, 0.0, 1.0, 0.0]


def test_gold_completion_scores_the_maximum(calculator):
    assert calculator.validate(n=100) == []


def test_held_out_set_is_fixed_and_disjoint_from_training(calculator):
    held_out = {p["id"] for p in calculator.eval_problems(200)}
    assert len(held_out) == 200
    assert held_out == {p["id"] for p in calculator.eval_problems(200)}  # deterministic
    train = {p["id"] for p in calculator.train_problems(5000, seed=42)}
    assert not held_out & train
