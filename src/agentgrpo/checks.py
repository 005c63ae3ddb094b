"""Every problem with a run plan, found before any model loads, each as 'field: what is wrong; how to fix it'.

The checks live next to what they check; this module composes them, so one `agentgrpo validate` reports
every problem at once:

- here: the essentials (model, length), agentgrpo's own ranges, run directories, ``stop_on``;
- `agentgrpo.training.checks`: device, group arithmetic, dynamic sampling, TRL value ranges, trackers, LoRA,
  the model (can be found; 'tiny' on a task it was not SFT'd for is a warning);
- `agentgrpo.training.reward_specs.check_reward_signatures`: rewards callable as TRL calls them;
- `agentgrpo.tasks.checks`: SFT demonstrations, tools (sample calls, timed);
- `agentgrpo.rewards.checks`: each reward called once on a sample completion (timed);
- `agentgrpo.launch.checks`: target, processes, job timeout.

The GRPOConfig itself is built once by `agentgrpo.plan.resolve_plan` (TRL's own checks run then).
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

from agentgrpo import rundir
from agentgrpo.errors import did_you_mean


def check_plan(plan, cuda_available: bool, warnings: list[str] | None = None) -> list[str]:
    """Every problem found without loading a model or calling user code beyond imports."""
    from agentgrpo.launch import checks as launch_checks
    from agentgrpo.tasks import checks as task_checks
    from agentgrpo.training import checks as training_checks
    from agentgrpo.training.reward_specs import check_reward_signatures

    problems = check_essentials(plan)
    problems += training_checks.check_plan(plan, cuda_available, warnings)
    problems += check_ranges(plan.run)
    problems += check_dirs(plan)
    if plan.task is not None:
        problems += task_checks.check_plan(plan)
        if plan.rewards is not None:
            problems += check_reward_signatures(plan.rewards, plan.task)
    problems += check_stop_on(plan.run.stop_on)
    from agentgrpo.heal import checks as heal_checks

    problems += heal_checks.check_plan(plan)
    problems += launch_checks.check_plan(plan)
    return problems


def check_plan_deep(plan, warnings: list[str]) -> list[str]:
    """What calls user code or looks beyond the config: the model can be found; every tool and reward answers
    one sample call within the tool timeout. Runs even when `check_plan` found problems (one validate reports
    everything); a task that does not load was reported there, and its code is skipped here."""
    from agentgrpo.rewards.checks import check_reward_calls, check_rewards_vary
    from agentgrpo.tasks import checks as task_checks
    from agentgrpo.training.checks import check_model

    task, timeout = plan.task, plan.run.tool_timeout
    problems = check_model(plan.run.model, task)
    if task is None:
        return problems
    problems += task_checks.check_tools(task, timeout, warnings)
    if plan.rewards is not None:
        rows = task_checks.sample_rows(task, 2)
        envs, env_problems = task_checks.sample_environments(task, rows, timeout)
        if not env_problems:
            signature_ok = _callable_rewards(plan)
            problems += check_reward_calls(signature_ok, rows, task_checks.sample_completions(task, rows),
                                           environments=envs, timeout=timeout, warnings=warnings)
            mode = plan.run.dynamic_sampling
            if mode in ("filter", "refill") and not problems:
                problems += check_rewards_vary(signature_ok, task, rows, mode, timeout=timeout, warnings=warnings,
                                               decider=plan.run.dynamic_sampling_reward)
    return problems


def _callable_rewards(plan):
    """The plan's RewardSet without the rewards whose signature TRL cannot call (reported already)."""
    from agentgrpo.training.reward_specs import check_reward_signatures

    bad = {p.split("'")[1] for p in check_reward_signatures(plan.rewards, plan.task) if "'" in p}
    funcs = [f for f in plan.rewards.funcs if f.__name__ not in bad]
    return dataclasses.replace(plan.rewards, funcs=funcs) if len(funcs) != len(plan.rewards.funcs) else plan.rewards


def already_said(trl_problem: str, problems: list[str]) -> bool:
    """TRL's message about a field agentgrpo has already explained (e.g. num_generations) adds nothing."""
    fields = {p.split(":", 1)[0] for p in problems}
    return any(re.search(rf"\b{re.escape(f)}\b", trl_problem) for f in fields if f)


# --- the essentials ----------------------------------------------------------------------------------


def check_essentials(plan) -> list[str]:
    """An empty config must not start a long run on defaults: the model and the length are required."""
    from agentgrpo.config import trl_default

    problems = []
    if "model" not in plan.given:
        problems.append(
            "model: not set. Name the model to train: tiny (the embedded demo model), a "
            "save_pretrained directory, or a Hub id (or start from a shipped config: --config demo)."
        )
    if not {"max_steps", "num_train_epochs"} & plan.given:
        problems.append(
            f"max_steps: not set (nor num_train_epochs), so TRL would train "
            f"{trl_default('num_train_epochs'):g} epochs of the whole dataset; set max_steps: N "
            "(or num_train_epochs) to say how long to train."
        )
    return problems


def check_ranges(run) -> list[str]:
    """agentgrpo's own options."""
    problems = []
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


def check_dirs(plan) -> list[str]:
    from agentgrpo.config import RunConfig

    run, problems = plan.run, []
    defaults = {f.name: f.default for f in dataclasses.fields(RunConfig)}
    clash = [k for k in ("run_name", "runs_dir") if k in plan.given and getattr(run, k) != defaults[k]]
    if run.output_dir and clash:
        problems.append(
            f"output_dir: given together with {' and '.join(clash)}; output_dir is the run directory "
            "itself, so give one or the other."
        )
    ckpt = run.resume_from_checkpoint
    if (run.resume or ckpt is True) and not ({"run_name", "output_dir"} & plan.given):
        problems.append("resume: which run? Name it with --run_name NAME (under runs_dir) or output_dir, or give "
                        "resume_from_checkpoint: runs/NAME/checkpoints/checkpoint-N.")
    if isinstance(ckpt, str) and ckpt:
        path = Path(ckpt).expanduser()
        if not (path / rundir.TRAINER_STATE).is_file():
            problems.append(
                f"resume_from_checkpoint: {ckpt!r} is not a checkpoint directory (no "
                "trainer_state.json); give a checkpoints/checkpoint-N directory, or true for the "
                "last checkpoint of this run."
            )
    return problems


def check_stop_on(modes) -> list[str]:
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
