"""SFT warm start with TRL's `SFTTrainer` on a task's generated demonstrations.

The demonstrations are deliberately mixed: a fraction calls the tool and answers with its result, the rest
answer directly (and correctly). The model learns the format and *sometimes* uses the tool; GRPO then has
to find out from outcomes that the tool pays. Loss is on assistant tokens only (tool output is masked).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from datasets import Dataset

from agentgrpo.config import GRPO_DEFAULTS, GRPO_DEFAULTS_CPU, RunConfig
from agentgrpo.tasks.base import Task
from agentgrpo.tasks.demonstrations import demonstrations
from agentgrpo.training.progress import use_compact_progress


@dataclass(frozen=True)
class SFTSettings:
    """The SFT warm start: the ``sft_*`` options (their defaults are `RunConfig`'s, typed there once)."""

    steps: int = RunConfig.sft_steps
    batch_size: int = RunConfig.sft_batch_size
    learning_rate: float = RunConfig.sft_learning_rate
    tool_fraction: float = RunConfig.sft_tool_fraction
    warmup_ratio: float = 0.05
    unique_examples: int = 16_000  # demonstrations generated; more steps cycle through them again
    seed: int = 0


def run_sft(model, tokenizer, task: Task, settings: SFTSettings, output_dir: str | Path, *,
            use_cpu: bool = GRPO_DEFAULTS_CPU["use_cpu"], report_to: str | list = GRPO_DEFAULTS["report_to"],
            show_progress: bool = True):
    """Train ``model`` in place on the task's demonstrations; save model + tokenizer to ``output_dir``."""
    from trl import SFTConfig, SFTTrainer

    n = min(settings.unique_examples, settings.steps * settings.batch_size)
    data = Dataset.from_list(demonstrations(task, n, settings.tool_fraction, settings.seed))
    args = SFTConfig(
        output_dir=str(output_dir),
        max_steps=settings.steps,
        per_device_train_batch_size=settings.batch_size,
        learning_rate=settings.learning_rate,
        lr_scheduler_type="cosine",
        warmup_steps=max(1, int(settings.warmup_ratio * settings.steps)),
        assistant_only_loss=True,
        max_length=512,
        logging_steps=max(1, settings.steps // 20),
        save_strategy="no",
        report_to=report_to,
        use_cpu=use_cpu,
        bf16=not use_cpu,
        seed=settings.seed,
        data_seed=settings.seed,
        disable_tqdm=not show_progress,
        dataset_num_proc=None,
    )
    from agentgrpo.training.models import freeze_fixed_parameters

    trainer = SFTTrainer(model=model, args=args, train_dataset=data, processing_class=tokenizer)
    freeze_fixed_parameters(trainer.model)
    use_compact_progress(trainer)
    trainer.train()
    trainer.save_model(str(output_dir))
    tokenizer.save_pretrained(str(output_dir))
    return trainer


def build_tiny_sft(task: Task, out_dir: str | Path, settings: SFTSettings | None = None,
                   show_progress: bool = True) -> Path:
    """The tiny model's SFT checkpoint exactly as `agentgrpo demo --sft` makes it: the 'tiny-random' init
    (seed 0), then TRL SFT on the task's mixed demonstrations (seeded by ``settings.seed``)."""
    from agentgrpo.training.models import load_model, load_tokenizer, resolve_model

    start = resolve_model("tiny-random", task)
    run_sft(load_model(start), load_tokenizer(start), task, settings or SFTSettings(), out_dir,
            show_progress=show_progress)
    return Path(out_dir)
