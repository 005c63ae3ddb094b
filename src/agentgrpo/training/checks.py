"""Checks of a run plan that concern training: the device, GRPO's group arithmetic, dynamic sampling, the
ranges TRL checks only after the model loads (or never), the trackers, LoRA, the model fitting the task and
being reachable.

Each returns 'field: what is wrong; how to fix it' strings (empty when fine); `agentgrpo.checks` composes
them with the other packages' checks so `agentgrpo validate` reports every problem at once.
"""

from __future__ import annotations

import math
import os
import re
from pathlib import Path

from agentgrpo.config import generation_batch_size
from agentgrpo.errors import UserError, did_you_mean


def check_device(grpo: dict, cuda: bool) -> list[str]:
    if cuda:
        return []
    return [
        f"{flag}: true needs a CUDA GPU, and none is visible on this machine; set {flag}: false (CPU runs in float32)."
        for flag in ("bf16", "fp16", "use_vllm")
        if grpo.get(flag)
    ]


def _world_size() -> int:
    return int(os.environ.get("WORLD_SIZE", "1"))


def check_groups(plan) -> list[str]:
    n = plan.setting("num_generations")
    if n is not None and n < 2:
        return [f"num_generations: {n} < 2; GRPO compares completions within a group, so it needs at least 2."]
    world = _world_size()
    gen = generation_batch_size(plan.setting, world)
    if n and gen % n:
        return [
            f"num_generations: {n} does not divide the generation batch of {gen} completions "
            f"(per_device_train_batch_size x world size {world} x steps_per_generation); "
            f"pick per_device_train_batch_size as a multiple of {n}, e.g. {n * max(1, gen // n)}."
        ]
    return []


def check_dynamic_sampling(plan) -> list[str]:
    """The plan's `DynamicSampling` (its values were checked when the plan made it) against the run: the reward
    that decides is one of the run's, and refill, which draws further prompts, has a training set of at least
    one generation batch of prompts."""
    if plan.dynamic_sampling is None:  # its values had problems (reported when the plan made it)
        return []
    prompts = generation_batch_size(plan.setting, _world_size()) // (plan.setting("num_generations") or 1)
    names = list(plan.rewards.names) if getattr(plan, "rewards", None) is not None else None
    return plan.dynamic_sampling.problems_with(names, plan.run.train_size, prompts)


def check_ranges(plan) -> list[str]:
    """GRPOConfig values TRL accepts but that cannot train (or crash only after the model loads)."""
    problems = []
    lr = plan.setting("learning_rate")
    if not math.isfinite(lr) or lr < 0:
        problems.append(
            f"learning_rate: {lr} must be a finite number >= 0 (e.g. 1e-6 for a full model, 1e-5 to 1e-4 with LoRA)."
        )
    temperature = plan.setting("temperature")
    if not math.isfinite(temperature) or temperature <= 0:
        problems.append(f"temperature: {temperature} must be > 0 (1.0 samples from the model as it is).")
    steps = plan.setting("max_steps")
    if steps == 0 or steps < -1:
        problems.append(
            f"max_steps: {steps} trains nothing; give a positive number of steps "
            "(or -1 to train num_train_epochs epochs)."
        )
    beta = plan.setting("beta")
    if beta is not None and (not math.isfinite(beta) or beta < 0):
        problems.append(f"beta: {beta} must be >= 0 (the KL penalty's weight; 0 turns it off, TRL's default is "
                        f"{_trl('beta')}); a negative beta rewards drifting away from the reference model.")
    length = plan.setting("max_completion_length")
    if length is not None and length < 1:
        problems.append(f"max_completion_length: {length} leaves no room to answer; give the token budget per "
                        f"completion (>= 1; TRL's default is {_trl('max_completion_length')}).")
    iterations = plan.setting("max_tool_calling_iterations")
    if iterations is not None and iterations < 0:
        problems.append(f"max_tool_calling_iterations: {iterations} < 0; give 0 or more (None: no limit).")
    return problems


def _trl(name: str):
    from agentgrpo.config import trl_default

    return trl_default(name)


def check_trl_values(plan) -> list[str]:
    """Values TRL only checks deep inside training: the loss type, the trackers (installed here, unless the
    run trains on a Hugging Face Job, which installs its own)."""
    problems = []
    loss, allowed = plan.setting("loss_type"), loss_types()
    if allowed and loss not in allowed:
        problems.append(f"loss_type: {loss!r} is not a TRL GRPO loss. {did_you_mean(loss, allowed)}")
    problems += check_report_to(plan.setting("report_to"), installed_here=plan.launch.target != "hf-jobs")
    return problems


def loss_types() -> list[str]:
    """The loss types this TRL version supports, read from GRPOConfig's own field help."""
    import dataclasses

    from agentgrpo import trl_fields

    help_text = trl_fields.help_text("loss_type")
    if help_text is None:  # no snapshot for this TRL version: read the field itself
        from trl import GRPOConfig

        help_text = next(f.metadata.get("help", "") for f in dataclasses.fields(GRPOConfig) if f.name == "loss_type")
    match = re.search(r"Supported values are (.*?)\.\s", help_text)
    return re.findall(r"'(\w+)'", match.group(1)) if match else []


def check_report_to(report_to, installed_here: bool = True) -> list[str]:
    """Each tracker's callback is created as the Trainer will create it (a missing package fails here);
    ``installed_here=False`` (the run trains elsewhere) checks the names only."""
    if report_to in (None, "none", [], ["none"]):
        return []  # no tracker: nothing to import
    from transformers.integrations.integration_utils import get_reporting_integration_callbacks

    try:
        classes = get_reporting_integration_callbacks(report_to)
    except ValueError as exc:
        return [f"report_to: {exc}"]
    problems = []
    for cls in classes if installed_here else ():
        try:
            cls()
        except Exception as exc:  # e.g. RuntimeError: WandbCallback requires wandb to be installed
            problems.append(
                f"report_to: {cls.__name__} cannot start ({exc}); install the tracker's package "
                f"or drop it from report_to."
            )
    return problems


def check_peft(plan) -> list[str]:
    if not plan.peft.get("use_peft"):
        problems = []
        lora = sorted(k for k in plan.peft if k != "use_peft")
        if lora and plan.peft.get("use_peft") is not False:
            problems.append(
                f"{', '.join(lora)}: LoRA settings given but use_peft is not true; set use_peft: true to "
                "train a LoRA adapter, or drop them."
            )
        if plan.run.save_merged and not plan.uses_peft:
            problems.append("save_merged: true merges a LoRA adapter into its base model, but this run trains "
                            "the full model (use_peft is not true), so final/ is already the whole model; set "
                            "use_peft: true, or drop save_merged.")
        return problems
    try:
        import peft  # noqa: F401
    except ImportError:
        return [
            "use_peft: true needs the peft package, which is not installed; pip install 'agentgrpo[peft]' "
            "(or pip install peft)."
        ]
    try:
        plan.peft_config()
    except (TypeError, ValueError) as exc:
        return [f"use_peft: the LoRA settings are invalid ({exc})."]
    return []


def warn_model_fit(plan, warnings: list[str]) -> None:
    """'tiny' is SFT'd for the calculator tasks only: a warning for any other task, never a refusal."""
    from agentgrpo.training.models import tiny_note

    note = tiny_note(plan.task.name) if plan.task is not None and plan.run.model == "tiny" else None
    if note and note not in warnings:
        warnings.append(note)


def check_model(name: str, task) -> list[str]:
    """The model can be found: 'tiny'/'tiny-random', a directory, or a Hub id (cached, when offline)."""
    from agentgrpo.training.models import adapter_base, resolve_model

    if task is None and name in ("tiny", "tiny-random"):
        return []  # built locally for the task, which was reported as broken
    try:
        path = resolve_model(name, task)
    except UserError as exc:
        return [str(exc) if str(exc).startswith("model") else f"model: {exc}"]
    base = adapter_base(path)
    if base is not None:
        return check_model(base, task) if base != path else []
    if Path(path).exists() or not _offline():
        return []
    from huggingface_hub import try_to_load_from_cache

    if isinstance(try_to_load_from_cache(path, "config.json"), str):
        return []
    return [
        f"model: {path!r} is a Hub id, but HF_HUB_OFFLINE is set and it is not in the local Hugging Face "
        f"cache. Download it once with network (`hf download {path}`), unset HF_HUB_OFFLINE, or point "
        "model at a local save_pretrained directory."
    ]


def _offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes", "on")


def check_plan(plan, cuda_available: bool, warnings: list[str] | None = None) -> list[str]:
    """Every training check of ``plan`` that loads nothing (doubts go to ``warnings``)."""
    warn_model_fit(plan, warnings if warnings is not None else [])
    return [*check_device(plan.grpo, cuda_available), *check_groups(plan), *check_dynamic_sampling(plan),
            *check_ranges(plan), *check_trl_values(plan), *check_peft(plan)]
