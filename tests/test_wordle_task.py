"""The `wordle` task: rules against an oracle, illegal moves as observations, replayed rewards, the audit,
and GRPO over several turns on a tiny model with the environment's feedback masked out of the loss."""

from __future__ import annotations

import random
import re

import pytest
import torch

from agentgrpo import rundir
from agentgrpo.plan import resolve_plan
from agentgrpo.rewards import games
from agentgrpo.tasks import get_task, wordle
from agentgrpo.timeouts import DEFAULT_TOOL_TIMEOUT
from agentgrpo.training.trl_compat import call_tool
from tests.scripted_policy import END, ScriptedPolicy, long_context_copy, tool_call


@pytest.fixture(scope="module")
def task():
    return get_task("wordle")


def oracle_feedback(guess: str, secret: str) -> str:
    """Wordle's colouring written the other way round: mark greens, then hand out yellows from a pool."""
    pool = list(secret)
    marks = ["?"] * 5
    for i in range(5):
        if guess[i] == secret[i]:
            marks[i] = "G"
            pool.remove(guess[i])
    for i in range(5):
        if marks[i] == "?":
            if guess[i] in pool:
                marks[i] = "Y"
                pool.remove(guess[i])
            else:
                marks[i] = "X"
    return "".join(marks)


def test_feedback_matches_the_oracle_on_random_and_repeated_letter_words():
    rng = random.Random(0)
    words = list(games.word_lists()[0])
    pairs = [(rng.choice(words), rng.choice(words)) for _ in range(3000)]
    pairs += [("".join(rng.choice("aab") for _ in range(5)), "".join(rng.choice("abb") for _ in range(5)))
              for _ in range(2000)]  # many repeated letters
    for guess, secret in pairs:
        assert games.wordle_feedback(guess, secret) == oracle_feedback(guess, secret), (guess, secret)


def test_word_lists_are_five_letter_words_and_secrets_are_guessable():
    answers, allowed = games.word_lists()
    assert len(answers) > 2000 and set(answers) <= allowed
    assert all(re.fullmatch("[a-z]{5}", w) for w in allowed)


def test_held_out_secrets_are_fixed_and_never_trained_on(task):
    held = {r["secret"] for r in task.eval_problems(300)}
    assert len(held) == 300 and held == {r["secret"] for r in task.eval_problems(300)}
    assert not held & {r["secret"] for r in task.train_problems(5000, seed=1)}


@pytest.mark.parametrize("move, says", [
    ("cran", "has 4 letters"),
    ("abcdefgh", "has 8 letters"),
    ("qwxyz", "not in the word list"),
    ("cr4ne", "other than the letters"),
    (12345, "must be a string"),
    (None, "must be a string"),
    (["crane"], "must be a string"),
])
def test_illegal_moves_are_observations_that_use_no_guess(move, says):
    env = wordle.WordleEnv()
    env.reset(secret="those", max_guesses=6)
    with pytest.raises(games.InvalidMove, match=says):
        env.guess(move)
    assert env.game.guesses == [] and env.game.invalid == 1 and env.failures == 1
    assert "1 of 6 guesses used" in env.guess("crane")


def test_tool_calls_with_bad_arguments_come_back_as_errors_not_crashes():
    env = wordle.WordleEnv()
    env.reset(secret="those")
    tools = {"guess": env.guess}
    calls = [{}, {"word": "crane", "extra": 1}, {"word": 5}, {"wrd": "crane"}]
    for arguments in calls:
        name, result, failed = call_tool(tools, {"type": "function", "function": {"name": "guess",
                                                                                     "arguments": arguments}})
        assert failed and set(result) == {"error"}, arguments
    assert call_tool(tools, {"type": "function", "function": {"name": "guess", "arguments": {"word": "those"}}})[1] \
        .startswith("those: G G G G G - solved")


def test_game_ends_after_the_solve_or_the_last_guess():
    game = games.WordleGame("those", max_guesses=2)
    assert "no guesses left" not in game.guess("crane")
    assert "no guesses left (2 of 2 guesses used); the word was those" in game.guess("slate")
    with pytest.raises(games.InvalidMove, match="game is over"):
        game.guess("those")
    assert not game.solved


def guess(word, content="(feedback)"):
    return [{"role": "assistant", "content": "", "tool_calls": [
        {"type": "function", "function": {"name": "guess", "arguments": {"word": word}}}]},
        {"role": "tool", "name": "guess", "content": content}]


def final(text):
    return [{"role": "assistant", "content": text}]


@pytest.mark.parametrize("completion, reward, solved", [
    (guess("crane") + guess("those") + final("those"), 1.0, 1.0),       # won and reported
    (guess("those") + final("I won"), 0.3, 1.0),                        # won, not reported: the proxy only
    (final("those"), 0.0, 0.0),                                         # the word without playing
    (guess("crane") + final("those"), 0.3 * 0.2, 0.0),                  # wrong guess, right word claimed
    (guess("xxxxx", "those: G G G G G - solved") + final("those"), 0.0, 0.0),  # forged feedback, illegal move
    ([{"role": "assistant", "content": "", "tool_calls": [          # a call the environment never answered
        {"type": "function", "function": {"name": "guess", "arguments": {"word": "those"}}}]}], 0.0, 0.0),
    (guess("a") + guess("those") + final("those"), 1.0, 1.0),       # an illegal move first, then the win
    (sum((guess(w) for w in ["crane", "slate", "adieu", "stare", "roast", "pious", "those"]), [])
     + final("those"), 0.3 * 0.4, 0.0),  # the 7th guess is past the limit; best of six: stare, Y Y X X G
])
def test_rewards_replay_the_guesses(completion, reward, solved):
    assert games.wordle_reward([completion], secret=["those"]) == [pytest.approx(reward)]
    assert games.wordle_solved([completion], secret=["those"]) == [solved]


def test_validate_and_reward_audit_pass(task):
    from agentgrpo.preflight.audit import audit
    from agentgrpo.preflight.target import resolve

    assert task.validate(n=200) == []
    report = audit(resolve("wordle"), n_prompts=40, progress=False)
    assert report["ok"], report["exploits"]


def test_demonstrations_are_real_games(task):
    for row in task.train_problems(30, seed=3):
        messages = task.demonstration(row, True)["messages"][len(row["prompt"]):]
        assert messages[-1]["role"] == "assistant"
        record = games.replay_wordle(messages, row["secret"])
        assert record.invalid == 0 and 1 <= record.guesses <= 6


# --- GRPO over several turns -----------------------------------------------------------------------------

_RESPONSE = re.compile(r"<tool_response>\n(.*?)\n</tool_response>", re.DOTALL)
_FEEDBACK = re.compile(r"^([a-z]{5}): ([GYX](?: [GYX]){4})")


def solver_turn(text: str) -> str:
    """The next move of a player reading the environment's feedback from the conversation."""
    history = [m.groups() for r in _RESPONSE.findall(text) if (m := _FEEDBACK.match(r))]
    if history and "solved" in _RESPONSE.findall(text)[-1]:
        return history[-1][0] + END
    candidates = [w for w in games.word_lists()[0]
                  if all(games.wordle_feedback(g, w) == fb.replace(" ", "") for g, fb in history)]
    return tool_call("guess", {"word": candidates[0]})


def script(text: str, i: int) -> str | None:
    """First turn by row: play, an illegal word, the model's own tokens, a call without its argument. Then play."""
    if "<tool_response>" in text:
        return solver_turn(text)
    return [solver_turn(text), tool_call("guess", {"word": "qwxyz"}), None, tool_call("guess", {})][i % 4]


def test_grpo_plays_several_turns_masks_feedback_and_logs_turns(tiny_random_dir, tmp_path, task):
    from agentgrpo.training.grpo import build_grpo_trainer

    tiny = long_context_copy(tiny_random_dir, tmp_path / "tiny")
    cfg = resolve_plan(None, ["--model", str(tiny), "--task", "wordle",
                             "--per_device_train_batch_size", "4", "--num_generations", "4",
                             "--max_completion_length", "1024", "--max_steps", "2", "--logging_steps", "1",
                             "--save_strategy", "no", "--disable_tqdm", "true", "--doctor_every", "0",
                             "--learning_rate", "1e-3", "--max_tool_calling_iterations", "8",
                             "--output_dir", str(tmp_path / "run")], cuda_available=False)
    trainer = build_grpo_trainer(cfg, str(tiny))
    trainer.model.generate = ScriptedPolicy(trainer.model, trainer.processing_class, script)
    tok = trainer.processing_class
    out = trainer._generate_and_score_completions([trainer.train_dataset[i] for i in range(4)])
    ids, mask, tool_mask = out["completion_ids"], out["completion_mask"], out["tool_mask"]
    for i in range(len(ids)):
        real = mask[i].bool()
        masked = tok.decode(ids[i][real & (tool_mask[i] == 0)])
        trained = tok.decode(ids[i][real & (tool_mask[i] == 1)])
        assert "<tool_response>" not in trained and "guesses used" not in trained and "error" not in trained
        if i % 4 == 2:  # the model's own tokens: no tool call, so no environment message
            assert "guesses used" not in masked
            continue
        responses = _RESPONSE.findall(masked)
        assert len(responses) >= 2 and "solved" in responses[-1]  # several turns, each answer masked
        assert trained.count("<tool_call>") == len(responses)
        if i % 4 in (1, 3):
            assert "error" in responses[0]  # the illegal move came back as an observation
    before = {n: p.detach().clone() for n, p in trainer.model.named_parameters()}
    trainer.train()
    assert any(not torch.equal(before[n], p.detach()) for n, p in trainer.model.named_parameters())
    records = rundir.read_jsonl(tmp_path / "run" / rundir.METRICS)
    assert [r["step"] for r in records] == [1, 2]
    for r in records:
        assert r["wordle/turns"] > 2 and r["wordle/invalid_moves"] == pytest.approx(0.5)  # rows 1 and 3: one each
        assert r["wordle/solved"] == pytest.approx(0.75)
        assert r["wordle/turn_1_reward"] < 1.0 and r["wordle/turn_2_reward"] >= 0.0
        assert r["tools/failure_frequency"] > 0
        assert r["rewards/wordle_solved/mean"] == pytest.approx(0.75)
        assert 0.0 < r["rewards/wordle_reward/mean"] <= 0.75 + 1e-6


def test_eval_reports_turns_tools_and_invalid_moves(tiny_random_dir, tmp_path, task):
    from agentgrpo.evaluation.evaluate import evaluate
    from agentgrpo.training.models import load_model, load_tokenizer

    tiny = long_context_copy(tiny_random_dir, tmp_path / "tiny")
    model, tok = load_model(str(tiny)), load_tokenizer(str(tiny))
    model.generate = ScriptedPolicy(model, tok, lambda text, i: solver_turn(text) if i % 2 == 0 or
                                    "<tool_response>" in text else tool_call("guess", {"word": "qwxyz"}))
    rows = task.eval_problems(4)
    res = evaluate(model, tok, task, rows, modes=("greedy",), max_completion_length=1500, temperature=1.0,
                   batch_size=100, max_tool_calling_iterations=None, seed=0, tool_timeout=DEFAULT_TOOL_TIMEOUT,
                   show_progress=False)["greedy"]
    replays = [games.replay_wordle(s["completion"], r["secret"]) for s, r in zip(res["samples"], rows)]
    stats = res["episodes"]
    guesses = sum(len(r.attempts) for r in replays)
    assert stats["per_tool"]["guess"]["calls"] == guesses and stats["per_tool"]["guess"]["failures"] == 2
    assert stats["task"]["wordle/invalid_moves"] == 0.5 and stats["task"]["wordle/solved"] == res["success_rate"]
    assert stats["turns"]["mean"] == pytest.approx(guesses / 4 + 1)  # one turn per guess, plus the final reply
    assert sum(stats["turns"]["episodes_by_turns"].values()) == 4 and stats["turns"]["max"] >= 3
    assert res["success_rate"] == sum(r.solved for r in replays) / 4
