"""Pure builders for a Hugging Face Job: the PEP 723 script, pinned dependencies, the job payload, and the
equivalent ``hf jobs uv run`` command. Nothing here talks to the network (see `hub_io`).

How the job runs exactly the local code: `agentgrpo.launch.bundle` zips this agentgrpo's source, the user's
task/reward/tool files and the resolved config; the script and the bundle are passed to ``run_uv_job`` as
local files, which huggingface_hub uploads to the job's artifacts bucket and mounts in the job. The script
checks the bundle's sha256, unpacks it, puts its ``src/`` first on ``sys.path`` and runs ``agentgrpo
train`` from it. Dependencies are pinned to the versions installed here. ``HF_TOKEN`` goes as a secret.
"""

from __future__ import annotations

import math
import re
import shlex
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, requires, version
from typing import Any

from agentgrpo.launch.bundle import Bundle

PYTHON = "3.12"
SECONDS_PER_STEP = 30.0  # job_timeout's default assumes this per GRPO step on one GPU (set job_timeout to override)
TIMEOUT_MARGIN = 1.5
MIN_TIMEOUT_S = 3600


@dataclass
class JobSpec:
    """Everything `run_uv_job` receives, as plain data."""

    script: str  # the script's text (written to job.py next to the bundle)
    dependencies: list[str]
    flavor: str
    timeout: str
    labels: dict[str, str]
    env: dict[str, str] = field(default_factory=dict)
    secret_names: tuple[str, ...] = ("HF_TOKEN",)
    python: str = PYTHON
    namespace: str | None = None
    script_args: list[str] = field(default_factory=list)  # after the bundle path


def _installed(name: str) -> str | None:
    try:
        return version(name)
    except PackageNotFoundError:
        return None


def _pin(name: str, fallback: str | None = None) -> str:
    """``name==version`` as installed here, local build labels dropped (``2.13.0+cpu`` -> ``2.13.0``).

    >>> _pin("not-a-package-xyz", fallback="not-a-package-xyz>=1")
    'not-a-package-xyz>=1'
    """
    installed = _installed(name)
    if installed is None:
        return fallback or name
    return f"{name}=={installed.split('+')[0]}"


def base_requirements() -> list[str]:
    """agentgrpo's own runtime requirements (no extras), by distribution name."""
    names = []
    for req in requires("agentgrpo") or []:
        if "extra ==" in req:
            continue
        names.append(re.split(r"[<>=!~;\[ ]", req, maxsplit=1)[0])
    return names


def needed_extras(config: dict[str, Any]) -> dict[str, str]:
    """Optional packages the config uses -> the requirement to use when not installed here."""
    extras: dict[str, str] = {}
    if config.get("use_vllm"):
        extras["vllm"] = "vllm>=0.10"
    if config.get("use_peft") or config.get("peft_config"):
        extras["peft"] = "peft>=0.14"
    report_to = config.get("report_to") or []
    for tracker in [report_to] if isinstance(report_to, str) else report_to:
        if tracker in ("trackio", "wandb", "tensorboard"):
            extras[tracker] = tracker
    if config.get("deepspeed") or str(config.get("accelerate_config") or "").startswith("zero"):
        extras["deepspeed"] = "deepspeed"
    return extras


def pinned_dependencies(config: dict[str, Any]) -> list[str]:
    """Every package the job installs, pinned to this machine's versions where installed."""
    deps = [_pin(name) for name in base_requirements()]
    deps += [_pin(name, fallback) for name, fallback in needed_extras(config).items()]
    if not any(d.startswith("huggingface_hub") or d.startswith("huggingface-hub") for d in deps):
        deps.append(_pin("huggingface_hub"))
    return sorted(set(deps), key=str.lower)


def gpu_options(config: dict[str, Any]) -> list[str]:
    """The options of a config that need a GPU."""
    return [k for k in ("bf16", "fp16", "use_vllm") if config.get(k)]


def estimated_seconds(config: dict[str, Any]) -> float:
    """A rough run time: ``max_steps`` x `SECONDS_PER_STEP` (the dry run says so)."""
    steps = config.get("max_steps") or 0
    return max(steps, 1) * SECONDS_PER_STEP


def default_timeout(config: dict[str, Any]) -> str:
    """A job timeout that fits the run: 1.5x the estimate, at least an hour, in whole hours.

    >>> default_timeout({"max_steps": 80}), default_timeout({"max_steps": 300}), default_timeout({"max_steps": 2000})
    ('1h', '4h', '25h')
    """
    seconds = max(estimated_seconds(config) * TIMEOUT_MARGIN, MIN_TIMEOUT_S)
    return f"{math.ceil(seconds / 3600)}h"


def timeout_seconds(timeout: str | int | float) -> float:
    """Seconds in a Jobs timeout (``300``, ``"90m"``, ``"3h"``, ``"1d"``); ValueError when malformed.

    >>> timeout_seconds("90m"), timeout_seconds(300), timeout_seconds("2h")
    (5400.0, 300.0, 7200.0)
    """
    if isinstance(timeout, int | float) and not isinstance(timeout, bool):
        return float(timeout)
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*", str(timeout))
    if not match:
        raise ValueError(f"job_timeout: {timeout!r} is not a duration; use e.g. 3600, '90m', '4h' or '1d'")
    return float(match.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}[match.group(2)]


def job_script(bundle: Bundle, dependencies: list[str]) -> str:
    """The PEP 723 script the job runs: check the bundle, unpack it, run the bundled agentgrpo."""
    deps = "\n".join(f'#   "{d}",' for d in dependencies)
    version_ = bundle.manifest.get("agentgrpo", "?")
    git = bundle.manifest.get("git", {})
    origin = f"git {git['commit'][:12]}{' + uncommitted changes' if git.get('uncommitted_changes') else ''}" \
        if git.get("commit") else "no git checkout"
    return f'''# /// script
# requires-python = ">=3.11"
# dependencies = [
{deps}
# ]
# ///
"""agentgrpo {version_} ({origin}) as a Hugging Face Job, built by `agentgrpo launch --target hf-jobs`.

Usage (what `agentgrpo launch` submits): hf jobs uv run ... job.py bundle.zip [--option value ...]
The bundle holds the exact local code and config; its sha256 is checked before anything runs.
"""

import hashlib
import os
import sys
import zipfile
from pathlib import Path

BUNDLE_SHA256 = "{bundle.sha256}"


def main(argv: list[str]) -> int:
    bundle = Path(argv[0])
    digest = hashlib.sha256(bundle.read_bytes()).hexdigest()
    if digest != BUNDLE_SHA256:
        sys.exit(f"bundle {{bundle}} has sha256 {{digest}}, expected {{BUNDLE_SHA256}}: not the code that was launched")
    root = Path(os.environ.get("AGENTGRPO_JOB_DIR", "/tmp/agentgrpo-job"))
    with zipfile.ZipFile(bundle) as zf:
        zf.extractall(root)
    sys.path.insert(0, str(root / "src"))
    from agentgrpo.launch.job_entry import run_job

    return run_job(root, argv[1:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
'''


def build_job_spec(config: dict[str, Any], bundle: Bundle, *, flavor: str, timeout: str | None = None,
                   namespace: str | None = None, extra_args: list[str] | None = None) -> JobSpec:
    """The job for ``config`` (resolved, as `ResolvedConfig.to_dict()` gives it) and its ``bundle``."""
    deps = pinned_dependencies(config)
    run_name = str(config.get("run_name") or "agentgrpo-run")
    labels = {"agentgrpo": bundle.manifest.get("agentgrpo", "?"), "run_name": _label(run_name),
              "task": _label(str(config.get("task", "")).rsplit(":", 1)[-1]), "bundle": bundle.sha256[:12]}
    env = {"AGENTGRPO_JOB_FLAVOR": flavor, "PYTHONUNBUFFERED": "1"}
    return JobSpec(script=job_script(bundle, deps), dependencies=deps, flavor=flavor,
                   timeout=timeout or default_timeout(config), labels=labels, env=env, namespace=namespace,
                   script_args=list(extra_args or []))


def _label(text: str) -> str:
    """A label value the Hub accepts: letters, digits, ``-_.``; at most 63 characters.

    >>> _label("calc run/1 @ 3:00")
    'calc-run-1-3-00'
    """
    return re.sub(r"-+", "-", re.sub(r"[^A-Za-z0-9_.-]", "-", text)).strip("-")[:63] or "none"


def hf_cli_command(spec: JobSpec, script_path: str, bundle_path: str) -> str:
    """The ``hf jobs uv run`` command that submits the same job (the token read from your environment)."""
    parts = ["hf", "jobs", "uv", "run", "--flavor", spec.flavor, "--timeout", spec.timeout,
             "--python", spec.python]
    if spec.namespace:
        parts += ["--namespace", spec.namespace]
    for name in spec.secret_names:
        parts += ["--secrets", name]
    for key, value in spec.env.items():
        parts += ["--env", f"{key}={value}"]
    for key, value in spec.labels.items():
        parts += ["--label", f"{key}={value}"]
    for dep in spec.dependencies:
        parts += ["--with", dep]
    parts += [script_path, bundle_path, *spec.script_args]
    return shlex.join(parts)


def run_uv_job_kwargs(spec: JobSpec, script_path: str, bundle_path: str, token: str) -> dict[str, Any]:
    """Keyword arguments for ``HfApi.run_uv_job``: secrets carry the token, never ``env`` or argv."""
    return {
        "script": script_path,
        "script_args": [bundle_path, *spec.script_args],
        "dependencies": spec.dependencies,
        "python": spec.python,
        "env": dict(spec.env),
        "secrets": {name: token for name in spec.secret_names},
        "flavor": spec.flavor,
        "timeout": spec.timeout,
        "labels": dict(spec.labels),
        "namespace": spec.namespace,
        "token": token,
    }
