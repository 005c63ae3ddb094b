"""GRPO with ``on_failure: heal``: train; when the live doctor stops the run on a failure, roll back to the last
checkpoint before its onset, apply the remedy, and train on from there, at most ``heal_max`` times.

One training process between rollbacks is a *segment*. Each heal is recorded in heal.jsonl before it acts
(`agentgrpo.heal.rollback`), so a run killed during a heal finishes it on ``--resume`` and goes on.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from agentgrpo.heal import history, rollback
from agentgrpo.heal.apply import apply
from agentgrpo.heal.final import finish
from agentgrpo.heal.judge import live_judge


def say(message: str) -> None:
    print(f"[agentgrpo] {message}", flush=True)


def train_healing(first, model_path: str, callbacks=(), live_doctor: Callable | None = None) -> Path:
    """Train the plan ``first`` with heals; returns the final model's directory. Each heal's remedy gives the
    next segment's plan (`agentgrpo.heal.apply`). ``live_doctor(plan, run_dir)`` makes the live doctor's
    callbacks for a segment (the pipeline's own)."""
    from agentgrpo.training.grpo import build_grpo_trainer, train
    from agentgrpo.training.heal_callbacks import LearningRateFromArgs, StartCheckpoint

    run_dir = Path(first.run_dir)
    plan, resume = first, first.checkpoint
    unfinished = history.pending(run_dir)
    if unfinished is not None:  # killed during a heal: finish it, then go on as it decided
        say(f"finishing heal {unfinished['heal']} (the run was stopped during it)")
        rollback.carry_out(run_dir, unfinished)
        if unfinished.get("action") != "resume":
            return run_dir / rollback.FINAL
        plan, resume = apply(first, unfinished), str(run_dir / unfinished["checkpoint"])
    while True:
        doctors = list(live_doctor(plan, run_dir)) if live_doctor else []
        if plan is not first or unfinished is not None:
            for doctor in doctors:  # a healed segment is judged on its own steps, a stall with its lineage
                doctor.load_history = _nothing
                doctor.judge = live_judge(run_dir)
        trainer = build_grpo_trainer(plan, model_path, callbacks=[*doctors, LearningRateFromArgs(), *callbacks])
        trainer.add_callback(StartCheckpoint(trainer))  # the start is always a rollback point
        final = train(trainer, run_dir, resume=resume, save_merged=plan.run.save_merged)
        finding, step = _stopping_failure(doctors)
        if finding is None:  # it finished: a healed run ends with the best model of its lineage
            choice = finish(run_dir, plan.to_dict(), last_step=int(trainer.state.global_step),
                            score=held_out_success(plan, model_path),
                            merge=_merge if plan.run.save_merged else None)
            if choice is not None:
                say(history.lines(run_dir)[-1])
            return final
        record = rollback.decide(run_dir, finding, step=step, config=plan.to_dict(), setting=plan.setting,
                                 heal_rewards=plan.heal.heal_rewards, heal_max=plan.heal.heal_max,
                                 score=held_out_success(plan, model_path))
        rollback.plan(run_dir, record)
        rollback.carry_out(run_dir, record)
        say(history.lines(run_dir)[-1])
        if record["action"] != "resume":
            return run_dir / rollback.FINAL
        plan, resume = apply(plan, record), str(run_dir / record["checkpoint"])


def held_out_success(plan, tokenizer_path: str) -> Callable[[Path], float]:
    """``score(checkpoint)``: the checkpoint's held-out success, as the run's eval measures it (its eval
    settings and problems; the mean over its eval modes): how a stop without a shadow reward chooses the
    model the run ends with (a stop, or a healed run that finished: `agentgrpo.heal.final`)."""
    def score(checkpoint: Path) -> float:
        from agentgrpo.evaluation.evaluate import evaluate
        from agentgrpo.training.models import load_model, load_tokenizer

        e = plan.eval
        results = evaluate(load_model(str(checkpoint)), load_tokenizer(tokenizer_path), plan.task,
                           plan.task.eval_problems(e.size), modes=list(e.modes), temperature=e.temperature,
                           max_completion_length=e.max_completion_length,
                           max_tool_calling_iterations=e.max_tool_calling_iterations, batch_size=e.batch_size,
                           seed=e.seed, desc=f"choosing the final model: {checkpoint.name}",
                           tool_timeout=e.tool_timeout)
        value = sum(r["success_rate"] for r in results.values()) / len(results)
        say(f"held-out success of {checkpoint.name}: {value:.3f}")
        return value

    return score


def _merge(adapter_dir: Path, out_dir: Path) -> None:
    from agentgrpo.training.models import merge_adapter

    merge_adapter(adapter_dir, out_dir)


def _nothing(*_args) -> int:
    return 0


def _stopping_failure(doctors) -> tuple[dict | None, int]:
    """The failure (as a dict) that made a live doctor stop the segment, and the step; (None, 0) if none did."""
    for doctor in doctors:
        finding = getattr(doctor, "stopped_finding", None)
        if finding is not None:
            return finding.to_dict(), int(doctor.history.last_step or 0)
    return None, 0
