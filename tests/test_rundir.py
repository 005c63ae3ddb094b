"""The run directory keeps everything, even when a run is killed mid-write."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time

import pytest
import yaml

from agentgrpo import rundir


def test_read_jsonl_stops_at_a_partial_last_line(tmp_path):
    path = tmp_path / "metrics.jsonl"
    rundir.append_jsonl(path, {"step": 1, "reward": 0.5})
    rundir.append_jsonl(path, {"step": 2, "reward": 0.6})
    with open(path, "a") as f:
        f.write('{"step": 3, "rew')  # killed mid-write
    assert [r["step"] for r in rundir.read_jsonl(path)] == [1, 2]


@pytest.mark.parametrize("seed", range(30))
def test_read_jsonl_reads_what_json_reads_line_by_line(tmp_path, seed):
    """The one JSONL reader against plain `json` on generated logs: whole records, blank lines, a line that is
    not an object, a corrupt line, a cut last line; every JSON object line is read, in order, nothing else."""
    rng = random.Random(seed)
    lines = []
    for step in range(rng.randint(0, 40)):
        record = {"step": step, "reward": round(rng.uniform(-1, 1), 4), "nested": {"a": [rng.random(), None]},
                  "text": rng.choice(["", "x", "ünï", "a\\nb"])}
        lines.append(json.dumps(record))
        if rng.random() < 0.1:
            lines.append(rng.choice(["", "   ", "[1, 2]", "3", '{"step": ', "not json", '{"n": ' + "9" * 5000 + "}"]))
    if lines and rng.random() < 0.5:
        lines[-1] = lines[-1][: rng.randint(1, len(lines[-1]))]  # killed mid-write
    path = tmp_path / "metrics.jsonl"
    path.write_text("\n".join(lines) + rng.choice(["", "\n"]), encoding="utf-8")
    expected = []
    for line in lines:
        try:
            value = json.loads(line)
        except ValueError:  # JSONDecodeError, or an integer past Python's digit limit
            continue
        if isinstance(value, dict):
            expected.append(value)
    assert rundir.read_jsonl(path) == expected
    assert rundir.read_jsonl(tmp_path / "absent.jsonl") == []


@pytest.mark.parametrize("seed", range(20))
def test_checkpoints_are_the_complete_checkpoint_folders_by_step(tmp_path, seed):
    """The one checkpoint scanner against a plain listing: checkpoint-N folders (N digits), by step;
    complete ones hold trainer_state.json; files and other names are not checkpoints."""
    rng = random.Random(seed)
    made = {}
    for _ in range(rng.randint(0, 12)):
        name = rng.choice([f"checkpoint-{rng.randint(0, 500)}", "checkpoint-x", "checkpoint-", "ckpt-3",
                           f"checkpoint-{rng.randint(0, 9)}-old", "final"])
        folder = tmp_path / name
        if folder.is_file() or (rng.random() < 0.15 and not folder.exists()):
            folder.write_text("a file")
            continue
        folder.mkdir(exist_ok=True)
        complete = rng.random() < 0.7
        if complete:
            (folder / rundir.TRAINER_STATE).write_text("{}")
        made[name] = made.get(name, False) or complete
    steps = {name: int(name.split("-", 1)[1]) for name in made
             if name.startswith("checkpoint-") and name.split("-", 1)[1].isdigit()}
    assert rundir.checkpoints(tmp_path) == sorted((steps[n], tmp_path / n) for n in steps if made[n])
    assert rundir.checkpoints(tmp_path, complete_only=False) == sorted((steps[n], tmp_path / n) for n in steps)
    run = tmp_path / "run"
    (run / rundir.CHECKPOINTS).mkdir(parents=True)
    for n in steps:
        (run / rundir.CHECKPOINTS / n).mkdir()
    last = max(steps.items(), key=lambda kv: kv[1], default=None)
    assert rundir.last_checkpoint(run) == (run / rundir.CHECKPOINTS / last[0] if last else None)


def test_config_is_read_as_written_and_a_bad_one_is_noted(tmp_path):
    config = {"task": "calculator", "rewards": [{"name": "correct_answer", "weight": 0}], "learning_rate": 1e-6,
              "max_completion_length": 64}
    rundir.write_config(tmp_path, config)
    assert rundir.read_config(tmp_path) == config == rundir.read_config(tmp_path, notes=[])
    assert [p.name for p in tmp_path.iterdir()] == [rundir.CONFIG]  # no temporary file left
    assert rundir.read_config(tmp_path / "absent") == {}
    (tmp_path / rundir.CONFIG).write_text("- a list\n")
    notes = []
    assert rundir.read_config(tmp_path, notes) == {}
    assert notes == [f"{rundir.CONFIG}: not a mapping; reward weights unknown"]
    (tmp_path / rundir.CONFIG).write_text("a: [unclosed\n")
    notes = []
    assert rundir.read_config(tmp_path, notes) == {} and "unreadable" in notes[0]
    with pytest.raises(yaml.YAMLError):
        rundir.read_config(tmp_path)


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
