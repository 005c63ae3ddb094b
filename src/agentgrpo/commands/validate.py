"""Check a config and its task before spending compute; every problem is reported at once.

    agentgrpo validate --config configs/demo.yaml --num_generations 6

Checks: every key is an agentgrpo option or a TRL GRPOConfig field, with the right type; the group size
divides the generation batch; no bf16/fp16/vLLM without a GPU; the task and reward names exist; every
reward's dataset columns are provided by the task; and, with no model, that the task's gold completion
earns the maximum of each of its rewards. Loads no model. Exit status 0 when all checks pass, 2 if not.
"""

from __future__ import annotations

from agentgrpo.commands._common import add_override_help, collect_overrides, config_path

HELP = "check a config and its task's verifier without loading a model"


def add_arguments(parser) -> None:
    parser.add_argument("--config", default="demo", help="YAML file or shipped config name (default: demo).")
    add_override_help(parser)


def run(args) -> int:
    from agentgrpo.config import load_config
    from agentgrpo.errors import ConfigError
    from agentgrpo.tasks import get_task

    cfg = load_config(config_path(args.config), collect_overrides(args))
    task = get_task(cfg.run.task)
    problems = task.validate()
    if problems:
        raise ConfigError([f"task {task.name}: {p}" for p in problems])
    print(f"config OK: task {task.name} v{task.version}, model {cfg.run.model}, "
          f"{cfg.grpo.get('num_generations', 8)} completions per prompt")
    print(f"verifier OK: the gold completion earns the maximum of every {task.name} reward")
    for line in task.report() if task.report else []:
        print(line)
    return 0
