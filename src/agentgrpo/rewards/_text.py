"""Read what TRL hands a reward function: plain-text or conversational completions.

A conversational completion is the list of messages the model produced after the prompt, including the
tool round-trips TRL ran, e.g. ``[assistant(tool_calls), tool, assistant(final text)]``. Tool-call arguments
may be a dict or a JSON string; a tool that raised comes back as a tool message whose content is
``str({"error": "..."})`` (TRL 1.16, ``GRPOTrainer._tool_call_loop``).
"""

from __future__ import annotations

import ast
import json
from dataclasses import dataclass

_MAX_ERROR_PARSE = 10_000  # longer tool outputs are not parsed as error dicts


@dataclass(frozen=True)
class ToolCall:
    name: str
    arguments: dict | None  # None when the model wrote arguments that are not a JSON object
    raw: object = None  # the arguments exactly as found


def messages(completion) -> list[dict]:
    """The completion's messages (a plain-text completion is one assistant message)."""
    if isinstance(completion, str):
        return [{"role": "assistant", "content": completion}]
    if isinstance(completion, dict):
        return [completion]
    if isinstance(completion, list | tuple):
        return [m for m in completion if isinstance(m, dict)]
    raise TypeError(f"a completion must be a str or a list of messages, got {type(completion).__name__}")


def content_text(content) -> str:
    """Text of a message content: a string, or the text parts of a list of content blocks."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text")
    return ""


def completion_text(completion) -> str:
    """The final assistant text: what the agent finally said (not its tool calls or tool outputs).

    >>> completion_text("The answer is 84.")
    'The answer is 84.'
    >>> completion_text([{"role": "assistant", "content": "", "tool_calls": []},
    ...                  {"role": "tool", "name": "calc", "content": "84"},
    ...                  {"role": "assistant", "content": "It is 84."}])
    'It is 84.'
    """
    for message in reversed(messages(completion)):
        if message.get("role") == "assistant":
            return content_text(message.get("content"))
    return ""


def assistant_text(completion) -> str:
    """Every assistant message's text, joined by newlines (for length and repetition)."""
    return "\n".join(
        content_text(m.get("content")) for m in messages(completion) if m.get("role") == "assistant"
    )


def tool_calls(completion) -> list[ToolCall]:
    """Every tool call the assistant made, in order.

    >>> tool_calls([{"role": "assistant", "tool_calls": [
    ...     {"type": "function", "function": {"name": "calc", "arguments": '{"expression": "12*7"}'}}]}])
    [ToolCall(name='calc', arguments={'expression': '12*7'}, raw='{"expression": "12*7"}')]
    """
    calls = []
    for message in messages(completion):
        if message.get("role") != "assistant":
            continue
        for call in message.get("tool_calls") or []:
            if not isinstance(call, dict):
                continue
            function = call.get("function") if isinstance(call.get("function"), dict) else call
            name = function.get("name")
            raw = function.get("arguments")
            calls.append(ToolCall(name if isinstance(name, str) else "", _arguments(raw), raw))
    return calls


def _arguments(raw) -> dict | None:
    if isinstance(raw, dict):
        return raw
    if isinstance(raw, str):
        try:
            value = json.loads(raw)
        except ValueError:
            return None
        return value if isinstance(value, dict) else None
    return {} if raw is None else None


def tool_messages(completion) -> list[dict]:
    """The tool outputs TRL appended to the completion, in order."""
    return [m for m in messages(completion) if m.get("role") == "tool"]


def is_tool_error(message: dict) -> bool:
    """Whether a tool message reports a failure the way TRL formats one: ``{'error': '...'}``.

    >>> is_tool_error({"role": "tool", "content": "{'error': 'Tool foo not found.'}"})
    True
    >>> is_tool_error({"role": "tool", "content": "84"})
    False
    """
    content = message.get("content")
    if isinstance(content, dict):
        return set(content) == {"error"}
    if (
        not isinstance(content, str)
        or not content.lstrip().startswith("{")
        or len(content) > _MAX_ERROR_PARSE
    ):
        return False
    for parse in (json.loads, ast.literal_eval):
        try:
            value = parse(content)
        except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError):
            continue
        return isinstance(value, dict) and set(value) == {"error"}
    return False
