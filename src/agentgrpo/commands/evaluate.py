"""Evaluate a model on a task's held-out problems, with 95% confidence intervals.

    agentgrpo eval --model runs/calculator-XXXX                    # a run: its final/ model, its config.yaml
    agentgrpo eval --model runs/lora-run/final                     # a LoRA adapter (base from adapter_config)
    agentgrpo eval --model tiny --eval_modes greedy sampled --eval_size 500     # the shipped starting point
    agentgrpo eval --model runs/A --out after.json --eval_size 1000
    agentgrpo eval --task coding --model runs/coding-XXXX --samples 10 --k 1 5 10     # HumanEval pass@k

Given a run directory, eval reads its plan (config.yaml): the task (or dataset), max_completion_length,
temperature and max_tool_calling_iterations, so it evaluates exactly as GRPO generated (a flag given here
wins, and is reported). For a bare model the settings are what training would use (TRL's GRPOConfig
defaults, agentgrpo's own where it sets one). Flags are the config's option names (--eval_size, --eval_modes,
--temperature, ...; --n and --modes are older spellings). Success is the task's success reward
(exact final answer for `calculator`). Reports success rate with a Wilson 95% CI, tool-call rate, tool
failures, mean turns and truncation, greedy and/or sampled at the training temperature; rollouts are
generated as GRPO generates them (same template, same tool loop).
With ``--samples N`` (N > 1) it samples N episodes per problem instead and reports pass@k for each ``--k``
(the unbiased estimator of Chen et al. 2021, 95% bootstrap CI over problems; Wilson for pass@1).
"""

from __future__ import annotations

import json
from pathlib import Path

HELP = "evaluate a model on held-out problems (success with 95%% CI, tool use, turns)"
FROM_RUN = ("temperature", "max_completion_length", "max_tool_calling_iterations")


def add_arguments(parser) -> None:
    parser.add_argument("--model", required=True, help="'tiny', a save_pretrained or LoRA adapter directory, a run "
                                                       "directory (its final/ model and config.yaml), or a Hub id.")
    parser.add_argument("--task", default=None, help="Task name or file.py:TASK (default: the run's, else "
                                                     "calculator).")
    parser.add_argument("--eval_size", "--n", dest="eval_size", type=int, default=None,
                        help="Number of held-out problems (default: the run's eval_size, else "
                             f"{_default('eval_size')}; --n is the older name).")
    parser.add_argument("--eval_modes", "--modes", dest="eval_modes", nargs="+", default=None,
                        choices=["greedy", "sampled"], help="Decoding modes (default: the run's, else greedy sampled).")
    parser.add_argument("--temperature", type=float, default=None,
                        help="Sampling temperature (default: the run's, else TRL's GRPOConfig default).")
    parser.add_argument("--max_completion_length", type=int, default=None,
                        help="Token budget per episode, tool results included (default: the run's, else what "
                             "training would use: TRL's GRPOConfig default).")
    parser.add_argument("--max_tool_calling_iterations", type=int, default=None,
                        help="Tool-call turns per episode (default: the run's, else TRL's).")
    parser.add_argument("--tool_timeout", type=float, default=None,
                        help="Seconds one tool call may take before it ends as a 'timed out' observation, as in "
                             "training (default: the run's tool_timeout, else the option's default; 0 = no limit).")
    parser.add_argument("--samples", type=int, default=1,
                        help="Sampled episodes per problem; > 1 reports pass@k instead of --modes (default: 1).")
    parser.add_argument("--k", type=int, nargs="+", default=[1, 5, 10],
                        help="The k of pass@k, each <= --samples (default: 1 5 10).")
    parser.add_argument("--seed", type=int, default=None, help="Sampling seed (default: the run's, else TRL's).")
    parser.add_argument("--out", default=None, help="Write the results to this JSON file.")


def _default(name: str):
    from agentgrpo.config import RunConfig

    return getattr(RunConfig, name)


def run(args) -> int:
    from agentgrpo.errors import UserError
    from agentgrpo.evaluation.evaluate import evaluate
    from agentgrpo.training.models import load_model, load_tokenizer, resolve_model, tiny_note

    if (args.eval_size is not None and args.eval_size < 1) or args.samples < 1:
        raise UserError("--eval_size and --samples must be >= 1")
    if args.samples > 1 and not any(1 <= k <= args.samples for k in args.k):
        raise UserError(f"--k {args.k}: every k is above --samples {args.samples}; pass k <= samples")
    model, saved = _run_model(args.model)
    task, settings = _settings(args, saved)
    path = resolve_model(model, task)
    if model == "tiny" and tiny_note(task.name):
        print(f"warning: {tiny_note(task.name)}")
    print(f"eval: {path} on {task.name}, " + ", ".join(f"{k} {getattr(settings, k)}"
                                                       for k in (*FROM_RUN, "tool_timeout")))
    if args.samples > 1:
        return _pass_at_k(args, task, path, settings)
    results = evaluate(load_model(path), load_tokenizer(path), task, task.eval_problems(settings.size),
                       modes=list(settings.modes), seed=settings.seed, tool_timeout=settings.tool_timeout,
                       batch_size=settings.batch_size, **{k: getattr(settings, k) for k in FROM_RUN})
    for mode, res in results.items():
        lo, hi = res["ci95"]
        print(f"{mode:>7}: success {res['success_rate']:.1%} [{lo:.1%}, {hi:.1%}] (n={res['n']}), "
              f"tool calls {res['tool_call_rate']:.1%}, tool failures {res['tool_failure_rate']:.1%}, "
              f"mean turns {res['mean_turns']:.2f}, truncated {res['truncation_rate']:.1%}, "
              f"tool calls timed out {res['tool_timeouts']} (tool_timeout {settings.tool_timeout:g} s)")
        print_episodes(res["episodes"])
    if args.out:
        payload = {"model": path, "task": task.name, "settings": {k: getattr(settings, k) for k in FROM_RUN}, **results}
        Path(args.out).write_text(json.dumps(payload, indent=1))
        print(f"results written to {args.out}")
    return 0


def _run_model(model: str) -> tuple[str, dict | None]:
    """(the model to load, the run's config.yaml or None) for a run directory, its final/, or anything else."""
    from agentgrpo import rundir

    path = Path(model).expanduser()
    for run_dir, candidate in ((path, path / rundir.FINAL), (path.parent, path)):
        if (run_dir / rundir.CONFIG).is_file() and _is_model(candidate):
            return str(candidate), rundir.read_config(run_dir)
    return model, None


def _is_model(path: Path) -> bool:
    return (path / "config.json").is_file() or (path / "adapter_config.json").is_file()


SETTINGS = (*FROM_RUN, "seed", "eval_size", "eval_modes", "tool_timeout")  # the options eval takes as flags
FIELD = {"eval_size": "size", "eval_modes": "modes"}  # their `EvalSettings` names where they differ


def _settings(args, saved: dict | None):
    """The task and the `EvalSettings`: the run's plan (config.yaml; `RunPlan.eval`), else those of the options
    a training run would have (the same builder, `EvalSettings.of`), with the flags given here applied."""
    import dataclasses

    from agentgrpo.plan import EvalSettings, resolve_plan

    flags = {k: getattr(args, k) for k in SETTINGS if getattr(args, k, None) is not None}
    if saved is None:
        from agentgrpo.config import resolve_options
        from agentgrpo.tasks.dataset import task_for

        options, problems = resolve_options({"task": args.task or "calculator", **flags}, cuda=False)
        if problems:
            from agentgrpo.errors import ConfigError

            raise ConfigError(problems)
        return task_for(options), EvalSettings.of(options)
    plan = resolve_plan(dict(saved), {"task": args.task} if args.task else None, cuda_available=True)
    for key, flag in flags.items():
        if key in FROM_RUN and flag != getattr(plan.eval, key):
            print(f"note: {key} {flag} (the run trained with {getattr(plan.eval, key)})")
    given = {FIELD.get(k, k): (tuple(v) if k == "eval_modes" else v) for k, v in flags.items()}
    return plan.task, dataclasses.replace(plan.eval, **given)


def _pass_at_k(args, task, path: str, settings: dict) -> int:
    from tqdm.auto import tqdm

    from agentgrpo.evaluation.passk import evaluate_pass_at_k
    from agentgrpo.training.models import load_model, load_tokenizer

    rows = task.eval_problems(settings.size)
    with tqdm(total=len(rows) * args.samples, desc="pass@k", leave=False) as bar:
        res = evaluate_pass_at_k(load_model(path), load_tokenizer(path), task, rows, samples=args.samples,
                                 ks=args.k, temperature=settings.temperature,
                                 max_completion_length=settings.max_completion_length, seed=settings.seed,
                                 max_tool_calling_iterations=settings.max_tool_calling_iterations,
                                 progress=bar, tool_timeout=settings.tool_timeout)
    for key, entry in res.items():
        if key.startswith("pass@"):
            lo, hi = entry["ci95_bootstrap"]
            wilson = entry.get("ci95_wilson")
            extra = f", Wilson [{wilson[0]:.1%}, {wilson[1]:.1%}]" if wilson else ""
            print(f"{key:>8}: {entry['estimate']:.1%} [bootstrap {lo:.1%}, {hi:.1%}{extra}]")
    print(f"{res['problems']} problems x {args.samples} samples at temperature {settings.temperature}; tool "
          f"calls {res['tool_call_rate']:.1%}, tool failures {res['tool_failure_rate']:.1%}, "
          f"tool calls timed out {res['tool_timeouts']} (tool_timeout {settings.tool_timeout:g} s), "
          f"unscored {res['unscored']}")
    print_episodes(res["episodes"])
    if args.out:
        Path(args.out).write_text(json.dumps({"model": path, **res}, indent=1))
        print(f"results written to {args.out}")
    return 0


def print_episodes(stats: dict) -> None:
    """Turns used, each tool's calls and failures, and the task's own episode statistics."""
    turns = stats["turns"]
    used = ", ".join(f"{k}: {v}" for k, v in turns["episodes_by_turns"].items())
    print(f"         turns: mean {turns['mean']:.2f}, max {turns['max']} (episodes by turns used: {used})")
    for name, tool in sorted(stats["per_tool"].items()):
        print(f"         tool {name}: {tool['calls']} calls ({tool['calls_per_episode']:.2f} per episode), "
              f"{tool['failures']} failed ({tool['failure_rate']:.1%})")
    for name, value in (stats.get("task") or {}).items():
        print(f"         {name}: {value:.3f}")
