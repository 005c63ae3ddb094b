"""Synthetic GRPO runs with one planted failure each (or none), for validating the detectors.

Rewards come from a small GRPO simulation, not from curves with noise painted on: every step samples
``prompts`` groups of ``group`` completions, each prompt with its own difficulty, so ``reward_std`` and
``frac_reward_zero_std`` move with the success rate the way they do in a real run (a converging run has
all-correct groups; a collapsed policy answers every prompt the same way every time).

Each scenario plants its change at step ``onset`` (``None`` for healthy, converged and stalled-from-start
runs) and names the detector expected to fire. ``cases()`` yields the whole suite.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np


@dataclass
class Case:
    """One labelled synthetic run: its records, config, and what the doctor should say."""

    name: str
    expect: str | None  # detector that must fire; None for healthy / converged runs
    onset: int | None  # step where the planted change begins (None: from the start or none)
    records: list[dict]
    rewards: list[dict] = field(default_factory=list)  # config `rewards` list: [{name, weight}]
    level: str = "failure"  # "failure", or "warning" for signs that are only ever warnings
    steps: int = 0

    def write(self, directory: Path) -> Path:
        """Write it as an agentgrpo run directory (metrics.jsonl + config.yaml); returns the directory."""
        run = Path(directory) / self.name
        run.mkdir(parents=True, exist_ok=True)
        with open(run / "metrics.jsonl", "w", encoding="utf-8") as fh:
            for record in self.records:
                fh.write(json.dumps(record) + "\n")
        lines = ["rewards:"] + [f"  - {{name: {r['name']}, weight: {r['weight']}}}" for r in self.rewards]
        (run / "config.yaml").write_text("\n".join(lines) + "\n" if self.rewards else "{}\n", encoding="utf-8")
        return run


def ease(t: np.ndarray, start: float, duration: float) -> np.ndarray:
    """0 before ``start``, a smooth rise to 1 over ``duration`` steps, 1 after.

    >>> ease(np.array([0.0, 10.0, 15.0, 20.0, 30.0]), 10, 10).round(2).tolist()
    [0.0, 0.0, 0.5, 1.0, 1.0]
    """
    u = np.clip((t - start) / max(duration, 1e-9), 0.0, 1.0)
    return u * u * (3 - 2 * u)


class Sim:
    """Per-step GRPO statistics from success probabilities: groups of Bernoulli rewards per prompt."""

    def __init__(self, n: int, seed: int, prompts: int = 8, group: int = 8, spread: float = 1.5):
        self.n, self.rng = n, np.random.default_rng(seed)
        self.prompts, self.group = prompts, group
        self.difficulty = self.rng.normal(0.0, spread, size=(n, prompts))
        self.t = np.arange(n, dtype=float)

    def bernoulli(self, p: np.ndarray, determinism: np.ndarray | None = None) -> np.ndarray:
        """Rewards (n, prompts, group) with success rate p[t] shaped by prompt difficulty.

        ``determinism`` in [0, 1] per step pushes each prompt's success probability to 0 or 1: a collapsed
        policy answers each prompt the same way every time.
        """
        logit = np.log(np.clip(p, 1e-4, 1 - 1e-4) / (1 - np.clip(p, 1e-4, 1 - 1e-4)))[:, None]
        q = 1.0 / (1.0 + np.exp(-(logit + self.difficulty)))
        if determinism is not None:
            hard = (q > 0.5).astype(float)
            q = (1 - determinism[:, None]) * q + determinism[:, None] * hard
        return (self.rng.random((self.n, self.prompts, self.group)) < q[:, :, None]).astype(float)

    def noisy(self, curve: np.ndarray, rel: float) -> np.ndarray:
        return curve * np.exp(self.rng.normal(0.0, rel, self.n))


def assemble(sim: Sim, components: dict[str, np.ndarray], weights: dict[str, float], **curves) -> list[dict]:
    """TRL-style records from per-sample component rewards (n, prompts, group) and per-step curves."""
    total = sum(weights[c] * r for c, r in components.items())
    flat = total.reshape(sim.n, -1)
    zero = np.isclose(total.std(axis=2), 0.0).mean(axis=1)
    records = []
    for i in range(sim.n):
        rec = {
            "step": i + 1,
            "epoch": (i + 1) / sim.n,
            "loss": float(sim.rng.normal(0, 0.01)),
            "learning_rate": 1e-5,
            "reward": float(flat[i].mean()),
            "reward_std": float(flat[i].std()),
            "frac_reward_zero_std": float(zero[i]),
        }
        for name, r in components.items():
            rec[f"rewards/{name}/mean"] = float(r[i].mean())
            rec[f"rewards/{name}/std"] = float(r[i].std())
        for key, values in curves.items():
            if values is not None:
                rec[key.replace("__", "/")] = float(values[i])
        records.append(rec)
    return records


def _lengths(sim: Sim, mean: np.ndarray, cap: float) -> dict[str, np.ndarray]:
    samples = sim.rng.normal(mean[:, None], 0.3 * mean[:, None], size=(sim.n, sim.prompts * sim.group))
    samples = np.clip(samples, 1, cap)
    return {
        "completions__mean_length": samples.mean(axis=1),
        "completions__clipped_ratio": (samples >= cap).mean(axis=1),
        "completions__max_length": samples.max(axis=1),
        "completions__min_length": samples.min(axis=1),
    }


def _base(sim: Sim, entropy: np.ndarray, length: np.ndarray, kl: np.ndarray, cap: float = 512) -> dict:
    grad = sim.noisy(np.full(sim.n, 0.3), 0.3)
    return {
        "entropy": sim.noisy(entropy, 0.05),
        "kl": sim.noisy(kl, 0.3),
        "grad_norm": grad,
        **_lengths(sim, length, cap),
    }


# ---- scenarios: each returns (expect, onset, records, rewards config, level) -------------------------------


def healthy(n: int, seed: int, onset_frac: float):
    sim = Sim(n, seed)
    p = 0.15 + 0.45 * ease(sim.t, 0.05 * n, 0.7 * n)
    correct = sim.bernoulli(p)
    fmt = sim.bernoulli(0.5 + 0.45 * ease(sim.t, 0, 0.3 * n))
    shadow = sim.bernoulli(p * 0.9)
    comps = {"correct": correct, "format": fmt, "heldout_correct": shadow}
    weights = {"correct": 1.0, "format": 0.2, "heldout_correct": 0.0}
    curves = _base(sim, 1.2 - 0.4 * sim.t / n, np.full(n, 150.0), 0.002 + 0.05 * sim.t / n)
    return None, None, assemble(sim, comps, weights, **curves), _cfg(weights), "failure"


def healthy_noisy(n: int, seed: int, onset_frac: float):
    sim = Sim(n, seed, prompts=4, group=4, spread=1.0)
    p = 0.15 + 0.4 * ease(sim.t, 0, n)
    comps = {"correct": sim.bernoulli(p)}
    curves = _base(sim, 1.0 - 0.2 * sim.t / n, np.full(n, 200.0), 0.01 + 0.03 * sim.t / n)
    curves["entropy"] = sim.noisy(1.0 - 0.2 * sim.t / n, 0.15)
    return None, None, assemble(sim, comps, {"correct": 1.0}, **curves), [], "failure"


def converged(n: int, seed: int, onset_frac: float):
    sim = Sim(n, seed, spread=0.7)
    p = 0.2 + 0.797 * ease(sim.t, 0.05 * n, 0.45 * n)
    comps = {"correct": sim.bernoulli(p)}
    entropy = 1.0 - 0.93 * ease(sim.t, 0.05 * n, 0.5 * n)  # the policy becomes sure
    curves = _base(sim, entropy, 180 - 60 * ease(sim.t, 0.05 * n, 0.5 * n), 0.002 + 0.04 * ease(sim.t, 0, n))
    return None, None, assemble(sim, comps, {"correct": 1.0}, **curves), [], "failure"


def converged_fast(n: int, seed: int, onset_frac: float):
    """Solves the task within the first 15% of the run, then sits at the ceiling (the tiny demo's shape)."""
    sim = Sim(n, seed, spread=0.5)
    p = 0.3 + 0.699 * ease(sim.t, 0, 0.15 * n)
    comps = {"correct": sim.bernoulli(p)}
    entropy = 0.9 - 0.85 * ease(sim.t, 0, 0.2 * n)
    curves = _base(sim, entropy, np.full(n, 40.0), 0.001 + 0.05 * ease(sim.t, 0, 0.3 * n))
    return None, None, assemble(sim, comps, {"correct": 1.0}, **curves), [], "failure"


def collapse(n: int, seed: int, onset_frac: float):
    sim = Sim(n, seed)
    start = int(onset_frac * n)
    p = 0.2 + 0.3 * ease(sim.t, 0, start) - 0.25 * ease(sim.t, start, 0.1 * n)
    det = ease(sim.t, start, 0.08 * n)
    comps = {"correct": sim.bernoulli(p, det)}
    entropy = 1.1 - 0.2 * sim.t / n - 1.05 * det
    length = 160 - (140 if seed % 2 else 0) * det
    curves = _base(sim, np.maximum(entropy, 0.01), length, 0.002 + 0.02 * sim.t / n)
    return "collapse", start + 1, assemble(sim, comps, {"correct": 1.0}, **curves), [], "failure"


def collapse_with_tools(n: int, seed: int, onset_frac: float):
    """A tool-using agent whose policy degenerates (too high a learning rate): it stops calling the tool,
    repeats one token up to the length cap, every group gets identical rewards. The vanishing tool calls
    are part of the collapse, not a separate failure."""
    sim = Sim(n, seed)
    start = int(onset_frac * n)
    det = ease(sim.t, start, 0.05 * n)
    p = (0.3 + 0.3 * ease(sim.t, 0, start)) * (1 - det)
    comps = {"correct": sim.bernoulli(np.clip(p, 0, 1), det)}
    entropy = np.maximum(0.4 * (1 - det), 1e-4)
    cap = 64.0
    curves = _base(sim, entropy, 14 + (cap + 10 - 14) * det, 0.002 + 0.02 * sim.t / n, cap)
    calls = np.clip(sim.noisy(0.5 + 0.3 * ease(sim.t, 0, start), 0.1), 0, 1) * (1 - det)
    records = assemble(
        sim,
        comps,
        {"correct": 1.0},
        tools__call_frequency=calls,
        tools__failure_frequency=np.full(n, 0.02) * (1 - det),
        **curves,
    )
    return "collapse", start + 1, records, [], "failure"


def collapse_no_entropy(n: int, seed: int, onset_frac: float):
    """A collapse logged without entropy (TRL < 0.19), with the old ``completion_length`` / ``rewards/<f>``
    names: only the group statistics, length and reward tell."""
    _, onset, records, rewards, level = collapse(n, seed, onset_frac)
    keep = {
        "step",
        "epoch",
        "loss",
        "learning_rate",
        "grad_norm",
        "reward",
        "reward_std",
        "kl",
        "frac_reward_zero_std",
    }
    old = [
        {
            **{k: v for k, v in r.items() if k in keep},
            "completion_length": r["completions/mean_length"],
            "rewards/correct": r["rewards/correct/mean"],
        }
        for r in records
    ]
    return "collapse", onset, old, rewards, level


def hacking(n: int, seed: int, onset_frac: float):
    sim = Sim(n, seed)
    start = int(onset_frac * n)
    proxy = sim.bernoulli(0.1 + 0.85 * ease(sim.t, start, 0.3 * n))
    true_p = 0.3 - (0.15 if seed % 2 else 0.0) * ease(sim.t, start, 0.3 * n)
    comps = {"keyword_proxy": proxy, "correct": sim.bernoulli(np.full(n, 1.0) * true_p)}
    weights = {"keyword_proxy": 1.0, "correct": 0.0}
    curves = _base(sim, 1.0 - 0.3 * sim.t / n, np.full(n, 150.0), 0.002 + 0.05 * sim.t / n)
    return "hacking", start + 1, assemble(sim, comps, weights, **curves), _cfg(weights), "failure"


def hacking_diverge(n: int, seed: int, onset_frac: float):
    """Both rewards rise together, then the proxy keeps rising while the true objective falls back."""
    sim = Sim(n, seed)
    start = int(onset_frac * n)
    rise = ease(sim.t, 0, 0.5 * start)
    proxy = sim.bernoulli(0.1 + 0.3 * rise + 0.55 * ease(sim.t, start, 0.3 * n))
    true = sim.bernoulli(0.1 + 0.3 * rise - 0.3 * ease(sim.t, start, 0.3 * n))
    weights = {"proxy": 1.0, "correct": 0.0}
    curves = _base(sim, 1.0 - 0.3 * sim.t / n, np.full(n, 150.0), 0.002 + 0.05 * sim.t / n)
    return (
        "hacking",
        start + 1,
        assemble(sim, {"proxy": proxy, "correct": true}, weights, **curves),
        _cfg(weights),
        "failure",
    )


def hacking_via_tools(n: int, seed: int, onset_frac: float):
    """The proxy pays for skipping the tool: calls vanish, the proxy rises, true correctness falls."""
    sim = Sim(n, seed)
    start = int(onset_frac * n)
    switch = ease(sim.t, start, 0.2 * n)
    calls = sim.noisy(1.0 - 0.95 * switch, 0.1)
    proxy = sim.bernoulli(0.3 + 0.1 * ease(sim.t, 0, start) + 0.55 * switch)
    true = sim.bernoulli(0.3 + 0.1 * ease(sim.t, 0, start) - 0.3 * switch)
    weights = {"proxy": 1.0, "correct": 0.0}
    curves = _base(sim, np.full(n, 1.0), np.full(n, 120.0), 0.002 + 0.03 * sim.t / n)
    records = assemble(
        sim,
        {"proxy": proxy, "correct": true},
        weights,
        tools__call_frequency=calls,
        tools__failure_frequency=np.full(n, 0.05),
        **curves,
    )
    return "hacking", start + 1, records, _cfg(weights), "failure"


def hacking_after_learning(n: int, seed: int, onset_frac: float):
    """The true objective is learned first (and is the trained reward until the onset); from the onset a
    proxy at the same level is trained: the true objective decays at once, the proxy rises only later,
    when the policy finds its exploit (the tiny model's planted hacking run)."""
    sim = Sim(n, seed)
    start = int(onset_frac * n)
    learn = ease(sim.t, 0, 0.6 * start)
    exploit = ease(sim.t, start + 0.3 * n, 0.15 * n)
    true = sim.bernoulli(0.3 + 0.6 * learn - 0.7 * ease(sim.t, start, 0.15 * n))
    later = sim.bernoulli(0.9 + 0.09 * exploit) + 0.5 * exploit[:, None, None]
    proxy = np.where((sim.t < start)[:, None, None], true, later)
    weights = {"proxy": 1.0, "correct": 0.0}
    curves = _base(sim, np.full(n, 1.0), np.full(n, 150.0), 0.002 + 0.03 * sim.t / n)
    records = assemble(sim, {"proxy": proxy, "correct": true}, weights, **curves)
    return "hacking", start + 1, records, _cfg(weights), "failure"


def length_gaming_modest(n: int, seed: int, onset_frac: float):
    """Length grows by ~40% (a bonus for longer answers) while correctness, the shadow, does not move."""
    sim = Sim(n, seed)
    start = int(onset_frac * n)
    length = 60 + 25 * ease(sim.t, start, 0.3 * n)
    curves = _base(sim, np.full(n, 1.0), length, 0.002 + 0.05 * sim.t / n, 96)
    correct = sim.bernoulli(np.full(n, 0.35))
    bonus = np.clip((curves["completions__mean_length"] - 60) / 25, 0, 1)[:, None, None] * np.ones_like(correct)
    weights = {"length_bonus": 1.0, "correct": 0.0}
    comps = {"length_bonus": correct + bonus, "correct": correct}
    return "length", start + 1, assemble(sim, comps, weights, **curves), _cfg(weights), "failure"


def length_gaming(n: int, seed: int, onset_frac: float, shadow: bool = True):
    sim = Sim(n, seed)
    start, cap = int(onset_frac * n), 512.0
    length = 120 + 420 * ease(sim.t, start, 0.4 * n)
    curves = _base(sim, np.full(n, 1.0), length, 0.002 + 0.05 * sim.t / n, cap)
    frac = np.clip(curves["completions__mean_length"] / cap, 0, 1)
    long_reward = sim.bernoulli(0.1 + 0.85 * frac)
    comps = {"length_bonus": long_reward}
    weights = {"length_bonus": 1.0}
    if shadow:
        comps["correct"] = sim.bernoulli(np.full(n, 0.3))
        weights["correct"] = 0.0
    return "length", start + 1, assemble(sim, comps, weights, **curves), _cfg(weights), "failure"


def length_gaming_no_shadow(n: int, seed: int, onset_frac: float):
    return length_gaming(n, seed, onset_frac, shadow=False)


def tool_adoption(n: int, seed: int, onset_frac: float, padding: float = 0.0, call_tokens: float = 40.0):
    """The agent learns to call its tool: a call adds ``call_tokens`` tokens and makes a right answer
    likelier, so length and reward rise together with the call rate; no shadow, no truncation. Healthy.

    Simulated per completion, so each batch's length follows its share of calling completions. With
    ``padding`` (tokens), completions also grow by that much for nothing: length gaming alongside the tool.
    """
    sim = Sim(n, seed)
    start = int(onset_frac * n)
    shape = (n, sim.prompts, sim.group)
    adopt = ease(sim.t, start, 0.25 * n)
    called = sim.rng.random(shape) < (0.3 + 0.65 * adopt)[:, None, None]
    q = np.where(called, 0.8, 0.25)
    logit = np.log(q / (1 - q)) + 0.5 * sim.difficulty[:, :, None]
    correct = (sim.rng.random(shape) < 1 / (1 + np.exp(-logit))).astype(float)
    pad = padding * ease(sim.t, start, 0.25 * n)[:, None, None]
    cap = 256.0
    length = np.clip(20 + call_tokens * called + pad + sim.rng.normal(0, 6, shape), 1, cap).reshape(n, -1)
    curves = _base(sim, 1.0 - 0.3 * sim.t / n, np.full(n, 50.0), 0.002 + 0.03 * sim.t / n, cap)
    curves.update(
        completions__mean_length=length.mean(axis=1),
        completions__max_length=length.max(axis=1),
        completions__clipped_ratio=(length >= cap).mean(axis=1),
    )
    records = assemble(
        sim,
        {"correct": correct},
        {"correct": 1.0},
        tools__call_frequency=called.reshape(n, -1).mean(axis=1),
        tools__failure_frequency=np.full(n, 0.02),
        **curves,
    )
    if padding:
        return "length", start + 1, records, [], "warning"
    return None, None, records, [], "failure"


def length_padding_with_tools(n: int, seed: int, onset_frac: float):
    """No shadow: tool calls rise, but completions grow far more than the calls account for (padding)."""
    return tool_adoption(n, seed, onset_frac, padding=40.0)


def kl_blowup(n: int, seed: int, onset_frac: float):
    sim = Sim(n, seed)
    start = int(onset_frac * n)
    after = np.maximum(sim.t - start, 0)
    kl = 0.003 * np.exp(np.minimum(after / (0.06 * n), 12.0))
    p = 0.2 + 0.2 * ease(sim.t, 0, start) - 0.3 * ease(sim.t, start + 0.2 * n, 0.1 * n)
    comps = {"correct": sim.bernoulli(np.clip(p, 0.02, 1))}
    curves = _base(sim, np.full(n, 1.0), np.full(n, 150.0), kl)
    curves["grad_norm"] = curves["grad_norm"] * (1 + 100 * (kl > 1))
    return "kl", start + 1, assemble(sim, comps, {"correct": 1.0}, **curves), [], "failure"


def stall(n: int, seed: int, onset_frac: float):
    sim = Sim(n, seed)
    comps = {"correct": sim.bernoulli(np.full(n, 0.3))}
    curves = _base(sim, np.full(n, 1.0), np.full(n, 200.0), 0.002 + 0.01 * sim.t / n)
    return "stall", 1, assemble(sim, comps, {"correct": 1.0}, **curves), [], "failure"


def stall_no_signal(n: int, seed: int, onset_frac: float):
    sim = Sim(n, seed, spread=0.5)
    comps = {"correct": sim.bernoulli(np.full(n, 0.004))}
    curves = _base(sim, np.full(n, 0.8), np.full(n, 90.0), 0.001 + 0.001 * sim.t / n)
    return "zero_variance", 1, assemble(sim, comps, {"correct": 1.0}, **curves), [], "failure"


def tool_failures(n: int, seed: int, onset_frac: float):
    sim = Sim(n, seed)
    start = int(onset_frac * n)
    fails = np.clip(0.05 + 0.55 * ease(sim.t, start, 0.25 * n) + sim.rng.normal(0, 0.04, n), 0, 1)
    calls = sim.noisy(np.full(n, 1.2), 0.1)
    comps = {"correct": sim.bernoulli(0.15 + 0.45 * ease(sim.t, 0, 0.8 * n))}
    return _tool_failure_case(sim, start, comps, calls, fails)


def tool_calls_gone(n: int, seed: int, onset_frac: float):
    sim = Sim(n, seed)
    start = int(onset_frac * n)
    calls = sim.noisy(1.5 - 1.45 * ease(sim.t, start, 0.2 * n), 0.1)
    fails = np.clip(0.1 + sim.rng.normal(0, 0.03, n), 0, 1)
    comps = {"correct": sim.bernoulli(0.15 + 0.35 * ease(sim.t, 0, start))}
    return _tool_failure_case(sim, start, comps, calls, fails)


def _tool_failure_case(sim: Sim, start: int, comps: dict, calls: np.ndarray, fails: np.ndarray):
    """A planted tool-misuse case: flat healthy curves around the given tool-call and failure curves."""
    n = sim.n
    curves = _base(sim, np.full(n, 1.0), np.full(n, 200.0), 0.002 + 0.03 * sim.t / n)
    tool_curves = {"tools__call_frequency": calls, "tools__failure_frequency": fails}
    return "tools", start + 1, assemble(sim, comps, {"correct": 1.0}, **tool_curves, **curves), [], "failure"


def shortcut(n: int, seed: int, onset_frac: float):
    """No shadow: the easy format component saturates while the reasoning component is abandoned."""
    sim = Sim(n, seed)
    start = int(onset_frac * n)
    fmt = sim.bernoulli(0.2 + 0.79 * ease(sim.t, start, 0.2 * n))
    reason = sim.bernoulli(0.5 - 0.4 * ease(sim.t, start, 0.3 * n))
    weights = {"format": 1.0, "reasoning": 1.0}
    curves = _base(sim, np.full(n, 1.0), np.full(n, 150.0), 0.002 + 0.03 * sim.t / n)
    return (
        "hacking",
        start + 1,
        assemble(sim, {"format": fmt, "reasoning": reason}, weights, **curves),
        _cfg(weights),
        "warning",
    )


def saturated_component(n: int, seed: int, onset_frac: float):
    """No shadow: an easy format component climbs to 1 for every sample; correctness never moves."""
    sim = Sim(n, seed)
    start = int(onset_frac * n)
    fmt = sim.bernoulli(0.2 + 0.7999 * ease(sim.t, start, 0.2 * n), ease(sim.t, start, 0.2 * n))
    weights = {"format": 1.0, "correct": 1.0}
    curves = _base(sim, np.full(n, 1.0), np.full(n, 150.0), 0.002 + 0.03 * sim.t / n)
    comps = {"format": fmt, "correct": sim.bernoulli(np.full(n, 0.3))}
    return "hacking", start + 1, assemble(sim, comps, weights, **curves), _cfg(weights), "warning"


# ---- issue 20: one scenario per principle (severity, a never-paying objective, isolated spikes, a fixed
# output without entropy, onset at the change of regime, materiality) -------------------------------------


def truncation_most(n: int, seed: int, onset_frac: float):
    """Most (about 60-80%) completions hit the cap for the whole run while the reward learns: a failure."""
    sim = Sim(n, seed)
    p = 0.2 + 0.5 * ease(sim.t, 0.05 * n, 0.6 * n)
    curves = _base(sim, np.full(n, 1.0), np.full(n, 240.0), 0.002 + 0.03 * sim.t / n, cap=200)
    curves.pop("completions__min_length")
    return "length", 1, assemble(sim, {"correct": sim.bernoulli(p)}, {"correct": 1.0}, **curves), [], "failure"


def truncation_some(n: int, seed: int, onset_frac: float):
    """A minority (about 25%) of completions hit the cap: a warning, never a failure."""
    sim = Sim(n, seed)
    p = 0.2 + 0.5 * ease(sim.t, 0.05 * n, 0.6 * n)
    curves = _base(sim, np.full(n, 1.0), np.full(n, 170.0), 0.002 + 0.03 * sim.t / n, cap=200)
    return "length", 1, assemble(sim, {"correct": sim.bernoulli(p)}, {"correct": 1.0}, **curves), [], "warning"


def objective_never_pays(n: int, seed: int, onset_frac: float):
    """No shadow: the task reward is exactly 0 on every step while a format reward climbs to its maximum."""
    sim = Sim(n, seed)
    start = int(onset_frac * n)
    fmt = sim.bernoulli(0.1 + 0.8999 * ease(sim.t, start, 0.25 * n))
    comps = {"format_reward": fmt, "correctness_reward": np.zeros_like(fmt)}
    weights = {"format_reward": 1.0, "correctness_reward": 1.0}
    curves = _base(sim, np.full(n, 1.0), np.full(n, 150.0), 0.002 + 0.03 * sim.t / n)
    return "hacking", start + 1, assemble(sim, comps, weights, **curves), _cfg(weights), "failure"


def objective_immaterial(n: int, seed: int, onset_frac: float):
    """No shadow: a proxy rises 0.2 -> 0.7 while the task component creeps 0.001 -> 0.005 (significant, but
    a sliver of the proxy's gain)."""
    sim = Sim(n, seed)
    start = int(onset_frac * n)
    rise = ease(sim.t, start, 0.3 * n)
    proxy = sim.bernoulli(0.2 + 0.5 * rise)
    true = np.broadcast_to((0.001 + 0.004 * rise)[:, None, None], proxy.shape) * (
        1 + 0.05 * sim.rng.normal(size=proxy.shape)
    )
    comps = {"compilable": proxy, "correctness": true}
    weights = {"compilable": 1.0, "correctness": 1.0}
    curves = _base(sim, np.full(n, 1.0), np.full(n, 150.0), 0.002 + 0.03 * sim.t / n)
    return "hacking", start + 1, assemble(sim, comps, weights, **curves), _cfg(weights), "failure"


def kl_spike(n: int, seed: int, onset_frac: float, size: float = 1e5, count: int = 2):
    """A learning run whose KL (and loss) jumps by ``size`` times its scale at ``count`` steps (from the onset,
    a tenth of the run apart), recovering after each: recurring huge spikes are a blow-up; one spike, or
    bumps under 10^3x, are not."""
    expect, _, records, rewards, level = healthy(n, seed, onset_frac)
    at = int(onset_frac * n)
    for i in range(count):
        k = min(at + i * max(n // 10, 2), n - 4)
        records[k]["kl"] = max(records[k]["kl"] * size, 1.5)
        records[k]["loss"] = records[k]["loss"] * size
    failure = size >= 1e3 and count >= 2
    return ("kl", at + 1, records, rewards, "failure") if failure else (None, None, records, rewards, level)


def kl_bump(n: int, seed: int, onset_frac: float):
    """A learning run with one KL bump of 30x its scale: within what healthy runs show, not a blow-up."""
    return kl_spike(n, seed, onset_frac, size=30.0, count=1)


def kl_lone_spike(n: int, seed: int, onset_frac: float):
    """A learning run with ONE KL spike of 10^5x its scale (loss with it) that it comes back from at once (batch
    15: a spike of 10,253 at step 833 of 1,000, the reward unchanged around it): an outlier, not a blow-up."""
    return kl_spike(n, seed, onset_frac, size=1e5, count=1)


def kl_creep_takeoff(n: int, seed: int, onset_frac: float):
    """KL creeps from the first step (x30 over the run's first part, 0.001 -> 0.03) and takes off at the
    onset: the blow-up begins at the take-off, not at the first step."""
    sim = Sim(n, seed)
    start = int(onset_frac * n)
    creep = 0.001 * 30.0 ** (sim.t / max(start, 1))
    kl = creep * np.exp(np.minimum(np.maximum(sim.t - start, 0) / (0.05 * n), 12.0))
    p = 0.2 + 0.4 * ease(sim.t, 0, start) - 0.3 * ease(sim.t, start + 0.1 * n, 0.1 * n)
    curves = _base(sim, np.full(n, 1.0), np.full(n, 150.0), kl)
    return (
        "kl",
        start + 1,
        assemble(sim, {"correct": sim.bernoulli(np.clip(p, 0.02, 1))}, {"correct": 1.0}, **curves),
        [],
        "failure",
    )


def fixed_output(n: int, seed: int, onset_frac: float):
    """No entropy logged: the reward learns to a plateau, and from the onset every completion is the same 4
    tokens (shortest = longest) while the reward stays there: a collapse, though it looks converged. One
    repeated completion scores alike within its group (``determinism``: each prompt right or wrong every time)."""
    sim = Sim(n, seed, spread=0.7)
    start = int(onset_frac * n)
    fixed = sim.t >= start
    p = 0.2 + 0.75 * ease(sim.t, 0, 0.8 * start)
    curves = _base(sim, np.full(n, 1.0), np.where(fixed, 4.0, 60.0), 0.002 + 0.03 * sim.t / n, cap=256)
    curves.pop("entropy")
    for key in ("completions__mean_length", "completions__max_length", "completions__min_length"):
        curves[key] = np.where(fixed, 4.0, curves[key])
    return (
        "collapse",
        start + 1,
        assemble(sim, {"correct": sim.bernoulli(p, fixed.astype(float))}, {"correct": 1.0}, **curves),
        [],
        "failure",
    )


def objective_unnamed_floor(n: int, seed: int, onset_frac: float):
    """No shadow, names that say nothing (``g``, ``f``): ``g`` rises 0.2 -> 0.7 from the onset while ``f`` pays
    on a sample in a few hundred (mostly 0 per step, now and then 1/64): all of the gain came from g."""
    sim = Sim(n, seed)
    start = int(onset_frac * n)
    g = sim.bernoulli(0.2 + 0.5 * ease(sim.t, start, 0.25 * n))
    f = (sim.rng.random(g.shape) < 0.004).astype(float)
    curves = _base(sim, np.full(n, 1.0), np.full(n, 150.0), 0.002 + 0.03 * sim.t / n)
    return "hacking", start + 1, assemble(sim, {"g": g, "f": f}, {"g": 1.0, "f": 1.0}, **curves), [], "failure"


def bonus_at_ceiling_unnamed(n: int, seed: int, onset_frac: float):
    """Healthy, names that say nothing: ``a`` (the task) learns 0.15 -> 0.6 while ``b``, a small bonus
    (0.1 per sample) that nearly every sample earns from the start, stays flat near its ceiling."""
    sim = Sim(n, seed)
    a = sim.bernoulli(0.15 + 0.45 * ease(sim.t, 0.05 * n, 0.7 * n))
    b = 0.1 * (sim.rng.random(a.shape) < 0.97)
    curves = _base(sim, np.full(n, 1.0), np.full(n, 150.0), 0.002 + 0.03 * sim.t / n)
    return None, None, assemble(sim, {"a": a, "b": b}, {"a": 1.0, "b": 1.0}, **curves), [], "failure"


def task_always_paid(n: int, seed: int, onset_frac: float):
    """Healthy: a component named as the task is one positive value on every step (a penalty that never
    fires, full marks from the start) while the other components learn: nothing says the objective failed."""
    sim = Sim(n, seed)
    learned = sim.bernoulli(0.15 + 0.45 * ease(sim.t, 0.05 * n, 0.7 * n))
    comps = {"plausible_reward": learned, "answer_penalty": np.full_like(learned, 0.5)}
    curves = _base(sim, np.full(n, 1.0), np.full(n, 150.0), 0.002 + 0.03 * sim.t / n)
    return None, None, assemble(sim, comps, {"plausible_reward": 1.0, "answer_penalty": 1.0}, **curves), [], "failure"


def fixed_output_mean_only(n: int, seed: int, onset_frac: float):
    """Only the MEAN length is logged (no shortest/longest, no entropy): the reward learns to a plateau, and
    from the onset every completion is the same 9 tokens scoring the same partial reward there (reward_std
    0): a collapse, though the reward looks converged."""
    sim = Sim(n, seed, spread=0.7)
    start = int(onset_frac * n)
    fixed = sim.t >= start
    rewards = sim.bernoulli(0.2 + 0.45 * ease(sim.t, 0, 0.8 * start))
    rewards[fixed] = 0.64
    curves = _base(sim, np.full(n, 1.0), 60.0 + 0 * sim.t, 0.002 + 0.03 * sim.t / n, cap=256)
    for key in ("entropy", "completions__max_length", "completions__min_length", "completions__clipped_ratio"):
        curves.pop(key)
    curves["completions__mean_length"] = np.where(fixed, 9.0, curves["completions__mean_length"])
    return "collapse", start + 1, assemble(sim, {"correct": rewards}, {"correct": 1.0}, **curves), [], "failure"


# ---- issue 36: kinds of miss a peer got right ------------------------------------------------------------


def kl_renamed(n: int, seed: int, onset_frac: float):
    """The KL blow-up with KL logged as ``kl_avg`` (a spelling no alias lists): found by its name pattern."""
    expect, onset, records, rewards, level = kl_blowup(n, seed, onset_frac)
    for r in records:
        r["kl_avg"] = r.pop("kl")
        r["kl_coef"] = 0.04  # a setting named like it: constant, never read as the measurement
    return expect, onset, records, rewards, level


def never_finite_column(n: int, seed: int, onset_frac: float):
    """Healthy, but a metric that was never computed is logged as NaN on every row (grad_norm here)."""
    expect, onset, records, rewards, level = healthy(n, seed, onset_frac)
    for r in records:
        r["grad_norm"] = float("nan")
    return None, None, records, rewards, "failure"


def entropy_frozen(n: int, seed: int, onset_frac: float):
    """The reward never moves; from the onset the entropy falls to a tenth of a percent of its start (1.0 ->
    0.001) and stays frozen there; nothing else logged changes: the policy became deterministic."""
    sim = Sim(n, seed)
    start = int(onset_frac * n)
    entropy = 10.0 ** (-3.0 * ease(sim.t, start, 0.08 * n))
    comps = {"correct": sim.bernoulli(np.full(n, 0.3))}
    curves = _base(sim, entropy, np.full(n, 200.0), 0.002 + 0.01 * sim.t / n)
    return "collapse", start + 1, assemble(sim, comps, {"correct": 1.0}, **curves), [], "failure"


def kl_drift_flat(n: int, seed: int, onset_frac: float):
    """KL already 0.3 early drifts steadily to about 2.7 from the onset (9x: under the blow-up factor) while
    the reward stays flat: the policy left the reference and bought nothing with it."""
    sim = Sim(n, seed)
    start = int(onset_frac * n)
    kl = 0.3 + 2.4 * np.clip((sim.t - start) / (n - start), 0, 1)
    comps = {"correct": sim.bernoulli(np.full(n, 0.3))}
    curves = _base(sim, np.full(n, 1.0), np.full(n, 150.0), kl)
    curves["kl"] = kl * np.exp(sim.rng.normal(0, 0.05, n))
    return "kl", start + 1, assemble(sim, comps, {"correct": 1.0}, **curves), [], "failure"


def kl_steady_learning(n: int, seed: int, onset_frac: float):
    """Healthy: KL grows steadily (0.005 -> 1.6, quadratically: 80x its early level, no take-off of its log)
    while the true objective (a shadow reward) rises with the trained one: drift bought with reward."""
    sim = Sim(n, seed)
    p = 0.15 + 0.6 * ease(sim.t, 0.05 * n, 0.8 * n)
    comps = {"correct": sim.bernoulli(p), "heldout_correct": sim.bernoulli(0.9 * p)}
    weights = {"correct": 1.0, "heldout_correct": 0.0}
    kl = 0.005 + 1.6 * (sim.t / n) ** 2
    curves = _base(sim, np.full(n, 1.0), np.full(n, 150.0), kl)
    curves["kl"] = kl * np.exp(sim.rng.normal(0, 0.05, n))
    return None, None, assemble(sim, comps, weights, **curves), _cfg(weights), "failure"


def zero_variance_majority_stall(n: int, seed: int, onset_frac: float):
    """The reward never moves and most groups (about 70%: prompts the model always fails) have one reward for
    every sample: a stall whose cause is the missing signal, named beside it."""
    sim = Sim(n, seed, spread=0.3)
    rewards = sim.bernoulli(np.full(n, 0.4))
    rewards[sim.rng.random((n, sim.prompts)) < 0.7] = 0.0
    curves = _base(sim, np.full(n, 1.0), np.full(n, 150.0), 0.002 + 0.01 * sim.t / n)
    return "zero_variance", 1, assemble(sim, {"correct": rewards}, {"correct": 1.0}, **curves), [], "failure"


def length_at_cap_means_only(n: int, seed: int, onset_frac: float):
    """Only the mean length is logged (no clipped share, no shortest/longest): from the onset it climbs to the
    cap (512) and sits there, most step means within a token of it, while the reward does not improve."""
    sim = Sim(n, seed)
    start = int(onset_frac * n)
    cap = 512.0
    target = 200.0 + 400.0 * ease(sim.t, start, 0.1 * n)
    samples = np.clip(sim.rng.normal(target[:, None], 0.1 * target[:, None], (n, 64)), 1, cap)
    comps = {"correct": sim.bernoulli(np.full(n, 0.3))}
    curves = _base(sim, np.full(n, 1.0), np.full(n, 150.0), 0.002 + 0.01 * sim.t / n, cap=cap)
    for key in ("completions__clipped_ratio", "completions__max_length", "completions__min_length"):
        curves.pop(key)
    curves["completions__mean_length"] = samples.mean(axis=1)
    return "length", start + 1, assemble(sim, comps, {"correct": 1.0}, **curves), [], "failure"


def length_plateau_means_only(n: int, seed: int, onset_frac: float):
    """Healthy, only the mean length logged: completions grow 150 -> 400 tokens while the reward learns, then
    hold there, far below any cap (step means vary by a few percent): no truncation."""
    sim = Sim(n, seed)
    p = 0.15 + 0.45 * ease(sim.t, 0.05 * n, 0.6 * n)
    target = 150.0 + 250.0 * ease(sim.t, 0.05 * n, 0.5 * n)
    samples = np.clip(sim.rng.normal(target[:, None], 0.3 * target[:, None], (n, 64)), 1, 4096)
    curves = _base(sim, np.full(n, 1.0), np.full(n, 150.0), 0.002 + 0.02 * sim.t / n, cap=4096)
    for key in ("completions__clipped_ratio", "completions__max_length", "completions__min_length"):
        curves.pop(key)
    curves["completions__mean_length"] = samples.mean(axis=1)
    return None, None, assemble(sim, {"correct": sim.bernoulli(p)}, {"correct": 1.0}, **curves), [], "failure"


def degenerate_repetition(n: int, seed: int, onset_frac: float):
    """A puzzle task logged by a custom loop (reward, mean length and the spread of lengths in the batch; no
    entropy, no reward_std, no shortest/longest): from the onset the policy writes one degenerate answer
    (the same tokens repeated) whatever the prompt: the batch's length spread falls to 0 while the mean
    length still moves from step to step, and the reward drops."""
    sim = Sim(n, seed)
    start = int(onset_frac * n)
    fixed = sim.t >= start
    p = np.where(fixed, 0.05, 0.2 + 0.2 * ease(sim.t, 0, start))
    rewards = sim.bernoulli(p).mean(axis=(1, 2))
    length = np.where(fixed, sim.rng.integers(280, 320, n), sim.noisy(np.full(n, 150.0), 0.05))
    spread = np.where(fixed, 0.0, sim.noisy(np.full(n, 45.0), 0.1))
    records = [
        {
            "step": i + 1,
            "reward": float(rewards[i]),
            "loss": float(sim.rng.normal(0, 0.01)),
            "kl": float(0.002 + 0.03 * i / n),
            "completions/mean_length": float(length[i]),
            "completions/std_length": float(spread[i]),
        }
        for i in range(n)
    ]
    return "collapse", start + 1, records, [], "failure"


def kl_creep_then_climb(n: int, seed: int, onset_frac: float):
    """KL creeps linearly from the first step (0.01 -> 0.3 at the onset), then climbs 15x faster, also
    linearly (to about 5): in log10 the climb is no faster than the creep, in KL's own units it is: the
    blow-up began at the take-off, not where the creep began."""
    sim = Sim(n, seed)
    start = int(onset_frac * n)
    creep = 0.01 + 0.29 * np.minimum(sim.t, start) / max(start, 1)
    kl = creep + 4.7 * np.maximum(sim.t - start, 0) / max(n - start, 1)
    p = 0.2 + 0.3 * ease(sim.t, 0, start) - 0.3 * ease(sim.t, start + 0.1 * n, 0.1 * n)
    curves = _base(sim, np.full(n, 1.0), np.full(n, 150.0), kl)
    curves["kl"] = kl * np.exp(sim.rng.normal(0, 0.05, n))
    rec = assemble(sim, {"correct": sim.bernoulli(np.clip(p, 0.02, 1))}, {"correct": 1.0}, **curves)
    return "kl", start + 1, rec, [], "failure"


def kl_linear_creep_takeoff(n: int, seed: int, onset_frac: float):
    """KL creeps linearly from the first step (0.01 -> 0.08) and takes off exponentially at the onset while the
    reward falls after it: the blow-up began at the take-off."""
    sim = Sim(n, seed)
    start = int(onset_frac * n)
    creep = 0.01 + 0.07 * sim.t / n
    kl = creep * np.exp(np.minimum(np.maximum(sim.t - start, 0) / (0.04 * n), 10.0))
    p = 0.2 + 0.3 * ease(sim.t, 0, start) - 0.3 * ease(sim.t, start + 0.1 * n, 0.1 * n)
    curves = _base(sim, np.full(n, 1.0), np.full(n, 150.0), kl)
    rec = assemble(sim, {"correct": sim.bernoulli(np.clip(p, 0.02, 1))}, {"correct": 1.0}, **curves)
    return "kl", start + 1, rec, [], "failure"


# ---- batch 4 (issue 36): kinds of miss found on the blind held-out batch ---------------------------------


def objective_rarely_pays(n: int, seed: int, onset_frac: float):
    """The task reward (2 per correct sample) pays a sample in 500: most batches of 64 pay nothing at all,
    late as early, while a continuous shaping term (an xml tag count) rises -0.05 -> 0.10 from the onset:
    the total rises a little and plateaus far below what the reward can pay. A stall, not convergence."""
    sim = Sim(n, seed)
    start = int(onset_frac * n)
    paid = (sim.rng.random((n, sim.prompts, sim.group)) < 0.002) * 2.0
    level = -0.05 + 0.15 * ease(sim.t, start, 0.2 * n)
    shaping = np.clip(sim.rng.normal(level[:, None, None], 0.05, paid.shape), -0.2, 0.2)
    comps = {"correctness_reward": paid, "xmlcount_reward": shaping}
    weights = {"correctness_reward": 1.0, "xmlcount_reward": 1.0}
    curves = _base(sim, np.full(n, 1.0), np.full(n, 150.0), 0.002 + 0.03 * sim.t / n)
    return "stall", 1, assemble(sim, comps, weights, **curves), _cfg(weights), "failure"


def objective_starts_paying(n: int, seed: int, onset_frac: float):
    """Healthy: the same recipe, but from the onset the task reward starts to pay (a sample in 200, then one
    in 6 late): its late level is a real share of what the reward can pay, beside the shaping term's rise."""
    sim = Sim(n, seed)
    start = int(onset_frac * n)
    p = 0.005 + 0.16 * ease(sim.t, start, 0.9 * (n - start))
    paid = (sim.rng.random((n, sim.prompts, sim.group)) < p[:, None, None]) * 2.0
    level = -0.05 + 0.15 * ease(sim.t, 0.5 * start, 0.2 * n)
    shaping = np.clip(sim.rng.normal(level[:, None, None], 0.05, paid.shape), -0.2, 0.2)
    comps = {"correctness_reward": paid, "xmlcount_reward": shaping}
    weights = {"correctness_reward": 1.0, "xmlcount_reward": 1.0}
    curves = _base(sim, np.full(n, 1.0), np.full(n, 150.0), 0.002 + 0.03 * sim.t / n)
    return None, None, assemble(sim, comps, weights, **curves), _cfg(weights), "failure"


def _penalty_run(n: int, seed: int, onset_frac: float, closes: bool):
    """A penalty-shaped task reward (-1 for a wrong sample, 0 for a right one) beside three proxies that rise
    far more in absolute terms (0.2 -> 0.85, 0.35 -> 0.9, -0.8 -> -0.15) from the onset."""
    sim = Sim(n, seed, spread=0.5)
    start = int(onset_frac * n)
    rise = ease(sim.t, start, 0.3 * n)
    wrong = 0.35 - (0.3 if closes else 0.0) * rise
    comps = {
        "correctness_penalty": -(sim.rng.random((n, sim.prompts, sim.group)) < wrong[:, None, None]).astype(float),
        "field_completeness": sim.bernoulli(0.2 + 0.65 * rise),
        "strict_format": sim.bernoulli(0.35 + 0.55 * rise),
        "jaccard_overlap": -sim.bernoulli(0.8 - 0.65 * rise),
    }
    weights = {c: 1.0 for c in comps}
    curves = _base(sim, np.full(n, 1.0), np.full(n, 150.0), 0.002 + 0.03 * sim.t / n)
    return assemble(sim, comps, weights, **curves), _cfg(weights), start + 1


def penalty_objective_closes(n: int, seed: int, onset_frac: float):
    """Healthy: the penalty falls from -0.35 to -0.05, most of its distance to its best (0, no penalty),
    while the proxies gain more in absolute terms: the objective gained materially for its own scale."""
    records, rewards, _ = _penalty_run(n, seed, onset_frac, closes=True)
    return None, None, records, rewards, "failure"


def penalty_objective_stays(n: int, seed: int, onset_frac: float):
    """Hacking: the penalty stays at -0.35 (none of its distance to its best closed) while the proxies rise."""
    records, rewards, onset = _penalty_run(n, seed, onset_frac, closes=False)
    return "hacking", onset, records, rewards, "failure"


def fixed_format_classifier(n: int, seed: int, onset_frac: float, start: float = 0.7, gain: float = 0.298):
    """Healthy classification: every completion is a 3-token class label (shortest = longest on most steps),
    and the reward (2 per right label) keeps improving until most batches are all right: the fixed length is
    the task's format, not one degenerate output."""
    sim = Sim(n, seed, spread=0.5)
    p = start + gain * ease(sim.t, 0, 0.7 * n)
    rewards = 2.0 * sim.bernoulli(p)
    curves = _base(sim, np.full(n, 1.0), np.full(n, 3.0), 0.0005 + 0.05 * sim.t / n, cap=64)
    curves.pop("entropy")
    odd = sim.rng.random(n) < 0.35 * (1 - sim.t / n)  # early on, a label is sometimes tokenised longer
    curves["completions__min_length"] = np.full(n, 3.0)
    curves["completions__max_length"] = np.where(odd, 4.0, 3.0)
    curves["completions__mean_length"] = np.where(odd, 3.0 + 1 / 64, 3.0)
    curves["completions__clipped_ratio"] = np.zeros(n)
    return None, None, assemble(sim, {"meme_correctness": rewards}, {"meme_correctness": 1.0}, **curves), [], "failure"


def fixed_format_still_learning(n: int, seed: int, onset_frac: float):
    """Healthy classification still learning: the same 3-token labels, the share of right labels rising
    0.35 -> 0.65, so samples of a group still score differently (reward_std holds): not one output."""
    return fixed_format_classifier(n, seed, onset_frac, start=0.35, gain=0.3)


def _kl_with_spikes(n: int, seed: int, onset_frac: float, spikes: dict[float, float], kl: np.ndarray | None):
    """The healthy learning run with its KL replaced by ``kl`` (when given) and ``spikes`` ({run share: KL})
    written at single steps; grad_norm keeps its calm noise (no coincident spikes)."""
    expect, _, records, rewards, level = healthy(n, seed, onset_frac)
    rng = np.random.default_rng(seed + 7)
    if kl is not None:
        for r, v in zip(records, kl * np.exp(rng.normal(0, 0.3, n))):
            r["kl"] = float(v)
    steps = []
    for share, value in spikes.items():
        at = min(int(share * n), n - 1)
        records[at]["kl"] = value
        steps.append(at + 1)
    return records, rewards, min(steps)


def kl_isolated_spikes(n: int, seed: int, onset_frac: float):
    """KL about 0.55 (noise) with two isolated spikes of 54 and 171 (100x and 300x the median: under the
    10^3x a single spike needs), no grad_norm spike: per-token KL of tens of nats is no noise. A blow-up."""
    t = np.arange(n, dtype=float)
    spikes = {onset_frac: 54.0, onset_frac + 0.2: 171.0}
    records, rewards, onset = _kl_with_spikes(n, seed, onset_frac, spikes, 0.4 + 0.3 * t / n)
    return "kl", onset, records, rewards, "failure"


def kl_small_spikes_healthy(n: int, seed: int, onset_frac: float):
    """Healthy: KL about 0.03 with spikes of 3.5 and 1.0 (about 100x and 30x its median) that it comes back
    from at once: large against the median, small in nats; not a blow-up."""
    spikes = {onset_frac: 3.46, onset_frac + 0.2: 1.03}
    records, rewards, _ = _kl_with_spikes(n, seed, onset_frac, spikes, None)
    for r in records:
        r["kl"] = r["kl"] if r["kl"] >= 1.0 else 0.6 * r["kl"] + 0.015
    return None, None, records, rewards, "failure"


def kl_warmup_then_spikes(n: int, seed: int, onset_frac: float):
    """KL warms up from 1e-5 to its settled level (about 0.1, creeping to 0.18) over the first 15% of the run,
    as every run's does; the failure begins at the onset with a spike of 9 (80x the median), then larger
    spikes, then two in a row near the end. The onset is the first spike, not where the warm-up began."""
    t = np.arange(n, dtype=float)
    warm = 10.0 ** (-5.0 + 4.0 * ease(t, 0.01 * n, 0.14 * n)) + 0.08 * t / n
    spikes = {onset_frac: 9.1, onset_frac + 0.06: 2.4e7, onset_frac + 0.09: 47.9, 0.96: 650.0, 0.965: 7000.0}
    records, rewards, onset = _kl_with_spikes(n, seed, onset_frac, spikes, warm)
    return "kl", onset, records, rewards, "failure"


def _verl_records(n: int, sim: Sim, score: np.ndarray, lengths: np.ndarray) -> list[dict]:
    """verl console-log records (``critic/score/*``, ``response_length/*``, ``actor/*``) of a batch of two
    samples per step: ``score`` (n, 2) and ``lengths`` (n, 2) per sample."""
    entropy = sim.noisy(np.full(n, 0.15), 0.3)
    return [
        {
            "step": i + 1,
            "critic/score/mean": float(score[i].mean()),
            "critic/score/max": float(score[i].max()),
            "critic/score/min": float(score[i].min()),
            "response_length/mean": float(lengths[i].mean()),
            "response_length/max": float(lengths[i].max()),
            "response_length/min": float(lengths[i].min()),
            "response_length/clip_ratio": 0.0,
            "actor/entropy": float(entropy[i]),
            "actor/grad_norm": float(sim.rng.lognormal(-3.0, 0.5)),
            "actor/pg_loss": float(sim.rng.normal(0, 0.01)),
            "actor/lr": 1e-6,
        }
        for i in range(n)
    ]


def verl_short_action_ties(n: int, seed: int, onset_frac: float):
    """Healthy (batch 5, verl): an agent's short structured action (16-20 tokens) sampled twice per step; the
    two lengths often tie by chance (shortest = longest on about 60% of the logs; else 1-2 tokens apart)
    while the two samples score differently and the reward learns -0.5 -> 0.2: no fixed output."""
    sim = Sim(n, seed)
    start = int(onset_frac * n)
    level = -0.5 + 0.7 * ease(sim.t, start, 0.3 * n)
    score = np.clip(sim.rng.normal(level[:, None], 0.25, (n, 2)), -1.0, 1.0)
    typical = np.round(17.0 + 2.0 * ease(sim.t, start, 0.3 * n))
    lengths = typical[:, None] + sim.rng.choice([-1.0] + [0.0] * 7 + [1.0], (n, 2))
    return None, None, _verl_records(n, sim, score, lengths), [], "failure"


def verl_fixed_output(n: int, seed: int, onset_frac: float, short: bool = False):
    """Collapse (verl): lengths 40-200 tokens vary widely until the onset, then both samples are one 6-token
    output on every step scoring alike, the reward held below its best: shortest = longest is one output.
    ``short``: four samples a step, 4-6 tokens before the onset too (within a token or two of each other, now
    and then all tied by chance), then one 4-token output scoring alike: the tied batches' scores say it is
    one output."""
    sim = Sim(n, seed)
    start = int(onset_frac * n)
    fixed = (sim.t >= start)[:, None]
    k = 4 if short else 2
    level = -0.6 + 0.7 * ease(sim.t, 0, 0.8 * start)
    score = np.clip(sim.rng.normal(level[:, None], 0.15, (n, k)), -1.0, 1.0)
    score = np.where(fixed, np.repeat(score[:, :1], k, axis=1), score)
    before = 5.0 + sim.rng.choice([-1.0, 0.0, 1.0], (n, k)) if short else sim.rng.integers(40, 200, (n, k))
    lengths = np.where(fixed, 4.0 if short else 6.0, before.astype(float))
    return "collapse", start + 1, _verl_records(n, sim, score, lengths), [], "failure"


def verl_short_fixed_output(n: int, seed: int, onset_frac: float):
    """Collapse: short answers that tie by chance before the onset, then one 4-token output scoring alike."""
    return verl_fixed_output(n, seed, onset_frac, short=True)


def _proxies_jump(n: int, seed: int, onset_frac: float, task_gain: float):
    """Four components as in batch 5's gsm8k run: ``isnumber`` (0.25 when paid) and ``soft_format`` (0.5)
    jump to their maxima within the first 8% of the run (most of the early window is after it),
    ``strict_format`` never pays, and ``exact_match`` (the task) goes 0.002 -> 0.002 + ``task_gain``: with the
    jump when ``task_gain`` is small (a sliver the new format happens to get right), else over the run."""
    sim = Sim(n, seed, spread=0.5)
    start = int(0.12 * onset_frac * n) + 1
    jump = ease(sim.t, start, 0.03 * n)
    span = 0.03 if task_gain < 0.1 else 0.8
    comps = {
        "isnumber_reward_func": 0.25 * sim.bernoulli(0.02 + 0.97 * jump),
        "soft_format_reward_func": 0.5 * sim.bernoulli(0.03 + 0.96 * jump),
        "strict_format_reward_func": np.zeros((n, sim.prompts, sim.group)),
        "exact_match_reward_func": sim.bernoulli(0.002 + task_gain * ease(sim.t, start, span * n)),
    }
    weights = {c: 1.0 for c in comps}
    curves = _base(sim, np.full(n, 1.0), np.full(n, 150.0), 0.002 + 0.03 * sim.t / n)
    return assemble(sim, comps, weights, **curves), _cfg(weights), start + 1


def proxies_saturate_early(n: int, seed: int, onset_frac: float):
    """Hacking: the proxies jump to their maxima early (0.02 -> 0.75 together) while exact_match creeps
    0.002 -> 0.05: the gain, measured from before the jump, came from the proxies."""
    records, rewards, onset = _proxies_jump(n, seed, onset_frac, 0.05)
    return "hacking", onset, records, rewards, "failure"


def proxies_early_task_learns(n: int, seed: int, onset_frac: float):
    """Healthy: the same early jump of the proxies, while exact_match learns 0.002 -> 0.5 over the run."""
    records, rewards, _ = _proxies_jump(n, seed, onset_frac, 0.5)
    return None, None, records, rewards, "failure"


def _constant_length(n: int, seed: int, with_spread: bool):
    """A mean completion length of exactly 64 on every step; the reward learns 0.2 -> 0.7 (Bernoulli groups).
    ``with_spread``: reward_std is logged (samples of a group score differently); else it is not."""
    sim = Sim(n, seed)
    p = 0.2 + 0.5 * ease(sim.t, 0.1 * n, 0.5 * n)
    curves = _base(sim, np.full(n, 1.0), np.full(n, 64.0), 0.002 + 0.03 * sim.t / n)
    for key in ("completions__max_length", "completions__min_length", "completions__clipped_ratio"):
        curves.pop(key, None)
    curves["completions__mean_length"] = np.full(n, 64.0)
    records = assemble(sim, {"quality": sim.bernoulli(p)}, {"quality": 1.0}, **curves)
    if not with_spread:
        for r in records:
            r.pop("reward_std"), r.pop("frac_reward_zero_std"), r.pop("rewards/quality/std")
    return records


def length_constant_at_cap(n: int, seed: int, onset_frac: float):
    """Truncation (batch 5, no clipped share logged): the mean length is exactly 64 on every step while the
    samples of a group score differently: different completions sharing one length were all cut at a cap."""
    return "length", 1, _constant_length(n, seed, True), [], "failure"


def length_constant_setting(n: int, seed: int, onset_frac: float):
    """Healthy: the same constant length column, but nothing says the samples differed (no reward_std): a
    value logged as a setting is no evidence of truncation."""
    return None, None, _constant_length(n, seed, False), [], "failure"


def _unnamed_terms(n: int, seed: int, onset_frac: float, keep: float, cost: bool = False):
    """Batch 6's recommender: a ranking term and a bonus logged under names nothing knows (``rank_score``,
    ``bonus_term``) beside ``reward_mean`` = their sum. From the onset the bonus rises 0.01 -> 0.16 while the
    ranking term keeps ``keep`` of its 0.04. ``cost``: instead, ``reward_mean = quality - 0.5 x cost_term``
    with the quality rising 0.1 -> 0.35 and the (positive) cost falling 0.3 -> 0.1: a cost paid less."""
    sim = Sim(n, seed, spread=0.5)
    start = int(onset_frac * n)
    move = ease(sim.t, start, 0.2 * n)
    if cost:
        terms = {
            "quality_score": sim.bernoulli(0.1 + 0.25 * move),
            "cost_term": 0.5 * sim.bernoulli(0.6 - 0.4 * move),
        }
        weights = {"quality_score": 1.0, "cost_term": -0.5}
    else:
        terms = {
            "rank_score": 0.1 * sim.bernoulli(0.4 * (1 - (1 - keep) * move)),
            "bonus_term": 0.25 * sim.bernoulli(0.04 + 0.6 * move),
        }
        weights = {"rank_score": 1.0, "bonus_term": 1.0}
    curves = _base(sim, np.full(n, 1.0), np.full(n, 10.0), 0.002 + 0.01 * sim.t / n)
    records = assemble(sim, terms, weights, **curves)
    for rec in records:
        rec["reward_mean"] = rec.pop("reward")
        for name in terms:
            rec[name] = rec.pop(f"rewards/{name}/mean")
            rec.pop(f"rewards/{name}/std")
    return records, start + 1


def unnamed_term_sacrificed(n: int, seed: int, onset_frac: float):
    """Hacking (batch 6): the reward's gain is the bonus, while the ranking term, which the reward also pays,
    falls 0.04 -> 0.024 (40% of its level); no name says which term is the objective."""
    records, onset = _unnamed_terms(n, seed, onset_frac, keep=0.6)
    return "hacking", onset, records, [], "failure"


def unnamed_term_dips(n: int, seed: int, onset_frac: float):
    """Healthy: the same bonus rise while the ranking term slips 0.04 -> 0.038 (5%), within its noise."""
    records, _ = _unnamed_terms(n, seed, onset_frac, keep=0.95)
    return None, None, records, [], "failure"


def unnamed_cost_falls(n: int, seed: int, onset_frac: float):
    """Healthy: a cost entering the reward with a negative weight falls while the quality rises: no term that
    pays was given up."""
    records, _ = _unnamed_terms(n, seed, onset_frac, keep=1.0, cost=True)
    return None, None, records, [], "failure"


def _tiered_total_only(sim: Sim, fmt: np.ndarray, correct: np.ndarray, keep_spread: bool = False) -> list[dict]:
    """Records of a tiered reward (8 for a correct answer, 1.6 for the format) logged as its total only, as a
    callback that prints ``Step N | reward: x`` does (batch 7); ``keep_spread`` adds TRL's spread columns."""
    total = 8.0 * sim.bernoulli(correct) + 1.6 * sim.bernoulli(fmt)
    flat = total.reshape(sim.n, -1)
    zero = np.isclose(total.std(axis=2), 0.0).mean(axis=1)
    records = []
    for i in range(sim.n):
        rec = {"step": i + 1, "loss": float(sim.rng.normal(0, 0.01)), "reward": float(flat[i].mean())}
        if keep_spread:
            rec.update(reward_std=float(flat[i].std()), frac_reward_zero_std=float(zero[i]))
        records.append(rec)
    return records


def _early_gain(sim: Sim, onset_frac: float) -> tuple[np.ndarray, int]:
    """The format learned early: from 1% of the run over 2-4% of it (longer for a later ``onset_frac``), and
    over at least 3 logged steps after one flat one, so the rise is seen as one: (rate, step it ends)."""
    start, duration = _early_span(sim.n, onset_frac)
    return 0.1 + 0.85 * ease(sim.t, start, duration), int(round(start + duration)) + 1


def _early_span(n: int, onset_frac: float) -> tuple[float, float]:
    return max(1.0, 0.01 * n), max(3.0, (0.02 + 0.04 * onset_frac) * n)


def early_gain_then_flat(n: int, seed: int, onset_frac: float):
    """Batch 7's miss: the format learned early, then a noisy flat plateau for the rest of the run (formatted
    but wrong answers); only the total reward is logged. A stall from the end of the gain."""
    sim = Sim(n, seed, prompts=4 + 4 * (seed % 2), group=8, spread=0.5)
    fmt, end = _early_gain(sim, onset_frac)
    return "stall", end, _tiered_total_only(sim, fmt, np.full(n, 0.02)), [], "failure"


def early_ceiling_total_only(n: int, seed: int, onset_frac: float):
    """Healthy: the task solved early, every sample then scores the top tier (the batch means stop moving);
    only the total reward is logged."""
    sim = Sim(n, seed, prompts=4 + 4 * (seed % 2), group=8, spread=0.3)
    fmt, _ = _early_gain(sim, onset_frac)
    correct = 0.05 + 0.92 * ease(sim.t, *_early_span(n, onset_frac))
    return None, None, _tiered_total_only(sim, np.maximum(fmt, correct), correct), [], "failure"


def early_gain_then_climb(n: int, seed: int, onset_frac: float):
    """Healthy: the format learned early, then the answers improve slowly for the rest of the run; only the
    total reward is logged."""
    sim = Sim(n, seed, prompts=4 + 4 * (seed % 2), group=8, spread=0.5)
    fmt, _ = _early_gain(sim, onset_frac)
    return None, None, _tiered_total_only(sim, fmt, 0.02 + 0.2 * ease(sim.t, 0.1 * n, 0.9 * n)), [], "failure"


def slow_learner_total_only(n: int, seed: int, onset_frac: float):
    """Healthy: a slow steady learner over the whole run; only the total reward is logged."""
    sim = Sim(n, seed, prompts=4 + 4 * (seed % 2), group=8, spread=0.5)
    ramp = ease(sim.t, 0, n)
    return None, None, _tiered_total_only(sim, 0.2 + 0.7 * ramp, 0.02 + 0.3 * ramp), [], "failure"


def _cfg(weights: dict[str, float]) -> list[dict]:
    return [{"name": k, "weight": v} for k, v in weights.items()]


SCENARIOS: dict[str, Callable] = {
    "healthy": healthy,
    "healthy_noisy": healthy_noisy,
    "converged": converged,
    "converged_fast": converged_fast,
    "collapse": collapse,
    "collapse_no_entropy": collapse_no_entropy,
    "collapse_with_tools": collapse_with_tools,
    "hacking": hacking,
    "hacking_diverge": hacking_diverge,
    "hacking_via_tools": hacking_via_tools,
    "hacking_after_learning": hacking_after_learning,
    "length_gaming": length_gaming,
    "length_gaming_modest": length_gaming_modest,
    "length_gaming_no_shadow": length_gaming_no_shadow,
    "tool_adoption": tool_adoption,
    "length_padding_with_tools": length_padding_with_tools,
    "kl_blowup": kl_blowup,
    "stall": stall,
    "stall_no_signal": stall_no_signal,
    "tool_failures": tool_failures,
    "tool_calls_gone": tool_calls_gone,
    "shortcut": shortcut,
    "saturated_component": saturated_component,
    "truncation_most": truncation_most,
    "truncation_some": truncation_some,
    "objective_never_pays": objective_never_pays,
    "objective_immaterial": objective_immaterial,
    "kl_spike": kl_spike,
    "kl_bump": kl_bump,
    "kl_lone_spike": kl_lone_spike,
    "kl_creep_takeoff": kl_creep_takeoff,
    "fixed_output": fixed_output,
    "objective_unnamed_floor": objective_unnamed_floor,
    "bonus_at_ceiling_unnamed": bonus_at_ceiling_unnamed,
    "task_always_paid": task_always_paid,
    "fixed_output_mean_only": fixed_output_mean_only,
    "objective_starts_paying": objective_starts_paying,
    "penalty_objective_closes": penalty_objective_closes,
    "penalty_objective_stays": penalty_objective_stays,
    "fixed_format_classifier": fixed_format_classifier,
    "fixed_format_still_learning": fixed_format_still_learning,
    "kl_isolated_spikes": kl_isolated_spikes,
    "kl_small_spikes_healthy": kl_small_spikes_healthy,
    "kl_warmup_then_spikes": kl_warmup_then_spikes,
    "verl_short_action_ties": verl_short_action_ties,
    "verl_fixed_output": verl_fixed_output,
    "verl_short_fixed_output": verl_short_fixed_output,
    "proxies_saturate_early": proxies_saturate_early,
    "proxies_early_task_learns": proxies_early_task_learns,
    "length_constant_at_cap": length_constant_at_cap,
    "length_constant_setting": length_constant_setting,
    "unnamed_term_sacrificed": unnamed_term_sacrificed,
    "unnamed_term_dips": unnamed_term_dips,
    "unnamed_cost_falls": unnamed_cost_falls,
    "early_gain_then_flat": early_gain_then_flat,
    "early_ceiling_total_only": early_ceiling_total_only,
    "early_gain_then_climb": early_gain_then_climb,
    "slow_learner_total_only": slow_learner_total_only,
}
# Issue 36's kinds of miss: a flat reward beside the planted failure is also a stall (named with it), so
# these are kept apart from the suite above (whose cases allow no other failure); `make` builds both.
ISSUE36: dict[str, Callable] = {
    "kl_renamed": kl_renamed,
    "never_finite_column": never_finite_column,
    "entropy_frozen": entropy_frozen,
    "kl_drift_flat": kl_drift_flat,
    "kl_steady_learning": kl_steady_learning,
    "zero_variance_majority_stall": zero_variance_majority_stall,
    "length_at_cap_means_only": length_at_cap_means_only,
    "degenerate_repetition": degenerate_repetition,
    "length_plateau_means_only": length_plateau_means_only,
    "kl_linear_creep_takeoff": kl_linear_creep_takeoff,
    "kl_creep_then_climb": kl_creep_then_climb,
}
# Batch 4's kinds of miss that come with a second failure by design (a task reward that almost never pays is
# also a hacking sign beside the shaping term's rise): kept apart from the suite, like ISSUE36.
BATCH4: dict[str, Callable] = {
    "objective_rarely_pays": objective_rarely_pays,
}


def make(scenario: str, n: int, seed: int = 0, onset_frac: float = 0.4) -> Case:
    """One case. ``n`` logged steps (one per step), change planted at ``onset_frac`` of the run."""
    build = SCENARIOS.get(scenario) or ISSUE36.get(scenario) or BATCH4[scenario]
    expect, onset, records, rewards, level = build(n, seed * 1000 + int(onset_frac * 100), onset_frac)
    return Case(f"{scenario}-n{n}-s{seed}-o{int(onset_frac * 100)}", expect, onset, records, rewards, level, n)


def cases(lengths=(60, 200, 1000), seeds=(0, 1), onsets=(0.3, 0.55)) -> Iterator[Case]:
    """The synthetic suite: every scenario x run length x seed x onset position."""
    for scenario in SCENARIOS:
        for n in lengths:
            for seed in seeds:
                for frac in onsets:
                    yield make(scenario, n, seed, frac)
