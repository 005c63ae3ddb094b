"""One run's configuration: agentgrpo's own fields, every TRL `GRPOConfig` field and TRL's LoRA fields
(`trl.ModelConfig`'s ``use_peft``, ``lora_r``, ...), all under TRL's names.

A YAML file (or a dict, from Python) holds a flat mapping, as in TRL's own scripts; command-line flags
``--name value`` override it. TRL's defaults are read from the dataclasses, never retyped. Every problem is
collected and reported at once, before any model is loaded. `agentgrpo.plan.resolve_plan` turns the options
into the run plan every command reads (and runs the checks, composed in `agentgrpo.checks`); this module is
on the floor below it and never imports it. TRL's config classes come from `agentgrpo.trl_config`.
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
from agentgrpo.timeouts import DEFAULT_TOOL_TIMEOUT

DYNAMIC_SAMPLING_MODES = ("off", "filter", "refill")  # agentgrpo.training.dynamic_trainer implements them


@dataclass(frozen=True)
class RunConfig:
    """agentgrpo's own options. Everything else in a config is a TRL `GRPOConfig` field. Frozen: a resolved
    run is never changed afterwards (`dataclasses.replace` makes another)."""

    task: str | None = field(default=None, metadata={
        "help": "Task name (see `agentgrpo ls`), 'path/to/file.py:TASK' or 'package.module:TASK' "
                "(default: calculator, unless dataset_name is given)."})
    dataset_name: str | None = field(default=None, metadata={
        "help": "A plain dataset with a 'prompt' column instead of a task: a Hub dataset name, a local "
                "json/jsonl/csv/parquet file or a directory (give `rewards`; tools optional)."})
    dataset_config: str | None = field(default=None, metadata={"help": "The dataset's config (subset) name."})
    dataset_train_split: str = field(default="train", metadata={"help": "Split trained on."})
    dataset_test_split: str | None = field(default=None, metadata={
        "help": "Split for held-out eval (default: the last eval_size rows of the train split, held out)."})
    tools: list | None = field(default=None, metadata={
        "help": "Tool functions for a dataset run, as 'file.py:function' or 'module:function' (TRL's tools=)."})
    environment: str | None = field(default=None, metadata={
        "help": "An environment class for a dataset run ('file.py:Class'), passed as TRL's environment_factory."})
    success_reward: str | None = field(default=None, metadata={
        "help": "Reward whose value >= 1 counts as solved in eval (default: the task's; for a dataset, the first "
                "trained reward)."})
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
    resume_from_checkpoint: str | bool | None = field(default=None, metadata={
        "help": "TRL's name: true = resume (as --resume), or a checkpoint directory to start from."})
    output_dir: str | None = field(default=None, metadata={
        "help": "TRL's name: the run directory itself (instead of runs_dir/run_name); checkpoints go to "
                "output_dir/checkpoints."})
    save_merged: bool = field(default=False, metadata={
        "help": "With use_peft: also save the base model with the adapter merged in (final-merged/)."})
    doctor_every: int = field(default=10, metadata={"help": "Run the live doctor every N logged steps "
                                                            "(0 = off)."})
    stop_on: list = field(default_factory=list, metadata={
        "help": "Failure modes that stop training early (a checkpoint is saved first), e.g. [hacking, collapse]."})
    on_failure: typing.Literal["stop", "heal"] = field(default="stop", metadata={
        "help": "What a failure the live doctor names does (the modes in stop_on; with heal and no stop_on, every "
                "mode): stop (save a checkpoint and stop) or heal (roll back to the last checkpoint before the "
                "onset, apply the mode's remedy, go on; at most heal_max times). See docs/heal.md."})
    heal_max: int = field(default=2, metadata={
        "help": "on_failure: heal: heals at most; a failure after that stops the run at the best checkpoint its "
                "lineage may end at (shadow reward, else held-out success; docs/heal.md)."})
    heal_rewards: list | None = field(default=None, metadata={
        "help": "on_failure: heal: the rewards to switch to when the doctor names reward hacking or length gaming "
                "(same form as rewards); stop_on must name hacking or length (or be empty). Default: none; a hacking "
                "run then stops at the best checkpoint before the onset (changing the reward is your call)."})
    dynamic_sampling: typing.Literal[DYNAMIC_SAMPLING_MODES] = field(default="off", metadata={
        "help": "Groups whose completions all earn the same reward teach nothing: off (TRL as it is), filter (drop "
                "them from the loss) or refill (also generate for further prompts until the batch holds as many "
                "mixed groups as prompts, within max_generation_rounds). See docs/dynamic-sampling.md."})
    refill_carry: bool = field(default=False, metadata={
        "help": "Refill: train the mixed groups a step generates beyond its target in the next step "
                "(importance-weighted by the policy that sampled them) instead of discarding them, and size the "
                "next step's first round to the groups still missing. Off by default: it did not reduce the "
                "generated tokens to 90% in the benchmark (docs/dynamic-sampling.md)."})
    refill_skip_solved: bool = field(default=False, metadata={
        "help": "Refill: a group whose completions all earned the step's best reward (a solved prompt) fills its "
                "slot (not trained on, not replaced); refill generates only to replace groups that failed alike "
                "(DAPO replaces both). See docs/dynamic-sampling.md."})
    refill_round_size: typing.Literal["expected", "missing"] = field(default="expected", metadata={
        "help": "Refill: how many prompts a refill round generates for. expected: enough to bring the missing "
                "groups at the step's mixed share so far (ceil(missing / share): usually one more round, "
                "the groups beyond the target discarded unless refill_carry); missing: exactly the groups "
                "still missing (no group beyond the target, more rounds). See docs/dynamic-sampling.md."})
    dynamic_sampling_reward: str | None = field(default=None, metadata={
        "help": "Filter and refill: the reward whose spread within a group decides that the group teaches (and, "
                "with refill_skip_solved, that it is solved), e.g. the task's correctness reward, as DAPO and verl "
                "filter on accuracy. Default: the weighted total reward (TRL's frac_reward_zero_std test), so a "
                "group that differs only in a small format reward counts as mixed. "
                "See docs/dynamic-sampling.md."})
    max_generation_rounds: int = field(default=4, metadata={
        "help": "Refill: generation batches per step at most (the first included). Filter and refill: a run whose "
                "first this-many rounds yield no mixed group stops (nothing can be learned)."})
    # preflight (agentgrpo.preflight): audit the rewards and check the learning signal before GRPO
    preflight: bool = field(default=True, metadata={"help": "Run the reward audit and the signal check before "
                                                             "GRPO; results in <run>/preflight.json."})
    strict_preflight: bool = field(default=True, metadata={
        "help": "Refuse to train when the preflight's reward audit fails (an exploit found, or the gold is not "
                "the max); false: print and record the failure in preflight.json and train anyway."})
    sandbox_insecure_ok: bool = field(default=False, metadata={
        "help": "Train with a code reward even where the sandbox cannot give every guarantee (e.g. no "
                "namespaces: programs can read and write this user's files and signal its processes); the "
                "refusal lists the risks (docs/sandbox.md)."})
    tool_timeout: float = field(default=DEFAULT_TOOL_TIMEOUT, metadata={
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


# GRPOConfig values agentgrpo sets unless the config does (everything else is TRL's own default).
GRPO_DEFAULTS = {"logging_steps": 1, "save_strategy": "steps", "save_steps": 50, "report_to": "none"}
GRPO_DEFAULTS_CPU = {"use_cpu": True, "bf16": False}
# TRL ModelConfig fields that describe the LoRA adapter (`trl.get_peft_config` turns them into a LoraConfig).
PEFT_FIELDS = ("use_peft", "lora_r", "lora_alpha", "lora_dropout", "lora_target_modules", "lora_target_parameters",
               "lora_modules_to_save", "lora_task_type", "use_rslora", "use_dora")


def _grpo_fields() -> dict[str, dataclasses.Field]:
    """GRPOConfig's fields: from the snapshot for the installed TRL (no torch import: a bad value is named at
    once), else read from TRL's dataclass (`agentgrpo.trl_fields`)."""
    from agentgrpo import trl_fields

    return trl_fields.fields("grpo") or _trl_tables()[0]


def _peft_fields() -> dict[str, dataclasses.Field]:
    from agentgrpo import trl_fields

    return trl_fields.fields("peft") or _trl_tables()[1]


def _trl_tables() -> tuple[dict[str, dataclasses.Field], dict[str, dataclasses.Field]]:
    """TRL's own GRPOConfig and LoRA fields, read from its dataclasses (imports TRL); remembered as a
    snapshot for the next process."""
    from agentgrpo import trl_fields
    from agentgrpo.trl_config import grpo_config_class, model_config_class  # lazily: `--help` stays fast

    grpo = {f.name: f for f in dataclasses.fields(grpo_config_class()) if f.init}
    peft = {f.name: f for f in dataclasses.fields(model_config_class()) if f.name in PEFT_FIELDS}
    trl_fields.remember(grpo, peft)
    return grpo, peft


def _ours() -> dict[str, dataclasses.Field]:
    return {f.name: f for f in dataclasses.fields(RunConfig)}


def _types(cls) -> dict[str, Any]:
    """Field annotations resolved to real types (the module uses postponed annotations)."""
    return typing.get_type_hints(cls)


def trl_default(name: str) -> Any:
    """TRL's own default for a GRPOConfig field, read from the dataclass (never retyped here).

    >>> trl_default("num_generations"), trl_default("temperature")
    (8, 1.0)
    """
    from agentgrpo import trl_fields

    f = _grpo_fields()[name] if trl_fields.default_known(name) else _trl_tables()[0][name]
    return f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default


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
    """Check ``value`` against a dataclass field annotation; return it (an int stays an int where a float is
    expected, so ``logging_steps: 1`` is recorded as 1, not 1.0).

    >>> coerce(3, float), coerce("cosine", "str"), coerce(None, int | None), coerce(["a"], list[str])
    (3, 'cosine', None, ['a'])
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
        return value
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


# --- resolving --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ResolvedConfig:
    """Checked options: agentgrpo's, GRPOConfig keyword arguments, LoRA fields, Python objects. The run plan
    (`agentgrpo.plan.RunPlan`) holds them with the task, rewards and GRPOConfig they resolve to."""

    run: RunConfig
    grpo: dict[str, Any]  # GRPOConfig keyword arguments (TRL names), without output_dir
    peft: dict[str, Any] = field(default_factory=dict)  # TRL ModelConfig LoRA fields given
    given: frozenset[str] = frozenset()  # the keys the user set (file, flags or dict)
    objects: dict[str, Any] = field(default_factory=dict)  # Python API: train_dataset, peft_config, ...

    def setting(self, name: str) -> Any:
        """A GRPOConfig value: the config's, else TRL's own default."""
        return self.grpo[name] if name in self.grpo else trl_default(name)

    @property
    def uses_peft(self) -> bool:
        return bool(self.peft.get("use_peft")) or self.objects.get("peft_config") is not None

    def peft_config(self):
        """The `peft.PeftConfig` for GRPOTrainer(peft_config=...), or None (full fine-tuning)."""
        if self.objects.get("peft_config") is not None:
            return self.objects["peft_config"]
        if not self.peft.get("use_peft"):
            return None
        from agentgrpo.trl_config import peft_config

        return peft_config(self.peft)

    def grpo_args(self, output_dir: str | os.PathLike, reward_weights: list[float] | None = None, **defaults):
        """The real `trl.GRPOConfig` (TRL's own checks run here); ``defaults`` apply where the config is silent."""
        from agentgrpo.trl_config import grpo_config_class

        kwargs = dict(self.grpo)
        if reward_weights is not None:
            kwargs.setdefault("reward_weights", reward_weights)
        for key, value in defaults.items():
            kwargs.setdefault(key, value)
        cls = grpo_config_class()
        kwargs = checkpointing_name(kwargs, {f.name for f in dataclasses.fields(cls)})
        return cls(output_dir=str(output_dir), **kwargs)


def checkpointing_name(kwargs: dict, fields: set[str]) -> dict:
    """``kwargs`` with gradient checkpointing under the name this transformers takes: the new
    ``activation_checkpointing`` where TrainingArguments has it (no deprecation warning per copy), else the
    old ``gradient_checkpointing`` (transformers before the rename, still within the supported range).

    >>> checkpointing_name({"gradient_checkpointing": True}, {"activation_checkpointing", "gradient_checkpointing"})
    {'activation_checkpointing': True}
    >>> checkpointing_name({"gradient_checkpointing": True}, {"gradient_checkpointing"})
    {'gradient_checkpointing': True}
    >>> checkpointing_name({"activation_checkpointing": False}, {"gradient_checkpointing"})
    {'gradient_checkpointing': False}
    """
    kwargs = dict(kwargs)
    if "activation_checkpointing" in fields:
        if "activation_checkpointing" not in kwargs:
            kwargs["activation_checkpointing"] = kwargs.get("gradient_checkpointing",
                                                            trl_default("gradient_checkpointing"))
        kwargs.pop("gradient_checkpointing", None)
    elif "activation_checkpointing" in kwargs:
        kwargs.setdefault("gradient_checkpointing", kwargs["activation_checkpointing"])
        kwargs.pop("activation_checkpointing")
    return kwargs


def resolve_options(data: dict, cuda: bool, objects: dict | None = None) -> tuple[ResolvedConfig, list[str]]:
    """Type-check every key of ``data`` and file it under agentgrpo / GRPOConfig / LoRA, with agentgrpo's
    GRPOConfig defaults (and CPU settings without CUDA) where the config is silent; (options, problems).
    A key with a problem is left out, so the other checks still run."""
    run_kwargs, grpo, peft = {}, {}, {}
    problems = _sort_keys(data, run_kwargs, grpo, peft)
    return ResolvedConfig(RunConfig(**run_kwargs), _with_defaults(grpo, cuda), peft, frozenset(data),
                          dict(objects or {})), problems


def _sort_keys(data: dict, run_kwargs: dict, grpo: dict, peft: dict) -> list[str]:
    """Type-check each key and file it under agentgrpo / GRPOConfig / LoRA; the problems found."""
    ours, grpo_fields, peft_fields = _ours(), _grpo_fields(), _peft_fields()
    types = {**_types(RunConfig), **{k: f.type for k, f in grpo_fields.items()},
             **{k: f.type for k, f in peft_fields.items()}}
    problems = []
    for key, value in data.items():
        if key not in ours and key not in grpo_fields and key not in peft_fields:
            hint = did_you_mean(key, [*ours, *grpo_fields, *peft_fields]).split(" Available:")[0]
            hint = hint if hint.startswith("Did") else "No close match."
            problems.append(f"{key}: unknown option. {hint} `agentgrpo train --help` lists agentgrpo's options; "
                            "every TRL GRPOConfig field, and TRL's LoRA fields (use_peft, lora_r, ...), are "
                            "accepted under their TRL names.")
            continue
        try:
            value = coerce(_listify(value, types[key]), types[key])
        except TypeError as exc:
            problems.append(f"{key}: {exc}")
            continue
        target = run_kwargs if key in ours else (peft if key in peft_fields else grpo)
        target[key] = value
    return problems


def _listify(value: Any, annotation: Any) -> Any:
    """A single string where a list (and no string) is expected becomes a one-item list.

    >>> _listify("correct_answer", list | None), _listify("none", str | list[str] | None)
    (['correct_answer'], 'none')
    """
    if not isinstance(value, str):
        return value
    options = typing.get_args(annotation) if typing.get_origin(annotation) in (typing.Union, types.UnionType) \
        else (annotation,)
    bases = {typing.get_origin(o) or o for o in options}
    return [value] if list in bases and str not in bases else value


def _with_defaults(grpo: dict[str, Any], cuda: bool) -> dict[str, Any]:
    """agentgrpo's GRPOConfig defaults, and CPU settings where there is no CUDA (user values win, are checked)."""
    out = dict(grpo)
    for key, value in {**GRPO_DEFAULTS, **({} if cuda else GRPO_DEFAULTS_CPU)}.items():
        out.setdefault(key, value)
    return out


def generation_batch_size(setting, world_size: int) -> int:
    """The number of completions generated at once, computed as TRL's GRPOConfig does (``setting``: a
    GRPOConfig name -> value, e.g. ``plan.setting``; or a dict of the fields set, TRL's defaults elsewhere)."""
    setting = as_setting(setting)
    if setting("generation_batch_size"):
        return setting("generation_batch_size")
    steps = setting("steps_per_generation") or setting("gradient_accumulation_steps")
    return setting("per_device_train_batch_size") * world_size * steps


def as_setting(source):
    """``source`` as a name -> value function: a callable as it is; a dict of GRPOConfig fields set, with
    TRL's own defaults for the rest."""
    if callable(source):
        return source
    values = dict(source)
    return lambda name: values[name] if values.get(name) is not None else trl_default(name)


def config_path(name_or_path: str | None) -> Path | None:
    """A YAML path, or the name of a shipped config (``demo`` -> the packaged demo.yaml)."""
    if name_or_path is None:
        return None
    path = Path(name_or_path)
    if path.exists() or "/" in name_or_path:
        return path
    shipped = shipped_configs()
    name = name_or_path.removesuffix(".yaml").removesuffix(".yml")
    return shipped.get(name, path)


def shipped_configs() -> dict[str, Path]:
    return {p.stem: p for p in sorted((Path(__file__).resolve().parent / "configs").glob("*.yaml"))}

