"""The `reasoning` task: reasoning-gym problems with a difficulty knob, its verifier as the reward, the
sandboxed Python tool, the audit, and GRPO steps on a tiny model with run_python called."""

from __future__ import annotations

import json

import pytest
import torch

from agentgrpo import rundir
from agentgrpo.errors import UserError
from agentgrpo.plan import resolve_plan
from agentgrpo.rewards import procedural
from agentgrpo.tasks import get_task, reasoning
from tests.scripted_policy import END, ScriptedPolicy, long_context_copy, tool_call

pytest.importorskip("reasoning_gym")


@pytest.fixture(scope="module")
def task():
    return get_task("reasoning")


def test_problems_are_seeded_mixed_and_disjoint_from_the_held_out_set(task):
    rows = task.train_problems(90, seed=5)
    assert [r["id"] for r in rows] == [r["id"] for r in task.train_problems(90, seed=5)]
    assert {r["rg_dataset"] for r in rows} == set(reasoning.DEFAULT_DATASETS)
    held = {r["prompt"][-1]["content"] for r in task.eval_problems(500)}
    assert not held & {r["prompt"][-1]["content"] for r in task.train_problems(900, seed=0)}


def test_difficulty_is_a_knob_that_makes_problems_harder():
    easy = get_task("reasoning[difficulty=0,datasets=chain_sum+products]").eval_problems(40)
    hard = get_task("reasoning[difficulty=3,datasets=chain_sum+products]").eval_problems(40)
    digits = lambda rows: sum(len(r["answer"].lstrip("-")) for r in rows) / len(rows)  # noqa: E731
    assert digits(hard) > digits(easy) + 2
    assert {json.loads(r["rg_entry"])["metadata"]["source_dataset"] for r in hard} == {"chain_sum", "products"}
    assert get_task("reasoning[difficulty=3]").name == "reasoning[difficulty=3]"


@pytest.mark.parametrize("name, says", [
    ("reasoning[difficulty=x]", "not an integer"),
    ("reasoning[difficulty=99]", "not an integer in 0..10"),
    ("reasoning[datasets=gcdd]", "unknown reasoning-gym generator 'gcdd'. Did you mean 'gcd'"),
    ("reasoning[level=2]", "not an option"),
    ("wordle[difficulty=2]", "takes no options"),
])
def test_bad_options_are_clear_errors(name, says):
    with pytest.raises(UserError, match=says):
        get_task(name)


def test_validate_and_reward_audit_pass_at_several_difficulties():
    from agentgrpo.preflight.audit import audit
    from agentgrpo.preflight.target import resolve

    for name in ("reasoning", "reasoning[difficulty=3]"):
        assert get_task(name).validate(n=90) == [], name
        report = audit(resolve(name), n_prompts=45, progress=False)
        assert report["ok"], (name, report["exploits"])


def test_rewards_use_reasoning_gyms_verifier_and_count_bad_answers(task):
    rows = task.eval_problems(18)
    import reasoning_gym

    logged = {}
    right = [f"<answer>{r['answer']}</answer>" for r in rows]
    hedged = [f"<answer>1</answer> or <answer>{r['answer']}</answer>" for r in rows]
    columns = {"rg_dataset": [r["rg_dataset"] for r in rows] * 3, "rg_entry": [r["rg_entry"] for r in rows] * 3}
    scores = procedural.reasoning_gym_score(right + hedged + [r["answer"] for r in rows], **columns,
                                            log_metric=logged.__setitem__)
    assert scores[:18] == [1.0] * 18 and scores[18:] == [0.0] * 36
    assert logged["reasoning/no_answer_frac"] == pytest.approx(2 / 3)
    for r in rows:  # the same verdict as calling reasoning-gym directly
        entry = json.loads(r["rg_entry"])
        direct = reasoning_gym.get_score_answer_fn(r["rg_dataset"])("12", entry)
        mine = procedural.reasoning_gym_score(["<answer>12</answer>"], rg_dataset=[r["rg_dataset"]],
                                              rg_entry=[r["rg_entry"]])[0]
        assert mine == pytest.approx(min(1.0, max(0.0, direct)))
    garbage = procedural.reasoning_gym_score(["<answer>x × y</answer>"], rg_dataset=["prime_factorization"],
                                             rg_entry=[next(r["rg_entry"] for r in rows
                                                            if r["rg_dataset"] == "prime_factorization")],
                                             log_metric=logged.__setitem__)
    assert garbage == [0.0] and logged["reasoning/unscorable_frac"] == 1.0  # the verifier raised: scored 0


def test_python_tool_runs_in_the_sandbox(task):
    env = task.environment_factory()
    env.reset(**task.eval_problems(1)[0])
    assert env.run_python("import math\nprint(math.gcd(12, 18))") == "status: ok\nstdout:\n6"
    with pytest.raises(Exception, match="status: error"):
        env.run_python("open('/etc/shadow').read()")
    import os

    assert env.run_python("import os\nprint(os.getpid())") != f"status: ok\nstdout:\n{os.getpid()}"


def test_grpo_steps_run_python_and_score_with_the_verifier(tiny_random_dir, tmp_path, task):
    from agentgrpo.training.grpo import build_grpo_trainer

    tiny = long_context_copy(tiny_random_dir, tmp_path / "tiny")
    answers = {r["prompt"][-1]["content"]: r["answer"] for r in task.train_problems(64, seed=42)}

    def script(text: str, i: int) -> str | None:
        question = next(q for q in answers if q in text)
        if "<tool_response>" not in text:
            return tool_call("run_python", {"code": f"print({answers[question]!r})" if i % 2 == 0 else "1 / 0"})
        return f"<answer>{answers[question]}</answer>{END}" if i % 2 == 0 else f"It failed, no answer.{END}"

    cfg = resolve_plan(None, ["--model", str(tiny), "--task", "reasoning", "--train_size", "64",
                             "--per_device_train_batch_size", "4", "--num_generations", "4",
                             "--max_completion_length", "256", "--max_steps", "2", "--logging_steps", "1",
                             "--save_strategy", "no", "--disable_tqdm", "true", "--doctor_every", "0",
                             "--learning_rate", "1e-3", "--max_tool_calling_iterations", "2",
                             "--output_dir", str(tmp_path / "run")], cuda_available=False)
    trainer = build_grpo_trainer(cfg, str(tiny))
    trainer.model.generate = ScriptedPolicy(trainer.model, trainer.processing_class, script)
    out = trainer._generate_and_score_completions([trainer.train_dataset[0]] * 4)
    tok = trainer.processing_class
    for i in range(4):
        real = out["completion_mask"][i].bool()
        masked = tok.decode(out["completion_ids"][i][real & (out["tool_mask"][i] == 0)])
        trained = tok.decode(out["completion_ids"][i][real & (out["tool_mask"][i] == 1)])
        assert "<tool_response>" in masked and "<tool_response>" not in trained and "run_python" in trained
        assert ("status: ok" if i % 2 == 0 else "ZeroDivisionError") in masked
    before = {n: p.detach().clone() for n, p in trainer.model.named_parameters()}
    trainer.train()
    assert any(not torch.equal(before[n], p.detach()) for n, p in trainer.model.named_parameters())
    records = rundir.read_jsonl(tmp_path / "run" / rundir.METRICS)
    assert [r["step"] for r in records] == [1, 2]
    for r in records:
        assert r["rewards/reasoning_gym_solved/mean"] == pytest.approx(0.5)
        assert r["tools/call_frequency"] > 0 and r["tools/failure_frequency"] > 0
        assert r["reasoning/no_answer_frac"] == pytest.approx(0.5)
