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


def test_metrics_survive_a_killed_run(tiny_sft_dir, tmp_path):
    """SIGKILL a real training process; every step it logged is on disk and parses."""
    cmd = [sys.executable, "-m", "agentgrpo.cli", "train", "--config", "demo", "--model", str(tiny_sft_dir),
           "--runs_dir", str(tmp_path), "--run_name", "killed", "--eval_before", "false", "--max_steps", "200",
           "--per_device_train_batch_size", "16", "--save_strategy", "no", "--doctor_every", "0"]
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    metrics = tmp_path / "killed" / rundir.METRICS
    try:
        deadline = time.time() + 240
        while time.time() < deadline and len(rundir.read_jsonl(metrics)) < 3:
            assert proc.poll() is None, "training exited before it was killed"
            time.sleep(0.5)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    lines = metrics.read_text().splitlines()
    records = [json.loads(line) for line in lines if line.strip()]
    assert len(records) >= 3
    assert [r["step"] for r in records] == list(range(1, len(records) + 1))
    assert all("reward" in r for r in records)
