"""Build and run TRL's `GRPOTrainer` for a task: dataset, tools/environment, rewards, LoRA, our callbacks."""

from __future__ import annotations

from pathlib import Path

from datasets import Dataset

from agentgrpo import rundir
from agentgrpo.tasks.base import Task
from agentgrpo.training.progress import use_compact_progress
from agentgrpo.training.recorder import Recorder
from agentgrpo.training.tool_timeout import ToolTimeoutCounter, timed_environment_factory, timed_tools
from agentgrpo.training.watchdog import Watchdog, stop_with_training


def train_dataset(task: Task, size: int, seed: int) -> Dataset:
    return Dataset.from_list(task.train_problems(size, seed))


def build_grpo_trainer(plan, model_path: str, callbacks=(), record: bool = True):
    """A ready `GRPOTrainer` for the run plan ``plan`` (`agentgrpo.plan.RunPlan`), writing checkpoints under
    ``run_dir/checkpoints`` and metrics to the plan's run directory.

    The plan's own task, RewardSet, GRPOConfig and `DynamicSampling` are used as they are (a test or a
    benchmark resolves a plan of its own: its task, ``output_dir``). ``record=False`` leaves out the recorder
    (plain TRL, for overhead measurements). With ``use_peft`` (or a ``peft_config`` object) TRL wraps the model
    in a LoRA adapter; only the adapter trains. The trainer is TRL's `GRPOTrainer` with the plan's dynamic
    sampling (`agentgrpo.training.dynamic_trainer`; off = TRL's own training).
    """
    from agentgrpo.training.dynamic_trainer import DynamicSamplingTrainer
    from agentgrpo.training.models import freeze_fixed_parameters, load_tokenizer

    if plan.grpo_config is None:
        raise ValueError("build_grpo_trainer: the plan was resolved for a simulated device (cuda_available differs "
                         "from this machine's); it has no GRPOConfig to train with")
    task, run_dir, args = plan.task, Path(plan.run_dir), plan.grpo_config
    recorder = Recorder(run_dir) if record else None
    guards = [ToolTimeoutCounter(), Watchdog(run_dir, plan.run.step_timeout)] if record else []
    trainer = DynamicSamplingTrainer(
        model=model_path,
        dynamic_sampling=plan.dynamic_sampling,
        reward_funcs=plan.rewards.funcs,
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


def train(trainer, run_dir: Path, *, resume: bool | str, save_merged: bool) -> Path:
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
