"""A TRL user's own pieces without a Task class: a plain dataset, rewards and tools from their files,
a task from a file path (issue 8)."""

from __future__ import annotations

import json
import textwrap

import pytest

from agentgrpo import rundir
from agentgrpo.cli import main
from agentgrpo.errors import ConfigError
from agentgrpo.plan import resolve_plan

REWARDS = '''
def contains_answer(completions, answer, **kwargs):
    """1.0 when the last message holds the gold answer."""
    out = []
    for completion, gold in zip(completions, answer):
        text = completion[-1]["content"] if isinstance(completion, list) else completion
        out.append(1.0 if gold in (text or "") else 0.0)
    return out
'''

TOOLS = '''
def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: The first integer.
        b: The second integer.
    """
    return a + b


def broken(query: str) -> str:
    """Look something up.

    Args:
        query: What to look up.
    """
    raise RuntimeError("backend is down")
'''

TASK = """
import dataclasses

from agentgrpo.tasks.calculator import TASK as CALCULATOR

MY_TASK = dataclasses.replace(CALCULATOR, name="my-arithmetic")
"""


@pytest.fixture(scope="module")
def user_dir(tmp_path_factory, calculator):
    """A user's project: data.jsonl (string prompts + answers), my_rewards.py, my_tools.py, my_task.py."""
    root = tmp_path_factory.mktemp("user")
    rows = calculator.train_problems(60, seed=5)
    with open(root / "data.jsonl", "w") as f:
        for row in rows:
            f.write(json.dumps({"prompt": row["prompt"][-1]["content"], "answer": row["answer"]}) + "\n")
    for name, text in (("my_rewards.py", REWARDS), ("my_tools.py", TOOLS), ("my_task.py", TASK)):
        (root / name).write_text(textwrap.dedent(text))
    return root


def dataset_config(user_dir, **extra):
    return {
        "model": "tiny-random",
        "max_steps": 2,
        "dataset_name": str(user_dir / "data.jsonl"),
        "rewards": [f"{user_dir}/my_rewards.py:contains_answer"],
        **extra,
    }


def test_a_task_from_a_file_path_and_a_clear_error_when_missing(user_dir):
    cfg = resolve_plan(
        {"task": f"{user_dir}/my_task.py:MY_TASK", "model": "tiny-random", "max_steps": 2}, cuda_available=False
    )
    assert cfg.task.name == "my-arithmetic"
    with pytest.raises(ConfigError, match=r"defines no 'NOPE'. It defines: .*MY_TASK"):
        resolve_plan(
            {"task": f"{user_dir}/my_task.py:NOPE", "model": "tiny-random", "max_steps": 2}, cuda_available=False
        )
    with pytest.raises(ConfigError, match="does not exist"):
        resolve_plan({"task": "./no_such_file.py:TASK", "model": "tiny-random", "max_steps": 2}, cuda_available=False)


def test_tiny_with_another_task_or_a_plain_dataset_goes_the_path_s_way(user_dir, tmp_path, capsys):
    """'tiny' is accepted wherever its path is (issue 35, item 4): a task from a file and a plain dataset
    validate with it, with a warning that it was SFT'd on the calculator task only."""
    import yaml

    from agentgrpo.tiny.build import SHIPPED_SFT

    for name, data in (("task", {"task": f"{user_dir}/my_task.py:MY_TASK", "max_steps": 2}),
                       ("dataset", dataset_config(user_dir))):
        said = {}
        for model in ("tiny", str(SHIPPED_SFT)):
            path = tmp_path / f"{name}.yaml"
            path.write_text(yaml.safe_dump({**data, "model": model}))
            status = main(["validate", "--config", str(path)])
            said[model] = status, "".join(capsys.readouterr())
        assert said["tiny"][0] == said[str(SHIPPED_SFT)][0] == 0, said
        assert "warning: model: 'tiny' was SFT'd on the calculator task only" in said["tiny"][1]
        assert "'tiny'" not in said[str(SHIPPED_SFT)][1]


def test_validate_calls_each_tool_and_reports_one_that_raises(user_dir):
    tools = [f"{user_dir}/my_tools.py:add", f"{user_dir}/my_tools.py:broken"]
    with pytest.raises(ConfigError) as info:
        resolve_plan(dataset_config(user_dir, tools=tools), cuda_available=False, deep=True)
    (msg,) = info.value.problems
    assert msg.startswith("tool 'broken': raised RuntimeError: backend is down when called with {'query': '1'}")


def test_a_dataset_needs_a_prompt_column_and_rewards(user_dir, tmp_path):
    (tmp_path / "bad.csv").write_text("question,answer\n1+1,2\n")
    with pytest.raises(ConfigError, match="no 'prompt' column .*'question'"):
        resolve_plan({**dataset_config(user_dir), "dataset_name": str(tmp_path / "bad.csv")}, cuda_available=False)
    with pytest.raises(ConfigError, match="rewards: a dataset run needs its reward functions"):
        resolve_plan({**dataset_config(user_dir), "rewards": None}, cuda_available=False)


def test_a_plain_dataset_run_with_a_reward_and_a_tool_from_user_files(user_dir, tmp_path):
    cfg = dataset_config(user_dir, tools=[f"{user_dir}/my_tools.py:add"])
    args = [
        "train",
        "--config",
        str(_yaml(tmp_path, cfg)),
        "--runs_dir",
        str(tmp_path),
        "--run_name",
        "ds",
        "--per_device_train_batch_size",
        "8",
        "--num_generations",
        "4",
        "--max_completion_length",
        "24",
        "--eval_size",
        "8",
        "--eval_modes",
        "[greedy]",
        "--eval_batch_size",
        "8",
        "--save_strategy",
        "no",
        "--doctor_every",
        "0",
        "--eval_before",
        "false",
        "--strict_preflight",  # contains_answer is exploitable (the audit says so); this test trains anyway
        "false",
    ]
    assert main(args) == 0
    run = tmp_path / "ds"
    records = rundir.read_jsonl(run / rundir.METRICS)
    assert [r["step"] for r in records] == [1, 2]
    assert "rewards/contains_answer/mean" in records[0]
    saved = rundir.read_config(run)
    assert saved["train_size"] == 52  # every row but the eval_size=8 held out (at most a fifth)
    assert saved["rewards"] == [
        {"name": f"{user_dir}/my_rewards.py:contains_answer", "weight": 1.0, "alias": "contains_answer"}
    ]
    evals = rundir.read_eval(run)
    assert evals["after"]["greedy"]["n"] == 8


def test_a_python_dataset_object_through_the_api(user_dir, tmp_path):
    from datasets import Dataset

    import agentgrpo

    rows = [json.loads(line) for line in (user_dir / "data.jsonl").read_text().splitlines()]

    def right(completions, answer, **kwargs):
        return [1.0 if a in c[-1]["content"] else 0.0 for c, a in zip(completions, answer)]

    cfg = agentgrpo.validate(
        {"model": "tiny-random", "max_steps": 1, "rewards": [right]}, train_dataset=Dataset.from_list(rows)
    )
    assert cfg.task.size == 60 - 12 and cfg.task.success_reward == "right"


def _yaml(tmp_path, data):
    import yaml

    path = tmp_path / "run.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_a_hub_dataset_while_offline_says_how_to_fix_it(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    with pytest.raises(ConfigError) as info:
        resolve_plan(
            {
                "model": "tiny-random",
                "max_steps": 2,
                "dataset_name": "some-org/not-cached-data",
                "rewards": ["exact_answer"],
            },
            cuda_available=False,
        )
    (msg,) = info.value.problems
    assert msg.startswith("dataset_name: cannot load 'some-org/not-cached-data'") and "HF_HUB_OFFLINE" in msg
    assert "hf download some-org/not-cached-data --repo-type dataset" in msg


ENV = '''
class Lookup:
    """An environment class: TRL's environment_factory, one instance per rollout."""

    def reset(self, **row):
        self.row = row

    def lookup(self, key: str) -> str:
        """Look a key up in the current row.

        Args:
            key: The column name.
        """
        if key not in self.row:
            raise KeyError(key)
        return str(self.row[key])
'''


def test_an_environment_class_from_a_file_is_checked_with_a_sample_call(user_dir):
    (user_dir / "my_env.py").write_text(ENV)
    cfg = dataset_config(user_dir, environment=f"{user_dir}/my_env.py:Lookup")
    resolved = resolve_plan(cfg, cuda_available=False, deep=True)  # key '1' is in no row: a warning only
    assert resolved.warnings == ["tool 'lookup': raised KeyError: '1' when called with {'key': '1'} (a made-up "
                                 "sample input; fine if that input is invalid for it)"]
    task = resolved.task
    assert task.environment_factory.__name__ == "Lookup" and [t.__name__ for t in task.tools()] == ["lookup"]
