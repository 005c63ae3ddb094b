"""Build the embedded default model: tokenizer, random init, and the SFT'd starting checkpoint.

The shipped checkpoint (``agentgrpo/tiny/assets/calculator-sft``) is what `agentgrpo demo` starts from,
like a model from an earlier SFT session. `agentgrpo build-tiny` rebuilds it from scratch, reproducibly
(same seed, same data, same tokenizer; `agentgrpo.training.sft.build_tiny_sft`), and `agentgrpo demo --sft`
redoes the SFT inside a demo run. This package never imports `agentgrpo.training` (which imports it).
"""

from __future__ import annotations

from pathlib import Path

from agentgrpo.tasks.base import Task

ASSETS = Path(__file__).parent / "assets"
SHIPPED_SFT = ASSETS / "calculator-sft"
SHIPPED_SFT_TASKS = ("calculator", "calculator-hard")  # the tasks whose prompts the shipped checkpoint knows
# tasks with a warm start of their own, shipped as assets/<task>-sft (`agentgrpo build-tiny --task T`), and the
# SFT steps that build it (the calculator's 1500 is `SFTSettings`' default)
WARM_START_STEPS = {"calculator": 1500, "wordle-easy": 350, "function-calling-easy": 1500, "reasoning-easy": 1500,
                    "coding-easy": 1500}
# tasks beyond the tiny model, and the easy variant that has a warm start (docs/tasks.md, "The tiny model")
EASY_VARIANTS = {"wordle": "wordle-easy", "function-calling": "function-calling-easy", "reasoning": "reasoning-easy",
                 "coding": "coding-easy"}
TOKENIZER_CORPUS = 2000  # rendered demonstrations the BPE is trained on
TOKENIZER_SEED = 0
ARCH_VERSION = "llama1"  # part of the cache key of 'tiny-random': a cached build of another form is not reused


def build_tokenizer(task: Task):
    """The task-fitted tokenizer (deterministic): BPE trained on rendered demonstrations, both kinds.

    A task without demonstrations (a plain dataset) gets the calculator's: byte-level, so any text encodes.
    Every task but the calculator's (whose shipped checkpoint fixes its tokenizer) splits at line ends
    (`split_lines`): no token straddles the generation prompt and the answer.
    """
    from agentgrpo.tasks.demonstrations import demonstrations
    from agentgrpo.tiny.tokenizer import template_renderer, train_tokenizer

    if task.demonstration is None:
        from agentgrpo.tasks.calculator import TASK as calculator

        task = calculator
    renderer = template_renderer()
    demos = demonstrations(task, TOKENIZER_CORPUS, tool_fraction=0.5, seed=TOKENIZER_SEED)
    texts = [renderer.apply_chat_template(d["messages"], tools=d["tools"], tokenize=False) for d in demos]
    return train_tokenizer(texts, split_lines=splits_lines(task))


def splits_lines(task: Task) -> bool:
    """Whether ``task``'s tokenizer splits at line ends: every task but the calculator's (`SHIPPED_SFT_TASKS`)."""
    return task.demonstration is not None and task.name not in SHIPPED_SFT_TASKS


def build_random(task: Task, out_dir: str | Path, seed: int = 0) -> Path:
    """Save an untrained tiny model and its tokenizer to ``out_dir``."""
    from agentgrpo.tiny.model import build_tiny_model

    tokenizer = build_tokenizer(task)
    model = build_tiny_model(tokenizer, seed=seed)
    out = Path(out_dir)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out


def warm_start(task_name: str) -> Path | None:
    """The shipped SFT checkpoint model 'tiny' means for ``task_name``: the task's own warm start where it has
    one (`WARM_START_STEPS`), else None (then 'tiny' is the calculator's, with a note)."""
    if task_name in SHIPPED_SFT_TASKS:
        return SHIPPED_SFT
    if task_name in WARM_START_STEPS:
        return ASSETS / f"{task_name}-sft"
    return None


def random_checkpoint(task: Task) -> Path:
    """The untrained tiny model for ``task`` in the user cache ('tiny-random'); built on first use (seconds)."""
    from platformdirs import user_cache_dir

    label = f"{task.name}-v{task.version}" if task.demonstration is not None else "generic-v1"
    label += "-lines" if splits_lines(task) else ""
    path = Path(user_cache_dir("agentgrpo")) / f"tiny-random-{label}-{ARCH_VERSION}"
    if not (path / "config.json").exists():
        build_random(task, path)
    return path
