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
from agentgrpo.plan import resolve_plan
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
    cfg = resolve_plan(None, [*SMALL, "--tool_timeout", "0.3", "--task", "hanging_task:TASK",
                              "--output_dir", str(tmp_path)], cuda_available=False)
    trainer = build_grpo_trainer(cfg, str(tiny_sft_dir))
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
        from agentgrpo.plan import resolve_plan
        from agentgrpo.training.grpo import build_grpo_trainer
        cfg = resolve_plan(None, {[*SMALL, "--tool_timeout", "0", "--step_timeout", "20", "--task", "hanging_task:TASK",
                                   "--output_dir", str(tmp_path)]!r}, cuda_available=False)
        build_grpo_trainer(cfg, {str(tiny_sft_dir)!r}).train()
    """)
    start = time.monotonic()
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=240)
    assert done.returncode == EXIT_STATUS, done.stderr[-3000:]
    assert "WATCHDOG: no training step finished" in done.stderr
    stacks = (tmp_path / STACKS).read_text()
    assert "hanging_task.py" in stacks and "in calculate" in stacks  # the stack names the hung tool
    assert time.monotonic() - start < 200


@pytest.mark.timeout(300)
def test_a_train_that_raises_disarms_its_watchdog(tiny_sft_dir, tmp_path):
    """Issue 35, item 6: a ``train()`` that raised left its watchdog armed (TRL calls ``on_train_end`` only on
    a normal end), and ``step_timeout`` seconds later it ended the whole process with status 3: the test
    suite died mid-run, with no summary, about 30 minutes after a test that expected an error from
    ``train()``. Here the process must outlive the step timeout after the error."""
    script = textwrap.dedent(f"""
        import time
        from transformers import TrainerCallback
        from agentgrpo.plan import resolve_plan
        from agentgrpo.training import watchdog
        from agentgrpo.training.grpo import build_grpo_trainer

        class Fails(TrainerCallback):
            def on_step_begin(self, args, state, control, **kwargs):
                assert len(watchdog.running()) == 1  # armed while training
                raise RuntimeError("the planted error")

        cfg = resolve_plan(None, {[*SMALL, "--step_timeout", "1", "--output_dir", str(tmp_path)]!r},
                           cuda_available=False)
        trainer = build_grpo_trainer(cfg, {str(tiny_sft_dir)!r}, callbacks=[Fails()])
        try:
            trainer.train()
        except RuntimeError as exc:
            print("raised:", exc, flush=True)
        assert watchdog.running() == [], watchdog.running()
        time.sleep(3)  # three step timeouts: an armed watchdog would end the process with status 3 here
        print("outlived the step timeout", flush=True)
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, (done.returncode, done.stderr[-3000:])
    assert "raised: the planted error" in done.stdout and "outlived the step timeout" in done.stdout, done.stdout
    assert not (tmp_path / STACKS).exists()


def test_the_watchdog_watches_every_train_call_and_stops_at_once(tmp_path):
    """A second ``train()`` on the same trainer (a heal's resume) is watched too (a stopped watchdog's event
    stayed set, so the second thread ended at once and never fired), and ``stop`` returns only once the
    thread has ended."""
    from types import SimpleNamespace

    from agentgrpo.training.watchdog import Watchdog, running

    fired = []
    dog = Watchdog(tmp_path, timeout=0.2, poll=0.02, exit=fired.append)
    state = SimpleNamespace(global_step=0)
    dog.on_train_begin(None, state, None)
    assert running() == [dog]
    dog.on_train_end(None, state, None)
    assert running() == [] and fired == []
    dog.on_train_begin(None, state, None)
    deadline = time.monotonic() + 10
    while not fired and time.monotonic() < deadline:
        time.sleep(0.02)
    dog.stop()
    assert fired == [EXIT_STATUS] and running() == []
