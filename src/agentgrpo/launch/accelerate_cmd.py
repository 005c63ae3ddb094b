"""Several processes on one machine through `accelerate launch`: the command, and the checks that must
pass before anything starts (devices, vLLM, batch sizes that divide across processes).

Presets are TRL's own accelerate configs (``trl/accelerate_configs/``: multi_gpu, zero1-3, fsdp1-2, ...);
a path to your own accelerate YAML works too. Without a GPU, processes run on CPU with the gloo backend.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

from agentgrpo.config import as_setting, generation_batch_size


def trl_presets() -> dict[str, Path]:
    """TRL's shipped accelerate configs by name."""
    spec = importlib.util.find_spec("trl")
    if spec is None or not spec.origin:
        return {}
    folder = Path(spec.origin).parent / "accelerate_configs"
    return {p.stem: p for p in sorted(folder.glob("*.yaml"))}


def resolve_preset(preset: str | None) -> Path | None:
    """A preset name or a YAML path -> the file; None for no preset. ValueError for an unknown one."""
    if not preset:
        return None
    path = Path(preset)
    if path.suffix in (".yaml", ".yml") and path.is_file():
        return path
    presets = trl_presets()
    if preset not in presets:
        from agentgrpo.errors import did_you_mean

        raise ValueError(f"accelerate_config: unknown preset {preset!r}. {did_you_mean(preset, presets)} "
                         "(TRL's presets), or a path to your own accelerate YAML.")
    return presets[preset]


def check(setting, num_processes: int, preset: str | None, *, gpus: int, vllm_installed: bool) -> list[str]:
    """Every problem with running a plan on ``num_processes`` processes here, each with its fix
    (``setting``: GRPOConfig name -> the plan's value, or a dict of the fields set: TRL's default elsewhere)."""
    setting = as_setting(setting)
    problems = []
    if num_processes < 1:
        problems.append(f"num_processes: {num_processes} < 1")
        return problems
    try:
        path = resolve_preset(preset)
    except ValueError as exc:
        problems.append(str(exc))
        path = None
    needs_gpu = path is not None and path.stem != "single_gpu" and _preset_needs_gpu(path)
    if gpus == 0 and needs_gpu:
        problems.append(f"accelerate_config: {preset} runs on GPUs, and none is visible here; drop the preset "
                        "to run the processes on CPU (gloo), or launch on a GPU machine / --target hf-jobs.")
    if gpus and num_processes > gpus:
        problems.append(f"num_processes: {num_processes} processes but {gpus} GPU(s) visible; use at most {gpus} "
                        "(one process per GPU) or set CUDA_VISIBLE_DEVICES.")
    cores = os.cpu_count() or 1
    if gpus == 0 and num_processes > cores:
        problems.append(f"num_processes: {num_processes} CPU processes but {cores} cores here; use at most {cores}.")
    if gpus == 0 and num_processes > 1 and not setting("use_cpu"):
        problems.append("use_cpu: several processes without a GPU need use_cpu: true (they then use gloo).")
    if setting("use_vllm") and not vllm_installed:
        problems.append("use_vllm: true but vLLM is not installed: `pip install 'agentgrpo[vllm]'`, or set "
                        "use_vllm: false (generation by transformers, slower).")
    if setting("use_vllm") and gpus == 0:
        problems.append("use_vllm: true needs a CUDA GPU, and none is visible here; set use_vllm: false.")
    n = setting("num_generations")
    gen = generation_batch_size(setting, num_processes)
    if gen % n:
        per = setting("per_device_train_batch_size")
        problems.append(f"per_device_train_batch_size: {per} x {num_processes} processes x steps_per_generation "
                        f"= {gen} completions per generation, which num_generations {n} does not divide; make "
                        f"per_device_train_batch_size x num_processes a multiple of {n}.")
    return problems


def _preset_needs_gpu(path: Path) -> bool:
    import yaml

    data = yaml.safe_load(path.read_text()) or {}
    return not data.get("use_cpu", False) and data.get("distributed_type", "") != "MULTI_CPU"


def command(config_path: str, overrides: list[str], num_processes: int, preset: str | None,
            gpus: int) -> list[str]:
    """The ``accelerate launch`` command line that runs ``agentgrpo train`` on every process.

    Several CPU processes go through accelerate's torchrun launcher (``--multi_gpu``); with ``use_cpu: true``
    (the default without a GPU) each process then joins a gloo process group (accelerate's MULTI_CPU).
    """
    cmd = [sys.executable, "-m", "accelerate.commands.launch", "--num_processes", str(num_processes)]
    path = resolve_preset(preset)
    if path is not None:
        cmd += ["--config_file", str(path)]
    elif num_processes > 1:
        cmd += ["--multi_gpu", "--num_machines", "1", "--dynamo_backend", "no"]
        if gpus == 0:
            cmd += ["--mixed_precision", "no"]
    elif gpus == 0:
        cmd += ["--cpu", "--num_machines", "1", "--mixed_precision", "no", "--dynamo_backend", "no"]
    if num_processes > 1:
        cmd += ["--main_process_port", str(free_port())]
    return [*cmd, "-m", "agentgrpo.cli", "train", "--config", config_path, *overrides]


def free_port() -> int:
    """A TCP port free on this machine right now, for the processes' rendezvous."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def visible_gpus() -> int:
    import torch

    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def vllm_installed() -> bool:
    return importlib.util.find_spec("vllm") is not None
