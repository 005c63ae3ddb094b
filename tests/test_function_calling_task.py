"""The `function-calling` task: BFCL data, structured comparison against an oracle, bad answers counted, the
audit, the Hub task offline, and GRPO steps on a tiny model."""

from __future__ import annotations

import json
import random

import pytest
import torch

from agentgrpo import rundir
from agentgrpo.errors import UserError
from agentgrpo.plan import resolve_plan
from agentgrpo.rewards import calls
from agentgrpo.tasks import function_calling, get_task
from tests.scripted_policy import END, ScriptedPolicy, long_context_copy


@pytest.fixture(scope="module")
def task():
    return get_task("function-calling")


def answer(value) -> list[dict]:
    return [{"role": "assistant", "content": value if isinstance(value, str) else json.dumps(value)}]


def test_shipped_bfcl_categories_and_a_fixed_disjoint_split(task):
    rows = function_calling.offline_rows()
    assert {r["category"] for r in rows} == set(function_calling.CATEGORIES) and len(rows) == 1000
    held = {r["id"] for r in task.eval_problems(1000)}
    train = {r["id"] for r in task.train_problems(2000, seed=0)}
    assert 150 < len(held) < 250 and not held & train and len(held | train) == 1000
    questions = lambda rows: {r["prompt"][-1]["content"] for r in rows}  # noqa: E731
    assert not questions(task.eval_problems(1000)) & questions(task.train_problems(2000, seed=0))
    for r in rows[:50]:
        assert r["prompt"][0]["content"].count('"name"') >= 1 and r["prompt"][-1]["role"] == "user"


def test_hub_task_offline_names_the_shipped_task(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(UserError, match="use task 'function-calling'"):
        get_task("function-calling-hub").train_problems(4, 0)


def test_hub_unreachable_names_the_shipped_task(monkeypatch):
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    monkeypatch.delenv("HF_DATASETS_OFFLINE", raising=False)
    monkeypatch.setattr("agentgrpo.tasks.hub._probe", lambda url: None)  # the Hub answers; the download fails
    monkeypatch.setattr(function_calling, "HUB_DATASET", "agentgrpo-test/no-such-dataset")
    import huggingface_hub

    def unreachable(*args, **kwargs):
        raise OSError("network unreachable")

    monkeypatch.setattr(huggingface_hub, "hf_hub_download", unreachable)
    function_calling._load_hub.cache_clear()
    with pytest.raises(UserError, match="cannot load agentgrpo-test/no-such-dataset.*use task 'function-calling'"):
        function_calling.hub_rows()


def test_build_offline_file_reproduces_the_shipped_rows(tmp_path):
    data = tmp_path / "data"
    (data / "possible_answer").mkdir(parents=True)
    for category in function_calling.CATEGORIES:
        entries = [r for r in _entries() if r["category"] == category][:3]
        name = f"BFCL_v4_{category}.json"
        (data / name).write_text("\n".join(json.dumps({"id": e["id"], "question": [e["question"]],
                                                       "function": e["functions"]}) for e in entries))
        (data / "possible_answer" / name).write_text(
            "\n".join(json.dumps({"id": e["id"], "ground_truth": e["ground_truth"]}) for e in entries))
    out = tmp_path / "out.jsonl.gz"
    assert function_calling.build_offline_file(data, out) == 12
    import gzip

    rebuilt = [json.loads(line) for line in gzip.open(out, "rt")]
    by_category = {c: [e for e in _entries() if e["category"] == c][:3] for c in function_calling.CATEGORIES}
    assert rebuilt == [e for c in function_calling.CATEGORIES for e in by_category[c]]


def _entries():
    import gzip
    from importlib import resources

    path = resources.files("agentgrpo.tasks") / "data" / function_calling.OFFLINE_FILE
    with path.open("rb") as raw, gzip.open(raw, "rt") as fh:
        return [json.loads(line) for line in fh]


# --- comparison ------------------------------------------------------------------------------------------


def oracle_exact(given: list[dict], expected: list[dict]) -> bool:
    """Brute force over every assignment of given calls to expected calls (same count, each used once)."""
    import itertools

    if len(given) != len(expected):
        return False
    return any(all(calls.call_mismatch(g, e) == "ok" for g, e in zip(given, perm))
               for perm in itertools.permutations(expected))


def mutate(call: dict, expected: dict, rng: random.Random) -> dict:
    (name, params), = expected.items()
    arguments = dict(call["arguments"])
    kind = rng.choice(["drop", "extra", "value", "name", "keep"])
    if kind == "drop" and arguments:
        arguments.pop(rng.choice(sorted(arguments)))
    elif kind == "extra":
        arguments["not_a_parameter"] = 1
    elif kind == "value" and arguments:
        key = rng.choice(sorted(arguments))
        arguments[key] = {"wrong": True} if not isinstance(arguments[key], dict) else 12345
    elif kind == "name":
        return {"name": name + "_x", "arguments": arguments}
    return {"name": call["name"], "arguments": arguments}


def test_structured_comparison_agrees_with_a_brute_force_oracle(task):
    rng = random.Random(0)
    rows = function_calling.offline_rows()
    agree = 0
    for row in rng.sample(rows, 300):
        expected = json.loads(row["ground_truth"])
        gold = function_calling.gold_calls(row)
        given = [mutate(c, e, rng) for c, e in zip(gold, expected)]
        rng.shuffle(given)
        if rng.random() < 0.2:
            given = given[:-1] if len(given) > 1 and rng.random() < 0.5 else given + given[:1]
        share, exact, reason = calls.score_calls(json.dumps(given), expected)
        assert bool(exact) == oracle_exact(given, expected), (row["id"], given)
        assert (reason == "ok") == bool(exact) and 0.0 <= share <= 1.0
        agree += 1
    assert agree == 300


@pytest.mark.parametrize("text, reason", [
    ("get_weather(city='Paris')", "not_json"),                     # Python syntax, not JSON
    ('[{"name": "get_weather", "arguments": {"city": "Paris"}', "not_json"),  # truncated
    ("", "not_json"),
    ('{"city": "Paris"}', "not_calls"),                            # arguments without a call
    ('[{"name": "get_weather"}]', "not_calls"),                     # missing "arguments"
    ('[{"name": "get_weather", "arguments": "Paris"}]', "not_calls"),
    ('[{"name": "get_weather", "arguments": {}}]', "missing_argument"),
    ('[{"name": "get_weather", "arguments": {"city": "Paris", "units": "K"}}]', "unexpected_argument"),
    ('[{"name": "get_weather", "arguments": {"city": "Lyon"}}]', "wrong_value"),
    ('[{"name": "get_time", "arguments": {"city": "Paris"}}]', "wrong_function"),
    ('[]', "wrong_call_count"),
    ('```json\n[{"name": "get_weather", "arguments": {"city": "paris"}}]\n```', "ok"),
])
def test_bad_answers_score_zero_with_their_reason(text, reason):
    expected = [{"get_weather": {"city": ["Paris"], "unit": ["C", ""]}}]
    share, exact, got = calls.score_calls(text, expected)
    assert got == reason and exact == float(reason == "ok") and share == float(reason == "ok")


def test_reasons_are_logged_per_step():
    logged, extra = {}, {}
    reward = calls.function_calls()
    gt = [json.dumps([{"f": {"x": [1]}}])] * 4
    scores = reward([answer("nope"), answer([{"name": "f", "arguments": {"x": 1}}]), answer("{}"), "f(1)"],
                    ground_truth=gt, log_metric=logged.__setitem__, log_extra=extra.__setitem__)
    assert scores == [0.0, 1.0, 0.0, 0.0]
    assert logged["function_calling/not_json_frac"] == 0.5 and logged["function_calling/ok_frac"] == 0.25
    assert logged["function_calling/not_calls_frac"] == 0.25
    assert extra["function_call_reason"] == ["not_json", "ok", "not_calls", "not_json"]


def test_parallel_rows_get_partial_credit_and_the_shadow_does_not(task):
    row = next(r for r in function_calling.offline_rows() if len(json.loads(r["ground_truth"])) >= 2)
    gold = function_calling.gold_calls(row)
    half = answer(gold[:1])
    assert task.reward_funcs["function_calls"]([half], ground_truth=[row["ground_truth"]])[0] == 1 / len(gold)
    assert task.reward_funcs["function_calls_exact"]([half], ground_truth=[row["ground_truth"]]) == [0.0]
    shuffled = answer(list(reversed(gold)))
    assert task.reward_funcs["function_calls_exact"]([shuffled], ground_truth=[row["ground_truth"]]) == [1.0]


def test_validate_and_reward_audit_pass(task):
    from agentgrpo.preflight.audit import audit
    from agentgrpo.preflight.target import resolve

    assert task.validate(n=1000) == []
    report = audit(resolve("function-calling"), n_prompts=60, progress=False)
    assert report["ok"], report["exploits"]


# --- GRPO ------------------------------------------------------------------------------------------------


def test_grpo_steps_score_calls_and_count_bad_answers(tiny_random_dir, tmp_path, task):
    from agentgrpo.training.grpo import build_grpo_trainer

    tiny = long_context_copy(tiny_random_dir, tmp_path / "tiny")
    golds = {}  # question -> [(system prompt, gold answer)]: BFCL asks some questions with other function sets
    for r in function_calling.offline_rows():
        golds.setdefault(r["prompt"][-1]["content"], []).append((r["prompt"][0]["content"],
                                                                 json.dumps(function_calling.gold_calls(r))))

    def script(text: str, i: int) -> str | None:
        if i % 2:
            return [None, "call it with x=1" + END][(i // 2) % 2]  # the model's own tokens; not JSON
        question = text.rsplit("<|im_start|>user\n", 1)[1].split("<|im_end|>")[0]
        return next(gold for system, gold in golds[question] if system in text) + END

    cfg = resolve_plan(None, ["--model", str(tiny), "--task", "function-calling",
                             "--per_device_train_batch_size", "4", "--num_generations", "4",
                             "--max_completion_length", "256", "--max_steps", "2", "--logging_steps", "1",
                             "--save_strategy", "no", "--disable_tqdm", "true", "--doctor_every", "0",
                             "--learning_rate", "1e-3", "--output_dir", str(tmp_path / "run")], cuda_available=False)
    trainer = build_grpo_trainer(cfg, str(tiny))
    trainer.model.generate = ScriptedPolicy(trainer.model, trainer.processing_class, script)
    before = {n: p.detach().clone() for n, p in trainer.model.named_parameters()}
    trainer.train()
    assert any(not torch.equal(before[n], p.detach()) for n, p in trainer.model.named_parameters())
    records = rundir.read_jsonl(tmp_path / "run" / rundir.METRICS)
    assert [r["step"] for r in records] == [1, 2]
    for r in records:
        assert r["rewards/function_calls/mean"] == pytest.approx(0.5)
        assert r["rewards/function_calls_exact/mean"] == pytest.approx(0.5)
        assert r["function_calling/ok_frac"] == pytest.approx(0.5)
        assert r["function_calling/not_json_frac"] == pytest.approx(0.5)
