"""What a Hugging Face Job runs once the bundle is unpacked: train, price the run, push the results.

Called by the script `hf_jobs.job_script` writes; runs inside the job, from the bundled source.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from agentgrpo import rundir

PUSHED = (rundir.METRICS, rundir.EVAL, rundir.CONFIG, rundir.COST, rundir.CURVES, rundir.COMPLETIONS,
          rundir.LIVE_DOCTOR, "doctor/report.html", "doctor/diagnosis.json")


def run_job(root: Path, args: list[str]) -> int:
    """``agentgrpo train`` on the bundled config, then the doctor's report, the cost, and the push."""
    import agentgrpo
    from agentgrpo.cli import main

    print(f"[agentgrpo] job runs the bundled agentgrpo from {Path(agentgrpo.__file__).parent}", flush=True)
    os.chdir(root)
    config = rundir.read_config(root)
    rc = _train(config, args)
    run_dir = _run_dir(root, config)
    if run_dir is None:
        return rc or 1
    main(["doctor", str(run_dir), "--out", str(run_dir / "doctor")])
    _write_cost(run_dir, os.environ.get("AGENTGRPO_JOB_FLAVOR"))
    if config.get("push_to_hub") and config.get("hub_model_id"):
        push_results(run_dir, config["hub_model_id"])
    return rc


def _train(config: dict, args: list[str]) -> int:
    """``agentgrpo train`` here, or under ``accelerate launch`` with one process per GPU of the flavor."""
    from agentgrpo.cli import main
    from agentgrpo.config import RunConfig

    n = int(config.get("num_processes") or RunConfig.num_processes)
    if n == 1:
        return main(["train", "--config", rundir.CONFIG, *args])
    import subprocess

    from agentgrpo.launch import accelerate_cmd

    cmd = accelerate_cmd.command(rundir.CONFIG, args, n, config.get("accelerate_config"),
                                 accelerate_cmd.visible_gpus())
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(Path.cwd() / "src"),
                                                                     os.environ.get("PYTHONPATH")]))}
    return subprocess.call(cmd, env=env)


def _run_dir(root: Path, config: dict) -> Path | None:
    runs = root / (config.get("runs_dir") or "runs")
    if config.get("run_name") and (runs / config["run_name"]).is_dir():
        return runs / config["run_name"]
    dirs = sorted((p for p in runs.glob("*") if p.is_dir()), key=lambda p: p.stat().st_mtime)
    return dirs[-1] if dirs else None


def _write_cost(run_dir: Path, flavor: str | None) -> None:
    from agentgrpo.launch.cost import run_cost

    cost = run_cost(run_dir, flavor)  # `agentgrpo train` printed the same line
    (run_dir / rundir.COST).write_text(json.dumps(cost, indent=1))


def push_results(run_dir: Path, repo_id: str) -> None:
    """Upload the run's metrics, eval, cost and doctor report next to the pushed model, under ``agentgrpo/``."""
    from huggingface_hub import HfApi

    files = [p for p in PUSHED if (run_dir / p).is_file()]
    api = HfApi()
    api.create_repo(repo_id, exist_ok=True, private=True)
    api.upload_folder(repo_id=repo_id, folder_path=str(run_dir), path_in_repo="agentgrpo", allow_patterns=files,
                      commit_message="agentgrpo: metrics, eval, cost and doctor report")
    print(f"[agentgrpo] pushed {', '.join(files)} to {repo_id}/agentgrpo", flush=True)
