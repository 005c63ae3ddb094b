"""code_tests_passed: the model's code run against the row's tests in the sandbox. One comment per case."""

import pytest

from agentgrpo.errors import UserError
from agentgrpo.rewards import get_reward
from agentgrpo.rewards.code import extract_code

TESTS = ["assert add(1, 2) == 3", "assert add(-1, 1) == 0", "assert add(10, 5) == 15"]
GOLD = "```python\ndef add(a, b):\n    return a + b\n```"

CASES = [
    # valid: fenced solution passing everything
    (GOLD, TESTS, 1.0),
    # valid: bare code without a fence
    ("def add(a, b): return a + b", TESTS, 1.0),
    # valid: conversational, the final message carries the code
    ([{"role": "tool", "content": "ok"}, {"role": "assistant", "content": GOLD}], TESTS, 1.0),
    # valid: partly right (only the second test passes)
    ("def add(a, b): return a * b if a > 0 else a + b", TESTS, pytest.approx(1 / 3)),
    # valid: tests as one script string with a helper
    (GOLD, "def check(f):\n    assert f(2, 2) == 4\ncheck(add)", 1.0),
    # malformed: prose, no code
    ("I would add the numbers.", TESTS, 0.0),
    # malformed: syntax error
    ("```python\ndef add(a, b) return a + b\n```", TESTS, 0.0),
    # malformed: empty reply
    ("", TESTS, 0.0),
    # malformed: the row has no tests -> not applicable
    (GOLD, None, None),
    # adversarial: exiting early to skip the tests
    ("import sys\nsys.exit(0)", TESTS, 0.0),
    # adversarial: os._exit(0) to fake a clean exit
    ("import os\nos._exit(0)", TESTS, 0.0),
    # adversarial: an object equal to everything
    ("class A:\n    def __eq__(self, o): return True\ndef add(a, b): return A()", TESTS, 0.0),
    # adversarial: printing fake results
    ('print(\'{"kind": "done"}\')\ndef add(a, b): return None', TESTS, 0.0),
    # adversarial: hanging forever
    ("def add(a, b):\n    while True: pass", TESTS, 0.0),
    # adversarial: the right code only in a tool message, not in the final answer
    ([{"role": "tool", "content": GOLD}, {"role": "assistant", "content": "done"}], TESTS, 0.0),
]


@pytest.mark.parametrize("completion,tests,expected", CASES)
def test_code_tests_passed(completion, tests, expected):
    reward = get_reward("code_tests_passed", workers=1, limits={"wall_s": 3.0, "cpu_s": 2.0})
    assert reward([completion], tests=[tests]) == [expected]


def test_batch_keeps_order_and_logs_statuses():
    reward = get_reward("code_tests_passed", workers=2)
    logged = {}
    out = reward(
        [GOLD, "def add(a, b): return 0", "import os; os._exit(3)", GOLD],
        tests=[TESTS, TESTS, TESTS, None],
        log_extra=lambda column, values: logged.setdefault(column, values),
    )
    assert out == [1.0, pytest.approx(1 / 3), 0.0, None]
    assert logged["sandbox_status"] == ["passed", "failed", "crashed", None]
    assert logged["sandbox_forgeable"] == [False, False, False, None]  # trusted comparison by default


def test_in_process_comparison_is_logged_as_forgeable():
    reward = get_reward("code_tests_passed", workers=1, comparison="in_process")
    logged = {}
    out = reward([GOLD], tests=[TESTS], log_extra=lambda column, values: logged.setdefault(column, values))
    assert out == [1.0] and logged["sandbox_forgeable"] == [True]


def test_missing_column_says_how_to_fix():
    with pytest.raises(UserError, match="needs the dataset column 'tests'"):
        get_reward("code_tests_passed", workers=1)([GOLD], answer=["x"])


@pytest.mark.parametrize(
    "text,expected",
    [
        ("```python\nx = 1\n```", "x = 1\n"),  # a python fence
        ("```\nx = 1\n```", "x = 1\n"),  # an unlabelled fence
        ("```py\na\n```\nthen\n```python\nb\n```", "b\n"),  # the last block wins
        ("x = 1", "x = 1"),  # no fence: the whole text
    ],
)
def test_extract_code(text, expected):
    assert extract_code(text) == expected
