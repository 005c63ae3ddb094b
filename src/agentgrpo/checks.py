"""Every problem with a config, found before any model loads, each as 'field: what is wrong; how to fix it'.

`check` runs on every load: types are already checked; here come ranges, cross-field rules, the task and
its rewards, and the real `trl.GRPOConfig` built from the config (so TRL's own checks run now). `check_deep`
adds what touches more than the config: the model is reachable, every tool answers a sample call.
"""

from __future__ import annotations

import dataclasses
import math
import os
import re
import tempfile
from pathlib import Path

from agentgrpo.config import ResolvedConfig, generation_batch_size, trl_default
from agentgrpo.errors import UserError, did_you_mean

RESUMABLE_NOTE = "a resumed run restores it from the checkpoint"


def check(cfg: ResolvedConfig, cuda_available: bool, real_device: bool = True) -> list[str]:
    """Every problem found without loading a model or calling user code beyond imports.

    ``real_device=False`` (a GPU machine simulated on a CPU one, in tests) skips building the GRPOConfig,
    whose checks look at the real hardware.
    """
    problems = _check_essentials(cfg)
    problems += _check_device(cfg.grpo, cuda_available)
    problems += _check_groups(cfg.grpo)
    problems += _check_ranges(cfg)
    problems += _check_trl_values(cfg)
    problems += _check_dirs(cfg)
    problems += _check_peft(cfg)
    task_problems = _check_task(cfg)
    problems += task_problems
    problems += _check_stop_on(cfg.run.stop_on)
    problems += _check_dynamic_sampling(cfg)
    problems += _check_launch(cfg.run)
    if not task_problems:
        problems += _check_model_for_task(cfg)
    if real_device:
        problems += [p for p in _check_grpo_config(cfg) if not _already_said(p, problems)]
    return problems


def _already_said(trl_problem: str, problems: list[str]) -> bool:
    """TRL's message about a field agentgrpo has already explained (e.g. num_generations) adds nothing."""
    fields = {p.split(":", 1)[0] for p in problems}
    return any(re.search(rf"\b{re.escape(f)}\b", trl_problem) for f in fields if f)


# --- the essentials ----------------------------------------------------------------------------------


def _check_essentials(cfg: ResolvedConfig) -> list[str]:
    """An empty config must not start a long run on defaults: the model and the length are required."""
    problems = []
    if "model" not in cfg.given:
        problems.append(
            "model: not set. Name the model to train: tiny (the embedded demo model), a "
            "save_pretrained directory, or a Hub id (or start from a shipped config: --config demo)."
        )
    if not {"max_steps", "num_train_epochs"} & cfg.given:
        problems.append(
            f"max_steps: not set (nor num_train_epochs), so TRL would train "
            f"{trl_default('num_train_epochs'):g} epochs of the whole dataset; set max_steps: N "
            "(or num_train_epochs) to say how long to train."
        )
    return problems


def _check_device(grpo: dict, cuda: bool) -> list[str]:
    if cuda:
        return []
    return [
        f"{flag}: true needs a CUDA GPU, and none is visible on this machine; set {flag}: false (CPU runs in float32)."
        for flag in ("bf16", "fp16", "use_vllm")
        if grpo.get(flag)
    ]


def _check_groups(grpo: dict) -> list[str]:
    n = grpo.get("num_generations", trl_default("num_generations"))
    if n is not None and n < 2:
        return [f"num_generations: {n} < 2; GRPO compares completions within a group, so it needs at least 2."]
    world = int(os.environ.get("WORLD_SIZE", "1"))
    gen = generation_batch_size(grpo, world)
    if n and gen % n:
        return [
            f"num_generations: {n} does not divide the generation batch of {gen} completions "
            f"(per_device_train_batch_size x world size {world} x steps_per_generation); "
            f"pick per_device_train_batch_size as a multiple of {n}, e.g. {n * max(1, gen // n)}."
        ]
    return []


def _check_ranges(cfg: ResolvedConfig) -> list[str]:
    run, problems = cfg.run, []
    lr = cfg.setting("learning_rate")
    if not math.isfinite(lr) or lr < 0:
        problems.append(
            f"learning_rate: {lr} must be a finite number >= 0 (e.g. 1e-6 for a full model, 1e-5 to 1e-4 with LoRA)."
        )
    temperature = cfg.setting("temperature")
    if not math.isfinite(temperature) or temperature <= 0:
        problems.append(f"temperature: {temperature} must be > 0 (1.0 samples from the model as it is).")
    steps = cfg.setting("max_steps")
    if steps == 0 or steps < -1:
        problems.append(
            f"max_steps: {steps} trains nothing; give a positive number of steps "
            "(or -1 to train num_train_epochs epochs)."
        )
    if run.doctor_every < 0:
        problems.append(f"doctor_every: {run.doctor_every} must be >= 0 (0 turns the live doctor off).")
    if run.eval_size < 1 or run.train_size < 1:
        problems.append("train_size / eval_size: must be >= 1")
    if not 0.0 <= run.sft_tool_fraction <= 1.0:
        problems.append(f"sft_tool_fraction: {run.sft_tool_fraction} is not in [0, 1]")
    bad_modes = [m for m in run.eval_modes if m not in ("greedy", "sampled")]
    if bad_modes:
        problems.append(f"eval_modes: {bad_modes} not allowed; use greedy and/or sampled")
    return problems


def _check_trl_values(cfg: ResolvedConfig) -> list[str]:
    """Values TRL only checks deep inside training: the loss type, the trackers."""
    problems = []
    loss, allowed = cfg.setting("loss_type"), loss_types()
    if allowed and loss not in allowed:
        problems.append(f"loss_type: {loss!r} is not a TRL GRPO loss. {did_you_mean(loss, allowed)}")
    problems += _check_report_to(cfg.setting("report_to"))
    return problems


def loss_types() -> list[str]:
    """The loss types this TRL version supports, read from GRPOConfig's own field help."""
    import dataclasses

    from trl import GRPOConfig

    help_text = next(f.metadata.get("help", "") for f in dataclasses.fields(GRPOConfig) if f.name == "loss_type")
    match = re.search(r"Supported values are (.*?)\.\s", help_text)
    return re.findall(r"'(\w+)'", match.group(1)) if match else []


def _check_report_to(report_to) -> list[str]:
    """Each tracker's callback is created as the Trainer will create it (a missing package fails here)."""
    from transformers.integrations.integration_utils import get_reporting_integration_callbacks

    try:
        classes = get_reporting_integration_callbacks(report_to)
    except ValueError as exc:
        return [f"report_to: {exc}"]
    problems = []
    for cls in classes:
        try:
            cls()
        except Exception as exc:  # e.g. RuntimeError: WandbCallback requires wandb to be installed
            problems.append(
                f"report_to: {cls.__name__} cannot start ({exc}); install the tracker's package "
                f"or drop it from report_to."
            )
    return problems


def _check_dirs(cfg: ResolvedConfig) -> list[str]:
    run, problems = cfg.run, []
    defaults = {f.name: f.default for f in dataclasses.fields(run)}
    clash = [k for k in ("run_name", "runs_dir") if k in cfg.given and getattr(run, k) != defaults[k]]
    if run.output_dir and clash:
        problems.append(
            f"output_dir: given together with {' and '.join(clash)}; output_dir is the run directory "
            "itself, so give one or the other."
        )
    ckpt = run.resume_from_checkpoint
    if (run.resume or ckpt is True) and not (run.run_name or run.output_dir):
        problems.append("resume: which run? Name it with --run_name NAME (under runs_dir) or output_dir, or give "
                        "resume_from_checkpoint: runs/NAME/checkpoints/checkpoint-N.")
    if isinstance(ckpt, str) and ckpt:
        path = Path(ckpt).expanduser()
        if not (path / "trainer_state.json").is_file():
            problems.append(
                f"resume_from_checkpoint: {ckpt!r} is not a checkpoint directory (no "
                "trainer_state.json); give a checkpoints/checkpoint-N directory, or true for the "
                "last checkpoint of this run."
            )
    return problems


def _check_peft(cfg: ResolvedConfig) -> list[str]:
    if not cfg.peft.get("use_peft"):
        lora = sorted(k for k in cfg.peft if k != "use_peft")
        if lora and cfg.peft.get("use_peft") is not False:
            return [
                f"{', '.join(lora)}: LoRA settings given but use_peft is not true; set use_peft: true to "
                "train a LoRA adapter, or drop them."
            ]
        return []
    try:
        import peft  # noqa: F401
    except ImportError:
        return [
            "use_peft: true needs the peft package, which is not installed; pip install 'agentgrpo[peft]' "
            "(or pip install peft)."
        ]
    try:
        cfg.peft_config()
    except (TypeError, ValueError) as exc:
        return [f"use_peft: the LoRA settings are invalid ({exc})."]
    return []


def _check_task(cfg: ResolvedConfig) -> list[str]:
    from agentgrpo.training.reward_specs import check_reward_specs

    try:
        task = cfg.task
    except UserError as exc:
        text = str(exc)
        return [text if re.match(r"^[a-z_ /]+(\s\(\w+\))?:", text) else f"task: {text}"]
    problems = check_reward_specs(cfg.run.rewards, task)
    if cfg.run.sft and task.demonstration is None:
        problems.append(f"sft: task {task.name!r} has no demonstrations to SFT on; set sft: false.")
    return problems


def _check_launch(run) -> list[str]:
    from agentgrpo.errors import did_you_mean
    from agentgrpo.launch import TARGETS
    from agentgrpo.launch.hf_jobs import timeout_seconds

    problems = []
    if run.target not in TARGETS:
        problems.append(f"target: {run.target!r} is not a target. {did_you_mean(run.target, TARGETS)}")
    for name in ("tool_timeout", "step_timeout"):
        if getattr(run, name) < 0:
            problems.append(f"{name}: {getattr(run, name)} < 0; give seconds, or 0 to turn it off.")
    if run.num_processes < 1:
        problems.append(f"num_processes: {run.num_processes} < 1; use 1 or more.")
    if run.job_timeout is not None:
        try:
            timeout_seconds(run.job_timeout)
        except ValueError as exc:
            problems.append(str(exc))
    return problems


def _check_dynamic_sampling(cfg: ResolvedConfig) -> list[str]:
    from agentgrpo.training.dynamic_sampling import check_options

    world = int(os.environ.get("WORLD_SIZE", "1"))
    prompts = generation_batch_size(cfg.grpo, world) // (cfg.setting("num_generations") or 1)
    return check_options(cfg.run.dynamic_sampling, cfg.run.max_generation_rounds, cfg.run.train_size, prompts)


def _check_stop_on(modes) -> list[str]:
    """``stop_on`` accepts every name `agentgrpo doctor` reports (and its aliases): the detectors decide."""
    from agentgrpo.doctor import detectors

    problems = []
    for mode in modes:
        try:
            detectors.resolve(mode)
        except (ValueError, AttributeError):
            choices = [*detectors.NAMES, *getattr(detectors, "ALIASES", {})]
            problems.append(f"stop_on: unknown failure mode {mode!r}. {did_you_mean(str(mode), choices)}")
    return problems


def _check_model_for_task(cfg: ResolvedConfig) -> list[str]:
    from agentgrpo.tiny.build import SHIPPED_SFT_TASKS

    if cfg.run.model == "tiny" and cfg.task.name not in SHIPPED_SFT_TASKS:
        return [
            f"model: 'tiny' is SFT'd on the calculator task, not {cfg.task.name!r}; use 'tiny-random' (with "
            "sft: true for a task with demonstrations), or a real model."
        ]
    return []


def _check_grpo_config(cfg: ResolvedConfig) -> list[str]:
    """Build the real GRPOConfig: every check TRL makes in its __post_init__ runs now, not after the load."""
    with tempfile.TemporaryDirectory() as tmp:
        try:
            cfg.grpo_args(tmp)
        except Exception as exc:  # TRL raises ValueError mostly; any failure here would crash the run later
            return [f"GRPOConfig: {type(exc).__name__}: {exc}"]
    return []


# --- deep checks (validate, train) -------------------------------------------------------------------


def check_deep(cfg: ResolvedConfig) -> list[str]:
    """The model can be found; every tool has a schema TRL can render and answers a sample call.

    Runs even when `check` found problems (so one validate reports everything); a task that does not load
    was reported there, and its tools are skipped here.
    """
    try:
        task = cfg.task
    except UserError:
        task = None
    return check_model(cfg.run.model, task) + (check_tools(task, cfg.warnings) if task is not None else [])


def check_model(name: str, task) -> list[str]:
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


def check_tools(task, warnings: list[str] | None = None) -> list[str]:
    """Each tool gets a JSON schema (TRL renders it into the prompt) and is called once on a sample input:
    the gold completion's tool calls when the task has them, else arguments made from the schema.
    Warnings (an input error on a made-up input) are appended to ``warnings``."""
    warnings = [] if warnings is None else warnings
    from transformers.utils import get_json_schema

    try:
        env = task.environment_factory() if task.environment_factory else None
        rows = task.eval_problems(1) or task.train_problems(1, 0)
        if env is not None:
            env.reset(**rows[0])
    except Exception as exc:
        return [f"environment: creating or resetting it raised {type(exc).__name__}: {exc}"]
    from agentgrpo.tasks.base import environment_tools

    tools = [*task.tool_functions, *(environment_tools(env) if env is not None else [])]
    problems, samples = [], _gold_calls(task, rows[0])
    for tool in tools:
        name = getattr(tool, "__name__", repr(tool))
        try:
            schema = get_json_schema(tool)
        except Exception as exc:
            problems.append(
                f"tool {name!r}: TRL cannot describe it to the model ({type(exc).__name__}: {exc}); "
                "give it type hints and a Google-style docstring with an Args: section."
            )
            continue
        problems += _sample_call(tool, name, samples.get(name), schema, warnings)
    return problems


# Exceptions a tool may rightly raise for a made-up input (reported as warnings, not errors).
INPUT_ERRORS = (ValueError, LookupError, ArithmeticError)


def _sample_call(tool, name: str, gold_args: dict | None, schema: dict, warnings: list[str]) -> list[str]:
    """Call the tool once: a failure on the gold completion's own call, or any crash that is not an
    input-validation error, is a problem; an input error on made-up arguments is a warning."""
    args = gold_args if gold_args is not None else _sample_args(schema)
    try:
        tool(**args)
    except Exception as exc:
        text = f"tool {name!r}: raised {type(exc).__name__}: {exc} when called with {args}"
        if gold_args is None and isinstance(exc, INPUT_ERRORS):
            warnings.append(f"{text} (a made-up sample input; fine if that input is invalid for it)")
            return []
        return [f"{text} (the model would only ever see an error from it)."]
    return []


def _gold_calls(task, row) -> dict[str, dict]:
    if task.gold_completion is None:
        return {}
    calls = {}
    for message in task.gold_completion(row):
        for call in message.get("tool_calls") or []:
            function = call.get("function", {})
            calls.setdefault(function.get("name"), dict(function.get("arguments") or {}))
    return calls


SAMPLE_VALUES = {"string": "1", "integer": 1, "number": 1.0, "boolean": True, "array": [], "object": {}}


def _sample_args(schema: dict) -> dict:
    """Arguments for a sample call, one plain value per required parameter's JSON type.

    >>> _sample_args({"parameters": {"properties": {"q": {"type": "string"}, "k": {"type": "integer"}},
    ...                              "required": ["q"]}})
    {'q': '1'}
    """
    params = (
        schema.get("parameters", {}) if "parameters" in schema else schema.get("function", {}).get("parameters", {})
    )
    props = params.get("properties", {})
    return {
        name: SAMPLE_VALUES.get(props[name].get("type"), "1") for name in params.get("required", []) if name in props
    }
