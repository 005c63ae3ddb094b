"""Rebuild the embedded tiny model's SFT checkpoint (a task's warm start) from scratch, reproducibly.

    agentgrpo build-tiny                      # overwrite the shipped calculator checkpoint in the package
    # identical to the SFT stage of `agentgrpo demo --sft` (same init, data, seed 42 and settings)
    agentgrpo build-tiny --task wordle-easy   # another task's shipped warm start (assets/wordle-easy-sft)
    agentgrpo build-tiny --out /tmp/tiny-sft  # build elsewhere (then: agentgrpo train --model /tmp/tiny-sft)

Builds the tokenizer (BPE on the task's rendered demonstrations), a random 0.9M-parameter Qwen2-style model,
and runs the SFT warm start (TRL SFTTrainer, assistant-only loss) on the task's demonstrations: for the
calculator 1500 steps, half calling the calculator, half answering directly (10-14 minutes on 2 CPU cores);
wordle-easy 350 steps, function-calling-easy 1500, reasoning-easy 1500, coding-easy 1500 (docs/tasks.md, "The tiny
model"). Same seed, same result.
"""

from __future__ import annotations

HELP = "rebuild a shipped tiny SFT checkpoint (calculator: 10-14 minutes on 2 cores)"


def add_arguments(parser) -> None:
    from agentgrpo.tiny.build import WARM_START_STEPS

    parser.add_argument("--task", default="calculator", choices=sorted(WARM_START_STEPS),
                        help="The task whose warm start to build (default: calculator).")
    parser.add_argument("--out", default=None, help="Output directory (default: the shipped location).")
    parser.add_argument("--steps", type=int, default=None,
                        help="SFT steps (default: the task's, " + ", ".join(
                            f"{t} {n}" for t, n in sorted(WARM_START_STEPS.items())) + ").")
    parser.add_argument("--seed", type=int, default=42, help="SFT seed (default: 42, as `agentgrpo demo --sft`).")


def run(args) -> int:
    import time

    from agentgrpo.tasks import get_task
    from agentgrpo.tiny.build import WARM_START_STEPS, warm_start
    from agentgrpo.training.sft import SFTSettings, build_tiny_sft

    out = args.out or warm_start(args.task)
    steps = args.steps if args.steps is not None else WARM_START_STEPS[args.task]
    start = time.perf_counter()
    build_tiny_sft(get_task(args.task), out, SFTSettings(steps=steps, seed=args.seed))
    print(f"tiny SFT checkpoint for {args.task} written to {out} in {time.perf_counter() - start:.0f}s")
    return 0
