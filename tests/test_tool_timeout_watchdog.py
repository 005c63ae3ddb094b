"""A tool that blocks ends after its time limit as an observation; a step that never ends trips the watchdog."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from transformers.utils import get_json_schema

from agentgrpo import rundir
from agentgrpo.plan import load_config
from agentgrpo.tasks.calculator import CalculatorEnv
from agentgrpo.training.grpo import build_grpo_trainer
from agentgrpo.training.tool_timeout import TIMEOUTS, ToolTimeout, timed_environment_factory
from agentgrpo.training.watchdog import EXIT_STATUS, STACKS

HERE = Path(__file__).parent
SMALL = [
    "--model",
    "tiny",
    "--per_device_train_batch_size",
    "16",
    "--num_generations",
    "8",
    "--max_completion_length",
    "48",
    "--logging_steps",
    "1",
    "--save_strategy",
    "no",
    "--disable_tqdm",
    "true",
    "--doctor_every",
    "0",
    "--max_steps",
    "2",
    "--seed",
    "3",
]


def test_timed_tools_keep_their_schema_and_results_and_time_out():
    env = timed_environment_factory(CalculatorEnv, 2.0)()
    assert isinstance(env, CalculatorEnv)
    assert get_json_schema(env.calculate) == get_json_schema(CalculatorEnv().calculate)
    assert env.calculate("12 * 3 + 4") == CalculatorEnv().calculate("12 * 3 + 4")
    sys.path.insert(0, str(HERE))
    from hanging_task import HangingCalculatorEnv

    hanging = timed_environment_factory(HangingCalculatorEnv, 0.2)()
    TIMEOUTS.take()
    start = time.monotonic()
    with pytest.raises(ToolTimeout, match="tool calculate timed out after 0.2 s"):
        hanging.calculate("1 + 1")
    assert time.monotonic() - start < 2.0 and TIMEOUTS.take() == 1
    assert timed_environment_factory(CalculatorEnv, 0) is CalculatorEnv  # 0 = no limit


def test_a_hanging_tool_becomes_an_observation_and_training_goes_on(tiny_sft_dir, tmp_path):
    sys.path.insert(0, str(HERE))
    from hanging_task import TASK

    cfg = load_config(None, [*SMALL, "--tool_timeout", "0.3"], cuda_available=False)
    trainer = build_grpo_trainer(cfg, TASK, str(tiny_sft_dir), tmp_path)
    trainer.train()
    records = rundir.read_jsonl(tmp_path / rundir.METRICS)
    assert [r["step"] for r in records] == [1, 2]
    assert sum(r["tools/timeouts"] for r in records) > 0
    assert all(r["tools/failure_frequency"] == 1.0 for r in records if r["tools/call_frequency"] > 0)


@pytest.mark.timeout(300)
def test_the_watchdog_dumps_stacks_and_fails_a_hung_run(tiny_sft_dir, tmp_path):
    script = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(HERE)!r})
        from hanging_task import TASK
        from agentgrpo.plan import load_config
        from agentgrpo.training.grpo import build_grpo_trainer
        cfg = load_config(None, {[*SMALL, "--tool_timeout", "0", "--step_timeout", "20"]!r}, cuda_available=False)
        build_grpo_trainer(cfg, TASK, {str(tiny_sft_dir)!r}, __import__("pathlib").Path({str(tmp_path)!r})).train()
    """)
    start = time.monotonic()
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=240)
    assert done.returncode == EXIT_STATUS, done.stderr[-3000:]
    assert "WATCHDOG: no training step finished" in done.stderr
    stacks = (tmp_path / STACKS).read_text()
    assert "hanging_task.py" in stacks and "in calculate" in stacks  # the stack names the hung tool
    assert time.monotonic() - start < 200
