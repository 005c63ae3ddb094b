"""Build and run TRL's `GRPOTrainer` for a task: dataset, environment (tools), rewards, our callbacks."""

from __future__ import annotations

from pathlib import Path

from datasets import Dataset

from agentgrpo import rundir
from agentgrpo.config import ResolvedConfig
from agentgrpo.tasks.base import Task
from agentgrpo.training.progress import use_compact_progress
from agentgrpo.training.recorder import Recorder
from agentgrpo.training.reward_specs import make_reward_funcs
from agentgrpo.training.tool_timeout import ToolTimeoutCounter, timed_environment_factory
from agentgrpo.training.watchdog import Watchdog


def train_dataset(task: Task, size: int, seed: int) -> Dataset:
    return Dataset.from_list(task.train_problems(size, seed))


def build_grpo_trainer(cfg: ResolvedConfig, task: Task, model_path: str, run_dir: Path, callbacks=(),
                       record: bool = True):
    """A ready `GRPOTrainer` writing checkpoints under ``run_dir/checkpoints`` and metrics to ``run_dir``.

    ``record=False`` leaves out the recorder (plain TRL, for overhead measurements).
    """
    from trl import GRPOConfig, GRPOTrainer

    from agentgrpo.training.models import load_tokenizer

    funcs, weights = make_reward_funcs(cfg.run.rewards, task, strict=cfg.run.strict_rewards)
    grpo_kwargs = {"logging_steps": 1, "save_strategy": "steps", "save_steps": 50, **cfg.grpo}
    grpo_kwargs.setdefault("reward_weights", weights)
    grpo_kwargs.setdefault("run_name", run_dir.name)  # trackio / wandb show the run under its own name
    grpo_kwargs.setdefault("project", f"agentgrpo-{task.name}")  # and project (TRL's default: "huggingface")
    args = GRPOConfig(output_dir=str(run_dir / rundir.CHECKPOINTS), **grpo_kwargs)
    recorder = Recorder(run_dir) if record else None
    guards = [ToolTimeoutCounter(), Watchdog(run_dir, cfg.run.step_timeout)] if record else []
    trainer = GRPOTrainer(
        model=model_path,
        reward_funcs=funcs,
        args=args,
        train_dataset=train_dataset(task, cfg.run.train_size, seed=args.seed),
        processing_class=load_tokenizer(model_path),
        environment_factory=timed_environment_factory(task.environment_factory, cfg.run.tool_timeout),
        callbacks=[c for c in (*guards[:1], recorder, *guards[1:], *callbacks) if c is not None],
    )
    if recorder is not None:
        recorder.attach(trainer)
    use_compact_progress(trainer)
    return trainer


def train(trainer, run_dir: Path, resume: bool = False) -> Path:
    """Train (resuming from the last checkpoint when asked and present); save the final model."""
    checkpoint = rundir.last_checkpoint(run_dir) if resume else None
    trainer.train(resume_from_checkpoint=str(checkpoint) if checkpoint else None)
    final = run_dir / rundir.FINAL
    trainer.save_model(str(final))
    trainer.processing_class.save_pretrained(str(final))
    return final
