"""pass@k on a task's held-out problems: ``n`` sampled episodes per problem, the unbiased estimator, CIs.

pass@k = mean over problems of 1 - C(n-c, k) / C(n, k) (Chen et al., 2021), with a 95% bootstrap CI over
problems (resampled with replacement); pass@1 also gets a Wilson interval over all samples.
"""

from __future__ import annotations

import random

import torch

from agentgrpo.evaluation.evaluate import score
from agentgrpo.evaluation.rollout import rollout
from agentgrpo.evaluation.stats import episode_statistics, pass_at_k, wilson_interval
from agentgrpo.tasks.base import Task


def bootstrap_ci(values: list[float], draws: int = 2000, seed: int = 0) -> tuple[float, float]:
    """95% percentile bootstrap interval of the mean of ``values``.

    >>> bootstrap_ci([1.0] * 10)
    (1.0, 1.0)
    >>> lo, hi = bootstrap_ci([0.0, 1.0] * 50)
    >>> 0.38 < lo < 0.5 < hi < 0.62
    True
    """
    if not values:
        return 0.0, 1.0
    rng, n = random.Random(seed), len(values)
    means = sorted(sum(values[rng.randrange(n)] for _ in range(n)) / n for _ in range(draws))
    return means[int(0.025 * draws)], means[min(draws - 1, int(0.975 * draws))]


def summarize_pass_at_k(correct: list[int], n: int, ks: list[int], seed: int = 0) -> dict:
    """pass@k for each k <= n from per-problem correct counts, with bootstrap (and, for k=1, Wilson) CIs.

    >>> s = summarize_pass_at_k([0, 5, 10], n=10, ks=[1, 5])
    >>> round(s["pass@1"]["estimate"], 3), round(s["pass@5"]["estimate"], 3)
    (0.5, 0.665)
    """
    out = {}
    for k in sorted({k for k in ks if 1 <= k <= n}):
        per_problem = [pass_at_k(n, c, k) for c in correct]
        entry = {"k": k, "estimate": sum(per_problem) / len(per_problem) if per_problem else 0.0,
                 "ci95_bootstrap": list(bootstrap_ci(per_problem, seed=seed))}
        if k == 1:
            entry["ci95_wilson"] = list(wilson_interval(sum(correct), n * len(correct)))
        out[f"pass@{k}"] = entry
    return out


def evaluate_pass_at_k(model, tokenizer, task: Task, rows: list[dict], *, samples: int, ks: list[int],
                       temperature: float, max_completion_length: int, max_tool_calling_iterations: int | None,
                       seed: int, tool_timeout: float | None, batch_size: int = 32, progress=None) -> dict:
    """``samples`` sampled episodes per row through the training rollout path (each tool call limited to
    ``tool_timeout`` seconds, as in training); pass@k for each k. The generation settings have no defaults
    here (`agentgrpo eval --samples` passes the run's, else the options' defaults)."""
    was_training = model.training
    model.eval()
    try:
        torch.manual_seed(seed)
        repeated = [r for r in rows for _ in range(samples)]
        episodes = rollout(model, tokenizer, repeated, task,
                           max_completion_length=max_completion_length, do_sample=True, temperature=temperature,
                           batch_size=batch_size, max_tool_calling_iterations=max_tool_calling_iterations,
                           progress=progress, tool_timeout=tool_timeout)
    finally:
        model.train(was_training)
    scores = score(task, repeated, episodes)
    correct = [sum(1 for s in scores[i * samples:(i + 1) * samples] if s is not None and s >= 1.0)
               for i in range(len(rows))]
    calls = sum(e.tool_calls for e in episodes)
    return {
        "problems": len(rows), "samples_per_problem": samples, "temperature": temperature,
        **summarize_pass_at_k(correct, samples, ks, seed=seed),
        "unscored": sum(1 for s in scores if s is None),
        "tool_call_rate": sum(e.tool_calls > 0 for e in episodes) / len(episodes),
        "tool_failure_rate": sum(e.tool_failures for e in episodes) / max(1, calls),
        "tool_timeouts": sum(e.tool_timeouts for e in episodes),
        "episodes": episode_statistics(episodes, task, repeated),
        "per_problem": [{"id": r.get("id"), "correct": c} for r, c in zip(rows, correct)],
    }
