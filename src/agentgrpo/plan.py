"""One run, resolved once: config + overrides + task -> a frozen `RunPlan` every command reads.

    plan = resolve_plan("configs/demo.yaml", ["--max_steps", "20"])   # every problem at once, or a RunPlan
    plan.task, plan.rewards, plan.grpo_config, plan.run_dir                   # built once, here
    plan.eval, plan.launch, plan.dynamic_sampling, plan.heal                  # one frozen settings object each

`resolve_plan` is the only way to a plan and the only place a run's settings are decided: the options are
type-checked (`config`), the task is loaded, the one `RewardSet` is built, the run directory is named, the
settings objects are made (their values checked as they are made), the one `trl.GRPOConfig` is built (TRL's
own checks run then), and each package's checks of the plan run (`agentgrpo.checks` composes them). Nothing
changes the plan afterwards: `train`, `resume`, `validate`, `eval`, `check`, `audit`, `launch` and the cost
line read it, and nothing downstream rebuilds what it holds. A run that resumes reloads its own plan (the
``config.yaml`` in its run directory) and applies only the overrides given now; the config file's values are
not re-read. A heal makes the next segment's plan with `RunPlan.with_changes` (`agentgrpo.heal.apply`).
"""

from __future__ import annotations

import dataclasses
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentgrpo import rundir
from agentgrpo.config import ResolvedConfig, RunConfig, parse_overrides, read_yaml, resolve_options
from agentgrpo.errors import ConfigError, UserError


@dataclass(frozen=True)
class EvalSettings:
    """How held-out eval generates: exactly as GRPO generated (the run's sampling settings)."""

    size: int
    modes: tuple[str, ...]
    batch_size: int
    before: bool
    after: bool
    temperature: float
    max_completion_length: int
    max_tool_calling_iterations: int | None
    seed: int
    tool_timeout: float

    @classmethod
    def of(cls, options: ResolvedConfig) -> EvalSettings:
        r = options.run
        return cls(size=r.eval_size, modes=tuple(r.eval_modes), batch_size=r.eval_batch_size, before=r.eval_before,
                   after=r.eval_after, temperature=options.setting("temperature"),
                   max_completion_length=options.setting("max_completion_length"),
                   max_tool_calling_iterations=options.setting("max_tool_calling_iterations"),
                   seed=options.setting("seed"), tool_timeout=r.tool_timeout)


@dataclass(frozen=True)
class LaunchSettings:
    target: str
    flavor: str | None
    num_processes: int
    accelerate_config: str | None
    job_timeout: str | None

    @classmethod
    def of(cls, options: ResolvedConfig) -> LaunchSettings:
        r = options.run
        return cls(target=r.target, flavor=r.flavor, num_processes=r.num_processes,
                   accelerate_config=r.accelerate_config, job_timeout=r.job_timeout)


RUN_OPTIONS = frozenset(f.name for f in dataclasses.fields(RunConfig))  # agentgrpo's own options

# The GRPOConfig settings the samplers (eval, preflight) read; their values come from the plan.
SAMPLING = ("seed", "num_generations", "temperature", "max_completion_length", "max_tool_calling_iterations",
            "per_device_train_batch_size", "gradient_accumulation_steps", "steps_per_generation",
            "generation_batch_size", "top_p", "top_k", "min_p", "repetition_penalty")


@dataclass(frozen=True)
class RunPlan:
    """A resolved, checked run. Reads like the options it was made from (``plan.run``, ``plan.setting``)."""

    options: ResolvedConfig
    task: Any  # agentgrpo.tasks.base.Task
    rewards: Any  # agentgrpo.rewards.RewardSet: trained rewards first, then weight-0 shadows
    reward_specs: tuple  # the rewards as config.yaml records them (every field explicit)
    run_dir: Path
    resumed: bool  # an existing run continues
    checkpoint: str | bool  # what trainer.train(resume_from_checkpoint=...) gets
    grpo_config: Any  # the one trl.GRPOConfig (None where the device was only simulated)
    eval: EvalSettings  # how held-out eval generates
    launch: LaunchSettings  # where `agentgrpo launch` trains
    dynamic_sampling: Any  # training.dynamic_sampling_options.DynamicSampling (None: its values had problems)
    heal: Any  # agentgrpo.heal.settings.HealSettings
    warnings: list[str] = dataclasses.field(default_factory=list)  # doubtful, not wrong (printed)

    # --- the options, read-only --------------------------------------------------------------------
    @property
    def run(self):
        return self.options.run

    @property
    def grpo(self) -> dict:
        return self.options.grpo

    @property
    def peft(self) -> dict:
        return self.options.peft

    @property
    def given(self) -> frozenset:
        return frozenset(self.options.given)

    @property
    def objects(self) -> dict:
        return self.options.objects

    @property
    def uses_peft(self) -> bool:
        return self.options.uses_peft

    def setting(self, name: str) -> Any:
        """A GRPOConfig value: the config's, else TRL's own default; or one of agentgrpo's own options (a
        remedy may change either: `agentgrpo.heal.remedies`)."""
        from agentgrpo.config import _grpo_fields

        if name not in self.options.grpo and name in RUN_OPTIONS and name not in _grpo_fields():
            return getattr(self.run, name)
        return self.options.setting(name)

    def peft_config(self):
        return self.options.peft_config()

    def run_dir_path(self) -> Path:
        return self.run_dir

    def to_dict(self) -> dict[str, Any]:
        """What config.yaml records (the plan a resumed run reloads)."""
        return {**dataclasses.asdict(self.run), "rewards": [dict(s) for s in self.reward_specs], **self.peft,
                **self.grpo}

    # --- what each command reads ---------------------------------------------------------------------
    @property
    def sampling(self) -> dict:
        """The GRPOConfig settings the samplers read (the preflight check, pass@k), TRL's defaults filled in."""
        return {k: self.setting(k) for k in SAMPLING}

    @property
    def reward_weights(self) -> dict[str, float]:
        return dict(zip(self.rewards.names, self.rewards.weights, strict=True))

    def with_changes(self, changes: dict[str, Any], checkpoint: str | os.PathLike) -> RunPlan:
        """The plan of the next segment of a healed run (`agentgrpo.heal.apply`): this plan with ``changes``
        (option -> new value) applied, resuming from ``checkpoint``; its rewards, GRPOConfig and settings objects
        are made as `resolve_plan` makes them, and checked. Raises `ConfigError` listing every problem."""
        data = {**self.to_dict(), **changes, "resume_from_checkpoint": str(Path(self.run_dir) / checkpoint)}
        return _plan_of(data, [], [], cuda_available=None, deep=False, objects=self.objects, early=False)


def resolve_plan(source: str | os.PathLike | dict | None, overrides: list[str] | dict | None = None, *,
                 cuda_available: bool | None = None, deep: bool = False, objects: dict | None = None,
                 early: bool = False) -> RunPlan:
    """The `RunPlan` for a YAML file (or dict) plus ``overrides``; raises `ConfigError` listing every problem.

    Loads no model. ``deep`` adds the checks that call user code or look beyond the config: every reward
    and tool is called once on a sample input (with the tool timeout), the model is reachable.
    """
    file_data = dict(source) if isinstance(source, dict) else (read_yaml(source) if source else {})
    now, problems = _overrides(overrides)
    data, notes = _with_saved_plan(file_data, now)
    return _plan_of(data, problems, notes, cuda_available=cuda_available, deep=deep, objects=objects, early=early)


def read_options(source: str | os.PathLike | dict | None, overrides: list[str] | dict | None = None) -> ResolvedConfig:
    """The type-checked options of a config plus ``overrides`` (a resumed run's saved plan applied), without the
    task, the rewards or the checks: what ``agentgrpo launch`` reads to choose a target (and a flavor) before
    it resolves the plan, once, for that target. Raises `ConfigError` listing the options' problems."""
    file_data = dict(source) if isinstance(source, dict) else (read_yaml(source) if source else {})
    now, problems = _overrides(overrides)
    data, _notes = _with_saved_plan(file_data, now)
    options, option_problems = resolve_options(data, cuda=True)
    if problems + option_problems:
        raise ConfigError(problems + option_problems)
    return options


def _plan_of(data: dict, problems: list[str], notes: list[str], *, cuda_available: bool | None, deep: bool,
             objects: dict | None, early: bool) -> RunPlan:
    """The `RunPlan` for the options ``data`` (the config's, overrides and a resumed run's saved plan applied);
    ``problems`` found so far are reported with the rest."""
    from agentgrpo import checks

    problems = list(problems)
    cuda = cuda_available if cuda_available is not None else _cuda_guess()  # torch is asked only before TRL
    options, option_problems = resolve_options(data, cuda, objects)
    warnings = list(notes)
    task, rewards, specs, task_problems = _task_and_rewards(options)
    if task is not None and "train_size" not in options.given and task.size is not None:
        options = dataclasses.replace(options, run=dataclasses.replace(options.run, train_size=task.size))
    run_dir, resumed, checkpoint = _run_dir(options, task)
    if task is not None and not options.run.run_name and not options.run.output_dir:
        options = dataclasses.replace(options, run=dataclasses.replace(options.run, run_name=run_dir.name))
    settings, settings_problems = _settings(options)
    plan = RunPlan(options=options, task=task, rewards=rewards, reward_specs=tuple(specs), run_dir=run_dir,
                   resumed=resumed, checkpoint=checkpoint, grpo_config=None, **settings)
    problems += option_problems + task_problems + settings_problems
    problems += checks.check_plan(plan, cuda_available=cuda, warnings=warnings)
    # Every problem above was found without importing torch, transformers or TRL (`agentgrpo.trl_fields`):
    # bad input is named at once. Only a plan without problems pays for the imports: the real device, then
    # TRL's own GRPOConfig checks.
    if not problems and cuda_available is None and _cuda(None) != cuda:
        return _plan_of(data, [], notes, cuda_available=not cuda, deep=deep, objects=objects, early=early)
    if not problems and rewards is not None and (cuda_available is None or cuda == _cuda(None)):
        grpo_config, grpo_problems = _grpo_config(options, task, rewards, run_dir)
        problems += [p for p in grpo_problems if not checks.already_said(p, problems)]
        plan = dataclasses.replace(plan, grpo_config=grpo_config)
    if problems and early:
        raise ConfigError(problems)
    if deep:
        problems += checks.check_plan_deep(plan, warnings)
    if problems:
        raise ConfigError(problems)
    return dataclasses.replace(plan, warnings=list(warnings))


def _settings(options: ResolvedConfig) -> tuple[dict[str, Any], list[str]]:
    """The plan's settings objects, each made once from the options: eval, launch, dynamic sampling, heal;
    (the fields, problems with their values)."""
    from agentgrpo.heal.settings import HealSettings
    from agentgrpo.training.dynamic_sampling_options import DynamicSampling

    try:
        dynamic_sampling, problems = DynamicSampling.of(options.run), []
    except ConfigError as exc:
        dynamic_sampling, problems = None, list(exc.problems)
    return {"eval": EvalSettings.of(options), "launch": LaunchSettings.of(options),
            "dynamic_sampling": dynamic_sampling, "heal": HealSettings.of(options.run)}, problems


def _overrides(overrides) -> tuple[dict, list[str]]:
    if isinstance(overrides, dict):
        return dict(overrides), []
    if overrides:
        return parse_overrides(overrides)
    return {}, []


# Options that say which run to resume: they come from what is given now, never from the saved plan.
RESUME_KEYS = ("resume", "resume_from_checkpoint", "run_name", "runs_dir", "output_dir")


def _with_saved_plan(file_data: dict, now: dict) -> tuple[dict, list[str]]:
    """The data to resolve: for a resumed run its own saved plan plus the overrides given now, else the
    config file plus the overrides. A config-file value the saved plan differs on is named (not applied)."""
    data = {**file_data, **now}
    saved_path = _saved_config(data)
    if saved_path is None:
        return data, []
    from agentgrpo.resume import same

    saved = rundir.read_config(saved_path)
    ignored = sorted(k for k, v in file_data.items()
                     if k not in now and k not in RESUME_KEYS and k in saved and not same(v, saved[k]))
    notes = []
    if ignored:
        notes.append("resuming: the run continues with its own plan (config.yaml); the config file's "
                     + ", ".join(f"{k}: {file_data[k]!r} (the run has {saved[k]!r})" for k in ignored)
                     + " not applied; give --NAME VALUE to change an option now.")
    keep = {k: v for k, v in saved.items() if k not in RESUME_KEYS}
    where = {k: data[k] for k in RESUME_KEYS if data.get(k) is not None}
    return {**keep, **where, **now}, notes


def _saved_config(data: dict) -> Path | None:
    """The run directory whose config.yaml a resume reloads, or None (a new run, or none saved yet)."""
    ckpt = data.get("resume_from_checkpoint")
    if isinstance(ckpt, str) and ckpt:
        path = Path(ckpt).expanduser()
        if data.get("output_dir") or data.get("run_name"):
            run_dir = _named_dir(data)
        elif path.parent.name == rundir.CHECKPOINTS:
            run_dir = path.parent.parent
        else:
            return None
    elif data.get("resume") is True or ckpt is True:
        if not (data.get("run_name") or data.get("output_dir")):
            return None
        run_dir = _named_dir(data)
    else:
        return None
    return run_dir if isinstance(run_dir, Path) and (run_dir / rundir.CONFIG).is_file() else None


def _named_dir(data: dict) -> Path | None:
    if isinstance(data.get("output_dir"), str):
        return Path(data["output_dir"]).expanduser()
    if isinstance(data.get("run_name"), str):
        runs = data.get("runs_dir", RunConfig.runs_dir)
        return Path(str(runs)) / data["run_name"]
    return None


def _task_and_rewards(options: ResolvedConfig):
    """(task, RewardSet, recorded specs, problems): the task loaded once and its rewards built once."""
    import re

    from agentgrpo.tasks.dataset import task_for, with_success
    from agentgrpo.training.reward_specs import build_task_rewards, recorded_specs

    try:
        task = task_for(options)
    except UserError as exc:
        text = str(exc)
        return None, None, [], [text if re.match(r"^[a-z_ /]+(\s\(\w+\))?:", text) else f"task: {text}"]
    try:
        rewards = build_task_rewards(options.run.rewards, task, strict=options.run.strict_rewards)
    except ConfigError as exc:
        return task, None, [], list(exc.problems)
    try:
        task = with_success(task, rewards.fresh(), options.run.success_reward)
    except UserError as exc:
        return task, rewards, [], [str(exc)]
    return task, rewards, recorded_specs(options.run.rewards, task, rewards), []


def _run_dir(options: ResolvedConfig, task) -> tuple[Path, bool, str | bool]:
    """(run directory, whether an existing run resumes, what to pass to trainer.train); named once, here."""
    run, ckpt = options.run, options.run.resume_from_checkpoint
    if run.output_dir:
        base = Path(run.output_dir).expanduser()
    else:
        label = task.name if task is not None else (run.task or "run")
        name = run.run_name or f"{label.replace(':', '-').replace('/', '-')}-{time.strftime('%Y%m%d-%H%M%S')}"
        base = Path(run.runs_dir) / name
    if isinstance(ckpt, str) and ckpt:
        ckpt_path = Path(ckpt).expanduser()
        owner = ckpt_path.parent.parent if ckpt_path.parent.name == rundir.CHECKPOINTS else None
        explicit = bool(run.output_dir or run.run_name)
        run_dir = base if explicit or owner is None else owner
        same_run = owner is not None and owner.resolve() == run_dir.resolve()
        return run_dir, same_run, str(ckpt_path)
    resume = bool(run.resume or ckpt is True)
    return base, resume, resume


def _trainer_defaults(task, rewards, run_dir: Path) -> dict:
    # trackio / wandb show the run under its own name and project (TRL's defaults: random, "huggingface")
    return {"reward_weights": list(rewards.weights), "run_name": run_dir.name, "project": f"agentgrpo-{task.name}"}


def _grpo_config(options: ResolvedConfig, task, rewards, run_dir: Path):
    """Build the one GRPOConfig: every check TRL makes in its __post_init__ runs now, not after the load."""
    try:
        return options.grpo_args(run_dir / rundir.CHECKPOINTS, **_trainer_defaults(task, rewards, run_dir)), []
    except Exception as exc:  # TRL raises ValueError mostly; any failure here would crash the run later
        return None, [f"GRPOConfig: {type(exc).__name__}: {exc}"]


def _cuda_guess() -> bool:
    """Whether torch will find CUDA, guessed without importing it (`_cuda` confirms before the plan is used):
    a CUDA build of torch (its version.py names a CUDA version) and an NVIDIA device node."""
    import importlib.util

    if os.environ.get("CUDA_VISIBLE_DEVICES", None) in ("", "-1"):
        return False
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        return False
    version = Path(next(iter(spec.submodule_search_locations))) / "version.py"
    try:
        text = version.read_text(encoding="utf-8")
    except OSError:
        return Path("/dev/nvidia0").exists()
    builds_cuda = re.search(r"^cuda\b[^=]*=\s*['\"]", text, re.M) is not None
    return builds_cuda and Path("/dev/nvidia0").exists()


def _cuda(flag: bool | None) -> bool:
    if flag is not None:
        return flag
    import torch

    return torch.cuda.is_available()

