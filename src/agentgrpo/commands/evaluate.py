"""Evaluate a model on a task's held-out problems, with 95% confidence intervals.

    agentgrpo eval --model runs/calculator-XXXX/final              # a trained run's model
    agentgrpo eval --model tiny --modes greedy sampled --n 500     # the shipped starting point
    agentgrpo eval --model runs/A/final --out before_after.json --stage after
    agentgrpo eval --task coding --model runs/coding-XXXX/final --samples 10 --k 1 5 10   # HumanEval pass@k

Success is the task's success reward (exact final answer for `calculator`). Reports success rate with a
Wilson 95% CI, tool-call rate, tool failures, mean turns and truncation, greedy and/or sampled at the
training temperature; rollouts are generated exactly as GRPO generates them (same template, same tool loop).
With ``--samples N`` (N > 1) it samples N episodes per problem instead and reports pass@k for each ``--k``
(the unbiased estimator of Chen et al. 2021, 95% bootstrap CI over problems; Wilson for pass@1).
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
    parser.add_argument("--max_completion_length", type=int, default=None,
                        help="Token budget per episode, tool results included (default: the task's; 64 for "
                             "calculator, 768 for coding).")
    parser.add_argument("--samples", type=int, default=1,
                        help="Sampled episodes per problem; > 1 reports pass@k instead of --modes (default: 1).")
    parser.add_argument("--k", type=int, nargs="+", default=[1, 5, 10],
                        help="The k of pass@k, each <= --samples (default: 1 5 10).")
    parser.add_argument("--seed", type=int, default=42, help="Sampling seed (default: 42).")
    parser.add_argument("--out", default=None, help="Write the results to this JSON file.")


def run(args) -> int:
    from pathlib import Path

    from agentgrpo import rundir
    from agentgrpo.errors import UserError
    from agentgrpo.evaluation.evaluate import evaluate
    from agentgrpo.tasks import get_task
    from agentgrpo.training.models import load_model, load_tokenizer, resolve_model

    if args.n < 1 or args.samples < 1:
        raise UserError("--n and --samples must be >= 1")
    if args.samples > 1 and not any(1 <= k <= args.samples for k in args.k):
        raise UserError(f"--k {args.k}: every k is above --samples {args.samples}; pass k <= samples")
    task = get_task(args.task)
    budget = args.max_completion_length or task.eval_completion_length
    model = args.model
    if (Path(model) / rundir.FINAL / "config.json").exists():
        model = str(Path(model) / rundir.FINAL)
    path = resolve_model(model, task)
    if args.samples > 1:
        return _pass_at_k(args, task, path, budget)
    results = evaluate(load_model(path), load_tokenizer(path), task, task.eval_problems(args.n),
                       modes=args.modes, temperature=args.temperature,
                       max_completion_length=budget, seed=args.seed)
    for mode, res in results.items():
        lo, hi = res["ci95"]
        print(f"{mode:>7}: success {res['success_rate']:.1%} [{lo:.1%}, {hi:.1%}] (n={res['n']}), "
              f"tool calls {res['tool_call_rate']:.1%}, tool failures {res['tool_failure_rate']:.1%}, "
              f"mean turns {res['mean_turns']:.2f}, truncated {res['truncation_rate']:.1%}")
    if args.out:
        Path(args.out).write_text(json.dumps({"model": path, **results}, indent=1))
        print(f"results written to {args.out}")
    return 0


def _pass_at_k(args, task, path: str, budget: int) -> int:
    from pathlib import Path

    from tqdm.auto import tqdm

    from agentgrpo.evaluation.passk import evaluate_pass_at_k
    from agentgrpo.training.models import load_model, load_tokenizer

    rows = task.eval_problems(args.n)
    with tqdm(total=len(rows) * args.samples, desc="pass@k", leave=False) as bar:
        res = evaluate_pass_at_k(load_model(path), load_tokenizer(path), task, rows, samples=args.samples,
                                 ks=args.k, temperature=args.temperature, max_completion_length=budget,
                                 seed=args.seed, progress=bar)
    for key, entry in res.items():
        if key.startswith("pass@"):
            lo, hi = entry["ci95_bootstrap"]
            wilson = entry.get("ci95_wilson")
            extra = f", Wilson [{wilson[0]:.1%}, {wilson[1]:.1%}]" if wilson else ""
            print(f"{key:>8}: {entry['estimate']:.1%} [bootstrap {lo:.1%}, {hi:.1%}{extra}]")
    print(f"{res['problems']} problems x {args.samples} samples at temperature {args.temperature}; tool calls "
          f"{res['tool_call_rate']:.1%}, tool failures {res['tool_failure_rate']:.1%}, unscored {res['unscored']}")
    if args.out:
        Path(args.out).write_text(json.dumps({"model": path, **res}, indent=1))
        print(f"results written to {args.out}")
    return 0
