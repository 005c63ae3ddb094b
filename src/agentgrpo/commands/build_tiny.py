"""Rebuild the embedded tiny model's SFT checkpoint from scratch, reproducibly.

    agentgrpo build-tiny                      # overwrite the shipped checkpoint in the package
    # identical to the SFT stage of `agentgrpo demo --sft` (same init, data, seed 42 and settings)
    agentgrpo build-tiny --out /tmp/tiny-sft  # build elsewhere (then: agentgrpo train --model /tmp/tiny-sft)

Builds the tokenizer (BPE on rendered demonstrations), a random 0.9M-parameter Qwen2-style model, and runs
the SFT warm start (TRL SFTTrainer, assistant-only loss, 1500 steps) on mixed demonstrations: half call the calculator,
half answer directly. Same seed, same result. Takes 10-14 minutes on 2 CPU cores.
"""

from __future__ import annotations

HELP = "rebuild the shipped tiny SFT checkpoint (10-14 minutes on 2 cores)"


def add_arguments(parser) -> None:
    parser.add_argument("--out", default=None, help="Output directory (default: the shipped location).")
    parser.add_argument("--steps", type=int, default=1500, help="SFT steps (default: 1500).")
    parser.add_argument("--seed", type=int, default=42, help="SFT seed (default: 42, as `agentgrpo demo --sft`).")


def run(args) -> int:
    import time

    from agentgrpo.tasks import get_task
    from agentgrpo.tiny.build import SHIPPED_SFT
    from agentgrpo.training.sft import SFTSettings, build_tiny_sft

    out = args.out or SHIPPED_SFT
    start = time.perf_counter()
    build_tiny_sft(get_task("calculator"), out, SFTSettings(steps=args.steps, seed=args.seed))
    print(f"tiny SFT checkpoint written to {out} in {time.perf_counter() - start:.0f}s")
    return 0
