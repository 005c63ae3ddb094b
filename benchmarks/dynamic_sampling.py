"""Dynamic sampling against TRL as it is: generated tokens and wall-clock to reach 90% held-out sampled success.

    python benchmarks/dynamic_sampling.py                       # demo + hard variant, off / filter / refill
    python benchmarks/dynamic_sampling.py --tasks calculator-hard --modes off refill --seeds 42 1

Each run trains the shipped demo recipe (configs/demo.yaml: the tiny SFT'd model, 4 prompts x 8 completions
per step) on one task with one ``dynamic_sampling`` mode and one seed, the same for every mode, until it
reaches ``--target`` or has generated ``--token_budget`` tokens, whichever comes first: every mode gets the
same generation budget, not the same number of steps. The learning-rate schedule (the recipe's warm-up then
linear decay) runs over ``--max_steps`` steps for every mode, a horizon set well past where the budget ends
(a run stopped by the budget has not decayed its learning rate to 0). Every ``--eval_every`` generated
tokens (completion tokens the model sampled, tool output excluded, dropped groups and refill rounds
included: `dynamic_sampling/generated_tokens`), training pauses and the policy is evaluated on the task's
fixed held-out set (``--eval_size`` problems, sampled at the training temperature, as `agentgrpo eval`
does). A run reports the generated tokens and the training wall-clock (evaluation excluded) up to its first
evaluation at or above the target.

The ratio printed per task is off's tokens / the mode's tokens (> 1: the mode needed fewer). When off did
not reach the target within the budget, the ratio is a lower bound, printed as ">= off's tokens spent /
the mode's tokens". Token counts are what this measures; the wall-clock is printed too, and on a shared
machine it is noisy.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from transformers import TrainerCallback  # noqa: E402


class EvalByTokens(TrainerCallback):
    """Evaluate held-out sampled success every ``every`` generated tokens; stop at ``target`` or once
    ``budget`` tokens have been generated (evaluating then)."""

    def __init__(self, cfg, task, every: int, target: float, eval_size: int, budget: int):
        self.cfg, self.task, self.every, self.target, self.budget = cfg, task, every, target, budget
        self.rows = task.eval_problems(eval_size)
        self.trainer = None
        self.next_at = every
        self.curve: list[dict] = []
        self.reached: dict | None = None
        self.eval_seconds = 0.0
        self.start = time.perf_counter()
        self.logged: list[dict] = []  # every step's dynamic_sampling/* metrics (logging_steps 1)

    def on_log(self, args, state, control, logs=None, **kwargs):
        if logs and "dynamic_sampling/generation_rounds" in logs:
            self.logged.append({"step": state.global_step, **{k.split("/", 1)[1]: v for k, v in logs.items()
                                                             if k.startswith("dynamic_sampling/")}})

    def on_step_end(self, args, state, control, **kwargs):
        tokens = self.trainer._generated_tokens_total
        spent = tokens >= self.budget
        if tokens < self.next_at and state.global_step < state.max_steps and not spent:
            return
        while self.next_at <= tokens:
            self.next_at += self.every
        started = time.perf_counter()
        success = self._success()
        self.eval_seconds += time.perf_counter() - started
        point = {"step": state.global_step, "generated_tokens": tokens, "success": success,
                 "train_seconds": round(time.perf_counter() - self.start - self.eval_seconds, 1)}
        self.curve.append(point)
        print(f"    step {point['step']:3d}  tokens {tokens:7d}  sampled success {success:.1%}", flush=True)
        if success >= self.target and self.reached is None:
            self.reached = point
        if self.reached is not None or spent:
            control.should_training_stop = True

    def _success(self) -> float:
        from agentgrpo.evaluation.evaluate import evaluate

        e = self.cfg.eval  # the plan's eval settings: sampled as GRPO samples
        result = evaluate(self.trainer.model, self.trainer.processing_class, self.task, self.rows,
                          modes=("sampled",), temperature=e.temperature,
                          max_completion_length=e.max_completion_length,
                          max_tool_calling_iterations=e.max_tool_calling_iterations,
                          batch_size=e.batch_size, seed=e.seed, tool_timeout=e.tool_timeout, show_progress=False)
        return result["sampled"]["success_rate"]


def run_one(task_name: str, mode: str, seed: int, args, root: Path) -> dict:
    from agentgrpo.config import config_path
    from agentgrpo.plan import resolve_plan
    from agentgrpo.tiny.build import SHIPPED_SFT
    from agentgrpo.training.grpo import build_grpo_trainer

    cfg = resolve_plan(config_path("demo"),
                      ["--task", task_name, "--dynamic_sampling", mode, "--seed", str(seed),
                       "--max_generation_rounds", str(args.max_generation_rounds), "--max_steps", str(args.max_steps),
                       "--save_strategy", "no", "--disable_tqdm", "true", "--doctor_every", "0",
                       *(["--refill_carry", "true"] if args.refill_carry and mode == "refill" else []),
                       *(["--refill_skip_solved", "true"] if args.refill_skip_solved and mode == "refill" else []),
                       *(["--refill_round_size", args.refill_round_size] if mode == "refill" else []),
                       *(["--dynamic_sampling_reward", args.dynamic_sampling_reward]
                         if args.dynamic_sampling_reward and mode != "off" else []),
                       "--output_dir", str(root / f"{task_name}-{mode}-{seed}")])
    task = cfg.task  # the plan's task (its success reward resolved once, there)
    watcher = EvalByTokens(cfg, task, args.eval_every, args.target, args.eval_size, args.token_budget)
    trainer = build_grpo_trainer(cfg, str(SHIPPED_SFT), callbacks=[watcher])
    watcher.trainer = trainer
    trainer.train()
    last = watcher.curve[-1]
    if mode == "refill":
        mode += "+carry" * bool(args.refill_carry) + "+skip_solved" * bool(args.refill_skip_solved)
    if mode.startswith("refill") and args.refill_round_size != "expected":
        mode += f"+rounds_{args.refill_round_size}"
    if args.dynamic_sampling_reward and mode != "off":
        mode += f"+by_{args.dynamic_sampling_reward}"
    return {"task": task_name, "mode": mode, "seed": seed, "reached": watcher.reached is not None,
            "generated_tokens": (watcher.reached or last)["generated_tokens"],
            "train_seconds": (watcher.reached or last)["train_seconds"], "steps": (watcher.reached or last)["step"],
            "final_success": last["success"], "best_success": max(p["success"] for p in watcher.curve),
            "tokens_spent": last["generated_tokens"], "stopped_by": stopped_by(watcher, last, args),
            "dynamic_sampling": sampling_stats(watcher.logged, (watcher.reached or last)["step"]),
            "curve": watcher.curve}


def sampling_stats(logged: list[dict], up_to: int) -> dict:
    """The run's dynamic sampling up to step ``up_to``: generation rounds per step, groups dropped and
    carried, steps that hit the round limit (from the per-step metrics)."""
    steps = [r for r in logged if r["step"] <= up_to]
    total = {k: sum(r.get(k, 0) for r in steps) for k in ("generation_rounds", "groups_dropped", "groups_carried",
                                                          "groups_solved", "mixed_groups",
                                                          "round_limit_hit")}
    return {"steps": len(steps), "rounds_per_step": round(total["generation_rounds"] / max(1, len(steps)), 2),
            **{k: int(v) for k, v in total.items() if k != "generation_rounds"}}


def stopped_by(watcher, last: dict, args) -> str:
    """Why a run ended: it reached the target, spent the token budget, or ran to the step horizon."""
    if watcher.reached is not None:
        return "target"
    return "budget" if last["generated_tokens"] >= args.token_budget else "max_steps"


def ratio_against_off(off: dict | None, run: dict) -> str:
    """off's tokens / the run's tokens to the target; a lower bound (">=") when off ended short of the target."""
    if off is None or not run["reached"]:
        return "n/a"
    if off["reached"]:
        return f"{off['generated_tokens'] / run['generated_tokens']:.2f}x"
    return f">= {off['tokens_spent'] / run['generated_tokens']:.2f}x"


def paired_ratios(pairs: list[tuple[dict, dict]], resamples: int = 10_000, seed: int = 0) -> dict:
    """Per-seed ratios off / mode (tokens to the target; every run in ``pairs`` reached it) summarised as a
    paired comparison: how many seeds tie exactly, gain or lose; the median; the geometric mean with a
    percentile-bootstrap 95% interval over seeds (a run's first passage to the target is a noisy number, so
    one seed's ratio says little and the interval says how far the mean could be from 1)."""
    import math
    import random

    ratios = [o["generated_tokens"] / x["generated_tokens"] for o, x in pairs]
    logs = [math.log(r) for r in ratios]
    rng = random.Random(seed)
    means = sorted(sum(rng.choice(logs) for _ in logs) / len(logs) for _ in range(resamples))
    ordered = sorted(ratios)
    mid = len(ordered) // 2
    median = ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2
    return {"seeds": len(ratios), "ties": sum(o["generated_tokens"] == x["generated_tokens"] for o, x in pairs),
            "fewer": sum(r > 1 for r in ratios), "more": sum(r < 1 for r in ratios), "median": median,
            "geometric_mean": math.exp(sum(logs) / len(logs)),
            "ci95": (math.exp(means[int(0.025 * resamples)]), math.exp(means[int(0.975 * resamples) - 1]))}


def spent(run: dict) -> int:
    """Tokens a run cost: to its first evaluation at the target, or all it generated when it never got there."""
    return run["generated_tokens"] if run["reached"] else run["tokens_spent"]


def cost_per_success(pairs: list[tuple[dict, dict]], resamples: int = 10_000, seed: int = 0) -> dict:
    """Tokens spent per run that reached the target, for off and for the mode, over the same seeds: every
    run's tokens (a run that never reached the target counts all it spent) / the runs that reached it. This
    is what a model at the target costs when a failed run is restarted with a fresh seed, and unlike the
    per-seed ratio it does not leave out the seeds where a run collapsed or stalled. The ratio off / mode
    gets a percentile-bootstrap 95% interval over seeds (pairs resampled together); a resample where one side
    reached nothing has an infinite cost on that side."""
    import random

    def per_success(runs):
        reached = sum(r["reached"] for r in runs)
        return sum(spent(r) for r in runs) / reached if reached else float("inf")

    def ratio(sample):
        off, mode = per_success([o for o, _ in sample]), per_success([x for _, x in sample])
        if off == mode:  # both infinite: nothing to compare
            return 1.0
        return off / mode

    rng = random.Random(seed)
    boot = sorted(ratio([rng.choice(pairs) for _ in pairs]) for _ in range(resamples))
    return {"seeds": len(pairs), "off_reached": sum(o["reached"] for o, _ in pairs),
            "mode_reached": sum(x["reached"] for _, x in pairs),
            "off_per_success": per_success([o for o, _ in pairs]),
            "mode_per_success": per_success([x for _, x in pairs]), "ratio": ratio(pairs),
            "ci95": (boot[int(0.025 * resamples)], boot[int(0.975 * resamples) - 1])}


def summarize(results: list[dict], modes: list[str]) -> list[str]:
    lines = ["", f"{'task':16s} {'mode':12s} {'seed':>4s} {'stopped by':>10s} {'best':>6s} {'steps':>5s} "
                 f"{'tokens':>8s} {'train s':>8s} {'tokens off/mode':>15s}"]
    by_key = {(r["task"], r["seed"], r["mode"]): r for r in results}
    for r in results:
        ratio = ratio_against_off(by_key.get((r["task"], r["seed"], "off")), r)
        lines.append(f"{r['task']:16s} {r['mode']:12s} {r['seed']:4d} {r['stopped_by']:>10s} "
                     f"{r['best_success']:6.1%} {r['steps']:5d} {r['generated_tokens']:8d} {r['train_seconds']:8.1f} "
                     f"{ratio:>15s}")
    for task in dict.fromkeys(r["task"] for r in results):
        for mode in modes:
            if mode == "off":
                continue
            pairs = [(by_key[(task, s, "off")], by_key[(task, s, mode)]) for (t, s, m) in by_key
                     if t == task and m == mode and (task, s, "off") in by_key]
            if not pairs:
                continue
            if len(pairs) > 1:
                c = cost_per_success(pairs)
                lines.append(f"{task}: tokens per run reaching the target (failed runs count what they spent; "
                             f"{c['seeds']} seeds): off {c['off_per_success']:,.0f} ({c['off_reached']} reached), "
                             f"{mode} {c['mode_per_success']:,.0f} ({c['mode_reached']} reached); off / {mode} = "
                             f"{c['ratio']:.2f}x [95% bootstrap over seeds {c['ci95'][0]:.2f}x, {c['ci95'][1]:.2f}x]")
            if not all(x["reached"] for _, x in pairs):
                lines.append(f"{task}: {mode} did not reach the target in every seed (see the table)")
                continue
            bound = "" if all(o["reached"] for o, _ in pairs) else ">= "
            total = sum(spent(o) for o, _ in pairs) / sum(x["generated_tokens"] for _, x in pairs)
            verdict = "fewer" if total > 1.005 else "more" if total < 0.995 else "as many"
            lines.append(f"{task}: tokens off / {mode} to the target = {bound}{total:.2f}x ({verdict} tokens with "
                         f"{mode}; summed over {len(pairs)} seed(s)"
                         + ("; some off run ended short of the target, so this is a lower bound)" if bound else ")"))
            if not bound and len(pairs) > 1:
                st = paired_ratios(pairs)
                lines.append(f"{task}: per seed, off / {mode}: {st['ties']} tie(s), {st['fewer']} with fewer tokens "
                             f"under {mode}, {st['more']} with more; median {st['median']:.2f}x, geometric mean "
                             f"{st['geometric_mean']:.2f}x [95% bootstrap over seeds {st['ci95'][0]:.2f}x, "
                             f"{st['ci95'][1]:.2f}x]")
    return lines


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", nargs="+", default=["calculator", "calculator-hard"])
    parser.add_argument("--modes", nargs="+", default=["off", "filter", "refill"])
    parser.add_argument("--seeds", nargs="+", type=int, default=[42])
    parser.add_argument("--target", type=float, default=0.9, help="held-out sampled success to reach")
    parser.add_argument("--eval_every", type=int, default=2500, help="generated tokens between evaluations")
    parser.add_argument("--eval_size", type=int, default=200)
    parser.add_argument("--token_budget", type=int, default=150_000,
                        help="generated tokens after which a run that has not reached the target stops")
    parser.add_argument("--max_steps", type=int, default=400,
                        help="the learning-rate schedule's horizon in steps (the same for every mode); a run "
                             "also stops there")
    parser.add_argument("--max_generation_rounds", type=int, default=4)
    parser.add_argument("--refill_carry", action="store_true",
                        help="refill runs with refill_carry: true (reported as mode refill+carry)")
    parser.add_argument("--refill_skip_solved", action="store_true",
                        help="refill runs with refill_skip_solved: true (reported as mode refill+skip_solved)")
    parser.add_argument("--refill_round_size", choices=["expected", "missing"], default="expected",
                        help="refill runs size their refill rounds so (reported as mode refill+rounds_missing "
                             "when not the default)")
    parser.add_argument("--dynamic_sampling_reward", default=None, metavar="REWARD",
                        help="filter/refill runs judge groups by this reward's spread (reported as mode "
                             "M+by_REWARD); default: the weighted total")
    parser.add_argument("--threads", type=int, default=1,
                        help="torch threads (1: on a shared 2-core machine more threads oversubscribe badly)")
    parser.add_argument("--json", type=Path, default=None,
                        help="also write every result (with curves) here, after each run")
    parser.add_argument("--summarize", type=Path, nargs="+", default=None, metavar="JSON",
                        help="train nothing: print the table of results written by earlier --json runs (cells "
                             "run as separate invocations, e.g. one at a time on a shared machine)")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from benchmarks import provenance

    if args.summarize:
        results = []
        for path in args.summarize:
            got, env = provenance.read_json(path)
            print(f"{path}: " + (provenance.line(env) if env else "environment not recorded"))
            results += got
        for r in results:  # results written before runs recorded why they ended: the same rule, this --token_budget
            r.setdefault("stopped_by", "target" if r["reached"] else
                         "budget" if r["tokens_spent"] >= args.token_budget else "max_steps")
        for line in summarize(results, list(dict.fromkeys(["off", *(r["mode"] for r in results)]))):
            print(line)
        return 0

    import torch

    torch.set_num_threads(args.threads)
    env = provenance.environment()  # versions, CPU model and flags, threads, commit: written with every result
    print(provenance.line(env), flush=True)
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for task in args.tasks:
            for seed in args.seeds:
                for mode in args.modes:
                    print(f"== {task} dynamic_sampling={mode} seed={seed}", flush=True)
                    started = time.perf_counter()
                    results.append(run_one(task, mode, seed, args, Path(tmp)))
                    print(f"   ({time.perf_counter() - started:.0f}s with evaluations)", flush=True)
                    if args.json:
                        provenance.write_json(args.json, results, env)
    for line in summarize(results, list(dict.fromkeys(["off", *(r["mode"] for r in results)]))):
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
