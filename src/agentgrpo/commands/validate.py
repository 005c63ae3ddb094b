"""Check a config and its task before spending compute; every problem is reported at once.

    agentgrpo validate --config configs/demo.yaml --num_generations 6
    agentgrpo validate --config my_lora_run.yaml --use_peft true --lora_r 8
    agentgrpo validate --task coding          # a task on the demo's settings (model: tiny-random unless given)
    agentgrpo validate wordle                 # one task alone: gold earns the maximum + the reward audit
    agentgrpo validate --all                  # every built-in task (those needing the Hub are skipped offline)

Checks, all before any model loads: every key is an agentgrpo option, a TRL GRPOConfig field or a TRL LoRA
field, with the right type; the real GRPOConfig builds (TRL's own checks); ranges TRL checks only after the
load (learning_rate, temperature, max_steps, loss_type, report_to trackers installed); the group size divides
the generation batch; no bf16/fp16/vLLM without a GPU; the task or dataset and every reward exist, with
their params and dataset columns; stop_on names doctor failure modes; the model can be found (a Hub id while
HF_HUB_OFFLINE is set must be cached); each tool has a schema and answers a sample call, and each reward
returns one number per completion on a sample, within tool_timeout (a call that never returns is reported);
and, with no model, that the task's gold completion earns the maximum of each of its rewards. Exit status 0
when all pass, 2 if not.
"""

from __future__ import annotations

from agentgrpo.commands._common import add_override_help, collect_overrides, config_path

HELP = "check a config and its task's verifier without loading a model"
GOLD_ROWS = 50  # task mode's default --eval_size


def add_arguments(parser) -> None:
    # `agentgrpo validate TASK`: the task is the first bare word (read in `run`, not declared here, so a
    # positional never swallows the value of a free-form override like `--max_steps 2`).
    parser.usage = "agentgrpo validate [TASK | --all] [--config FILE] [--option value ...]"
    parser.add_argument("--all", action="store_true",
                        help="Check every built-in task alone; `agentgrpo validate TASK` checks one (a built-in, "
                             "e.g. wordle or reasoning[difficulty=2], or module:TASK): gold answers earn every "
                             "reward's maximum and the reward audit passes. No config, no model.")
    parser.add_argument("--eval_size", "--n", dest="n", type=int, default=None,
                        help=f"Task mode: held-out rows the gold is scored on (default: {GOLD_ROWS}; --n is the old "
                             "spelling). With a config: the config option eval_size.")
    parser.add_argument("--config", default=None, help="YAML file or shipped config name (default: demo).")
    add_override_help(parser, declared=("eval_size",))


def run(args) -> int:
    extra = list(getattr(args, "overrides", None) or [])
    args.task = extra.pop(0) if extra and not extra[0].startswith("-") else None
    if args.task is not None or args.all:
        from agentgrpo.commands.validate_tasks import validate_tasks
        from agentgrpo.errors import UserError

        if extra:
            raise UserError(f"validate {args.task or '--all'}: checks the task alone and takes no config options "
                            f"({' '.join(extra)}); give them with --config FILE instead")
        if args.n is None:
            args.n = GOLD_ROWS
        return validate_tasks(args)
    args.overrides = extra + (["--eval_size", str(args.n)] if args.n is not None else [])
    from agentgrpo.errors import ConfigError
    from agentgrpo.plan import resolve_plan

    overrides = collect_overrides(args)
    plan = resolve_plan(config_path(args.config or "demo"), _for_task(args.config, overrides), deep=True)
    task = plan.task
    for warning in plan.warnings:
        print(f"warning: {warning}")
    problems = task.validate()
    if problems:
        raise ConfigError([f"task {task.name}: {p}" for p in problems])
    lora = f", LoRA r={plan.peft_config().r}" if plan.uses_peft else ""
    print(f"config OK: task {task.name} v{task.version}, model {plan.run.model}{lora}, "
          f"{plan.setting('num_generations')} completions per prompt, {plan.setting('max_steps')} steps")
    if task.gold_completion is not None:
        print(f"verifier OK: the gold completion earns the maximum of every {task.name} reward")
    else:
        print(f"verifier: {task.name} has no gold completion, so the rewards' maximum was not checked")
    for line in task.report() if task.report else []:
        print(line)
    return 0


def _for_task(config: str | None, overrides: list[str]) -> list[str]:
    """``--task X`` on the default (demo) config: the demo's model, 'tiny', is the calculator's, so another
    task is checked with 'tiny-random' (the embedded untrained model) unless a model is given."""
    from agentgrpo.config import parse_overrides

    given, _ = parse_overrides(overrides)
    task = given.get("task")
    if config is not None or "model" in given or task in (None, "calculator"):
        return overrides
    print(f"note: task {task} on the demo config: model tiny-random (the demo's 'tiny' is the calculator's; "
          "give --model to check another)")
    return [*overrides, "--model", "tiny-random"]

