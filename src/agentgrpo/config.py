"""One run's configuration: agentgrpo's own fields plus every TRL `GRPOConfig` field, under TRL's names.

A YAML file holds a flat mapping (as in TRL's own scripts); command-line flags ``--name value`` override
it. Every problem is collected and reported at once, before any model is loaded.
"""

from __future__ import annotations

import dataclasses
import os
import re
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from agentgrpo.errors import ConfigError, did_you_mean


@dataclass
class RunConfig:
    """agentgrpo's own options. Everything else in a config is a TRL `GRPOConfig` field."""

    task: str = field(default="calculator", metadata={"help": "Task name (see `agentgrpo ls`) or 'module:ATTR'."})
    model: str = field(default="tiny", metadata={
        "help": "'tiny' (the embedded SFT'd tiny model), 'tiny-random' (untrained), a local directory saved with "
                "save_pretrained, or a Hub model id."})
    run_name: str | None = field(default=None, metadata={"help": "Run directory name under runs_dir (default: "
                                                                 "<task>-<timestamp>)."})
    runs_dir: str = field(default="runs", metadata={"help": "Where run directories are created."})
    rewards: list | None = field(default=None, metadata={
        "help": "Reward list: names or {name, weight, params}; weight 0 = shadow reward (logged, not trained "
                "on). Default: the task's own rewards."})
    strict_rewards: bool = field(default=False, metadata={"help": "Fail the run when a reward function raises "
                                                                  "(default: count it, score the sample None)."})
    sft: bool = field(default=False, metadata={"help": "Run an SFT warm start on the task's demonstrations "
                                                       "before GRPO."})
    sft_steps: int = field(default=1500, metadata={"help": "SFT optimizer steps."})
    sft_batch_size: int = field(default=32, metadata={"help": "SFT examples per step."})
    sft_learning_rate: float = field(default=1e-3, metadata={"help": "SFT peak learning rate (cosine decay)."})
    sft_tool_fraction: float = field(default=0.5, metadata={
        "help": "Fraction of SFT demonstrations that use the tool; the rest answer directly (and correctly)."})
    train_size: int = field(default=4000, metadata={"help": "Number of training problems (disjoint from eval)."})
    eval_size: int = field(default=200, metadata={"help": "Held-out problems for `eval` (fixed set)."})
    eval_before: bool = field(default=True, metadata={"help": "Evaluate the starting model before GRPO."})
    eval_after: bool = field(default=True, metadata={"help": "Evaluate the trained model after GRPO."})
    eval_modes: list = field(default_factory=lambda: ["greedy", "sampled"], metadata={
        "help": "Decoding modes for eval: greedy and/or sampled (at the training temperature)."})
    eval_batch_size: int = field(default=100, metadata={"help": "Problems generated at once during eval."})
    resume: bool = field(default=False, metadata={"help": "Resume from the last checkpoint in the run "
                                                          "directory."})
    doctor_every: int = field(default=10, metadata={"help": "Run the live doctor every N logged steps "
                                                            "(0 = off)."})
    stop_on: list = field(default_factory=list, metadata={
        "help": "Failure modes that stop training early (a checkpoint is saved first), e.g. [hacking, collapse]."})
    # preflight (agentgrpo.preflight): audit the rewards and check the learning signal before GRPO
    preflight: bool = field(default=True, metadata={"help": "Run the reward audit and the signal check before "
                                                             "GRPO; results in <run>/preflight.json."})
    strict_preflight: bool = field(default=False, metadata={"help": "Refuse to train when the reward audit "
                                                                    "finds an exploit or the gold is not the max."})
    tool_timeout: float = field(default=60.0, metadata={
        "help": "Seconds one tool call may take; past it the call ends and the model sees 'tool X timed out "
                "after N s' (counted in tools/timeouts). 0 = no limit."})
    step_timeout: float = field(default=1800.0, metadata={
        "help": "Watchdog: if no training step finishes for this many seconds, dump every thread's stack into "
                "the run directory and fail (exit 3) instead of hanging. 0 = off."})
    target: str = field(default="local", metadata={
        "help": "Where `agentgrpo launch` trains: local (this process), accelerate (num_processes processes on "
                "this machine), hf-jobs (a Hugging Face Job on `flavor`)."})
    flavor: str | None = field(default=None, metadata={
        "help": "Hugging Face Jobs hardware for target hf-jobs, e.g. a100-large (`agentgrpo jobs hardware`)."})
    job_timeout: str | None = field(default=None, metadata={
        "help": "Time limit of the Hugging Face Job, e.g. 4h (default: 1.5x an estimate of 30 s per step, "
                "at least 1h)."})
    num_processes: int = field(default=1, metadata={
        "help": "Processes for target accelerate: one per GPU; on a machine without GPUs, CPU processes (gloo)."})
    accelerate_config: str | None = field(default=None, metadata={
        "help": "For target accelerate: a TRL preset (multi_gpu, zero1, zero2, zero3, fsdp1, fsdp2) or the path "
                "of your own accelerate YAML."})


GRPO_DEFAULTS_CPU = {"use_cpu": True, "bf16": False, "report_to": "none"}


def _grpo_fields() -> dict[str, dataclasses.Field]:
    from trl import GRPOConfig  # imported lazily: keeps `--help` fast

    return {f.name: f for f in dataclasses.fields(GRPOConfig) if f.init}


def _ours() -> dict[str, dataclasses.Field]:
    return {f.name: f for f in dataclasses.fields(RunConfig)}


# --- parsing ------------------------------------------------------------------------------------------


class _Loader(yaml.SafeLoader):
    """YAML with 1.2 booleans: only true/false are booleans, so `save_strategy: no` stays the string 'no'."""


_Loader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:bool"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_Loader.add_implicit_resolver("tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"),
                              list("tTfF"))


def _load_yaml(text: str):
    return yaml.load(text, Loader=_Loader)  # noqa: S506 - a SafeLoader subclass


def parse_overrides(args: list[str]) -> tuple[dict[str, Any], list[str]]:
    """``--name value``, ``--name=value`` and bare ``--flag`` (= true) into a dict; values parsed as YAML.

    >>> parse_overrides(["--learning_rate", "3e-4", "--use_vllm", "--stop_on=[collapse]", "--save_strategy", "no"])
    ({'learning_rate': 0.0003, 'use_vllm': True, 'stop_on': ['collapse'], 'save_strategy': 'no'}, [])
    """
    values, problems, i = {}, [], 0
    while i < len(args):
        arg = args[i]
        if not arg.startswith("--"):
            problems.append(f"{arg!r}: expected --name value")
            i += 1
            continue
        name, eq, raw = arg[2:].partition("=")
        name = name.replace("-", "_")
        if not eq:
            if i + 1 < len(args) and not args[i + 1].startswith("--"):
                raw, i = args[i + 1], i + 1
            else:
                raw = "true"
        values[name] = _yaml_scalar(raw)
        i += 1
    return values, problems


def _yaml_scalar(raw: str) -> Any:
    try:
        value = _load_yaml(raw)
    except yaml.YAMLError:
        return raw
    if isinstance(value, str) and _looks_float(value):
        return float(value)  # YAML 1.1 reads '3e-4' as a string
    return value


def _looks_float(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def read_yaml(path: str | os.PathLike) -> dict[str, Any]:
    path = Path(path)
    if not path.is_file():
        raise ConfigError([f"config file {str(path)!r} does not exist. `agentgrpo ls` lists the shipped configs."])
    try:
        data = _load_yaml(path.read_text()) or {}
    except yaml.YAMLError as exc:
        raise ConfigError([f"{path}: not valid YAML ({exc})"]) from exc
    if not isinstance(data, dict):
        raise ConfigError([f"{path}: expected a mapping of option: value, got {type(data).__name__}"])
    return {k: (_yaml_scalar(v) if isinstance(v, str) and _looks_float(v) else v) for k, v in data.items()}


# --- type checking ------------------------------------------------------------------------------------


def coerce(value: Any, annotation: Any) -> Any:
    """Check ``value`` against a dataclass field annotation; return it (ints widened to floats).

    >>> coerce(3, float), coerce("cosine", "str"), coerce(None, int | None)
    (3.0, 'cosine', None)
    >>> coerce("eight", int)
    Traceback (most recent call last):
    ...
    TypeError: expected int, got str 'eight'
    """
    if isinstance(annotation, str):
        annotation = {"str": str, "int": int, "float": float, "bool": bool}.get(annotation, Any)
    if annotation is Any:
        return value
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        options = typing.get_args(annotation)
        for option in sorted(options, key=lambda t: t is str):  # try str last: it accepts nothing else
            try:
                return coerce(value, option)
            except TypeError:
                continue
        names = " | ".join(_name(o) for o in options)
        raise TypeError(f"expected {names}, got {type(value).__name__} {value!r}")
    if origin is typing.Literal:
        if value in typing.get_args(annotation):
            return value
        raise TypeError(f"expected one of {list(typing.get_args(annotation))}, got {value!r}")
    base = origin or annotation
    if annotation is type(None):
        if value is None:
            return None
        raise TypeError(f"expected None, got {value!r}")
    if base is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if base is bool and not isinstance(value, bool):
        raise TypeError(f"expected true or false, got {type(value).__name__} {value!r}")
    if base is int and isinstance(value, bool):
        raise TypeError(f"expected int, got bool {value!r}")
    if isinstance(base, type) and issubclass(base, str) and base is not str:  # enums like SchedulerType
        if isinstance(value, str):
            return value
    if isinstance(base, type) and not isinstance(value, base):
        raise TypeError(f"expected {_name(annotation)}, got {type(value).__name__} {value!r}")
    return value


def _name(tp: Any) -> str:
    return getattr(tp, "__name__", None) or str(tp).replace("typing.", "")


# --- resolving and validating -------------------------------------------------------------------------


@dataclass
class ResolvedConfig:
    run: RunConfig
    grpo: dict[str, Any]  # GRPOConfig keyword arguments (TRL names), without output_dir

    def to_dict(self) -> dict[str, Any]:
        return {**dataclasses.asdict(self.run), **self.grpo}


def load_config(path: str | os.PathLike | None, overrides: list[str] | dict | None = None,
                *, cuda_available: bool | None = None) -> ResolvedConfig:
    """Read ``path`` (optional), apply ``overrides``, check everything, and return the resolved config.

    Raises `ConfigError` listing every problem found. Loads no model.
    """
    data = read_yaml(path) if path else {}
    problems: list[str] = []
    if isinstance(overrides, dict):
        data.update(overrides)
    elif overrides:
        parsed, bad = parse_overrides(overrides)
        problems += bad
        data.update(parsed)
    ours, grpo_fields = _ours(), _grpo_fields()
    run_kwargs, grpo = {}, {}
    for key, value in data.items():
        target = ours.get(key) or grpo_fields.get(key)
        if target is None:
            hint = did_you_mean(key, [*ours, *grpo_fields]).split(" Available:")[0]
            hint = hint if hint.startswith("Did") else "No close match."
            problems.append(f"{key}: unknown option. {hint} `agentgrpo train --help` lists agentgrpo's options; "
                            "every TRL GRPOConfig field is accepted under its TRL name.")
            continue
        try:
            value = coerce(value, target.type)
        except TypeError as exc:
            problems.append(f"{key}: {exc}")
            continue
        (run_kwargs if key in ours else grpo)[key] = value
    run = RunConfig(**run_kwargs)
    grpo = _with_device_defaults(grpo, _cuda(cuda_available))
    problems += check(run, grpo, cuda_available=_cuda(cuda_available))
    if problems:
        raise ConfigError(problems)
    return ResolvedConfig(run, grpo)


def _cuda(flag: bool | None) -> bool:
    if flag is not None:
        return flag
    import torch

    return torch.cuda.is_available()


def _with_device_defaults(grpo: dict[str, Any], cuda: bool) -> dict[str, Any]:
    """On a machine without CUDA, default to CPU settings (explicit user values win and are checked)."""
    out = dict(grpo)
    if not cuda:
        for key, value in GRPO_DEFAULTS_CPU.items():
            out.setdefault(key, value)
    out.setdefault("report_to", "none")
    return out


def generation_batch_size(grpo: dict[str, Any], world_size: int) -> int:
    """The number of completions generated at once, computed as TRL's GRPOConfig does."""
    if grpo.get("generation_batch_size"):
        return grpo["generation_batch_size"]
    steps = grpo.get("steps_per_generation") or grpo.get("gradient_accumulation_steps", 1)
    return grpo.get("per_device_train_batch_size", 8) * world_size * steps


def check(run: RunConfig, grpo: dict[str, Any], cuda_available: bool) -> list[str]:
    """Every cross-field problem, each as 'field: what is wrong; how to fix it'."""
    problems = _check_device(grpo, cuda_available)
    problems += _check_groups(grpo)
    problems += _check_names(run)
    if run.eval_size < 1 or run.train_size < 1:
        problems.append("train_size / eval_size: must be >= 1")
    if not 0.0 <= run.sft_tool_fraction <= 1.0:
        problems.append(f"sft_tool_fraction: {run.sft_tool_fraction} is not in [0, 1]")
    problems += _check_launch(run)
    bad_modes = [m for m in run.eval_modes if m not in ("greedy", "sampled")]
    if bad_modes:
        problems.append(f"eval_modes: {bad_modes} not allowed; use greedy and/or sampled")
    return problems


def _check_launch(run: RunConfig) -> list[str]:
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


def _check_device(grpo: dict[str, Any], cuda: bool) -> list[str]:
    if cuda:
        return []
    problems = []
    for flag in ("bf16", "fp16", "use_vllm"):
        if grpo.get(flag):
            problems.append(f"{flag}: true needs a CUDA GPU, and none is visible on this machine; "
                            f"set {flag}: false (CPU runs in float32).")
    return problems


def _check_groups(grpo: dict[str, Any]) -> list[str]:
    n = grpo.get("num_generations", 8)
    if n is not None and n < 2:
        return [f"num_generations: {n} < 2; GRPO compares completions within a group, so it needs at least 2."]
    world = int(os.environ.get("WORLD_SIZE", "1"))
    gen = generation_batch_size(grpo, world)
    if n and gen % n:
        return [f"num_generations: {n} does not divide the generation batch of {gen} completions "
                f"(per_device_train_batch_size x world size {world} x steps_per_generation); "
                f"pick per_device_train_batch_size as a multiple of {n}, e.g. {n * max(1, gen // n)}."]
    return []


def _check_names(run: RunConfig) -> list[str]:
    from agentgrpo.errors import UserError
    from agentgrpo.tasks import get_task
    from agentgrpo.training.reward_specs import check_reward_specs

    try:
        task = get_task(run.task)
    except UserError as exc:
        return [f"task: {exc}"]
    problems = check_reward_specs(run.rewards, task)
    for mode in run.stop_on:
        from agentgrpo.training.live import FAILURE_MODES

        if mode not in FAILURE_MODES:
            problems.append(f"stop_on: unknown failure mode {mode!r}. {did_you_mean(mode, FAILURE_MODES)}")
    return problems
