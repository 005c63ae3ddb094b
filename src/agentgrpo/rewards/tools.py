"""Tool-use rewards: the expected call was made; calls that failed; how many calls an episode took.

They read the structured ``tool_calls`` and tool messages TRL puts in a conversational completion, never
the prose: an agent that only *says* it called a tool earns nothing.
"""

from __future__ import annotations

import json

from agentgrpo.rewards._base import check_params, per_sample, positive
from agentgrpo.rewards._text import is_tool_error, tool_calls, tool_messages


def same_value(expected, actual) -> bool:
    """Deep equality where 1 == 1.0 but True != 1, and dict/list shapes must match.

    >>> same_value({"n": 2, "xs": [1, 2.0]}, {"n": 2.0, "xs": [1, 2]}), same_value(True, 1)
    (True, False)
    """
    if isinstance(expected, bool) or isinstance(actual, bool):
        return type(expected) is type(actual) and expected == actual
    if isinstance(expected, int | float) and isinstance(actual, int | float):
        return expected == actual
    if isinstance(expected, dict) and isinstance(actual, dict):
        return expected.keys() == actual.keys() and all(same_value(v, actual[k]) for k, v in expected.items())
    if isinstance(expected, list | tuple) and isinstance(actual, list | tuple):
        return len(expected) == len(actual) and all(map(same_value, expected, actual))
    return type(expected) is type(actual) and expected == actual


def arguments_match(expected: dict, actual: dict | None, match: str) -> bool:
    """``exact``: the same keys and values; ``subset``: every expected key present with the same value."""
    if actual is None:
        return False
    if match == "exact":
        return same_value(expected, actual)
    return all(k in actual and same_value(v, actual[k]) for k, v in expected.items())


def tool_called(
    tool: str | None = None,
    arguments: dict | None = None,
    match: str = "subset",
    tool_column: str = "expected_tool",
    arguments_column: str | None = None,
):
    """1.0 when some call used the expected tool with the expected arguments (None: any arguments).

    The tool comes from ``tool`` or, when that is None, from the dataset column ``tool_column``; arguments
    from ``arguments`` or the column ``arguments_column`` (a dict or a JSON string). Rows without an
    expected tool score None.

    >>> reward = tool_called(tool="calculate", arguments={"expression": "12*7"})
    >>> call = {"role": "assistant", "content": "", "tool_calls": [{"type": "function", "function":
    ...         {"name": "calculate", "arguments": {"expression": "12*7"}}}]}
    >>> reward([[call], "I called calculate(12*7): 84"])
    [1.0, 0.0]
    """
    check_params(
        "tool_called",
        match=(match in ("subset", "exact"), "must be 'subset' or 'exact'"),
        arguments=(arguments is None or isinstance(arguments, dict), "must be a dict of arguments"),
    )
    columns = {} if tool is not None else {"row_tool": tool_column}
    if arguments is None and arguments_column:
        columns["row_arguments"] = arguments_column

    def score(completion, row_tool=None, row_arguments=None):
        name = tool if tool is not None else row_tool
        if not name:
            return None
        wanted = arguments if arguments is not None else _as_dict(row_arguments)
        for call in tool_calls(completion):
            if call.name == name and (wanted is None or arguments_match(wanted, call.arguments, match)):
                return 1.0
        return 0.0

    return per_sample("tool_called", score, columns, doc=tool_called.__doc__)


def _as_dict(value) -> dict | None:
    if isinstance(value, str):
        value = json.loads(value)
    if value is not None and not isinstance(value, dict):
        raise TypeError(
            f"expected tool arguments must be a dict or a JSON object, got {type(value).__name__}"
        )
    return value


def tool_success():
    """Share of tool calls that did not fail (None when the episode made no call).

    >>> ok = {"role": "tool", "name": "calculate", "content": "84"}
    >>> bad = {"role": "tool", "name": "calculate", "content": "{'error': 'division by zero'}"}
    >>> call = {"role": "assistant", "tool_calls": [{"type": "function", "function": {"name": "calculate"}}]}
    >>> tool_success()([[call, ok], [call, bad, call, ok], "no tools"])
    [1.0, 0.5, None]
    """

    def score(completion):
        calls, outputs = tool_calls(completion), tool_messages(completion)
        if not calls:
            return None
        failed = sum(is_tool_error(m) for m in outputs)
        return max(0.0, 1.0 - failed / len(calls))

    return per_sample("tool_success", score, doc=tool_success.__doc__)


def tool_call_count():
    """Number of tool calls in the episode (unbounded: log it as a shadow reward, weight 0).

    >>> call = {"role": "assistant", "tool_calls": [{"type": "function", "function": {"name": "f"}}] * 3}
    >>> tool_call_count()([[call], "no tools"])
    [3.0, 0.0]
    """
    return per_sample(
        "tool_call_count", lambda c: float(len(tool_calls(c))), max_reward=None, doc=tool_call_count.__doc__
    )


def tool_call_penalty(free_calls: int = 1, per_call: float = 0.1, max_penalty: float = 1.0):
    """Efficiency penalty: ``-per_call`` for each call beyond ``free_calls``, down to ``-max_penalty``.

    >>> call = {"role": "assistant", "tool_calls": [{"type": "function", "function": {"name": "f"}}] * 4}
    >>> tool_call_penalty(free_calls=1, per_call=0.25)([[call], "none"])
    [-0.75, 0.0]
    """
    check_params(
        "tool_call_penalty",
        free_calls=(isinstance(free_calls, int) and free_calls >= 0, "must be an int >= 0"),
        per_call=(positive(per_call), "must be a number > 0"),
        max_penalty=(positive(max_penalty), "must be a number > 0"),
    )

    def score(completion):
        extra = max(0, len(tool_calls(completion)) - free_calls)
        return -min(max_penalty, per_call * extra) if extra else 0.0

    return per_sample("tool_call_penalty", score, max_reward=0.0, doc=tool_call_penalty.__doc__)
