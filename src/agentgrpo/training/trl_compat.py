"""The one module that reaches into TRL's experimental tool-calling machinery.

`environment_factory`, response parsing and tool-suffix construction are experimental in TRL 1.x.
Everything agentgrpo needs from them goes through here, so a TRL upgrade touches this file only.
Evaluation uses the same functions, so the policy is evaluated exactly as GRPO rolls it out.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable

from trl.chat_template_utils import add_response_schema, parse_response

os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")  # we wrap the experimental API knowingly
# TRL 1.x calls transformers' `gradient_checkpointing_*` model methods, deprecated in transformers 5 (renamed
# activation_checkpointing_*): a warning per call that no user setting can fix. agentgrpo itself sets the new
# name (config.ResolvedConfig.grpo_args).
warnings.filterwarnings("ignore", message=r"`(is_)?gradient_checkpointing\w*` is deprecated", category=FutureWarning)


def prepare_tokenizer(tokenizer):
    """Give the tokenizer TRL's response parser for its chat template (as GRPOTrainer does), once."""
    if getattr(tokenizer, "response_template", None) is None and getattr(tokenizer, "response_schema", None) is None:
        add_response_schema(tokenizer)
    tokenizer.padding_side = "left"
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return tokenizer


def parse_assistant(tokenizer, ids: list[int], prefix: list[int], tools: list[Callable]) -> dict:
    """One generated assistant turn as a message (content and/or tool_calls), parsed as TRL parses it; ``{}``
    for a turn of no tokens (the budget was spent by the previous tool results), as TRL's tool loop records it
    (transformers' parser returns a list there, which TRL's ``parse_response`` does not survive)."""
    if len(ids) == 0:
        return {}
    return parse_response(tokenizer, ids, prefix=prefix, tools=tools)


def tool_suffix_ids(tokenizer, tool_messages: list[dict], chat_template: str | None = None) -> list[int]:
    """Token ids that follow an assistant tool call: the tool results and the next assistant header.

    Mirrors `GRPOTrainer._get_tool_suffix_ids` (render a dummy exchange with and without the tool
    messages and keep the difference), so evaluation sees exactly the tokens training sees.
    """
    call = [{"type": "function", "function": {"name": tool_messages[0]["name"], "arguments": {}}}]
    dummy = [{"role": "user", "content": "dummy"}, {"role": "assistant", "content": "", "tool_calls": call}]
    kwargs = dict(tokenize=True, return_dict=False, chat_template=chat_template)
    prefix = tokenizer.apply_chat_template(dummy, add_generation_prompt=False, **kwargs)
    full = tokenizer.apply_chat_template(dummy + tool_messages, add_generation_prompt=True, **kwargs)
    eos = [i for i, t in enumerate(prefix) if t == tokenizer.eos_token_id]
    if eos:
        prefix = prefix[: eos[-1] + 1]
    if full[: len(prefix)] != prefix:
        raise ValueError("chat template is not prefix-preserving around tool messages; cannot build tool suffix")
    return full[len(prefix):]


def call_tool(tools: dict[str, Callable], call: dict) -> tuple[str, object, bool]:
    """Run one parsed tool call as GRPOTrainer does: (name, result, failed). Errors become {'error': ...}."""
    if call.get("type") != "function":
        return call.get("name", "unknown"), {"error": f"Unsupported tool call type: {call.get('type')}"}, True
    function = call["function"]
    name = function["name"]
    try:
        if name not in tools:
            raise ValueError(f"Tool {name} not found.")
        return name, tools[name](**function["arguments"]), False
    except Exception as exc:  # a tool error is an observation for the model, and it is counted
        return name, {"error": str(exc)}, True
