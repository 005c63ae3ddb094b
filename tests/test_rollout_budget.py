"""Evaluation rollouts at every completion budget around a tool call: a budget spent exactly by the tool's
results leaves an empty next turn, which must end the episode as truncated (as TRL's tool loop does), not
crash the evaluation (transformers parses no tokens into a list, and TRL's parse_response fails on it)."""

from __future__ import annotations

from agentgrpo.evaluation.rollout import rollout
from agentgrpo.training.models import load_model, load_tokenizer
from agentgrpo.training.trl_compat import parse_assistant, prepare_tokenizer, tool_suffix_ids
from tests.scripted_policy import END, ScriptedPolicy, tool_call


def test_an_empty_turn_parses_to_no_message(tiny_sft_dir):
    tokenizer = prepare_tokenizer(load_tokenizer(str(tiny_sft_dir)))
    assert parse_assistant(tokenizer, [], prefix=tokenizer.encode("hi"), tools=[]) == {}


def test_rollout_survives_every_budget_around_a_tool_call(tiny_sft_dir, calculator):
    model, tokenizer = load_model(str(tiny_sft_dir)), prepare_tokenizer(load_tokenizer(str(tiny_sft_dir)))
    row = calculator.eval_problems(1)[0]
    call = tool_call("calculate", {"expression": "6*7"})
    answer = f"42{END}"
    model.generate = ScriptedPolicy(model, tokenizer,
                                    lambda text, i: answer if "<tool_response>" in text else call)
    call_len = len(tokenizer.encode(call, add_special_tokens=False))
    suffix_len = len(tool_suffix_ids(tokenizer, [{"role": "tool", "name": "calculate", "content": "42"}]))
    full = call_len + suffix_len + len(tokenizer.encode(answer, add_special_tokens=False))
    for budget in range(call_len - 1, full + 3):
        (episode,) = rollout(model, tokenizer, [row], calculator, max_completion_length=budget)
        assert episode.completion_tokens <= budget, budget
        assert episode.truncated == (budget < full), budget
        roles = [m["role"] for m in episode.completion]
        if budget < call_len + suffix_len:  # the call is cut, or its results would overflow: dropped
            assert roles == ["assistant"] and episode.tool_calls == (budget >= call_len), budget
        elif budget == call_len + suffix_len:  # the results fit exactly; no token left for the answer
            assert roles == ["assistant", "tool"] and episode.completion_tokens == budget, budget
        else:
            assert roles == ["assistant", "tool", "assistant"], budget
