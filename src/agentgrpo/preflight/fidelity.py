"""Token fidelity: the chat template re-renders what the model sampled, and is prefix-preserving across turns.

GRPO trains on the token ids it sampled; everything else (SFT data, a later re-rendered conversation,
TRL's own tool-suffix construction) goes through the chat template. If re-rendering the sampled conversation
does not give back the sampled ids, or rendering a conversation with one more message changes what came
before it (a template that drops earlier content between turns), training and inference see different text.
"""

from __future__ import annotations


def render(tokenizer, conversation: list[dict], tools=None, generation_prompt: bool = False) -> list[int]:
    return list(
        tokenizer.apply_chat_template(
            conversation, tools=tools or None, tokenize=True, return_dict=False, add_generation_prompt=generation_prompt
        )
    )


def round_trip(
    tokenizer, prompt: list[dict], completion: list[dict], prompt_ids: list[int], completion_ids: list[int], tools=None
) -> dict | None:
    """The first place where re-rendering ``prompt + completion`` departs from the sampled ids (None: none).

    After the last sampled token the template may add only whitespace (e.g. the newline after ``<|im_end|>``).
    """
    sampled = list(prompt_ids) + list(completion_ids)
    rendered = render(tokenizer, list(prompt) + list(completion), tools)
    n = min(len(sampled), len(rendered))
    at = next((i for i in range(n) if sampled[i] != rendered[i]), None)
    if at is None and len(sampled) > len(rendered):
        at = n
    if at is None:
        tail = tokenizer.decode(rendered[len(sampled) :])
        if not tail.strip():
            return None
        at = len(sampled)
    body = len(render(tokenizer, list(prompt), tools))  # the prompt without the assistant header
    return _mismatch(
        tokenizer,
        "re-rendered conversation differs from the sampled tokens",
        sampled,
        rendered,
        at,
        body if sampled[:body] == rendered[:body] else len(prompt_ids),
    )


def prefix_preserving(tokenizer, prompt: list[dict], completion: list[dict], tools=None) -> dict | None:
    """The first turn where rendering one more message changes the tokens before it (None: preserving)."""
    conversation = list(prompt)
    before = render(tokenizer, conversation, tools)
    for j, message in enumerate(completion):
        conversation.append(message)
        after = render(tokenizer, conversation, tools)
        head = _through_last_eos(tokenizer, before)
        if after[: len(head)] != head:
            at = next((i for i in range(min(len(head), len(after))) if head[i] != after[i]), min(len(head), len(after)))
            found = _mismatch(
                tokenizer,
                f"adding completion message {j} ({message.get('role')}) changed what was rendered before it",
                head,
                after,
                at,
                None,
            )
            return {**found, "message": j}
        before = after
    return None


def _through_last_eos(tokenizer, ids: list[int]) -> list[int]:
    eos = tokenizer.eos_token_id
    last = max((i for i, t in enumerate(ids) if t == eos), default=None)
    return ids if last is None else ids[: last + 1]


def _mismatch(tokenizer, what: str, expected: list[int], got: list[int], at: int, prompt_len: int | None) -> dict:
    """A readable description of the first difference at token ``at``."""
    lo = max(0, at - 12)

    def around(ids):
        return tokenizer.decode(ids[lo : at + 12])

    def token(ids):
        return tokenizer.convert_ids_to_tokens(ids[at]) if at < len(ids) else "<end>"

    where = "in the prompt" if prompt_len is not None and at < prompt_len else "in the completion"
    if prompt_len is not None and at >= prompt_len:
        turn = sum(1 for t in expected[prompt_len:at] if t == tokenizer.eos_token_id)
        where += f", turn {turn}"
    return {
        "what": what,
        "token_index": at,
        "where": where,
        "expected_token": token(expected),
        "got_token": token(got),
        "expected_text": around(expected),
        "got_text": around(got),
    }


def check_episodes(tokenizer, prompts: list, episodes: list, tools=None, limit: int = 64) -> dict:
    """Round-trip and prefix checks over sampled episodes (truncated ones are skipped: nothing to re-render)."""
    checked, skipped, mismatches, prefix_problems = 0, 0, [], []
    order = sorted(range(len(episodes)), key=lambda i: -episodes[i].tool_calls)  # multi-turn episodes first
    for i in order[:limit]:
        ep = episodes[i]
        if ep.truncated or not ep.completion_ids:
            skipped += 1
            continue
        checked += 1
        found = round_trip(tokenizer, prompts[i], ep.completion, ep.prompt_ids, ep.completion_ids, tools)
        if found:
            mismatches.append({"id": ep.id, **found})
        broken = prefix_preserving(tokenizer, prompts[i], ep.completion, tools)
        if broken:
            prefix_problems.append({"id": ep.id, **broken})
    return summarize(checked, skipped, mismatches, prefix_problems)


def check_conversations(tokenizer, prompts: list, completions: list, tools=None) -> dict:
    """The prefix check alone on given conversations (the task's gold completions): no model needed."""
    problems = []
    for i, (prompt, completion) in enumerate(zip(prompts, completions, strict=True)):
        broken = prefix_preserving(tokenizer, prompt, completion, tools)
        if broken:
            problems.append({"id": str(i), **broken})
    return summarize(len(completions), 0, [], problems, sampled=False)


def summarize(checked, skipped, mismatches, prefix_problems, sampled: bool = True) -> dict:
    return {
        "ok": not mismatches and not prefix_problems,
        "checked": checked,
        "skipped_truncated": skipped,
        "sampled": sampled,
        "round_trip_mismatches": len(mismatches),
        "prefix_violations": len(prefix_problems),
        "first_mismatch": mismatches[0] if mismatches else None,
        "first_prefix_violation": prefix_problems[0] if prefix_problems else None,
    }


def format_fidelity(result: dict) -> list[str]:
    what = "sampled episodes" if result["sampled"] else "gold conversations (no samples)"
    lines = [
        f"token fidelity: {result['checked']} {what} checked"
        + (f", {result['skipped_truncated']} truncated skipped" if result["skipped_truncated"] else "")
        + (": OK" if result["ok"] else ": FAILED")
    ]
    for key, label in (("first_mismatch", "round trip"), ("first_prefix_violation", "prefix")):
        m = result.get(key)
        if m:
            lines += [
                f"  {label}: {m['what']} (episode {m['id']}, token {m['token_index']}, {m['where']})",
                f"    expected token {m['expected_token']!r}, got {m['got_token']!r}",
                f"    expected: {m['expected_text']!r}",
                f"    got:      {m['got_text']!r}",
            ]
    if result["round_trip_mismatches"] or result["prefix_violations"]:
        lines.append(
            f"  {result['round_trip_mismatches']} round-trip mismatches, "
            f"{result['prefix_violations']} prefix violations"
        )
    return lines
