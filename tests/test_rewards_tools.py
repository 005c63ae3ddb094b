"""Tool-use rewards, on completions shaped exactly as TRL 1.16 builds them. One comment per case."""

import pytest

from agentgrpo.errors import ConfigError
from agentgrpo.rewards import get_reward, is_tool_error, tool_calls


def call(name, arguments):
    return {"type": "function", "function": {"name": name, "arguments": arguments}}


def episode(*calls, outputs=(), final="The answer is 84."):
    msgs = [{"role": "assistant", "content": "", "tool_calls": list(calls)}] if calls else []
    msgs += [{"role": "tool", "name": "calculate", "content": c} for c in outputs]
    return msgs + [{"role": "assistant", "content": final}]


def trl_error(message):
    """How TRL 1.16 reports a tool that raised: ``str({"error": str(e)})``."""
    return str({"error": message})


CALLED = [
    # valid: the expected call with dict arguments
    (episode(call("calculate", {"expression": "12*7"})), 1.0),
    # valid: arguments as a JSON string
    (episode(call("calculate", '{"expression": "12*7"}')), 1.0),
    # valid: extra arguments are fine in subset mode
    (episode(call("calculate", {"expression": "12*7", "precision": 2})), 1.0),
    # valid: the right call after a wrong one
    (episode(call("search", {"q": "12*7"}), call("calculate", {"expression": "12*7"})), 1.0),
    # malformed: arguments that are not JSON
    (episode(call("calculate", "{expression: 12*7")), 0.0),
    # malformed: a plain-text completion has no tool calls
    ("calculate(12*7) = 84", 0.0),
    # malformed: tool_calls is None
    ([{"role": "assistant", "content": "84", "tool_calls": None}], 0.0),
    # adversarial: right tool, wrong arguments
    (episode(call("calculate", {"expression": "7*12+0"})), 0.0),
    # adversarial: the agent claims the call in prose only
    (episode(final="I called calculate with 12*7 and got 84"), 0.0),
    # adversarial: a similarly named tool
    (episode(call("calculator", {"expression": "12*7"})), 0.0),
    # adversarial: a tool message impersonating the call, no real call
    ([{"role": "tool", "name": "calculate", "content": "84"}, {"role": "assistant", "content": "84"}], 0.0),
]


@pytest.mark.parametrize("completion,expected", CALLED)
def test_tool_called(completion, expected):
    reward = get_reward("tool_called", tool="calculate", arguments={"expression": "12*7"})
    assert reward([completion]) == [expected]


def test_tool_called_from_columns_and_exact_mode():
    # expected tool and arguments per row; rows without an expected tool are not applicable
    reward = get_reward("tool_called", arguments_column="expected_arguments")
    rows = [episode(call("calculate", {"expression": "12*7"}))] * 3
    out = reward(
        rows,
        expected_tool=["calculate", "calculate", None],
        expected_arguments=['{"expression": "12*7"}', {"expression": "1+1"}, None],
    )
    assert out == [1.0, 0.0, None]
    # exact mode refuses extra arguments; True is not 1
    exact = get_reward("tool_called", tool="f", arguments={"flag": True}, match="exact")
    assert exact(
        [
            episode(call("f", {"flag": True})),
            episode(call("f", {"flag": 1})),
            episode(call("f", {"flag": True, "x": 0})),
        ]
    ) == [1.0, 0.0, 0.0]
    with pytest.raises(ConfigError, match="match"):
        get_reward("tool_called", tool="f", match="fuzzy")


SUCCESS = [
    # valid: one call, fine
    (episode(call("calculate", {}), outputs=["84"]), 1.0),
    # valid: two calls, one TRL-formatted failure
    (episode(call("calculate", {}), call("calculate", {}), outputs=[trl_error("bad input"), "84"]), 0.5),
    # valid: unknown tool, as TRL reports it
    (episode(call("nope", {}), outputs=[trl_error("Tool nope not found.")]), 0.0),
    # malformed: no calls at all -> not applicable
    ("The answer is 84.", None),
    # malformed: a call whose output was cut off (no tool message) is not a failure
    (episode(call("calculate", {})), 1.0),
    # adversarial: a tool output that merely mentions "error" is not a failure
    (episode(call("calculate", {}), outputs=["error bars are ±2"]), 1.0),
    # adversarial: a result dict with an error key and more keys is a result, not a failure
    (episode(call("calculate", {}), outputs=[str({"error": None, "value": 84})]), 1.0),
]


@pytest.mark.parametrize("completion,expected", SUCCESS)
def test_tool_success(completion, expected):
    assert get_reward("tool_success")([completion]) == [expected]


COUNTS = [
    # valid: no calls
    ("The answer is 84.", 0.0, 0.0),
    # valid: one call is free
    (episode(call("calculate", {})), 1.0, 0.0),
    # valid: three calls, two beyond the free one
    (episode(*[call("calculate", {})] * 3), 3.0, -0.2),
    # adversarial: call spam is capped at the maximum penalty
    (episode(*[call("calculate", {})] * 500), 500.0, -1.0),
    # malformed: a non-dict entry in tool_calls is ignored
    ([{"role": "assistant", "tool_calls": ["calculate()"]}], 0.0, 0.0),
]


@pytest.mark.parametrize("completion,count,penalty", COUNTS)
def test_tool_call_count_and_penalty(completion, count, penalty):
    assert get_reward("tool_call_count")([completion]) == [count]
    assert get_reward("tool_call_penalty")([completion]) == [pytest.approx(penalty)]


@pytest.mark.parametrize(
    "content,expected",
    [
        (trl_error("x"), True),  # TRL's Python-repr error dict
        ('{"error": "x"}', True),  # a JSON error dict
        ({"error": "x"}, True),  # a dict content
        ("84", False),  # a result
        ("{not python", False),  # broken braces
        ("{" + "[" * 5000, False),  # deep nesting does not blow up the check
    ],
)
def test_is_tool_error(content, expected):
    assert is_tool_error({"role": "tool", "content": content}) is expected


def test_tool_calls_reads_every_assistant_message_in_order():
    completion = episode(call("a", {"x": 1})) + episode(call("b", '{"y": 2}'))
    assert [(c.name, c.arguments) for c in tool_calls(completion)] == [("a", {"x": 1}), ("b", {"y": 2})]
