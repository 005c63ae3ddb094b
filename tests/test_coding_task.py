"""The `coding` task: sandboxed run_python tool, hidden-tests reward, data checks, HumanEval, GRPO smoke."""

from __future__ import annotations

import copy

import pytest
import torch

from agentgrpo import rundir
from agentgrpo.errors import UserError
from agentgrpo.plan import resolve_plan
from agentgrpo.tasks import coding, get_task
from agentgrpo.timeouts import DEFAULT_TOOL_TIMEOUT


@pytest.fixture(scope="module")
def task():
    return get_task("coding")


def answer(code: str) -> list[dict]:
    return [{"role": "assistant", "content": f"Here it is:\n```python\n{code}\n```"}]


# --- data ---------------------------------------------------------------------------------------------


def test_offline_rows_show_one_test_and_hide_the_others(task):
    rows = coding.offline_rows()
    assert len(rows) == 50 and len({r["entry_point"] for r in rows}) == 50
    for r in rows:
        user = r["prompt"][-1]["content"]
        assert r["visible_test"] in user and len(r["tests"]) == 3
        assert not any(t in user for t in r["tests"]), r["id"]


def test_overlap_with_humaneval_is_found_and_dropped_from_training(task):
    report = coding.overlap_report(coding.offline_rows(), coding.humaneval_rows())
    assert ("offline/remove_duplicates", "HumanEval/26") in report["by_name"]
    train_ids = {r["id"] for r in task.train_problems(200, 0)}
    assert train_ids and not train_ids & set(report["overlapping_ids"])
    same_prompt = dict(coding.offline_rows()[0], id="copy", entry_point="other")
    held = [dict(same_prompt, id="held")]
    assert coding.overlap_report([same_prompt], held)["by_prompt"] == [("copy", "held")]


def test_train_problems_are_seeded_and_cycle(task):
    a, b = task.train_problems(100, 3), task.train_problems(100, 3)
    assert [r["id"] for r in a] == [r["id"] for r in b] and len(a) == 100
    assert [r["id"] for r in a] != [r["id"] for r in task.train_problems(100, 4)]


def test_mbpp_offline_names_the_offline_task(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(UserError, match="use task 'coding'"):
        get_task("coding-mbpp").train_problems(4, 0)


def test_mbpp_unreachable_names_the_offline_task(monkeypatch):
    import datasets

    def unreachable(*args, **kwargs):
        raise OSError("network unreachable")

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("HF_DATASETS_OFFLINE", raising=False)
    monkeypatch.setattr("agentgrpo.tasks.hub._probe", lambda url: None)  # the Hub answers; the download fails
    monkeypatch.setattr(datasets, "load_dataset", unreachable)
    monkeypatch.setattr(coding, "MBPP_DATASET", "agentgrpo-test/no-such-dataset")
    coding._load_mbpp.cache_clear()
    with pytest.raises(UserError, match="cannot load agentgrpo-test/no-such-dataset.*use task 'coding'"):
        coding.mbpp_rows("train")


# --- rewards ------------------------------------------------------------------------------------------


def test_validate_gold_scores_the_maximum_and_reports(task):
    assert task.validate(n=20) == []
    lines = task.report()
    assert "5 by function name" in lines[0] and "HumanEval/26" in lines[0]
    share = coding.visible_test_share(coding.train_pool("offline"))
    assert share["visible_only_visible"] == 1.0 and share["gold_hidden"] == 1.0
    assert share["visible_only_hidden"] < 0.1  # hard-coding the example earns (almost) nothing


def test_humaneval_canonical_pass_and_gutted_fail_on_a_subset():
    from benchmarks.humaneval_canonical import score

    res = score(coding.eval_problems(164)[::8])  # 21 problems spread over the set
    assert res["canonical_failures"] == [] and res["wrong_passes"] == []
    assert all(s == 1.0 for s in res["canonical"]) and all(s == 0.0 for s in res["wrong"])


HOSTILE = {
    "never returns": "def add(a, b):\n    while True:\n        pass",
    "prints megabytes": "def add(a, b):\n    print('x' * 10_000_000)\n    return a + b\nadd(1, 2)",
    "forks": "import os\nfor _ in range(64):\n    os.fork()\ndef add(a, b):\n    return a + b",
    "reads secrets": "secret = open('/etc/shadow').read()\ndef add(a, b):\n    return a + b",
    "opens sockets": "import socket\nsocket.create_connection(('1.1.1.1', 53), timeout=1)\n"
                     "def add(a, b):\n    return a + b",
}


def test_hostile_programs_score_zero_and_the_tool_reports_them():
    tests = [["assert add(1, 2) == 3", "assert add(2, 2) == 4"]] * len(HOSTILE)
    logged = {}
    scores = coding.hidden_tests_passed([answer(c) for c in HOSTILE.values()], tests,
                                        log_extra=lambda k, v: logged.__setitem__(k, v))
    assert scores == [0.0] * len(HOSTILE), dict(zip(HOSTILE, scores))
    assert "passed" not in logged["sandbox_status"]
    env = coding.CodingEnv()
    with pytest.raises(coding.RunPythonError, match="status: output_limit"):
        env.run_python(HOSTILE["prints megabytes"])
    with pytest.raises(coding.RunPythonError, match="status: error"):
        env.run_python(HOSTILE["reads secrets"])
    assert (env.calls, env.failures) == (2, 2)


def test_no_code_block_scores_zero_and_is_counted():
    logged = {}
    comps = ["def add(a, b): return a + b", [{"role": "assistant", "content": ""}]]
    assert coding.hidden_tests_passed(comps, [["assert add(1, 2) == 3"]] * 2,
                                      log_extra=lambda k, v: logged.__setitem__(k, v)) == [0.0, 0.0]
    assert logged["sandbox_status"] == ["no_code_block"] * 2
    metrics = {}
    coding.hidden_tests_passed(comps + [answer("raise ValueError('at import')")], [["assert add(1, 2) == 3"]] * 3,
                               log_metric=metrics.__setitem__)
    assert metrics == {"coding/no_code_block_frac": 2 / 3, "coding/program_failure_frac": 1 / 3,
                       "coding/sandbox_error_frac": 0.0}
    assert coding.code_block_format(comps) == [0.0, 0.0]


def test_run_python_returns_output_and_demos_show_what_it_returns(task):
    env = task.environment_factory()
    assert env.run_python("print(6 * 7)") == "status: ok\nstdout:\n42"
    with pytest.raises(coding.RunPythonError, match="ZeroDivisionError"):
        env.run_python("print('before')\n1 / 0")
    assert (env.calls, env.failures) == (2, 1)
    row = coding.offline_rows()[7]
    demo = task.demonstration(row, True)["messages"]
    assert env.run_python(demo_code := demo[2]["tool_calls"][0]["function"]["arguments"]["code"]) == demo[3]["content"]
    assert row["solution"] in demo_code


# --- training and evaluation --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tiny_coding_dir(tmp_path_factory, task):
    from agentgrpo.tiny.build import build_random

    return build_random(task, tmp_path_factory.mktemp("tiny-coding"))


class ScriptedFirstTurn:
    """``model.generate`` whose first turn calls run_python (a good program or a failing one, alternately);
    later turns answer with the reference solution (even rows) and, on odd rows, are the model's own tokens
    (``own_tokens``) or a reply without code."""

    def __init__(self, model, tokenizer, own_tokens: bool = True):
        self.model, self.tok, self.real, self.own_tokens = model, tokenizer, model.generate, own_tokens
        self.solutions = {r["prompt"][-1]["content"]: r["solution"]
                          for r in coding.offline_rows() + coding.humaneval_rows()}

    def turn(self, text: str, i: int) -> str | None:
        if "<tool_response>" not in text:
            code = "print(6 * 7)" if i % 2 == 0 else "1 / 0"
            return ('<tool_call>\n{"name": "run_python", "arguments": {"code": "' + code + '"}}\n</tool_call>'
                    "<|im_end|>")
        if i % 2 == 0:
            solution = next(s for user, s in self.solutions.items() if user in text)
            return f"```python\n{solution}```<|im_end|>"
        return None if self.own_tokens else "I give up.<|im_end|>"

    def __call__(self, input_ids, attention_mask=None, **kwargs):
        turns = [self.turn(self.tok.decode(ids[attention_mask[i].bool()]), i) for i, ids in enumerate(input_ids)]
        if None in turns:  # the model's own turn, kept short (16 tokens): the test is about the tool path
            config = copy.deepcopy(kwargs.pop("generation_config", None) or self.model.generation_config)
            config.max_new_tokens = 16
            real = self.real(input_ids=input_ids, attention_mask=attention_mask, generation_config=config, **kwargs)
        rows = []
        for i, (ids, scripted) in enumerate(zip(input_ids, turns)):
            new = self.tok.encode(scripted, add_special_tokens=False) if scripted else real[i, input_ids.shape[1]:]
            rows.append(torch.cat([ids, torch.as_tensor(new, dtype=ids.dtype)]))
        width = max(len(r) for r in rows)
        pad = self.tok.pad_token_id
        return torch.stack([torch.cat([r, r.new_full((width - len(r),), pad)]) for r in rows])


def test_grpo_steps_call_run_python_mask_its_output_and_count_failures(tiny_coding_dir, tmp_path, task):
    from agentgrpo.training.grpo import build_grpo_trainer

    cfg = resolve_plan(None, ["--model", str(tiny_coding_dir), "--task", "coding",
                             "--per_device_train_batch_size", "4", "--num_generations", "4",
                             "--max_completion_length", "128", "--max_steps", "2", "--logging_steps", "1",
                             "--save_strategy", "no", "--disable_tqdm", "true", "--doctor_every", "0",
                             "--learning_rate", "1e-3", "--max_tool_calling_iterations", "2",
                             "--output_dir", str(tmp_path)], cuda_available=False)
    trainer = build_grpo_trainer(cfg, str(tiny_coding_dir))
    trainer.model.generate = ScriptedFirstTurn(trainer.model, trainer.processing_class)
    tok = trainer.processing_class
    out = trainer._generate_and_score_completions([trainer.train_dataset[i] for i in range(4)])
    ids, mask, tool_mask = out["completion_ids"], out["completion_mask"], out["tool_mask"]
    for i in range(len(ids)):
        real = mask[i].bool()
        masked = tok.decode(ids[i][real & (tool_mask[i] == 0)])
        trained = tok.decode(ids[i][real & (tool_mask[i] == 1)])
        assert "<tool_response>" in masked and "<tool_response>" not in trained and "run_python" in trained
        assert ("status: ok\nstdout:\n42" if i % 2 == 0 else "ZeroDivisionError") in masked
    before = {n: p.detach().clone() for n, p in trainer.model.named_parameters()}
    trainer.train()
    assert any(not torch.equal(before[n], p.detach()) for n, p in trainer.model.named_parameters())
    records = rundir.read_jsonl(tmp_path / rundir.METRICS)
    assert [r["step"] for r in records] == [1, 2]
    for r in records:
        assert r["tools/call_frequency"] > 0 and r["tools/failure_frequency"] > 0
        assert 0.0 < r["rewards/hidden_tests_passed/mean"] < 1.0  # the scripted half solves, the rest does not
        assert r["rewards/all_tests_passed/mean"] == pytest.approx(r["rewards/hidden_tests_passed/mean"])
        assert r["coding/no_code_block_frac"] > 0 and r["coding/sandbox_error_frac"] == 0  # the model's own tokens


def test_pass_at_k_uses_the_rollout_path(tiny_coding_dir, task):
    from agentgrpo.evaluation.passk import evaluate_pass_at_k
    from agentgrpo.training.models import load_model, load_tokenizer

    model, tok = load_model(str(tiny_coding_dir)), load_tokenizer(str(tiny_coding_dir))
    model.generate = ScriptedFirstTurn(model, tok, own_tokens=False)
    rows = coding.eval_problems(2)
    res = evaluate_pass_at_k(model, tok, task, rows, samples=2, ks=[1, 2], max_completion_length=1000, temperature=1.0,
                             max_tool_calling_iterations=None, seed=0, tool_timeout=DEFAULT_TOOL_TIMEOUT)
    assert res["samples_per_problem"] == 2 and res["tool_call_rate"] == 1.0
    assert res["tool_failure_rate"] == pytest.approx(0.5)  # the scripted "1 / 0" runs, every other sample
    assert res["unscored"] == 0
    # each problem: one sample answers with the canonical solution, the other without code
    assert [p["correct"] for p in res["per_problem"]] == [1, 1]
    assert res["pass@1"]["estimate"] == 0.5 and res["pass@2"]["estimate"] == 1.0
    lo, hi = res["pass@1"]["ci95_bootstrap"]
    assert lo <= res["pass@1"]["estimate"] <= hi
