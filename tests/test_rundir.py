"""The run directory keeps everything, even when a run is killed mid-write."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

from agentgrpo import rundir


def test_read_jsonl_stops_at_a_partial_last_line(tmp_path):
    path = tmp_path / "metrics.jsonl"
    rundir.append_jsonl(path, {"step": 1, "reward": 0.5})
    rundir.append_jsonl(path, {"step": 2, "reward": 0.6})
    with open(path, "a") as f:
        f.write('{"step": 3, "rew')  # killed mid-write
    assert [r["step"] for r in rundir.read_jsonl(path)] == [1, 2]


def _kill_after(cmd: list[str], metrics, steps: int, env: dict, poll: float) -> None:
    """Start ``cmd``, SIGKILL it once ``metrics`` holds ``steps`` records (at most 240 s)."""
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    try:
        deadline = time.time() + 240
        while time.time() < deadline and len(rundir.read_jsonl(metrics)) < steps:
            assert proc.poll() is None, "training exited before it was killed"
            time.sleep(poll)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()


def test_metrics_survive_a_killed_run(tiny_sft_dir, tmp_path):
    """SIGKILL a real training process; every step it logged is on disk and parses."""
    cmd = [sys.executable, "-m", "agentgrpo.cli", "train", "--config", "demo", "--model", str(tiny_sft_dir),
           "--runs_dir", str(tmp_path), "--run_name", "killed", "--eval_before", "false", "--max_steps", "200",
           "--per_device_train_batch_size", "16", "--save_strategy", "no", "--doctor_every", "0"]
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    metrics = tmp_path / "killed" / rundir.METRICS
    _kill_after(cmd, metrics, 3, env, poll=0.5)
    lines = metrics.read_text().splitlines()
    records = [json.loads(line) for line in lines if line.strip()]
    assert len(records) >= 3
    assert [r["step"] for r in records] == list(range(1, len(records) + 1))
    assert all("reward" in r for r in records)


def test_a_killed_run_resumed_has_each_step_exactly_once(tiny_sft_dir, tmp_path):
    """SIGKILL mid-training after a checkpoint, then --resume: every step 1..N once, eval and curves once."""
    base = [sys.executable, "-m", "agentgrpo.cli", "train", "--config", "demo", "--model", str(tiny_sft_dir),
            "--runs_dir", str(tmp_path), "--run_name", "r", "--eval_before", "false", "--max_steps", "10",
            "--per_device_train_batch_size", "16", "--save_steps", "3", "--doctor_every", "0", "--eval_size", "8"]
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    run_dir = tmp_path / "r"
    _kill_after(base, run_dir / rundir.METRICS, 5, env, poll=0.2)
    killed_at = len(rundir.read_jsonl(run_dir / rundir.METRICS))
    assert 5 <= killed_at < 10 and rundir.last_checkpoint(run_dir) is not None
    done = subprocess.run([*base, "--resume", "true"], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    steps = [r["step"] for r in rundir.read_jsonl(run_dir / rundir.METRICS)]
    assert steps == list(range(1, 11))
    evals = json.loads((run_dir / rundir.EVAL).read_text())
    assert list(evals) == ["after"] and (run_dir / rundir.CURVES).exists()
    assert done.stdout.count("held-out eval (after)") == 1
