"""Batched multi-turn rollouts of a tool-using policy, token for token as GRPOTrainer rolls them out.

Prompt ids come from the chat template with the task's tools; each assistant turn is generated until the
end-of-turn token, parsed with TRL's parser; tool calls run on a fresh environment per episode; the tool
results and the next assistant header are appended as token ids; the whole completion (tool results
included) is capped at ``max_completion_length`` tokens, as in training. Every tool call has training's time
limit (``tool_timeout``, `agentgrpo.timeouts`): a call past it becomes the observation ``{"error": "tool X
timed out after N s"}`` and is counted in ``Episode.tool_timeouts``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from agentgrpo.tasks.base import environment_tools
from agentgrpo.timeouts import DEFAULT_TOOL_TIMEOUT, TIMEOUTS, timed_task
from agentgrpo.training.trl_compat import call_tool, parse_assistant, tool_suffix_ids


@dataclass
class Episode:
    id: str
    completion: list[dict] = field(default_factory=list)  # assistant / tool messages, as TRL passes to rewards
    tool_calls: int = 0
    tool_failures: int = 0
    tool_timeouts: int = 0  # tool calls that ran past tool_timeout (counted in tool_failures too)
    turns: int = 0
    completion_tokens: int = 0
    truncated: bool = False
    prompt_ids: list[int] = field(default_factory=list)  # the token ids generation started from
    completion_ids: list[int] = field(default_factory=list)  # every completion token (tool results included)
    per_tool: dict[str, list[int]] = field(default_factory=dict)  # tool name -> [calls, failures]


@dataclass
class _State:
    row: dict
    env: object
    tools: list
    prompt_ids: list[int]
    ids: list[int] = field(default_factory=list)
    episode: Episode | None = None


def rollout(model, tokenizer, rows: list[dict], task, *, max_completion_length: int,
            do_sample: bool = False, temperature: float | None = None,
            max_tool_calling_iterations: int | None = None, batch_size: int = 64, progress=None,
            tool_timeout: float | None = DEFAULT_TOOL_TIMEOUT) -> list[Episode]:
    """Roll out every row; returns one `Episode` per row, in order.

    The tools are the task's, as training offers them: its plain tool functions (TRL's ``tools=``) and the
    methods of one fresh environment per episode (``task.environment_factory``, or none), each call limited to
    ``tool_timeout`` seconds as in training (the plan's ``tool_timeout``; 0 or None: no limit). Sampling
    (``do_sample``) needs the ``temperature`` (the plan's); greedy decoding reads none.
    """
    if do_sample and temperature is None:
        raise ValueError("rollout: do_sample needs the temperature (the plan's: plan.eval.temperature)")
    episodes: list[Episode] = []
    task = timed_task(task, tool_timeout)
    env_factory, tools = task.environment_factory, tuple(task.tool_functions)
    for start in range(0, len(rows), batch_size):
        batch = [_start(tokenizer, row, env_factory, tools) for row in rows[start:start + batch_size]]
        _run_batch(model, tokenizer, batch, max_completion_length, do_sample, temperature,
                   max_tool_calling_iterations)
        for s in batch:
            s.episode.prompt_ids, s.episode.completion_ids = list(s.prompt_ids), list(s.ids)
        episodes += [s.episode for s in batch]
        if progress is not None:
            progress.update(len(batch))
    return episodes


def _start(tokenizer, row: dict, env_factory, tools: tuple) -> _State:
    env = env_factory() if env_factory is not None else None
    prompt = [dict(m) for m in row["prompt"]]
    observation = env.reset(**row) if env is not None else None
    if isinstance(observation, str):  # TRL appends reset()'s string to the last user message
        prompt[-1]["content"] += observation
    all_tools = [*tools, *(environment_tools(env) if env is not None else [])]
    ids = tokenizer.apply_chat_template(prompt, tools=all_tools or None, add_generation_prompt=True,
                                        tokenize=True, return_dict=False)
    return _State(row=row, env=env, tools=all_tools, prompt_ids=list(ids),
                  episode=Episode(id=str(row.get("id", ""))))


def _run_batch(model, tokenizer, batch, budget, do_sample, temperature, max_iterations) -> None:
    active = list(batch)
    iterations = 0
    while active:
        room = [budget - len(s.ids) for s in active]
        new = _generate(model, tokenizer, [s.prompt_ids + s.ids for s in active], max(room), do_sample,
                        temperature)
        still = []
        for state, tokens, limit in zip(active, new, room, strict=True):
            if _advance(tokenizer, state, tokens[:limit], budget, iterations, max_iterations):
                still.append(state)
        active = still
        iterations += 1


def _advance(tokenizer, state: _State, tokens: list[int], budget: int, iterations: int, max_iterations) -> bool:
    """Append one generated turn; run its tool calls. True when the episode continues."""
    eos = tokenizer.eos_token_id
    if eos in tokens:
        tokens = tokens[: tokens.index(eos) + 1]
    ep = state.episode
    prefix = state.prompt_ids + state.ids
    state.ids += tokens
    ep.turns += 1
    message = parse_assistant(tokenizer, tokens, prefix=prefix, tools=state.tools)
    if message:  # no tokens left after a tool's results: nothing to record (TRL appends no message either)
        ep.completion.append(message)
    ended = bool(tokens) and tokens[-1] == eos
    if not ended:
        ep.truncated = True
    calls = message.get("tool_calls") or []
    if not (ended and calls) or (max_iterations is not None and iterations >= max_iterations):
        ep.completion_tokens = len(state.ids)
        return False
    tools = {f.__name__: f for f in state.tools}
    tool_messages = []
    for call in calls:
        with TIMEOUTS.apart() as timed_out:  # an eval inside training leaves training's count alone
            name, result, failed = call_tool(tools, call)
        ep.tool_timeouts += timed_out[0]
        ep.tool_calls += 1
        ep.tool_failures += int(failed)
        counts = ep.per_tool.setdefault(name, [0, 0])
        counts[0] += 1
        counts[1] += int(failed)
        tool_messages.append({"role": "tool", "name": name,
                              "content": result if isinstance(result, list) else str(result)})
    suffix = tool_suffix_ids(tokenizer, tool_messages)
    if len(state.ids) + len(suffix) > budget:  # as TRL: results that overflow the budget are dropped
        ep.completion_tokens = len(state.ids)
        ep.truncated = True
        return False
    ep.completion.extend(tool_messages)
    state.ids += suffix
    return True


@torch.no_grad()
def _generate(model, tokenizer, sequences: list[list[int]], max_new_tokens: int, do_sample: bool,
              temperature: float) -> list[list[int]]:
    width = max(len(s) for s in sequences)
    pad = tokenizer.pad_token_id
    input_ids = torch.tensor([[pad] * (width - len(s)) + s for s in sequences])
    attention = torch.tensor([[0] * (width - len(s)) + [1] * len(s) for s in sequences])
    out = model.generate(
        input_ids=input_ids.to(model.device), attention_mask=attention.to(model.device),
        max_new_tokens=max(1, max_new_tokens), do_sample=do_sample,
        temperature=temperature if do_sample else None, top_p=1.0 if do_sample else None,
        top_k=0 if do_sample else None, eos_token_id=tokenizer.eos_token_id, pad_token_id=pad,
    )
    return [row[width:].tolist() for row in out.cpu()]
