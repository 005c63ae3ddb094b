"""Every task's tiny warm start and CPU demo (issue 38): the easy variants' data and demonstrations against
plain-Python oracles, the tokenizers, `model: tiny` per task, `demo --task`, and a real multi-turn Wordle
episode of the shipped wordle-easy warm start with the environment's feedback masked out of the loss."""

from __future__ import annotations

import json
import re

import pytest

from agentgrpo.errors import UserError
from agentgrpo.rewards import games
from agentgrpo.tasks import get_task
from agentgrpo.tasks.demonstrations import demonstrations
from agentgrpo.tiny.build import EASY_VARIANTS, SHIPPED_SFT, WARM_START_STEPS, build_tokenizer, warm_start
from agentgrpo.training.models import resolve_model, tiny_note

EASY = ("wordle-easy", "function-calling-easy", "reasoning-easy", "coding-easy")


def test_the_calculator_tokenizer_is_still_the_shipped_checkpoint_s(tmp_path):
    """`build-tiny` (the calculator) must rebuild exactly what ships: its tokenizer is unchanged."""
    build_tokenizer(get_task("calculator")).save_pretrained(tmp_path)
    built = json.loads((tmp_path / "tokenizer.json").read_text())
    assert built == json.loads((SHIPPED_SFT / "tokenizer.json").read_text())


@pytest.mark.parametrize("name", EASY)
def test_no_token_straddles_the_generation_prompt_or_swallows_a_special_token(name):
    task = get_task(name)
    tok = build_tokenizer(task)
    specials = {"<|im_end|>", "<|im_start|>", "<|endoftext|>"}
    assert not [t for t in tok.get_vocab() if t not in specials and any(s in t for s in specials)]
    for demo in demonstrations(task, 40, tool_fraction=0.5, seed=5):
        n_prompt = 2 if demo["messages"][0]["role"] == "system" else 1
        prompt = tok.apply_chat_template(demo["messages"][:n_prompt], tools=demo["tools"], tokenize=True,
                                         return_dict=False, add_generation_prompt=True)
        full = tok.apply_chat_template(demo["messages"], tools=demo["tools"], tokenize=True, return_dict=False)
        assert full[:len(prompt)] == prompt, (name, tok.decode(full[len(prompt) - 2:len(prompt) + 2]))


# --- wordle-easy ------------------------------------------------------------------------------------------


def test_wordle_easy_plays_honest_games_over_its_secret_list():
    from agentgrpo.tasks.wordle import EASY_DECOYS, EASY_SECRETS, easy_pool

    task = get_task("wordle-easy")
    secrets, decoys = easy_pool()
    assert len(secrets) == EASY_SECRETS and len(decoys) == EASY_DECOYS and not set(secrets) & set(decoys)
    assert set(secrets) | set(decoys) <= set(games.word_lists()[0])
    rows = task.train_problems(500, seed=3)
    assert {r["secret"] for r in rows} == set(secrets) and len({r["id"] for r in rows}) == 500
    evals = task.eval_problems(40)
    assert [r["secret"] for r in evals] == [secrets[k % EASY_SECRETS] for k in range(40)]
    assert len({r["id"] for r in evals}) == 40 and not {r["id"] for r in evals} & {r["id"] for r in rows}
    pool, played = set(secrets) | set(decoys), set()
    for row in rows[:60]:
        messages = task.demonstration(row, True)["messages"][len(row["prompt"]):]
        record = games.replay_wordle(messages, row["secret"])
        guesses = [w for w, _ in record.attempts]
        assert record.invalid == 0 and messages[-1]["content"] == row["secret"]
        # the solver's oracle: every guess after the opener is consistent with all feedback before it
        for k, word in enumerate(guesses[1:], start=1):
            assert word in pool
            assert all(games.wordle_feedback(g, word) == fb for g, fb in record.attempts[:k]), (guesses, k)
        played.add(tuple(guesses))
    assert len(played) > 40  # games of a secret are played afresh, not one memorised line per secret


def test_the_shipped_wordle_easy_warm_start_matches_its_task_s_tokenizer():
    """The shipped checkpoint was built on the current secret list: its tokenizer is what build-tiny fits now."""
    built = build_tokenizer(get_task("wordle-easy"))
    shipped = json.loads((warm_start("wordle-easy") / "tokenizer.json").read_text())
    assert built.get_vocab() == shipped["model"]["vocab"]


def test_the_wordle_easy_warm_start_reads_the_feedback_greedy_with_headroom_sampled():
    """At the edge, as the demo needs it: greedy it solves games by reading the opener's feedback (the oracle:
    every guess after the opener is consistent with all feedback before it); sampled at temperature 1 it loses a
    share of games (calls broken by unlikely tokens, repeated guesses): the headroom GRPO sharpens away."""
    from agentgrpo.evaluation.rollout import rollout
    from agentgrpo.tasks.wordle import EASY_SECRETS
    from agentgrpo.training.models import load_model, load_tokenizer

    task = get_task("wordle-easy")
    model, tok = load_model(str(warm_start("wordle-easy"))), load_tokenizer(str(warm_start("wordle-easy")))
    model.eval()
    rows = task.eval_problems(EASY_SECRETS)
    greedy = rollout(model, tok, rows, task, max_completion_length=160, max_tool_calling_iterations=6)
    consistent = 0
    for row, episode in zip(rows, greedy, strict=True):
        record = games.replay_wordle(episode.completion, row["secret"])
        consistent += all(games.wordle_feedback(g, word) == fb for k, (word, _) in enumerate(record.attempts)
                          for g, fb in record.attempts[:k])
    solved = sum(task.reward_funcs["wordle_solved"](
        completions=[e.completion for e in greedy], secret=[r["secret"] for r in rows],
        max_guesses=[r["max_guesses"] for r in rows]))
    assert solved >= EASY_SECRETS - 2 and consistent >= EASY_SECRETS - 2
    import torch

    torch.manual_seed(0)
    rows = task.eval_problems(64)
    sampled = rollout(model, tok, rows, task, max_completion_length=160, do_sample=True, temperature=1.0,
                      max_tool_calling_iterations=6)
    rate = sum(task.reward_funcs["wordle_solved"](
        completions=[e.completion for e in sampled], secret=[r["secret"] for r in rows],
        max_guesses=[r["max_guesses"] for r in rows])) / len(rows)
    assert 0.2 <= rate <= 0.8, rate


# --- reasoning-easy --------------------------------------------------------------------------------------


def test_reasoning_easy_demonstrations_compute_the_answer_in_the_tool():
    pytest.importorskip("reasoning_gym")
    task = get_task("reasoning-easy")
    assert task.validate(30) == []
    used = 0
    for demo, row in zip(demonstrations(task, 60, 0.5, seed=2), task.train_problems(60, seed=3), strict=True):
        calls = [m for m in demo["messages"] if m.get("tool_calls")]
        final = demo["messages"][-1]["content"]
        answer = re.fullmatch(r"<answer>(-?\d+)</answer>", final).group(1)
        for message in calls:
            code = message["tool_calls"][0]["function"]["arguments"]["code"]
            expression = re.fullmatch(r"print\(([0-9+\- ]+)\)", code).group(1)
            assert str(eval(expression)) == answer  # the oracle: Python itself
            used += 1
        del row
    assert 15 < used < 45  # about half the demonstrations use the tool


# --- coding-easy -----------------------------------------------------------------------------------------


def _call(test: str):
    """``assert f(ARG) == VALUE`` -> (f, ARG, VALUE), read with `ast` (no code runs)."""
    import ast

    node = ast.parse(test).body[0].test
    return node.left.func.id, ast.literal_eval(node.left.args[0]), ast.literal_eval(node.comparators[0])


def _oracle(family: str, k: int, x):
    return {"add": lambda: x + k, "sub": lambda: x - k, "mul": lambda: x * k,
            "list": lambda: [v + k for v in x]}[family]()


def test_coding_easy_problems_agree_with_a_plain_python_oracle_and_hold_problems_out():
    from agentgrpo.tasks.coding_easy import held_out

    task = get_task("coding-easy")
    assert task.validate(50) == []
    evals, train = task.eval_problems(200), task.train_problems(3000, seed=1)
    assert all(held_out(r["prompt"][-1]["content"]) for r in evals)
    assert not any(held_out(r["prompt"][-1]["content"]) for r in train)
    assert not {r["id"] for r in evals} & {r["id"] for r in train} and len({r["id"] for r in train}) == 3000
    assert {r["family"] for r in train} == {"add", "sub", "mul", "list"}
    for row in evals[:100] + train[:100]:
        name, x, y = _call(row["visible_test"])
        assert name == row["entry_point"] and f"`{name}(" in row["prompt"][-1]["content"]
        assert y == _oracle(row["family"], row["k"], x) and eval(row["k_expression"]) == row["k"]
        assert len(row["tests"]) == 3
        for test in row["tests"]:
            _, hx, hy = _call(test)
            assert hy == _oracle(row["family"], row["k"], hx) and hx != x


def test_coding_easy_gold_passes_its_hidden_tests_in_the_sandbox_and_a_wrong_constant_does_not():
    from agentgrpo.tasks.coding import hidden_tests_passed

    rows = get_task("coding-easy").eval_problems(40)
    gold = [f"```python\n{r['solution']}```" for r in rows]
    off = [f"```python\n{r['solution'].replace(str(r['k']), str(r['k'] + 1))}```" for r in rows]
    special = [f"```python\ndef {r['entry_point']}(*a):\n    return {_call(r['visible_test'])[2]!r}\n```"
               for r in rows]
    scores = hidden_tests_passed(gold + off + special, tests=[r["tests"] for r in rows] * 3)
    assert scores[:40] == [1.0] * 40 and scores[40:80] == [0.0] * 40
    assert sum(scores[80:]) / 40 < 0.1  # answering the visible example alone earns (almost) nothing


def test_coding_easy_demonstrations_compute_the_constant_in_the_tool_with_its_exact_output():
    from agentgrpo.tasks.coding import CodingEnv

    task, env, used = get_task("coding-easy"), None, 0
    for demo in demonstrations(task, 60, 0.5, seed=2):
        calls = [(m, n) for m, n in zip(demo["messages"], demo["messages"][1:]) if m.get("tool_calls")]
        for message, response in calls:
            code = message["tool_calls"][0]["function"]["arguments"]["code"]
            assert re.fullmatch(r"print\(\d+ (-|//) \d+\)", code)
            if used < 5:  # the tool's own answer, run in the sandbox, is what the demonstration shows
                env = env or CodingEnv()
                assert env.run_python(code) == response["content"]
            k = int(re.search(r"stdout:\n(\d+)", response["content"]).group(1))
            assert k == eval(code[len("print("):-1])  # the oracle: Python itself
            assert re.search(rf"[+\-*] {k}\b", demo["messages"][-1]["content"])
            used += 1
    assert 15 < used < 45  # about half the demonstrations use the tool


def test_the_coding_easy_warm_start_is_at_the_edge_and_its_tool_route_pays():
    """The lever GRPO needs (docs/tasks.md): sampled, the shipped warm start takes both routes, and the episodes
    that compute K in the sandbox pass the hidden tests far more often than those that write it from the head."""
    import torch

    from agentgrpo.evaluation.evaluate import score
    from agentgrpo.evaluation.rollout import rollout
    from agentgrpo.training.models import load_model, load_tokenizer

    task, path = get_task("coding-easy"), warm_start("coding-easy")
    rows = task.eval_problems(100)
    torch.manual_seed(0)
    episodes = rollout(load_model(str(path)), load_tokenizer(str(path)), rows, task, max_completion_length=64,
                       do_sample=True, temperature=1.0, max_tool_calling_iterations=2)
    passed = score(task, rows, episodes)
    tool = [p for p, e in zip(passed, episodes, strict=True) if e.per_tool.get("run_python", [0])[0] > 0]
    direct = [p for p, e in zip(passed, episodes, strict=True) if not e.per_tool.get("run_python", [0])[0]]
    assert len(tool) >= 20 and len(direct) >= 20, (len(tool), len(direct))
    assert sum(tool) / len(tool) - sum(direct) / len(direct) >= 0.4, (sum(tool) / len(tool), sum(direct) / len(direct))
    assert 0.2 <= sum(passed) / len(passed) <= 0.8  # at the edge: room to learn, and something to learn from


def test_the_function_calling_easy_warm_start_looks_up_and_copies_and_its_guesses_fail():
    """The lever GRPO needs (docs/tasks.md): sampled, the shipped warm start takes both routes; the episodes that
    look the event up copy the calendar's time into the right function, the ones that answer directly guess."""
    import torch

    from agentgrpo.evaluation.evaluate import score
    from agentgrpo.evaluation.rollout import rollout
    from agentgrpo.tasks.function_calling_easy import TOOL, event_time
    from agentgrpo.training.models import load_model, load_tokenizer

    task, path = get_task("function-calling-easy"), warm_start("function-calling-easy")
    rows = task.eval_problems(100)
    torch.manual_seed(0)
    episodes = rollout(load_model(str(path)), load_tokenizer(str(path)), rows, task, max_completion_length=128,
                       do_sample=True, temperature=1.0, max_tool_calling_iterations=2)
    right = score(task, rows, episodes)
    tool = [i for i, e in enumerate(episodes) if e.per_tool.get(TOOL, [0])[0] > 0]
    direct = [i for i, e in enumerate(episodes) if not e.per_tool.get(TOOL, [0])[0]]
    assert len(tool) >= 20 and len(direct) >= 20, (len(tool), len(direct))
    for i in tool:
        if right[i]:  # the oracle: the event's time, computed here, in the answer the row's request asks for
            hour, minute = event_time(rows[i]["event"])
            answer = json.loads(episodes[i].completion[-1]["content"])
            assert answer[0]["arguments"] == {"hour": hour, "minute": minute}
            assert answer[0]["name"] == ("set_alarm" if "alarm" in rows[i]["id"] or "Wake" in rows[i]["id"]
                                         else "set_reminder")
    assert sum(right[i] for i in tool) >= 0.7 * len(tool) and sum(right[i] for i in direct) <= 0.1 * len(direct)
    assert 0.2 <= sum(right) / len(right) <= 0.8  # at the edge: room to learn, and something to learn from


# --- model: tiny per task, build-tiny --task, demo --task -------------------------------------------------


@pytest.mark.parametrize("name", sorted(WARM_START_STEPS))
def test_tiny_is_the_task_s_own_shipped_warm_start(name):
    task = get_task(name)
    path = warm_start(name)
    assert (path / "config.json").is_file() and (path / "tokenizer.json").is_file()
    assert resolve_model("tiny", task) == str(path) and tiny_note(name) is None


@pytest.mark.parametrize("base,easy", sorted(EASY_VARIANTS.items()))
def test_a_task_beyond_the_tiny_model_names_its_easy_variant(base, easy):
    assert warm_start(base) is None and easy in tiny_note(base)


def test_demo_task_picks_the_task_s_config_and_refuses_one_without_a_demo():
    from agentgrpo.commands.demo import demo_config, demo_tasks

    assert {"calculator", *EASY} <= set(demo_tasks())
    assert demo_config("calculator") == "demo" and demo_config("wordle") == "demo-wordle-easy"
    assert demo_config("function-calling-easy") == "demo-function-calling-easy"
    assert demo_config("coding") == "demo-coding-easy"
    with pytest.raises(UserError, match="no demo for it"):
        demo_config("coding-mbpp")


def test_build_tiny_defaults_to_the_calculator_as_before():
    from agentgrpo.cli import build_parser

    args = build_parser("build-tiny").parse_args(["build-tiny"])
    assert (args.task, args.steps, args.seed, args.out) == ("calculator", None, 42, None)
    assert WARM_START_STEPS["calculator"] == 1500 and warm_start("calculator") == SHIPPED_SFT


# --- a real multi-turn episode: the shipped wordle-easy warm start plays -------------------------------------

_RESPONSE = re.compile(r"<tool_response>\n(.*?)\n</tool_response>", re.DOTALL)


def test_the_wordle_easy_warm_start_plays_several_turns_with_feedback_masked(tmp_path):
    from agentgrpo import rundir
    from agentgrpo.plan import resolve_plan
    from agentgrpo.training.grpo import build_grpo_trainer

    task = get_task("wordle-easy")
    plan = resolve_plan(None, ["--model", "tiny", "--task", "wordle-easy", "--per_device_train_batch_size", "8",
                               "--num_generations", "4", "--max_completion_length", "256", "--max_steps", "1",
                               "--logging_steps", "1", "--save_strategy", "no", "--disable_tqdm", "true",
                               "--doctor_every", "0", "--max_tool_calling_iterations", "8", "--seed", "1",
                               "--output_dir", str(tmp_path / "run")],
                        cuda_available=False)
    trainer = build_grpo_trainer(plan, resolve_model("tiny", task))
    tok = trainer.processing_class
    rows = [trainer.train_dataset[i] for i in range(8)]
    out = trainer._generate_and_score_completions(rows)
    ids, mask, tool_mask = out["completion_ids"], out["completion_mask"], out["tool_mask"]
    multi_turn = 0
    for i in range(len(ids)):
        real = mask[i].bool()
        masked = tok.decode(ids[i][real & (tool_mask[i] == 0)])
        trained = tok.decode(ids[i][real & (tool_mask[i] == 1)])
        whole = tok.decode(ids[i][real])
        responses = _RESPONSE.findall(whole)
        # the oracle: the environment's own answers, replayed from the guesses in the model's tokens
        secret = rows[i]["secret"]
        game = games.WordleGame(secret)
        for call in re.findall(r"<tool_call>\n(.*?)\n</tool_call>", trained, re.DOTALL):
            if game.over or len(responses) == 0:
                break
            try:
                expected = game.guess(json.loads(call)["arguments"]["word"])
            except (games.InvalidMove, ValueError, KeyError, TypeError):
                continue
            assert expected in masked and expected not in trained
        assert "<tool_response>" not in trained and all(r in masked for r in responses)
        multi_turn += len(responses) >= 2
    assert multi_turn >= 2  # the warm start plays games of several guesses, each answered by the environment
    trainer.train()
    (record,) = rundir.read_jsonl(tmp_path / "run" / rundir.METRICS)
    assert record["wordle/turns"] >= 2 and "wordle/turn_2_reward" in record
    assert record["tools/call_frequency"] > 0


# --- the shipped reasoning-easy warm start: the calculator's lever ------------------------------------------


def test_the_reasoning_easy_warm_start_computes_in_the_tool_and_fails_in_its_head():
    """The lever GRPO needs (docs/tasks.md, "The tiny model"): the warm start calls `run_python` on part of the
    held-out problems, copies the question's expression into it and is then right; answering directly it is
    almost always wrong. So the groups are mixed and the outcome says the tool pays."""
    pytest.importorskip("reasoning_gym")
    from agentgrpo.evaluation.evaluate import score
    from agentgrpo.evaluation.rollout import rollout
    from agentgrpo.training.models import load_model, load_tokenizer

    task = get_task("reasoning-easy")
    path = resolve_model("tiny", task)
    rows = task.eval_problems(40)
    episodes = rollout(load_model(path), load_tokenizer(path), rows, task, max_completion_length=96,
                       max_tool_calling_iterations=2)
    solved = [s >= 1.0 for s in score(task, rows, episodes)]
    tool = [i for i, e in enumerate(episodes) if e.tool_calls]
    direct = [i for i, e in enumerate(episodes) if not e.tool_calls]
    assert len(tool) >= 8 and len(direct) >= 8  # mixed: the tool about half the time
    copied = 0
    for i in tool:
        # the oracle: the question's own expression, and Python's value of it
        expression = re.search(r"problem: ([0-9+\- ]+) =\s*$", rows[i]["prompt"][-1]["content"]).group(1).strip()
        code = episodes[i].completion[0]["tool_calls"][0]["function"]["arguments"]["code"]
        copied += code == f"print({expression})"
        if solved[i]:
            assert episodes[i].completion[-1]["content"] == f"<answer>{eval(expression)}</answer>"
    assert copied >= 0.8 * len(tool) and sum(solved[i] for i in tool) >= 0.8 * len(tool)
    assert sum(solved[i] for i in direct) <= 0.2 * len(direct)
