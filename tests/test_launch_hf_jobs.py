"""`agentgrpo launch --target hf-jobs` with the Hub API patched: what is submitted, and what is refused."""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from importlib.metadata import version
from pathlib import Path
from types import SimpleNamespace

import pytest

from agentgrpo.cli import main
from agentgrpo.errors import ConfigError
from agentgrpo.launch import bundle as bundle_mod
from agentgrpo.launch import flavors, hf_jobs, hub_io

TOKEN = "hf_secret_token_for_tests_0123456789"


class FakeApi:
    """Records what would be sent to the Hub."""

    def __init__(self, hardware=None):
        self.submitted: list[dict] = []
        self.hardware = hardware

    def run_uv_job(self, **kwargs):
        self.submitted.append(kwargs)
        return SimpleNamespace(id="job-123", url="https://huggingface.co/jobs/me/job-123")

    def list_jobs_hardware(self, token=None):
        if self.hardware is None:
            raise ConnectionError("offline")
        return self.hardware


@pytest.fixture
def hub(monkeypatch, tmp_path):
    api = FakeApi()
    monkeypatch.setattr(hub_io, "api", lambda: api)
    monkeypatch.setattr("huggingface_hub.get_token", lambda: TOKEN)
    monkeypatch.setattr(flavors, "cache_path", lambda: tmp_path / "cache" / "hw.json")
    return api


def launch(tmp_path, *extra):
    return main(["launch", "--config", "demo", "--target", "hf-jobs", "--runs_dir", str(tmp_path / "runs"),
                 "--run_name", "r1", *extra])


def test_submitted_job_runs_the_local_code_with_pinned_deps_and_the_token_as_secret(hub, tmp_path):
    assert launch(tmp_path, "--flavor", "a10g-small") == 0
    (job,) = hub.submitted
    script, bundle = Path(job["script"]), Path(job["script_args"][0])
    # the bundle holds this very agentgrpo source, byte for byte, and the script checks its hash
    root = bundle_mod.package_root()
    with zipfile.ZipFile(bundle) as zf:
        for rel in ("launch/hf_jobs.py", "config.py", "tasks/calculator.py"):
            assert zf.read(f"src/agentgrpo/{rel}") == (root / rel).read_bytes()
        config = zf.read("config.yaml").decode()
    assert f'BUNDLE_SHA256 = "{bundle_mod.hashlib.sha256(bundle.read_bytes()).hexdigest()}"' in script.read_text()
    assert "run_name: r1" in config and "target: local" in config
    # dependencies pinned to what is installed here (local build labels dropped)
    deps = job["dependencies"]
    assert f"trl=={version('trl')}" in deps and f"transformers=={version('transformers')}" in deps
    assert f"torch=={version('torch').split('+')[0]}" in deps
    assert all("+" not in d for d in deps)
    assert job["flavor"] == "a10g-small" and job["timeout"] == "1h"  # 80 steps: the 1 h floor
    assert job["secrets"] == {"HF_TOKEN": TOKEN}
    assert TOKEN not in json.dumps(job["env"]) and TOKEN not in " ".join(job["script_args"])
    assert TOKEN not in script.read_text() and TOKEN not in config
    assert job["labels"]["run_name"] == "r1" and job["labels"]["agentgrpo"] == version("agentgrpo")
    assert (tmp_path / "runs" / "r1" / "launch" / "job.json").exists()


def test_dry_run_prints_the_hf_command_and_submits_nothing(hub, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr("huggingface_hub.get_token", lambda: None)  # a dry run needs no token
    assert launch(tmp_path, "--flavor", "a100-large", "--dry_run") == 0
    out = capsys.readouterr().out
    assert not hub.submitted
    assert "hf jobs uv run --flavor a100-large --timeout 1h" in out and "--secrets HF_TOKEN" in out
    assert f"--with trl=={version('trl')}" in out and "bundle.zip" in out
    assert "# /// script" in out and "--- resolved config ---" in out


def test_missing_token_fails_before_anything_is_built(hub, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr("huggingface_hub.get_token", lambda: None)
    assert launch(tmp_path, "--flavor", "a100-large") == 2
    assert "hf auth login" in capsys.readouterr().err
    assert not hub.submitted and not (tmp_path / "runs").exists()


def test_unknown_flavor_lists_the_valid_ones(hub, tmp_path, capsys):
    assert launch(tmp_path, "--flavor", "a100-larg") == 2
    err = capsys.readouterr().err
    assert "unknown flavor 'a100-larg'" in err and "Did you mean 'a100-large'" in err and "h200x8" in err
    assert not (tmp_path / "runs").exists()


def test_cpu_flavor_for_a_gpu_config_is_refused(hub, tmp_path, capsys):
    code = main(["launch", "--config", "qwen2.5-0.5b-1gpu", "--target", "hf-jobs", "--flavor", "cpu-upgrade",
                 "--runs_dir", str(tmp_path / "runs")])
    assert code == 2
    err = capsys.readouterr().err
    assert "cpu-upgrade has no GPU" in err and "bf16" in err and "use_vllm" in err


def test_flavors_and_prices_from_the_hub_are_cached_for_offline_use(hub, tmp_path):
    acc = SimpleNamespace(quantity="8")
    hub.hardware = [SimpleNamespace(name="h200x8", pretty_name="8x H200", accelerator=acc, unit_cost_usd=0.6,
                                    unit_label="minute"),
                    SimpleNamespace(name="cpu-basic", pretty_name="CPU", accelerator=None, unit_cost_usd=0.000167,
                                    unit_label="minute")]
    table, source = flavors.load_flavors(hub)
    assert "Hub" in source and table["h200x8"].gpus == 8 and table["h200x8"].usd_per_hour == 36.0
    offline, source = flavors.load_flavors(FakeApi(hardware=None))
    assert "cache" in source and offline["h200x8"].usd_per_hour == 36.0


def test_read_calls_retry_transient_errors_and_submission_never_retries(hub):
    calls = []

    def flaky():
        calls.append(1)
        if len(calls) < 3:
            raise ConnectionError("reset by peer")
        return "ok"

    assert hub_io.with_retries(flaky, sleep=lambda s: None) == "ok" and len(calls) == 3
    not_found = Exception("404")
    not_found.response = SimpleNamespace(status_code=404)
    assert not hub_io.is_transient(not_found)
    with pytest.raises(Exception, match="404"):
        hub_io.with_retries(lambda: (_ for _ in ()).throw(not_found), sleep=lambda s: None)

    class Down(FakeApi):
        def run_uv_job(self, **kwargs):
            self.submitted.append(kwargs)
            raise ConnectionError("reset")

    down = Down()
    spec = hf_jobs.JobSpec(script="", dependencies=[], flavor="a10g-small", timeout="1h", labels={})
    with pytest.raises(ConnectionError):
        hub_io.submit(spec, Path("job.py"), Path("bundle.zip"), TOKEN, hf=down)
    assert len(down.submitted) == 1


def test_bundle_carries_user_files_and_refuses_what_a_job_cannot_see(tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    (project / "my_rewards.py").write_text("from helpers import score\n\ndef exact(completions, **kw):\n"
                                           "    return [score(c) for c in completions]\n")
    (project / "helpers.py").write_text("def score(c):\n    return 1.0\n")
    (project / "train.jsonl").write_text('{"prompt": "hi"}\n')
    config = {"task": "calculator", "rewards": [{"name": "my_rewards.py:exact", "weight": 1.0}],
              "dataset": "train.jsonl", "model": "tiny"}
    b = bundle_mod.make_bundle(config, tmp_path / "out", base=project)
    names = set(b.files)
    assert {"user/0/my_rewards.py", "user/0/helpers.py", "user/0/train.jsonl"} <= names
    assert b.config["rewards"][0]["name"] == "user/0/my_rewards.py:exact"
    assert b.config["dataset"] == "user/0/train.jsonl"
    again = bundle_mod.make_bundle(config, tmp_path / "out2", base=project)
    assert again.sha256 == b.sha256  # content-addressed: same inputs, same hash
    with pytest.raises(ConfigError, match="does not exist"):
        bundle_mod.make_bundle({"rewards": ["missing.py:fn"]}, tmp_path / "o3", base=project)
    (project / "my-model").mkdir()
    with pytest.raises(ConfigError, match="local directory"):
        bundle_mod.make_bundle({"model": "my-model"}, tmp_path / "o4", base=project)


def test_the_job_script_runs_the_bundled_code_and_refuses_a_changed_bundle(tmp_path):
    config = {"task": "calculator", "model": "tiny", "run_name": "job", "max_steps": 2, "eval_before": False,
              "eval_after": False, "per_device_train_batch_size": 8, "num_generations": 8, "save_strategy": "no",
              "doctor_every": 0, "use_cpu": True, "bf16": False, "report_to": "none", "logging_steps": 1}
    b = bundle_mod.make_bundle(config, tmp_path / "launch", base=tmp_path)
    script = tmp_path / "launch" / "job.py"
    script.write_text(hf_jobs.job_script(b, hf_jobs.pinned_dependencies(config)))
    job_dir = tmp_path / "job"
    env = {**__import__("os").environ, "AGENTGRPO_JOB_DIR": str(job_dir), "HF_HUB_OFFLINE": "1",
           "AGENTGRPO_JOB_FLAVOR": "cpu-basic"}
    done = subprocess.run([sys.executable, str(script), str(b.path)], env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert f"bundled agentgrpo from {job_dir / 'src' / 'agentgrpo'}" in done.stdout
    run_dir = job_dir / "runs" / "job"
    steps = [json.loads(line)["step"] for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert steps == [1, 2]
    cost = json.loads((run_dir / "cost.json").read_text())
    assert cost["steps"] == 2 and cost["tokens_generated"] > 0 and cost["flavor"] == "cpu-basic"
    assert cost["usd"] is not None and (run_dir / "doctor" / "report.html").exists()
    # a bundle changed after launch is refused before anything runs
    b.path.write_bytes(b.path.read_bytes() + b"x")
    done = subprocess.run([sys.executable, str(script), str(b.path)], env=env, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode != 0 and "not the code that was launched" in done.stderr


CONSOLE = "\n".join(
    f"{{'loss': 0.1, 'grad_norm': 0.5, 'reward': {0.1 + 0.01 * i:.3f}, 'reward_std': 0.3, "
    f"'completions/mean_length': 40.0, 'kl': 0.001, 'entropy': 0.5, 'epoch': {i / 100}}}" for i in range(1, 41))


class JobsApi(FakeApi):
    def __init__(self):
        super().__init__()
        self.cancelled = []

    def fetch_job_logs(self, job_id, namespace=None, follow=False):
        return iter(["Downloading model...", *CONSOLE.splitlines()])

    def inspect_job(self, job_id, namespace=None):
        return SimpleNamespace(status=SimpleNamespace(stage="RUNNING", message=None), flavor="a100-large",
                               url=f"https://huggingface.co/jobs/me/{job_id}")

    def cancel_job(self, job_id, namespace=None):
        self.cancelled.append(job_id)


def test_jobs_status_logs_doctor_and_cancel(monkeypatch, capsys):
    api = JobsApi()
    monkeypatch.setattr(hub_io, "api", lambda: api)
    assert main(["jobs", "status", "j1"]) == 0 and "RUNNING" in capsys.readouterr().out
    assert main(["jobs", "logs", "j1"]) == 0 and "Downloading model" in capsys.readouterr().out
    code = main(["jobs", "doctor", "j1"])
    out = capsys.readouterr().out
    assert code in (0, 1) and "41 log lines of job j1" in out and "report" in out.lower()
    assert main(["jobs", "cancel", "j1"]) == 0 and api.cancelled == ["j1"]
    assert main(["jobs", "status"]) == 2  # no id: a clear error


def test_push_sends_metrics_eval_cost_and_report_next_to_the_model(tmp_path, monkeypatch):
    from agentgrpo.launch import job_entry

    sent = {}

    class Api:
        def create_repo(self, repo_id, **kwargs):
            sent["repo"] = repo_id

        def upload_folder(self, **kwargs):
            sent.update(kwargs)

    monkeypatch.setattr("huggingface_hub.HfApi", Api)
    (tmp_path / "doctor").mkdir()
    for name in ("metrics.jsonl", "eval.json", "cost.json", "doctor/report.html", "config.yaml"):
        (tmp_path / name).write_text("{}")
    job_entry.push_results(tmp_path, "me/model")
    assert sent["repo"] == "me/model" and sent["path_in_repo"] == "agentgrpo"
    assert set(sent["allow_patterns"]) == {"metrics.jsonl", "eval.json", "cost.json", "doctor/report.html",
                                           "config.yaml"}
