"""Build and run TRL's `GRPOTrainer` for a task: dataset, tools/environment, rewards, LoRA, our callbacks."""

from __future__ import annotations

from pathlib import Path

from datasets import Dataset

from agentgrpo import rundir
from agentgrpo.tasks.base import Task
from agentgrpo.training.progress import use_compact_progress
from agentgrpo.training.recorder import Recorder
from agentgrpo.training.reward_specs import make_reward_funcs
from agentgrpo.training.tool_timeout import ToolTimeoutCounter, timed_environment_factory, timed_tools
from agentgrpo.training.watchdog import Watchdog, stop_with_training


def train_dataset(task: Task, size: int, seed: int) -> Dataset:
    return Dataset.from_list(task.train_problems(size, seed))


def build_grpo_trainer(plan, task: Task, model_path: str, run_dir: Path, callbacks=(), record: bool = True):
    """A ready `GRPOTrainer` for the run plan ``plan`` (`agentgrpo.plan.RunPlan`), writing checkpoints under
    ``run_dir/checkpoints`` and metrics to ``run_dir``.

    The plan's own RewardSet and GRPOConfig are used as they are; a ``task`` or ``run_dir`` other than the
    plan's (a test's, a benchmark's) gets its own. ``record=False`` leaves out the recorder (plain TRL, for
    overhead measurements). With ``use_peft`` (or a ``peft_config`` object) TRL wraps the model in a LoRA
    adapter; only the adapter trains. The trainer is TRL's `GRPOTrainer` with the plan's ``dynamic_sampling``
    (`agentgrpo.training.dynamic_trainer`; off = TRL's own training).
    """
    from agentgrpo.training.dynamic_trainer import DynamicSamplingTrainer
    from agentgrpo.training.models import freeze_fixed_parameters, load_tokenizer

    own = task is plan.task and Path(run_dir) == Path(plan.run_dir) and plan.grpo_config is not None
    if own:
        funcs, args = plan.rewards.funcs, plan.grpo_config
    else:
        funcs, weights = make_reward_funcs(plan.run.rewards, task, strict=plan.run.strict_rewards)
        # trackio / wandb show the run under its own name and project (TRL's defaults: random, "huggingface")
        args = plan.options.grpo_args(run_dir / rundir.CHECKPOINTS, reward_weights=weights, run_name=run_dir.name,
                                     project=f"agentgrpo-{task.name}")
    recorder = Recorder(run_dir) if record else None
    guards = [ToolTimeoutCounter(), Watchdog(run_dir, plan.run.step_timeout)] if record else []
    trainer = DynamicSamplingTrainer(
        model=model_path,
        dynamic_sampling=plan.run.dynamic_sampling,
        max_generation_rounds=plan.run.max_generation_rounds,
        refill_carry=plan.run.refill_carry,
        refill_skip_solved=plan.run.refill_skip_solved,
        dynamic_sampling_reward=plan.run.dynamic_sampling_reward,
        refill_round_size=plan.run.refill_round_size,
        reward_funcs=funcs,
        args=args,
        train_dataset=train_dataset(task, plan.run.train_size, seed=args.seed),
        processing_class=load_tokenizer(model_path),
        environment_factory=timed_environment_factory(task.environment_factory, plan.run.tool_timeout),
        tools=timed_tools(task.tool_functions, plan.run.tool_timeout) or None,
        peft_config=plan.peft_config(),
        callbacks=[c for c in (*guards[:1], recorder, *guards[1:], *callbacks) if c is not None],
    )
    freeze_fixed_parameters(trainer.model)
    if guards:
        stop_with_training(trainer, guards[1])  # however train() ends: a raised error must not leave it armed
    if recorder is not None:
        recorder.attach(trainer)
    use_compact_progress(trainer)
    _name_local_base_in_model_card(trainer, model_path)
    return trainer


def _name_local_base_in_model_card(trainer, model_path: str) -> None:
    """TRL's model card reads "a fine-tuned version of [None](https://huggingface.co/None)" for a model
    loaded from a local directory; name the directory instead."""
    import os

    original = trainer.create_model_card

    def create_model_card(*args, **kwargs):
        original(*args, **kwargs)
        card = Path(trainer.args.output_dir) / "README.md"
        if card.is_file() and os.path.isdir(model_path):
            text = card.read_text(encoding="utf-8")
            card.write_text(text.replace("[None](https://huggingface.co/None)", f"the local model `{model_path}`"),
                            encoding="utf-8")

    trainer.create_model_card = create_model_card


def train(trainer, run_dir: Path, resume: bool | str = False, save_merged: bool = False) -> Path:
    """Train (from ``resume``: True = the run's last checkpoint, or a checkpoint path); save the final model.

    A LoRA run saves the adapter (adapter_config.json + weights) to final/; ``save_merged`` also writes
    the base model with the adapter merged in to final-merged/.
    """
    checkpoint = resume if isinstance(resume, str) else (rundir.last_checkpoint(run_dir) if resume else None)
    if checkpoint:
        _expect_tied_weights_missing(trainer.model)
    trainer.train(resume_from_checkpoint=str(checkpoint) if checkpoint else None)
    final = run_dir / rundir.FINAL
    trainer.save_model(str(final))
    trainer.processing_class.save_pretrained(str(final))
    if save_merged and hasattr(trainer.model, "merge_and_unload"):
        from agentgrpo.training.models import merge_adapter

        merge_adapter(final, run_dir / rundir.MERGED)
    return final


def _expect_tied_weights_missing(model) -> None:
    """A tied lm_head is not saved in checkpoints; tell the Trainer, so resuming re-ties it quietly instead
    of warning "There were missing keys in the checkpoint model loaded: ['lm_head.weight']"."""
    tied = getattr(model, "_tied_weights_keys", None)
    if tied and getattr(model.config, "tie_word_embeddings", False) and not model._keys_to_ignore_on_save:
        model._keys_to_ignore_on_save = set(tied)
