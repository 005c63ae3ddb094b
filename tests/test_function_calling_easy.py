"""`function-calling-easy` v2 against plain-Python oracles: the calendar tool's time is the event's SHA-256 time,
the gold (look up, then answer) scores 1.0 and a wrong looked-up value 0.0 by function-calling's own rule, the
held-out events never reach training, the demonstrations mix both routes, and in GRPO the tool's reply is masked
out of the loss."""

from __future__ import annotations

import copy
import hashlib
import json
import re

import pytest
import torch

from agentgrpo import rundir
from agentgrpo.plan import resolve_plan
from agentgrpo.tasks import get_task
from agentgrpo.tasks.demonstrations import demonstrations
from agentgrpo.tasks.function_calling_easy import TOOL, CalendarEnv


@pytest.fixture(scope="module")
def task():
    return get_task("function-calling-easy")


def oracle_time(event: str) -> tuple[int, int]:
    """The spec of the calendar: the first 8 bytes of the name's SHA-256, hour 6-21, minute 0-59."""
    value = int(hashlib.sha256(event.encode("utf-8")).hexdigest()[:16], 16)
    return 6 + value % 16, (value // 16) % 60


def oracle_held_out(event: str) -> bool:
    return int(hashlib.sha256(event.encode("utf-8")).hexdigest(), 16) % 100 < 20


def function_of(request: str) -> str:
    return "set_reminder" if "remind" in request.lower() else "set_alarm"


def lookup(event: str) -> dict:
    return {"role": "assistant", "content": "", "tool_calls": [
        {"type": "function", "function": {"name": TOOL, "arguments": json.dumps({"name": event})}}]}


def scores(task, completions, rows) -> dict[str, list[float]]:
    columns = {"ground_truth": [r["ground_truth"] for r in rows]}
    return {name: func(completions=completions, **columns) for name, func in task.reward_funcs.items()}


def test_rows_agree_with_the_oracle_and_hold_events_out(task):
    evals, train = task.eval_problems(200), task.train_problems(3000, seed=1)
    assert len({r["id"] for r in train}) == 3000 and len({r["id"] for r in evals}) == 200
    assert all(oracle_held_out(r["event"]) for r in evals) and not any(oracle_held_out(r["event"]) for r in train)
    assert not {r["id"] for r in evals} & {r["id"] for r in train}  # no held-out request among 3000 training ones
    assert not {r["event"] for r in evals} & {r["event"] for r in train}  # nor a held-out event's time
    assert len({r["event"] for r in train}) > 2500  # far too many names to memorise their times
    for row in evals + train[:300]:
        request = row["prompt"][-1]["content"]
        hour, minute = oracle_time(row["event"])
        assert f"the {row['event']}." in request and str(minute) not in re.sub(r"\D", " ", request).split()
        assert json.loads(row["ground_truth"]) == [{function_of(request): {"hour": [hour], "minute": [minute]}}]
        assert json.loads(row["answer"]) == [{"name": function_of(request), "arguments": {"hour": hour,
                                                                                         "minute": minute}}]


def test_the_tool_answers_with_the_oracle_s_time_and_refuses_other_events(task):
    env = task.environment_factory()
    for row in task.train_problems(100, seed=4):
        env.reset(**row)
        hour, minute = oracle_time(row["event"])
        reply = {"event": row["event"], "hour": hour, "minute": minute}
        assert json.loads(env.lookup_event(row["event"])) == reply
        assert json.loads(env.lookup_event(f"  The {row['event'].upper()} ")) == reply  # case and "the" ignored
        kind = row["event"].split(" with ")[0]
        assert json.loads(env.lookup_event(f"{kind} with Zyzzy")) == reply  # the closest match: the same kind
        with pytest.raises(ValueError, match="no event named"):
            env.lookup_event("board meeting with " + row["event"].split(" with ")[1])
        assert (env.calls, env.failures) == (4, 1)  # reset starts each row's count afresh
    with pytest.raises(ValueError, match="'event' column"):
        CalendarEnv().reset(prompt=[])


def test_gold_scores_one_a_wrong_looked_up_value_zero_and_the_tool_earns_nothing_as_such(task):
    assert task.validate(100) == []
    rows = task.eval_problems(100)
    env = CalendarEnv()
    for row in rows:
        gold = task.gold_completion(row)
        env.reset(**row)
        assert gold[1]["content"] == env.lookup_event(row["event"])  # the demonstration shows the tool's reply
        hour, minute = oracle_time(row["event"])
        name = function_of(row["prompt"][-1]["content"])
        tool_turns = gold[:2]

        def final(h, m, fn=name):
            return {"role": "assistant", "content": json.dumps([{"name": fn, "arguments": {"hour": h, "minute": m}}])}

        completions = [
            gold,
            tool_turns + [final(hour, (minute + 1) % 60)],  # a wrong looked-up value
            tool_turns + [final((hour + 1) % 24, minute)],
            [final(hour, minute)],  # the direct route, right: scored by the same rule
            [final(hour, (minute + 30) % 60)],  # the direct route, a guess
            tool_turns,  # looked up, never answered
            tool_turns + [final(hour, minute, "set_" + ("alarm" if name == "set_reminder" else "reminder"))],
        ]
        got = scores(task, completions, [row] * len(completions))
        assert got["function_calls_exact"] == [1.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0]
        assert got["function_calls"] == got["function_calls_exact"]
        assert got["function_calls_format"] == [1.0, 1.0, 1.0, 1.0, 1.0, 0.0, 1.0]


def test_demonstrations_mix_both_routes_and_copy_the_tool_s_reply(task):
    used = 0
    for demo in demonstrations(task, 80, 0.5, seed=2):
        messages = demo["messages"]
        assert [t["function"]["name"] for t in demo["tools"]] == [TOOL]
        request, final = messages[1]["content"], json.loads(messages[-1]["content"])
        event = re.search(r"the (.+)\.$", request).group(1)
        hour, minute = oracle_time(event)
        assert final == [{"name": function_of(request), "arguments": {"hour": hour, "minute": minute}}]
        if len(messages) > 3:
            call, reply = messages[2]["tool_calls"][0]["function"], json.loads(messages[3]["content"])
            assert call == {"name": TOOL, "arguments": {"name": event}}
            assert reply == {"event": event, "hour": hour, "minute": minute}
            used += 1
    assert 25 < used < 55  # about half the demonstrations look the time up


def test_episode_stats_split_success_by_route(task):
    rows = task.eval_problems(4)
    gold = [task.gold_completion(r) for r in rows]
    wrong = [{"role": "assistant", "content": "[]"}]
    completions = [gold[0], gold[1], [gold[2][-1]], wrong]
    stats = task.episode_stats(completions, rows)
    assert stats["function_calling/lookups_per_episode"] == 0.5 and stats["function_calling/lookup_frac"] == 0.5
    assert stats["function_calling/success_with_lookup"] == 1.0
    assert stats["function_calling/success_without_lookup"] == 0.5
    assert stats["function_calling/ok_frac"] == 0.75
    assert "function_calling/success_with_lookup" not in task.episode_stats([wrong], rows[:1])


# --- GRPO: a multi-turn episode's tool reply is masked out of the loss -------------------------------------


class ScriptedLookup:
    """``model.generate`` whose first turn looks the row's event up (even rows) or a name not in the calendar
    (odd rows); the next turn answers with the looked-up time or, after an error, is the model's own tokens."""

    def __init__(self, model, tokenizer):
        self.model, self.tok, self.real = model, tokenizer, model.generate

    @staticmethod
    def request(text: str) -> str:
        return re.search(r"<\|im_start\|>user\n(.+?)<\|im_end\|>", text).group(1)

    def turn(self, text: str, i: int) -> str | None:
        if "<tool_response>" not in text:
            event = re.search(r"the (.+)\.$", self.request(text)).group(1)
            event = event if i % 2 == 0 else "board meeting with " + event.split(" with ")[1]  # not in the calendar
            call = json.dumps({"name": TOOL, "arguments": {"name": event}})
            return f"<tool_call>\n{call}\n</tool_call><|im_end|>"
        response = text.rsplit("<tool_response>\n", 1)[1].split("\n</tool_response>")[0]
        if "no event named" not in response:
            reply = json.loads(response)
            arguments = {"hour": reply["hour"], "minute": reply["minute"]}
            return json.dumps([{"name": function_of(self.request(text)), "arguments": arguments}]) + "<|im_end|>"
        return None

    def __call__(self, input_ids, attention_mask=None, **kwargs):
        turns = [self.turn(self.tok.decode(ids[attention_mask[i].bool()]), i) for i, ids in enumerate(input_ids)]
        if None in turns:
            config = copy.deepcopy(kwargs.pop("generation_config", None) or self.model.generation_config)
            config.max_new_tokens = 8
            real = self.real(input_ids=input_ids, attention_mask=attention_mask, generation_config=config, **kwargs)
        rows = []
        for i, (ids, scripted) in enumerate(zip(input_ids, turns, strict=True)):
            new = self.tok.encode(scripted, add_special_tokens=False) if scripted else real[i, input_ids.shape[1]:]
            rows.append(torch.cat([ids, torch.as_tensor(new, dtype=ids.dtype)]))
        width = max(len(r) for r in rows)
        return torch.stack([torch.cat([r, r.new_full((width - len(r),), self.tok.pad_token_id)]) for r in rows])


def test_grpo_looks_up_masks_the_calendar_s_reply_and_scores_the_final_answer(task, tmp_path):
    from agentgrpo.tiny.build import build_random
    from agentgrpo.training.grpo import build_grpo_trainer

    model_dir = build_random(task, tmp_path / "tiny")
    plan = resolve_plan(None, ["--model", str(model_dir), "--task", "function-calling-easy",
                               "--per_device_train_batch_size", "4", "--num_generations", "4",
                               "--max_completion_length", "96", "--max_steps", "1", "--logging_steps", "1",
                               "--save_strategy", "no", "--disable_tqdm", "true", "--doctor_every", "0",
                               "--learning_rate", "1e-3", "--max_tool_calling_iterations", "2",
                               "--output_dir", str(tmp_path / "run")], cuda_available=False)
    trainer = build_grpo_trainer(plan, str(model_dir))
    trainer.model.generate = ScriptedLookup(trainer.model, trainer.processing_class)
    tok = trainer.processing_class
    rows = [trainer.train_dataset[i] for i in range(4)]
    out = trainer._generate_and_score_completions(rows)
    ids, mask, tool_mask = out["completion_ids"], out["completion_mask"], out["tool_mask"]
    for i in range(len(ids)):
        real = mask[i].bool()
        masked = tok.decode(ids[i][real & (tool_mask[i] == 0)])
        trained = tok.decode(ids[i][real & (tool_mask[i] == 1)])
        event = rows[i]["event"]
        hour, minute = oracle_time(event)
        assert "lookup_event" in trained and "<tool_response>" not in trained and "<tool_response>" in masked
        if i % 2 == 0:  # the calendar's reply (the oracle's time) is in the masked part, never in the trained one
            reply = json.dumps({"event": event, "hour": hour, "minute": minute})
            assert reply in masked and reply not in trained
            assert f'"hour": {hour}, "minute": {minute}' in trained  # the final answer copies it, and is trained
        else:
            assert "no event named" in masked and "no event named" not in trained
    before = {n: p.detach().clone() for n, p in trainer.model.named_parameters()}
    trainer.train()
    assert any(not torch.equal(before[n], p.detach()) for n, p in trainer.model.named_parameters())
    (record,) = rundir.read_jsonl(tmp_path / "run" / rundir.METRICS)
    assert record["tools/call_frequency"] > 0 and record["tools/failure_frequency"] > 0
    assert 0.0 < record["rewards/function_calls_exact/mean"] < 1.0  # the even rows answer right, the odd ones not
