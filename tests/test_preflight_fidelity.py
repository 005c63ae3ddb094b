"""Token fidelity: sampled ids must re-render exactly; a template that drops content between turns is caught."""

from __future__ import annotations

import pytest

from agentgrpo.preflight.fidelity import check_conversations, format_fidelity, prefix_preserving, render, round_trip


@pytest.fixture(scope="module")
def tokenizer(tiny_sft_dir):
    from agentgrpo.training.models import load_tokenizer

    return load_tokenizer(str(tiny_sft_dir))


def _sampled(tokenizer, prompt, completion, tools):
    """Ids as the rollout produces them: the prompt with its generation header, then through the last eos."""
    prompt_ids = render(tokenizer, prompt, tools, generation_prompt=True)
    full = render(tokenizer, prompt + completion, tools)
    last_eos = max(i for i, t in enumerate(full) if t == tokenizer.eos_token_id)
    return prompt_ids, full[len(prompt_ids) : last_eos + 1]


def _dropping(template: str) -> str:
    """The same template, except an assistant tool-call turn is rendered only while it is the last message."""
    planted = template.replace(
        '{%- elif message.role == "assistant" %}', '{%- elif message.role == "assistant" and loop.last %}', 1
    )
    assert planted != template
    return planted


def test_faithful_template_round_trips_and_preserves_prefixes(tokenizer, calculator):
    row = calculator.train_problems(1, 0)[0]
    gold, tools = calculator.gold_completion(row), calculator.tools()
    prompt_ids, completion_ids = _sampled(tokenizer, row["prompt"], gold, tools)
    assert round_trip(tokenizer, row["prompt"], gold, prompt_ids, completion_ids, tools) is None
    assert prefix_preserving(tokenizer, row["prompt"], gold, tools) is None


def test_template_dropping_content_between_turns_is_caught(tokenizer, calculator):
    row = calculator.train_problems(1, 0)[0]
    gold, tools = calculator.gold_completion(row), calculator.tools()
    prompt_ids, completion_ids = _sampled(tokenizer, row["prompt"], gold, tools)  # sampled with the good one
    good = tokenizer.chat_template
    tokenizer.chat_template = _dropping(good)
    try:
        broken = prefix_preserving(tokenizer, row["prompt"], gold, tools)
        mismatch = round_trip(tokenizer, row["prompt"], gold, prompt_ids, completion_ids, tools)
        summary = check_conversations(tokenizer, [row["prompt"]], [gold], tools)
    finally:
        tokenizer.chat_template = good
    assert broken is not None and broken["message"] == 1  # adding the tool result dropped the call before it
    assert "<tool_call>" in broken["expected_text"] and "<tool_call>" not in broken["got_text"]
    assert mismatch is not None and mismatch["where"].startswith("in the completion, turn 0")
    body = len(render(tokenizer, row["prompt"], tools))
    # <|im_start|> still matches; then the sampled assistant header meets the dropped turn's successor (user)
    assert mismatch["token_index"] == body + 1 and mismatch["expected_token"].startswith("assist")
    assert not summary["ok"] and summary["prefix_violations"] == 1
    text = "\n".join(format_fidelity(summary))
    assert "FAILED" in text and "adding completion message 1 (tool)" in text


def test_non_canonical_token_ids_are_a_round_trip_mismatch(tokenizer, calculator):
    row = calculator.train_problems(1, 0)[0]
    reply = "Answer with the number only."
    final = [{"role": "assistant", "content": reply}]
    prompt_ids, completion_ids = _sampled(tokenizer, row["prompt"], final, [])
    answer_ids = tokenizer(reply, add_special_tokens=False)["input_ids"]
    spelled = [i for ch in reply for i in tokenizer(ch, add_special_tokens=False)["input_ids"]]
    assert answer_ids != spelled  # the BPE merges these characters
    at = next(i for i in range(len(completion_ids)) if completion_ids[i : i + len(answer_ids)] == answer_ids)
    sampled = completion_ids[:at] + spelled + completion_ids[at + len(answer_ids) :]
    assert tokenizer.decode(sampled) == tokenizer.decode(completion_ids)  # same text, different ids
    found = round_trip(tokenizer, row["prompt"], final, prompt_ids, sampled, [])
    assert found is not None and found["token_index"] == len(prompt_ids) + at
