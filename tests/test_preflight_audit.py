"""The reward audit flags planted exploitable rewards, passes the built-in ones, and says what it could not run."""

from __future__ import annotations

import dataclasses
import json
import re
import subprocess
import sys
import time

import pytest

from agentgrpo.errors import UserError
from agentgrpo.preflight.audit import audit, format_audit
from agentgrpo.preflight.probes import PROBES
from agentgrpo.preflight.target import Target, build_reward_set, resolve
from agentgrpo.rewards import RewardSet
from agentgrpo.rewards._text import assistant_text, completion_text
from agentgrpo.tasks.calculator import correct_answer


def _target(task, *named):
    return Target(task=task, rewards=RewardSet.from_functions(list(named)), source="test")


def any_number(completions, answer, **kwargs):
    """Planted: credits the gold number appearing anywhere in the assistant's text."""
    return [1.0 if re.search(rf"(?<!\d){a}(?!\d)", assistant_text(c)) else 0.0 for c, a in zip(completions, answer)]


def format_only(completions, **kwargs):
    """Planted: credits a bare integer, right or wrong."""
    return [1.0 if re.fullmatch(r"\s*-?\d+\s*", completion_text(c)) else 0.0 for c in completions]


def trusts_claim(completions, answer, **kwargs):
    """Planted: a correct answer, or the model saying the tests passed."""
    right = correct_answer(completions, answer=answer)
    return [1.0 if r or "tests passed" in completion_text(c).lower() else 0.0 for r, c in zip(right, completions)]


def _exploits(report):
    return {e["probe"] for e in report["exploits"]}


def test_credit_for_any_number_is_flagged_by_many_candidates(calculator):
    report = audit(_target(calculator, ("any_number", 1.0, any_number)), n_prompts=20, progress=False)
    assert not report["ok"]
    assert {"many_candidates_numbers", "many_candidates_or"} <= _exploits(report)
    example = next(e for e in report["exploits"] if e["probe"] == "many_candidates_numbers")["example"]
    assert example["total"] == 1.0 and example["completion"][-1]["role"] == "assistant"
    assert "many_candidates_numbers" in format_audit(report) and "FAIL" in format_audit(report)


def test_format_only_reward_is_flagged_by_right_format_wrong_answer(calculator):
    report = audit(_target(calculator, ("format_only", 1.0, format_only)), n_prompts=20, progress=False)
    assert "right_format_wrong_answer" in _exploits(report)
    # and the same reward as a small bonus beside a sound one: reported alone, not failing the total
    mixed = audit(
        _target(calculator, ("correct", 1.0, correct_answer), ("format_only", 0.1, format_only)),
        n_prompts=20,
        progress=False,
    )
    assert mixed["ok"] and not mixed["exploits"]
    assert ("format_only", "right_format_wrong_answer") in {(a["reward"], a["probe"]) for a in mixed["alone"]}


def test_reward_trusting_a_success_claim_is_flagged(calculator):
    report = audit(_target(calculator, ("trusts_claim", 1.0, trusts_claim)), n_prompts=20, progress=False)
    assert _exploits(report) == {"success_claim"}


def test_reward_reading_tool_messages_is_flagged(calculator):
    def anywhere(completions, answer, **kwargs):
        return [1.0 if any(str(a) in str(m.get("content")) for m in c) else 0.0 for c, a in zip(completions, answer)]

    report = audit(_target(calculator, ("anywhere", 1.0, anywhere)), n_prompts=10, progress=False)
    assert {"answer_in_tool_message_only", "fake_tool_result", "many_candidates_numbers"} <= _exploits(report)


@pytest.mark.parametrize("name", ["calculator"])
def test_every_builtin_task_passes_its_own_audit(name):
    from agentgrpo.tasks import task_names

    assert name in task_names()
    for task_name in task_names():  # any task added later is audited too
        try:
            report = audit(resolve(task_name), n_prompts=30, progress=False)
        except UserError as exc:  # Hub data (MBPP, BFCL): offline it says which shipped task to use instead
            offline = {"coding-mbpp": "use task 'coding'", "function-calling-hub": "use task 'function-calling'"}
            assert offline.get(task_name, "\0") in str(exc), exc
            continue
        assert report["ok"], format_audit(report)
        assert report["gold"]["available"] and not report["gold"]["problems"]
        ran = {p["probe"] for p in report["probes"] if p["ran"]}
        if task_name.startswith("coding"):  # the answer is a program: the code probes apply, not the numeric ones
            assert {"right_format_wrong_answer", "code_early_exit", "code_eq_override"} <= ran
        else:
            expected = {"right_format_wrong_answer", "many_candidates_numbers", "answer_in_tool_message_only"}
            if not report_task_has_tools(task_name):
                expected.discard("answer_in_tool_message_only")  # nothing to put the answer in
            assert expected <= ran, task_name


def report_task_has_tools(task_name: str) -> bool:
    from agentgrpo.tasks import get_task

    return bool(get_task(task_name).tools())


def test_gold_that_is_not_the_max_fails(calculator):
    def prefers_empty(completions, **kwargs):
        return [1.0 if not completion_text(c).strip() else 0.5 for c in completions]

    report = audit(_target(calculator, ("prefers_empty", 1.0, prefers_empty)), n_prompts=5, progress=False)
    assert not report["ok"] and any("outscore the gold" in p for p in report["gold"]["problems"])


def test_shadow_rewards_are_reported_not_trained(calculator):
    rs = build_reward_set(
        [{"name": "correct_answer", "weight": 1.0}, {"name": "tool_call_count", "weight": 0.0}], calculator
    )
    report = audit(Target(task=calculator, rewards=rs, source="test"), n_prompts=5, progress=False)
    assert report["ok"]
    assert [r["shadow"] for r in report["rewards"]] == [False, True]
    probe = next(p for p in report["probes"] if p["probe"] == "answer_in_tool_call_only")
    assert probe["scores"]["tool_call_count"]["mean"] == 1.0 and probe["scores"]["total"]["mean"] == 0.0


def test_task_without_gold_answers_says_which_probes_still_run(calculator):
    def no_gold(row):
        raise NotImplementedError("this task has no reference solutions")

    def rows(n, seed=0):
        return [{k: v for k, v in r.items() if k != "answer"} for r in calculator.train_problems(n, 0)]

    task = dataclasses.replace(calculator, name="nogold", gold_completion=no_gold, train_problems=rows)

    def claim(completions, **kwargs):
        return [1.0 if "passed" in completion_text(c) else 0.0 for c in completions]

    report = audit(_target(task, ("claim", 1.0, claim)), n_prompts=5, progress=False)
    assert not report["gold"]["available"]
    assert report["skipped"]["right_format_wrong_answer"] == "no gold answer"
    ran = {p["probe"] for p in report["probes"] if p["ran"]}
    assert {"empty", "echo_prompt", "many_candidates_numbers", "success_claim", "fake_tool_result"} <= ran
    assert _exploits(report) == {"success_claim", "fake_tool_result"}  # vs the declared maximum (1.0)
    assert any("no gold answer" in n for n in report["notes"])


def test_audit_of_100_prompts_is_fast(calculator):
    start = time.perf_counter()
    report = audit(resolve("calculator"), n_prompts=100, progress=False)
    elapsed = time.perf_counter() - start
    assert report["prompts"] == 100 and elapsed <= 30, elapsed
    assert sum(p["n"] for p in report["probes"] if p["ran"]) >= 100 * 14


def test_every_probe_is_in_trl_completion_shape(calculator):
    from agentgrpo.preflight.audit import _build
    from agentgrpo.preflight.probes import context, gold_of, task_tools

    row = calculator.train_problems(1, 0)[0]
    ctx = context(row, gold_of(calculator, row)[0], task_tools(calculator), False, [], 256)
    items, _ = _build([ctx])
    assert {name for _, name, _ in items} >= {"gold"} | {p.name for p in PROBES if not p.name.startswith("code")}
    for _, _, completion in items:
        assert isinstance(completion, list) and all(m["role"] in ("assistant", "tool") for m in completion)
        for m in completion:
            for call in m.get("tool_calls") or []:
                assert call["type"] == "function" and isinstance(call["function"]["arguments"], dict)
    lookalike = next(c for _, n, c in items if n == "lookalike_digits")[-1]["content"]
    assert not any(ch.isdigit() for ch in lookalike) and len(lookalike) == len(row["answer"])


# --- code rewards -------------------------------------------------------------------------------------


def _code_task(calculator):
    rows = [
        {
            "id": str(i),
            "prompt": [{"role": "user", "content": f"Write add(a, b) (#{i})."}],
            "tests": ["assert add(1, 2) == 3", "assert add(2, 2) == 4"],
        }
        for i in range(3)
    ]

    def gold(row):
        return [{"role": "assistant", "content": "```python\ndef add(a, b):\n    return a + b\n```"}]

    return dataclasses.replace(
        calculator,
        name="add",
        train_problems=lambda n, seed=0: rows[:n],
        gold_completion=gold,
        columns=("id", "prompt", "tests"),
    )


def exit_status_reward(completions, tests, **kwargs):
    """Planted: runs program + tests in a subprocess and trusts exit status 0."""
    from agentgrpo.rewards.code import extract_code

    out = []
    for c, t in zip(completions, tests):
        program = extract_code(completion_text(c)) + "\n" + "\n".join(t)
        done = subprocess.run([sys.executable, "-I", "-c", program], capture_output=True, timeout=20)
        out.append(1.0 if done.returncode == 0 else 0.0)
    return out


def test_code_probes_catch_exit_status_trust_and_not_the_sandboxed_reward(calculator):
    task = _code_task(calculator)
    planted = audit(_target(task, ("exit_status", 1.0, exit_status_reward)), n_prompts=3, progress=False)
    assert {"code_early_exit", "code_eq_override"} <= _exploits(planted)
    sound = audit(
        Target(
            task=task,
            rewards=build_reward_set([{"name": "code_tests_passed", "params": {"workers": 1}}], task),
            source="t",
        ),
        n_prompts=3,
        progress=False,
    )
    assert sound["ok"], format_audit(sound)
    ran = {p["probe"] for p in sound["probes"] if p["ran"]}
    assert {"code_early_exit", "code_eq_override", "right_format_wrong_answer"} <= ran


# --- loading user rewards and the command -------------------------------------------------------------


PLANTED_FILE = """
import re
def any_number(completions, answer, **kwargs):
    text = lambda c: " ".join(str(m.get("content") or "") for m in c)
    return [1.0 if str(a) in text(c) else 0.0 for c, a in zip(completions, answer)]
"""


def test_cli_audits_a_file_reward_with_strict_and_json(tmp_path, capsys):
    from agentgrpo.cli import main

    path = tmp_path / "my_rewards.py"
    path.write_text(PLANTED_FILE)
    out = tmp_path / "audit.json"
    code = main(
        [
            "audit",
            "calculator",
            "--reward",
            f"{path}:any_number",
            "--reward",
            "well_formed=0",
            "--prompts",
            "10",
            "--strict",
            "--json",
            str(out),
        ]
    )
    printed = capsys.readouterr().out
    assert code == 1 and "EXPLOITS" in printed and "well_formed (shadow)" in printed
    data = json.loads(out.read_text())
    assert data["verdict"] == "fail" and data["rewards"][1] == {"name": "well_formed", "weight": 0.0, "shadow": True}
    assert main(["audit", "demo", "--prompts", "10", "--strict"]) == 0


def test_cli_bad_reward_file_is_a_clear_error(tmp_path, capsys):
    from agentgrpo.cli import main

    assert main(["audit", "calculator", "--reward", f"{tmp_path}/missing.py:f"]) == 2
    assert "does not exist" in capsys.readouterr().err
    (tmp_path / "r.py").write_text("def other(completions, **kw):\n    return [0.0] * len(completions)\n")
    assert main(["audit", "calculator", "--reward", f"{tmp_path}/r.py:score=x"]) == 2
    assert "must be a number" in capsys.readouterr().err
    assert main(["audit", "calculator", "--reward", f"{tmp_path}/r.py:score"]) == 2
    assert "it defines: other" in capsys.readouterr().err.lower()


def test_more_prompts_than_the_training_set_audits_all_and_says_so():
    report = audit(resolve("demo", ["--train_size", "5"]), n_prompts=20, progress=False)
    assert report["prompts"] == 5 and report["ok"]
    assert any("training set has 5" in n for n in report["notes"])
    with pytest.raises(Exception, match="--prompts: 0 < 1"):
        audit(resolve("calculator"), n_prompts=0, progress=False)


def test_plain_text_prompts_get_text_completions(calculator):
    rows = [{"id": str(i), "prompt": f"What is {i} + 3?", "answer": str(i + 3)} for i in range(10, 20)]
    task = dataclasses.replace(
        calculator,
        name="plain",
        train_problems=lambda n, seed=0: rows[:n],
        gold_completion=lambda row: [{"role": "assistant", "content": row["answer"]}],
    )
    seen = set()

    def spy(completions, answer, **kwargs):
        seen.update(type(c) for c in completions)
        return any_number(completions, answer)

    report = audit(_target(task, ("spy", 1.0, spy)), n_prompts=10, progress=False)
    assert seen == {str}
    assert "many_candidates_numbers" in _exploits(report)
    assert report["skipped"]["answer_in_tool_message_only"].startswith("plain-text prompts")


def test_the_audit_reports_tests_whose_expected_value_the_program_builds():
    """Issue 34: `agentgrpo audit` lists the tests a program can decide (expected value from its own code)."""
    from types import SimpleNamespace

    from agentgrpo.preflight.audit import forgeable_tests
    from agentgrpo.tasks.coding import hidden_tests_passed

    rows = [
        {"id": "a", "tests": ["assert f(1) == Point(1, 2)", "assert f(2) == 3", "assert isinstance(f(3), Point)"]},
        {"id": "b", "tests": "e = make()\nassert solve(e) == e\nassert solve(1) == 1\nx = 5\nassert solve(x) == x"},
        {"id": "c", "other": ["assert f() == g()"]},  # not a column a reward reads
    ]
    report = forgeable_tests(SimpleNamespace(funcs=[hidden_tests_passed]), rows)
    assert report["tests_checked"] == 6 and report["count"] == 3, report
    assert [(f["id"], f["test"]) for f in report["found"]] == [("a", 0), ("a", 2), ("b", 0)], report
