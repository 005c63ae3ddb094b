"""A hung tool becomes an observation on every path that calls a tool (issue 35, item 1): in a plain dataset
config whose tool never returns on some inputs, `validate`, `check`, `train` (eval before and after,
preflight), `eval` and the preflight all finish and report the calls that timed out."""

from __future__ import annotations

import json
import textwrap
import time

import pytest

from agentgrpo.cli import main

TIMEOUT = 0.1  # seconds per tool call; every path must honour it (the tool sleeps an hour)

TOOLS = '''
import time


def calculate(expression: str) -> str:
    """Evaluate an arithmetic expression.

    Args:
        expression: Integers with + - * and parentheses, for example "12 * 34 + 5".

    Returns:
        The value of the expression.
    """
    if any(op in expression for op in "+-*/"):  # hangs on every real expression; answers a bare number
        time.sleep(3600)
    return expression


def lookup(query: str) -> str:
    """Look something up.

    Args:
        query: What to look up.
    """
    time.sleep(3600)
    return query
'''

REWARDS = '''
def contains_answer(completions, answer, **kwargs):
    """1.0 when the last message holds the gold answer."""
    return [1.0 if gold in (c[-1]["content"] or "") else 0.0 for c, gold in zip(completions, answer)]
'''


@pytest.fixture(scope="module")
def project(tmp_path_factory, calculator):
    root = tmp_path_factory.mktemp("hung-tool")
    with open(root / "data.jsonl", "w") as f:
        for row in calculator.train_problems(40, seed=11):
            f.write(json.dumps({"prompt": row["prompt"], "answer": row["answer"]}) + "\n")  # as the model learned it
    (root / "my_tools.py").write_text(textwrap.dedent(TOOLS))
    (root / "my_rewards.py").write_text(textwrap.dedent(REWARDS))
    return root


def _config(project, tiny_sft_dir, tool="calculate", **extra) -> str:
    import yaml

    config = {"model": str(tiny_sft_dir), "max_steps": 1, "dataset_name": str(project / "data.jsonl"),
              "rewards": [f"{project}/my_rewards.py:contains_answer"], "tools": [f"{project}/my_tools.py:{tool}"],
              "tool_timeout": TIMEOUT, "max_completion_length": 128, "num_generations": 4,
              "per_device_train_batch_size": 4, "eval_size": 4, "eval_modes": ["greedy"], "logging_steps": 1,
              "save_strategy": "no", "doctor_every": 0, "disable_tqdm": True, "seed": 3, **extra}
    path = project / f"{tool}-{len(extra)}-{abs(hash(json.dumps(extra, sort_keys=True))) % 10**6}.yaml"
    path.write_text(yaml.safe_dump(config))
    return str(path)


def _timed(fn, limit: float):
    start = time.monotonic()
    out = fn()
    took = time.monotonic() - start
    assert took < limit, f"took {took:.0f} s: a tool call was waited on"
    return out


def test_validate_reports_a_tool_that_never_returns(project, tiny_sft_dir, capsys):
    status = _timed(lambda: main(["validate", "--config", _config(project, tiny_sft_dir, tool="lookup")]), 120)
    out = capsys.readouterr()
    assert status == 2
    assert f"tool 'lookup': did not return within {TIMEOUT:g} s" in out.out + out.err


def _fake_run(project, tiny_sft_dir, tmp_path):
    """A run directory as `agentgrpo eval` reads one: config.yaml (the plan) and final/ (the model)."""
    import yaml

    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "config.yaml").write_text(yaml.safe_dump(yaml.safe_load(open(_config(project, tiny_sft_dir)))))
    (run_dir / "final").symlink_to(tiny_sft_dir, target_is_directory=True)
    return run_dir


def test_eval_of_a_run_times_out_hung_calls_and_reports_them(project, tiny_sft_dir, tmp_path, capsys):
    run_dir = _fake_run(project, tiny_sft_dir, tmp_path)
    out_file = tmp_path / "eval.json"
    # the tiny model calls `calculate` with an expression, which hangs; the run's tool_timeout ends each call
    status = _timed(lambda: main(["eval", "--model", str(run_dir), "--out", str(out_file)]), 120)
    out = capsys.readouterr().out
    assert status == 0
    res = json.loads(out_file.read_text())["greedy"]
    assert 0 < res["tool_timeouts"] <= round(res["mean_tool_calls"] * res["n"])
    assert f"tool calls timed out {res['tool_timeouts']} (tool_timeout {TIMEOUT:g} s)" in out
    timed_out = [m for s in res["samples"] for m in s["completion"] if m["role"] == "tool"
                 and "timed out after" in str(m["content"])]
    assert timed_out, res["samples"]  # the model saw the timeout as the tool's answer

    status = _timed(lambda: main(["eval", "--model", str(run_dir), "--eval_size", "2", "--samples", "2",
                                  "--k", "1", "--out", str(out_file)]), 120)
    assert status == 0 and "tool calls timed out" in capsys.readouterr().out
    assert json.loads(out_file.read_text())["tool_timeouts"] > 0


def test_a_flag_or_the_default_limits_a_bare_models_eval(project, tiny_sft_dir):
    from agentgrpo.commands.evaluate import _settings
    from agentgrpo.timeouts import DEFAULT_TOOL_TIMEOUT

    class Args:
        task = None
        eval_size = eval_modes = temperature = max_completion_length = max_tool_calling_iterations = None
        seed = tool_timeout = None

    assert _settings(Args(), None)[1].tool_timeout == DEFAULT_TOOL_TIMEOUT
    Args.tool_timeout = 2.5
    assert _settings(Args(), None)[1].tool_timeout == 2.5


def test_check_finishes_and_reports_timeouts(project, tiny_sft_dir, capsys):
    report_path = project / "check.json"
    status = _timed(lambda: main(["check", _config(project, tiny_sft_dir), "--prompts", "3", "--k", "2",
                                  "--no-fidelity", "--json", str(report_path)]), 120)
    out = capsys.readouterr().out
    assert status == 0
    report = json.loads(report_path.read_text())
    assert report["tool_timeouts"]["sampling"] > 0 and report["tool_timeouts"]["tool_timeout"] == TIMEOUT
    assert "TOOL TIMEOUTS:" in out


def test_train_with_preflight_and_eval_before_and_after_finishes(project, tiny_sft_dir, tmp_path, capsys):
    from agentgrpo import rundir

    config = _config(project, tiny_sft_dir, eval_before=True, eval_after=True, preflight=True, train_size=8,
                     runs_dir=str(tmp_path), run_name="hung", strict_preflight=False)  # the audit fails contains_answer
    status = _timed(lambda: main(["train", "--config", config]), 300)
    out = capsys.readouterr().out
    assert status == 0
    run_dir = tmp_path / "hung"
    evals = rundir.read_eval(run_dir)
    assert evals["before"]["greedy"]["tool_timeouts"] > 0 and evals["after"]["greedy"]["tool_timeouts"] > 0
    assert "timed out (tool_timeout 0.1 s)" in out  # eval before and after say how many
    assert "TOOL TIMEOUTS:" in out  # the preflight's signal check says so too
    preflight = json.loads((run_dir / "preflight.json").read_text())
    assert preflight["signal"]["tool_timeouts"]["sampling"] > 0
    records = rundir.read_jsonl(run_dir / rundir.METRICS)
    assert sum(r.get("tools/timeouts", 0) for r in records) > 0  # and training's own, as before


def test_the_audit_replay_times_out_environment_tools(calculator):
    """The reward audit replays a completion's tool calls on a fresh environment: with the limit."""
    import dataclasses
    import sys
    from pathlib import Path

    from agentgrpo.rewards.replay import replay_environments
    from agentgrpo.timeouts import TIMEOUTS

    sys.path.insert(0, str(Path(__file__).parent))
    from hanging_task import TASK

    rows = calculator.train_problems(2, seed=0)
    completions = [calculator.gold_completion(r) for r in rows]
    with TIMEOUTS.apart() as timed_out:
        items = [(i, "", c) for i, c in enumerate(completions)]
        envs = _timed(lambda: replay_environments(TASK, rows, items, TIMEOUT), 30)
    assert envs is not None and len(envs) == 2 and timed_out[0] == 2
    plain = dataclasses.replace(TASK, environment_factory=calculator.environment_factory)
    with TIMEOUTS.apart() as none:
        replay_environments(plain, rows, [(i, "", c) for i, c in enumerate(completions)], TIMEOUT)
    assert none[0] == 0


def test_apart_keeps_the_outer_count():
    from agentgrpo.timeouts import TIMEOUTS

    TIMEOUTS.take()
    TIMEOUTS.add()
    with TIMEOUTS.apart() as inner:
        TIMEOUTS.add()
        TIMEOUTS.add()
    assert inner == [2] and TIMEOUTS.take() == 1


def test_an_eval_inside_training_leaves_trainings_count_alone(calculator, tiny_sft_dir):
    """A rollout counts its timeouts per episode; the count training logs (tools/timeouts) is untouched."""
    import dataclasses
    import sys
    from pathlib import Path

    from agentgrpo.evaluation.rollout import rollout
    from agentgrpo.timeouts import TIMEOUTS
    from agentgrpo.training.models import load_model, load_tokenizer

    sys.path.insert(0, str(Path(__file__).parent))
    from hanging_task import TASK, HangingCalculatorEnv

    class SameSchema(HangingCalculatorEnv):  # the calculator's own schema: the tiny model calls it
        def calculate(self, expression: str) -> str:
            return super().calculate(expression)

        calculate.__doc__ = calculator.environment_factory.calculate.__doc__

    TASK = dataclasses.replace(TASK, environment_factory=SameSchema)
    TIMEOUTS.take()
    TIMEOUTS.add()  # one timeout of the training step in progress
    rows = calculator.train_problems(8, seed=11)[-4:]  # rows the tiny model answers with a tool call
    episodes = _timed(lambda: rollout(load_model(str(tiny_sft_dir)), load_tokenizer(str(tiny_sft_dir)), rows, TASK,
                                      max_completion_length=128, tool_timeout=TIMEOUT), 60)
    assert TIMEOUTS.take() == 1
    assert sum(e.tool_timeouts for e in episodes) == sum(e.tool_calls for e in episodes) > 0  # every call hangs
