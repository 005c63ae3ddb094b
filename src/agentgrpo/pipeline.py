"""One run, end to end: [SFT warm start] -> eval before -> GRPO -> eval after -> curves -> summary.

Every step writes into the run directory (see `agentgrpo.rundir`), so a run can be inspected, resumed or
diagnosed (`agentgrpo doctor runs/<name>`) at any point.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from agentgrpo import rundir
from agentgrpo.plan import RunPlan
from agentgrpo.rewards import code as code_reward


@dataclass
class RunResult:
    run_dir: Path
    model_path: str
    eval: dict = field(default_factory=dict)
    timings: dict = field(default_factory=dict)
    curves: Path | None = None


def say(message: str) -> None:
    print(f"[agentgrpo] {message}", flush=True)


def run(plan: RunPlan, callbacks=()) -> RunResult:
    """Execute the whole run the plan ``plan`` describes (it is read, never changed); returns where everything is.

    ``callbacks`` are extra `TrainerCallback`s for the GRPO trainer (the Python API passes them).
    """
    import torch

    from agentgrpo.training.models import resolve_model

    main = is_main_process()
    code_reward.INSECURE_OK = plan.run.sandbox_insecure_ok  # a code reward refuses a sandbox that lacks guarantees
    run_dir, resume = _open(plan, write=main), plan.resumed
    if main:
        say(f"run directory: {run_dir}")
        for warning in plan.warnings:
            say(f"warning: {warning}")
    torch.manual_seed(plan.setting("seed"))
    result = RunResult(run_dir=run_dir, model_path=resolve_model(plan.run.model, plan.task))
    if plan.run.sft and resume and (run_dir / "sft" / "config.json").exists():
        result.model_path = str(run_dir / "sft")  # resuming: the warm start is already done
    elif plan.run.sft:
        result.model_path = _timed(result, "sft", lambda: _sft(plan, result.model_path))
    if main and plan.run.preflight and not resume:  # agentgrpo.preflight: audit, signal check
        _timed(result, "preflight", lambda: _preflight(plan, result.model_path))
    if main and plan.run.eval_before and not (resume and "before" in rundir.read_eval(run_dir)):
        _timed(result, "eval_before", lambda: _evaluate(plan, result.model_path, "before"))
    final = _timed(result, "grpo", lambda: _grpo(plan, result.model_path, callbacks))
    if not main:  # other processes of a multi-process run only train
        return result
    if plan.run.eval_after:
        _timed(result, "eval_after", lambda: _evaluate(plan, str(final), "after"))
    result.eval = rundir.read_eval(run_dir)
    result.curves = _draw(run_dir)
    return result


def is_main_process() -> bool:
    """True in a single-process run, and in process 0 of an `accelerate launch` / torchrun run."""
    import os

    return int(os.environ.get("RANK", "0")) == 0


def _open(plan: RunPlan, write: bool = True) -> Path:
    """Create (or reopen, resuming) the run directory and write the plan (config.yaml); refuse overrides a
    resume would not honour."""
    from agentgrpo import resume as resuming

    run_dir, config = plan.run_dir, plan.to_dict()
    if plan.resumed and (run_dir / rundir.CONFIG).exists():
        resuming.check_changes(rundir.read_config(run_dir), config)
    run_dir = rundir.open_run_dir(run_dir, resume=plan.resumed)
    if write:
        rundir.write_config(run_dir, config)
    return run_dir


def _timed(result: RunResult, name: str, fn):
    start = time.perf_counter()
    value = fn()
    result.timings[name] = round(time.perf_counter() - start, 1)
    return value


def _preflight(plan: RunPlan, model_path: str) -> dict:
    from agentgrpo.preflight.run import run_preflight

    return run_preflight(plan, plan.task, model_path, plan.run_dir, say=say)


def _sft(plan: RunPlan, model_path: str) -> str:
    from agentgrpo.training.models import load_model, load_tokenizer
    from agentgrpo.training.sft import SFTSettings, run_sft

    r = plan.run
    say(f"SFT warm start: {r.sft_steps} steps of {r.sft_batch_size} demonstrations "
        f"({r.sft_tool_fraction:.0%} use the tool)")
    settings = SFTSettings(steps=r.sft_steps, batch_size=r.sft_batch_size, learning_rate=r.sft_learning_rate,
                           tool_fraction=r.sft_tool_fraction, seed=plan.setting("seed"))
    out = plan.run_dir / "sft"
    run_sft(load_model(model_path), load_tokenizer(model_path), plan.task, settings, out,
            use_cpu=bool(plan.setting("use_cpu")), report_to=plan.setting("report_to"))
    return str(out)


def _evaluate(plan: RunPlan, model_path: str, stage: str) -> dict:
    from agentgrpo.evaluation.evaluate import evaluate
    from agentgrpo.training.models import load_model, load_tokenizer

    settings = plan.eval
    say(f"held-out eval ({stage}): {settings.size} problems, {' + '.join(settings.modes)}")
    results = evaluate(
        load_model(model_path), load_tokenizer(model_path), plan.task, plan.task.eval_problems(settings.size),
        modes=list(settings.modes), temperature=settings.temperature,
        max_completion_length=settings.max_completion_length,
        max_tool_calling_iterations=settings.max_tool_calling_iterations,
        batch_size=settings.batch_size, seed=settings.seed, desc=f"eval {stage}",
        tool_timeout=settings.tool_timeout,
    )
    rundir.write_eval(plan.run_dir, stage, {"model": model_path, **results})
    for mode, res in results.items():
        lo, hi = res["ci95"]
        say(f"  {stage} {mode:>7}: success {res['success_rate']:.1%} [{lo:.1%}, {hi:.1%}], "
            f"tool calls {res['tool_call_rate']:.1%}" + _timeouts(res, plan.run.tool_timeout))
    return results


def _timeouts(res: dict, seconds: float) -> str:
    """The tool calls an eval ended at the time limit, in words ('' when none did)."""
    n = res.get("tool_timeouts") or 0
    return f", {n} tool call{'s' * (n != 1)} timed out (tool_timeout {seconds:g} s)" if n else ""


def _grpo(plan: RunPlan, model_path: str, callbacks=()) -> Path:
    from agentgrpo.training.grpo import build_grpo_trainer, train

    run_dir, steps = plan.run_dir, plan.setting("max_steps")
    lora = " (LoRA adapter)" if plan.uses_peft else ""
    say(f"GRPO{lora}: {steps if steps > 0 else 'epoch-based'} steps, {plan.setting('num_generations')} "
        f"completions per prompt, metrics -> {run_dir / rundir.METRICS}")
    if plan.heal.heals:  # on_failure: heal: roll back and go on when the live doctor names a failure
        from agentgrpo.heal.loop import train_healing

        return train_healing(plan, model_path, callbacks, live_doctor=_live_doctor)
    trainer = build_grpo_trainer(plan, model_path, callbacks=[*_live_doctor(plan, run_dir), *callbacks])
    return train(trainer, run_dir, resume=plan.checkpoint, save_merged=plan.run.save_merged)


def _live_doctor(plan: RunPlan, run_dir: Path) -> list:
    if not plan.run.doctor_every:
        return []
    try:
        from agentgrpo.doctor.live import LiveDoctorCallback
    except ImportError:
        return []
    return [LiveDoctorCallback(every=plan.run.doctor_every, stop_on=set(plan.heal.stop_on), run_dir=run_dir,
                               reward_weights=plan.reward_weights or None)]


def _draw(run_dir: Path) -> Path | None:
    from agentgrpo.report.curves import plot_run_curves

    return plot_run_curves(run_dir, run_dir / rundir.CURVES)


def summary_lines(result: RunResult) -> list[str]:
    """The few lines a user wants at the end: before/after success with CIs, and where to look."""
    from agentgrpo.evaluation.stats import intervals_overlap

    lines = []
    before, after = result.eval.get("before", {}), result.eval.get("after", {})
    for mode in ("sampled", "greedy"):
        if mode in before and mode in after:
            b, a = before[mode], after[mode]
            sep = "CIs do not overlap" if not intervals_overlap(b["ci95"], a["ci95"]) else "CIs overlap"
            lines.append(
                f"{mode:>7}: success {b['success_rate']:.1%} [{b['ci95'][0]:.1%}, {b['ci95'][1]:.1%}] -> "
                f"{a['success_rate']:.1%} [{a['ci95'][0]:.1%}, {a['ci95'][1]:.1%}] "
                f"({(a['success_rate'] - b['success_rate']) * 100:+.1f} pp, {sep}); tool calls "
                f"{b['tool_call_rate']:.0%} -> {a['tool_call_rate']:.0%}")
    from agentgrpo.heal import history

    lines += history.lines(result.run_dir)
    lines += history.segment_lines(result.run_dir, _completions_per_step(result.run_dir))
    lines.append(f"run directory: {result.run_dir}")
    if result.curves:
        lines.append(f"curves: {result.curves}")
    lines.append(f"diagnose it: agentgrpo doctor {result.run_dir}")
    lines.append("time: " + ", ".join(f"{k} {v:.0f}s" for k, v in result.timings.items()))
    return lines


def _completions_per_step(run_dir: Path) -> int:
    from agentgrpo.config import RunConfig
    from agentgrpo.launch.cost import completions_per_step, setting_of

    config = rundir.read_config(run_dir) if (run_dir / rundir.CONFIG).is_file() else {}
    return completions_per_step(setting_of(config), int(config.get("num_processes") or RunConfig.num_processes))

