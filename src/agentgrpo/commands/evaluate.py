"""Evaluate a model on a task's held-out problems, with 95% confidence intervals.

    agentgrpo eval --model runs/calculator-XXXX/final              # a trained run's model
    agentgrpo eval --model tiny --modes greedy sampled --n 500     # the shipped starting point
    agentgrpo eval --model runs/A/final --out before_after.json --stage after

Success is the task's success reward (exact final answer for `calculator`). Reports success rate with a
Wilson 95% CI, tool-call rate, tool failures, mean turns and truncation, greedy and/or sampled at the
training temperature; rollouts are generated exactly as GRPO generates them (same template, same tool loop).
"""

from __future__ import annotations

import json

HELP = "evaluate a model on held-out problems (success with 95%% CI, tool use, turns)"


def add_arguments(parser) -> None:
    parser.add_argument("--model", required=True, help="'tiny', a save_pretrained directory, a run directory "
                                                       "(uses its final/ model), or a Hub id.")
    parser.add_argument("--task", default="calculator", help="Task name (default: calculator).")
    parser.add_argument("--n", type=int, default=200, help="Number of held-out problems (default: 200).")
    parser.add_argument("--modes", nargs="+", default=["greedy", "sampled"], choices=["greedy", "sampled"],
                        help="Decoding modes (default: greedy sampled).")
    parser.add_argument("--temperature", type=float, default=1.0, help="Sampling temperature (default: 1.0).")
    parser.add_argument("--max_completion_length", type=int, default=64,
                        help="Token budget per episode, tool results included (default: 64).")
    parser.add_argument("--seed", type=int, default=42, help="Sampling seed (default: 42).")
    parser.add_argument("--out", default=None, help="Write the results to this JSON file.")


def run(args) -> int:
    from pathlib import Path

    from agentgrpo import rundir
    from agentgrpo.errors import UserError
    from agentgrpo.evaluation.evaluate import evaluate
    from agentgrpo.tasks import get_task
    from agentgrpo.training.models import load_model, load_tokenizer, resolve_model

    if args.n < 1:
        raise UserError("--n must be >= 1")
    task = get_task(args.task)
    model = args.model
    if (Path(model) / rundir.FINAL / "config.json").exists():
        model = str(Path(model) / rundir.FINAL)
    path = resolve_model(model, task)
    results = evaluate(load_model(path), load_tokenizer(path), task, task.eval_problems(args.n),
                       modes=args.modes, temperature=args.temperature,
                       max_completion_length=args.max_completion_length, seed=args.seed)
    for mode, res in results.items():
        lo, hi = res["ci95"]
        print(f"{mode:>7}: success {res['success_rate']:.1%} [{lo:.1%}, {hi:.1%}] (n={res['n']}), "
              f"tool calls {res['tool_call_rate']:.1%}, tool failures {res['tool_failure_rate']:.1%}, "
              f"mean turns {res['mean_turns']:.2f}, truncated {res['truncation_rate']:.1%}")
    if args.out:
        Path(args.out).write_text(json.dumps({"model": path, **results}, indent=1))
        print(f"results written to {args.out}")
    return 0
