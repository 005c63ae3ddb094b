"""The docs say what the code does (issue 35, item 8): the Python snippets of README.md and
docs/dynamic-sampling.md run as written; the README names every extra pyproject.toml declares and
HF_HUB_OFFLINE; docs/tasks.md's task count is what `agentgrpo ls tasks` lists."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FENCED = re.compile(r"```python\n(.*?)```", re.S)
SNIPPETS = [(doc, i, code) for doc in ("README.md", "docs/dynamic-sampling.md")
            for i, code in enumerate(FENCED.findall((ROOT / doc).read_text(encoding="utf-8")))]


def test_there_are_snippets_to_run():
    assert {doc for doc, _, _ in SNIPPETS} == {"README.md", "docs/dynamic-sampling.md"}


@pytest.mark.timeout(900)
@pytest.mark.parametrize("doc, index, code", SNIPPETS, ids=[f"{d}#{i}" for d, i, _ in SNIPPETS])
def test_a_python_snippet_runs_as_written(tmp_path, doc, index, code):
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"}
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=850,
                          env=env)
    assert done.returncode == 0, f"{doc} snippet {index} failed:\n{done.stderr[-3000:]}"
    for run in (tmp_path / "runs").iterdir():  # each snippet's run logged its steps
        records = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
        assert [r["step"] for r in records] == list(range(1, len(records) + 1)) and records, run
        if "DynamicSamplingTrainer" in code:
            assert all("dynamic_sampling/generation_rounds" in r for r in records), records[0].keys()


def test_the_readme_names_every_extra_and_the_offline_flag():
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    table = readme[readme.index("| extra | needed by |"):]
    for name, packages in extras.items():
        if packages:  # `notebook` is kept empty for old install commands
            assert f"| `{name}` |" in table, name
    assert "HF_HUB_OFFLINE=1" in readme


def test_docs_tasks_counts_what_ls_tasks_lists():
    from agentgrpo.tasks import task_names

    text = (ROOT / "docs" / "tasks.md").read_text(encoding="utf-8")
    ok, unavailable, listed = map(int, re.search(r"(\d+) tasks OK, (\d+) unavailable.*?of the (\d+) that "
                                                 r"`agentgrpo ls tasks` lists", text, re.S).groups())
    assert listed == len(task_names()) == ok + unavailable
    assert unavailable == sum(name.endswith("-hub") or name.endswith("-mbpp") for name in task_names())
