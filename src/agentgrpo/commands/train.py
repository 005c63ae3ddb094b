"""Train an agent with GRPO: YAML config plus TRL-style flag overrides.

    agentgrpo train --config configs/demo.yaml --learning_rate 1e-4 --run_name lr1e-4
    agentgrpo train --config demo --model ./my_saved_model        # a save_pretrained directory
    agentgrpo train --config qwen2.5-0.5b-1gpu                     # real model, 1 GPU, vLLM colocate
    agentgrpo train --model Qwen/Qwen2.5-0.5B-Instruct --max_steps 200 --dataset_name data.jsonl \
        --rewards my_rewards.py:score --use_peft true --lora_r 16  # a plain dataset, LoRA
    agentgrpo train --task ./my_task.py:TASK --model tiny-random --sft true --max_steps 80

Steps: [SFT warm start if sft: true] -> held-out eval before -> GRPO (TRL GRPOTrainer with the task's
tools through environment_factory) -> held-out eval after -> curves. Everything lands in runs/<name>/.
The config is checked in full before any model is loaded; all problems are reported at once. A task is a
name, 'path/to/file.py:TASK' or 'package.module:TASK'. --resume true continues the run named by --run_name
(or output_dir) with its own plan (its config.yaml): only the options given now on the command line apply,
the config file is not re-read; an option a resume cannot honour (learning_rate, batch size, ...) is
refused, not ignored.
On several GPUs, launch the same command with `accelerate launch -m agentgrpo.cli train ...`.
"""

from __future__ import annotations

import os

from agentgrpo.commands._common import add_override_help, collect_overrides, config_path

HELP = "train with GRPO from a YAML config (+ --option value overrides)"


def add_arguments(parser) -> None:
    parser.add_argument("--config", default=None, help="YAML file, or a shipped config name (see `agentgrpo ls`); "
                                                       "optional when the flags give model and max_steps.")
    add_override_help(parser)


def run(args) -> int:
    from agentgrpo.plan import resolve_plan

    return run_resolved(resolve_plan(config_path(args.config), collect_overrides(args), deep=True, early=True))


def run_resolved(plan) -> int:
    """Run a resolved config in this process and print its summary."""
    from agentgrpo.pipeline import is_main_process, say, summary_lines
    from agentgrpo.pipeline import run as run_pipeline

    result = run_pipeline(plan)
    if not is_main_process():
        return 0
    from agentgrpo.launch.cost import run_cost

    for line in summary_lines(result):
        say(line)
    say(run_cost(result.run_dir, os.environ.get("AGENTGRPO_JOB_FLAVOR"))["summary"])
    return 0
