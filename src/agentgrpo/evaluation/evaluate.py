"""Held-out evaluation of a policy on a task: success with a 95% CI, tool use, turns; greedy and sampled."""

from __future__ import annotations

import torch
from tqdm.auto import tqdm

from agentgrpo.evaluation.rollout import Episode, rollout
from agentgrpo.evaluation.stats import episode_statistics, wilson_interval
from agentgrpo.tasks.base import Task


def evaluate(model, tokenizer, task: Task, rows: list[dict], *, modes, temperature: float, max_completion_length: int,
             batch_size: int, max_tool_calling_iterations: int | None, seed: int, tool_timeout: float | None,
             desc: str = "eval", show_progress: bool = True) -> dict[str, dict]:
    """Evaluate on ``rows`` in each decoding mode; returns ``{mode: summary}`` (see `summarize`). Each tool
    call is limited to ``tool_timeout`` seconds, as in training. The generation settings have no defaults
    here: a run's come from its plan (`RunPlan.eval`), a bare model's from the options' (`agentgrpo eval`)."""
    was_training = model.training
    model.eval()
    results = {}
    try:
        for mode in modes:
            torch.manual_seed(seed)
            with tqdm(total=len(rows), desc=f"{desc} ({mode})", disable=not show_progress, leave=False) as bar:
                episodes = rollout(model, tokenizer, rows, task,
                                   max_completion_length=max_completion_length, do_sample=mode == "sampled",
                                   temperature=temperature, batch_size=batch_size,
                                   max_tool_calling_iterations=max_tool_calling_iterations, progress=bar,
                                   tool_timeout=tool_timeout)
            results[mode] = summarize(task, rows, episodes, mode=mode, temperature=temperature)
    finally:
        model.train(was_training)
    return results


def score(task: Task, rows: list[dict], episodes: list[Episode]) -> list[float]:
    """The task's success reward for each episode."""
    func = task.success_func or task.reward_funcs[task.success_reward]
    columns = {k: [r[k] for r in rows] for k in rows[0] if k != "prompt"}
    return func(completions=[e.completion for e in episodes], prompts=[r["prompt"] for r in rows], **columns)


def summarize(task: Task, rows: list[dict], episodes: list[Episode], *, mode: str, temperature: float) -> dict:
    """Success rate with its Wilson 95% CI, tool-call rate, failures, turns, truncation, per-problem results."""
    scores = score(task, rows, episodes)
    n = len(episodes)
    wins = sum(1 for s in scores if s is not None and s >= 1.0)
    lo, hi = wilson_interval(wins, n)
    return {
        "mode": mode,
        "temperature": temperature if mode == "sampled" else 0.0,
        "n": n,
        "successes": wins,
        "success_rate": wins / n if n else 0.0,
        "ci95": [lo, hi],
        "tool_call_rate": sum(e.tool_calls > 0 for e in episodes) / n if n else 0.0,
        "mean_tool_calls": sum(e.tool_calls for e in episodes) / n if n else 0.0,
        "tool_failure_rate": (sum(e.tool_failures for e in episodes) / max(1, sum(e.tool_calls for e in episodes))),
        "tool_timeouts": sum(e.tool_timeouts for e in episodes),
        "mean_turns": sum(e.turns for e in episodes) / n if n else 0.0,
        "truncation_rate": sum(e.truncated for e in episodes) / n if n else 0.0,
        "mean_completion_tokens": sum(e.completion_tokens for e in episodes) / n if n else 0.0,
        "episodes": episode_statistics(episodes, task, rows),
        "per_problem": [
            {"id": e.id, "success": bool(s is not None and s >= 1.0), "tool_calls": e.tool_calls}
            for e, s in zip(episodes, scores, strict=True)
        ],
        "samples": [{"id": e.id, "completion": e.completion} for e in episodes[:5]],
    }
