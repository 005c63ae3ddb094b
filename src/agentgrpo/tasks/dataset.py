"""A plain dataset as a task, TRL-style: a ``prompt`` column, reward functions by name, optional tools.

    dataset_name: data/train.jsonl       # or a Hub dataset name, a directory, a csv/parquet file
    rewards: [my_rewards.py:score, {name: tags_format, weight: 0.1}]
    tools: [my_tools.py:search]          # optional: TRL's tools= ; or environment: my_env.py:Env

A string prompt becomes one user message (so the chat template and the tools apply). Columns other than
``prompt`` reach the reward functions as keyword arguments, as in TRL. Held-out eval uses
``dataset_test_split`` when given, else the last ``eval_size`` rows (at most a fifth), never trained on.
"""

from __future__ import annotations

import os
import random
from pathlib import Path

from agentgrpo.errors import UserError
from agentgrpo.tasks.base import Task

FILE_BUILDERS = {".json": "json", ".jsonl": "json", ".csv": "csv", ".parquet": "parquet"}


def task_for(options) -> Task:
    """The config's task: a named task, or a dataset task from ``dataset_name`` / a Python `Dataset`."""
    from agentgrpo.tasks import get_task

    run = options.run
    has_data = run.dataset_name is not None or options.objects.get("train_dataset") is not None
    if not has_data:
        if run.tools or run.environment:
            raise UserError(
                "tools / environment: these give a dataset run its tools; a task brings its own "
                "environment. Drop them, or use dataset_name instead of task."
            )
        return get_task(run.task or "calculator")
    if run.task is not None:
        raise UserError(f"task: {run.task!r} and a dataset were both given; a run trains on one of them.")
    return dataset_task(options)  # the plan trains on every row (task.size) unless train_size is given


def dataset_task(options) -> Task:
    run = options.run
    train, test = _datasets(options)
    if run.rewards is None:
        raise UserError(
            "rewards: a dataset run needs its reward functions, e.g. rewards: [my_rewards.py:score] "
            "or a library reward (`agentgrpo ls rewards`)."
        )
    train_rows = _rows(train, "train")
    if test is not None:
        eval_rows = _rows(test, "test")
    else:
        held = min(run.eval_size, len(train_rows) // 5)
        if held < 1 and (run.eval_before or run.eval_after):
            raise UserError(
                f"dataset_name: {len(train_rows)} rows leave none to hold out for eval; give "
                "dataset_test_split, or eval_before: false and eval_after: false."
            )
        train_rows, eval_rows = train_rows[: len(train_rows) - held], train_rows[len(train_rows) - held :]
    tools = tuple(_load(t, "tool") for t in run.tools or [])
    env = _load(run.environment, "environment") if run.environment else None
    if env is not None and not (isinstance(env, type) or callable(env)):
        raise UserError(f"environment: {run.environment!r} is not a class or factory.")
    name = f"dataset:{_label(run.dataset_name)}"
    task = Task(
        name=name,
        version=1,
        description=f"{len(train_rows)} rows of {_label(run.dataset_name)}",
        environment_factory=env,
        reward_funcs={},
        default_rewards=[],
        train_problems=lambda n, seed: _sample(train_rows, n, seed),
        eval_problems=lambda n: eval_rows[:n],
        success_reward=run.success_reward or "",
        columns=tuple(train_rows[0]),
        tool_functions=tools,
        size=len(train_rows),
    )
    return task


def with_success(task: Task, rewards, wanted: str | None) -> Task:
    """The task with its eval success function: for a dataset task (no rewards of its own) the run's reward
    named ``wanted``, else its first trained one, taken from the run's one `RewardSet`."""
    import dataclasses

    if task.reward_funcs or task.success_func is not None:
        return task
    name = wanted or rewards.trained_names[0]
    if name not in rewards.names:
        raise UserError(f"success_reward: {name!r} is not one of the run's rewards {rewards.names}.")
    return dataclasses.replace(task, success_reward=name, success_func=rewards.funcs[rewards.names.index(name)])


def _label(name: str | None) -> str:
    return Path(name).name if name else "python-dataset"


def _load(reference: str, what: str):
    from agentgrpo.imports import load_object

    obj = load_object(reference, what)
    if not callable(obj):
        raise UserError(f"{what} {reference!r} is a {type(obj).__name__}, not a function or class.")
    return obj


def _datasets(options):
    """(train, test or None) as `datasets.Dataset` objects."""
    run = options.run
    if options.objects.get("train_dataset") is not None:
        if run.dataset_name is not None:
            raise UserError("dataset_name: a Dataset object was passed too; give one of them.")
        return options.objects["train_dataset"], options.objects.get("eval_dataset")
    train = load(run.dataset_name, run.dataset_config, run.dataset_train_split)
    test = load(run.dataset_name, run.dataset_config, run.dataset_test_split) if run.dataset_test_split else None
    return train, test


def load(name: str, config: str | None, split: str):
    """One split of a Hub dataset, a local data file (json/jsonl/csv/parquet) or a dataset directory."""
    from datasets import load_dataset

    path = Path(name).expanduser()
    split_path = Path(split).expanduser()
    try:
        if split_path.suffix in FILE_BUILDERS and split_path.is_file():  # a split given as its own file
            return load_dataset(FILE_BUILDERS[split_path.suffix], data_files=str(split_path), split="train")
        if path.is_file():
            if path.suffix not in FILE_BUILDERS:
                raise UserError(
                    f"dataset_name: {name!r} is a {path.suffix or 'suffix-less'} file; use one of "
                    f"{', '.join(FILE_BUILDERS)}."
                )
            if split != "train":
                raise UserError(
                    f"dataset_train_split / dataset_test_split: a single file has only the 'train' "
                    f"split, not {split!r}; give the test split as its own file path."
                )
            return load_dataset(FILE_BUILDERS[path.suffix], data_files=str(path), split="train")
        if path.is_dir():
            return load_dataset(str(path), config, split=split)
        if name.startswith((".", "/", "~")) or name.endswith(tuple(FILE_BUILDERS)):
            raise UserError(f"dataset_name: {name!r} does not exist (relative to {Path.cwd()}).")
        return load_dataset(name, config, split=split)
    except UserError:
        raise
    except Exception as exc:
        raise UserError(_load_error(name, split, exc, split_path if split_path.is_file() else path)) from exc


def _load_error(name: str, split: str, exc: Exception, path: Path | None = None) -> str:
    bad = _bad_json_line(path) if path is not None and path.is_file() else None
    if bad is not None:
        return f"dataset_name: {bad}; fix or remove that line."
    text = f"dataset_name: cannot load {name!r} split {split!r} ({type(exc).__name__}: {str(exc)[:300]})"
    if _offline() and not (path is not None and path.exists()):
        text += (
            ". HF_HUB_OFFLINE / HF_DATASETS_OFFLINE is set, so only a locally cached copy can load: download "
            f"it once with network (`hf download {name} --repo-type dataset`), unset HF_HUB_OFFLINE, or "
            "point dataset_name at a local file"
        )
    return text


def _bad_json_line(path: Path) -> str | None:
    """'FILE line N: not valid JSON (...)' for the first malformed line of a JSON Lines file, else None."""
    import json

    if path.suffix != ".jsonl":
        return None
    with open(path, encoding="utf-8", errors="replace") as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                value = json.loads(line)
            except json.JSONDecodeError as exc:
                return f"{path} line {number}: not valid JSON ({exc.msg} at column {exc.colno}): {line.strip()[:80]!r}"
            if not isinstance(value, dict):
                return f"{path} line {number}: a JSON {type(value).__name__}, not an object of column: value"
    return None


def _offline() -> bool:
    return any(os.environ.get(v, "").lower() in ("1", "true", "yes") for v in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE"))


def _rows(dataset, which: str) -> list[dict]:
    columns = list(getattr(dataset, "column_names", None) or [])
    if "prompt" not in columns:
        raise UserError(
            f"dataset ({which}): no 'prompt' column (it has {columns}); rename the column holding "
            "the prompt to 'prompt' (dataset.rename_column) or add one."
        )
    rows = [dict(r) for r in dataset]
    if not rows:
        raise UserError(f"dataset ({which}): no rows.")
    for i, row in enumerate(rows):
        if isinstance(row["prompt"], str):
            row["prompt"] = [{"role": "user", "content": row["prompt"]}]
        row.setdefault("id", f"{which}-{i}")
    return rows


def _sample(rows: list[dict], n: int, seed: int) -> list[dict]:
    order = list(range(len(rows)))
    random.Random(seed).shuffle(order)
    return [rows[i] for i in order[: min(n, len(rows))]]
