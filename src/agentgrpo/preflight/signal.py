"""The signal check: will GRPO groups from the starting model carry a learning signal?

GRPO learns only from groups whose rewards differ (non-zero std; TRL logs the others as
``frac_reward_zero_std``). Sampling ``k`` completions for each of ``N`` training prompts from the starting
model, exactly as training rolls them out, gives each prompt's distribution of trained (weighted total)
rewards, and from it the chance that a group of ``g`` completions is mixed. For a binary reward with pass
rate p that is ``1 - p**g - (1-p)**g``; in general, with ``c_v`` of the ``k`` samples scoring ``v``, the chance
that ``g`` of them (drawn without replacement, g <= k) all agree is ``sum_v C(c_v, g) / C(k, g)`` (exact, no
subsampling noise), and ``sum_v (c_v/k)**g`` for g > k (a plug-in estimate, marked extrapolated).
"""

from __future__ import annotations

import math
import time
from collections import Counter
from math import comb

from agentgrpo.errors import UserError

KS = (2, 4, 8, 16)
CANDIDATE_KS = (2, 4, 8, 16, 32, 64)
TARGET_MIXED = 0.5  # the recommended group size is the smallest whose groups are mixed at least this often
TIE = 1e-6  # rewards closer than this count as equal (TRL: torch.isclose(std, 0))
PASS_BINS = ("0", "(0, .25]", "(.25, .5]", "(.5, .75]", "(.75, 1)", "1")


def all_equal_probability(values: list[float], g: int) -> tuple[float, bool]:
    """P(a group of ``g`` completions all score the same), from one prompt's ``k`` samples; (p, exact).

    >>> all_equal_probability([1, 1, 0, 0], 2)   # C(2,2)+C(2,2) over C(4,2)
    (0.3333333333333333, True)
    >>> all_equal_probability([1, 0], 4)          # plug-in: 0.5**4 + 0.5**4
    (0.125, False)
    """
    counts = Counter(round(v / TIE) for v in values if v is not None)
    k = sum(counts.values())
    if k == 0:
        return 1.0, True
    if g <= k:
        return sum(comb(c, g) for c in counts.values()) / comb(k, g), True
    return sum((c / k) ** g for c in counts.values()), False


def mixed_fraction(groups: list[list[float]], g: int) -> tuple[float, bool]:
    """Expected share of prompts whose group of ``g`` is mixed (non-zero std); (share, exact).

    >>> share, exact = mixed_fraction([[1, 1, 1, 1], [1, 0, 1, 0]], 2)   # (0 + 2/3) / 2
    >>> round(share, 4), exact
    (0.3333, True)
    """
    probs = [all_equal_probability(v, g) for v in groups]
    return sum(1 - p for p, _ in probs) / len(probs), all(e for _, e in probs)


def binary_mixed(p: float, g: int) -> float:
    """``1 - p**g - (1-p)**g``: a binary reward with pass rate p.

    >>> round(binary_mixed(0.5, 8), 4), binary_mixed(0.0, 8)
    (0.9922, 0.0)
    """
    return 1 - p**g - (1 - p) ** g


def pass_histogram(rates: list[float]) -> dict[str, int]:
    """Per-prompt pass rates in bins: never, rarely, ..., always.

    >>> pass_histogram([0.0, 0.1, 0.5, 1.0, 1.0])
    {'0': 1, '(0, .25]': 1, '(.25, .5]': 1, '(.5, .75]': 0, '(.75, 1)': 0, '1': 2}
    """
    bins = dict.fromkeys(PASS_BINS, 0)
    for r in rates:
        key = (
            "0"
            if r <= 0
            else "1"
            if r >= 1
            else "(0, .25]"
            if r <= 0.25
            else "(.25, .5]"
            if r <= 0.5
            else ("(.5, .75]" if r <= 0.75 else "(.75, 1)")
        )
        bins[key] += 1
    return bins


def verdict(groups: list[list[float]], rates: list[float], train_k: int, generation_batch: int,
            refill_rounds: int | None = None, success_groups: list[list[float]] | None = None) -> dict:
    """Too hard / too easy / at the edge, a recommended group size and the useful groups per step.

    ``refill_rounds``: the run uses ``dynamic_sampling: refill`` with this ``max_generation_rounds``; a step
    then trains on up to ``prompts_per_step`` mixed groups drawn from that many generation batches, and the
    advice names the smallest group size whose mixed share fills the batch on average (share x rounds >= 1).
    ``success_groups``: each group's task success (0/1). A group counts as mixed only where both its trained
    rewards and its successes differ: groups that differ only on a format or shaping reward teach the format,
    not what the eval counts, so they do not make a task "at the edge".
    """
    ks = sorted({*CANDIDATE_KS, train_k})
    on_total = {g: mixed_fraction(groups, g) for g in ks}
    on_success = {g: mixed_fraction(success_groups, g) for g in ks} if success_groups else on_total
    mixed = {g: min(on_total[g], on_success[g], key=lambda m: m[0]) for g in ks}
    mean_pass = sum(rates) / len(rates)
    at_k = mixed[train_k][0]
    if at_k >= TARGET_MIXED:
        label = "at the edge of ability"
    else:
        label = "too hard" if mean_pass < 0.5 else "too easy"
    reachable = [g for g in CANDIDATE_KS if mixed[g][0] >= TARGET_MIXED]
    recommended = reachable[0] if reachable else None
    per_step = max(1, generation_batch // train_k)
    out = {
        "verdict": label,
        "mean_pass_rate": round(mean_pass, 4),
        "train_k": train_k,
        "mixed_at_train_k": round(at_k, 4),
        "mixed_on_trained_reward_at_train_k": round(on_total[train_k][0], 4),
        "mixed_on_success_at_train_k": round(on_success[train_k][0], 4),
        "prompts_per_step": per_step,
        "useful_groups_per_step": round(at_k * per_step, 2),
        "recommended_k": recommended,
    }
    if recommended is not None:
        out["useful_groups_per_step_at_recommended_k"] = round(
            mixed[recommended][0] * max(1, generation_batch // recommended), 2
        )
    out["advice"] = _advice(label, recommended, train_k, mean_pass)
    if on_total[train_k][0] >= TARGET_MIXED > on_success[train_k][0]:
        out["advice"] += (f" (the trained reward differs within {on_total[train_k][0]:.0%} of groups of {train_k}, "
                          f"success within only {on_success[train_k][0]:.0%}: the signal is on the format or "
                          "shaping rewards, not on what the eval counts)")
    if refill_rounds:
        out.update(_with_refill(mixed, train_k, per_step, refill_rounds, generation_batch))
        if label != "at the edge of ability" and out["recommended_k_with_refill"] is not None:
            k = out["recommended_k_with_refill"]
            out["advice"] = (
                f"num_generations {train_k} is fine with dynamic_sampling refill: {refill_rounds} rounds fill the "
                "batch with mixed groups on average" if k <= train_k else
                f"use num_generations >= {k} (with dynamic_sampling refill over {refill_rounds} rounds, the "
                "batch then fills with mixed groups on average)")
    return out


def _with_refill(mixed: dict, train_k: int, per_step: int, rounds: int, generation_batch: int) -> dict:
    """Expected mixed groups a refill step trains on: E[min(prompts, Binomial(rounds x prompts, share))]."""
    def expected(share: float, prompts: int) -> float:
        n = rounds * prompts
        return sum(min(prompts, j) * math.comb(n, j) * share**j * (1 - share) ** (n - j) for j in range(n + 1))

    fills = [g for g in CANDIDATE_KS if mixed[g][0] * rounds >= 1]
    return {
        "refill_rounds": rounds,
        "useful_groups_per_step_with_refill": round(expected(mixed[train_k][0], per_step), 2),
        "recommended_k_with_refill": fills[0] if fills else None,
    }


def _advice(label: str, recommended: int | None, train_k: int, mean_pass: float) -> str:
    if recommended is None:
        return "no group size up to 64 gives mixed groups half the time: " + (
            "warm-start with SFT (sft: true) or train on easier problems first"
            if mean_pass < 0.5
            else "the model already solves these; train on harder problems"
        )
    if label == "at the edge of ability":
        return f"num_generations {train_k} is fine" + (
            f" ({recommended} already gives mixed groups half the time)" if recommended < train_k else ""
        )
    return f"use num_generations >= {recommended} (with per_device_train_batch_size a multiple of it)"


# --- sampling -----------------------------------------------------------------------------------------


def signal_check(
    target,
    n_prompts: int = 32,
    k: int = 16,
    model_path: str | None = None,
    fidelity: bool | int = True,
    progress: bool = True,
    model=None,
    tokenizer=None,
) -> dict:
    """Sample ``k`` completions for each of ``n_prompts`` training prompts and judge the learning signal.

    ``fidelity``: check token fidelity on up to 64 episodes (True), that many (an int), or not (False).
    Returns a JSON-able report; when the model cannot be loaded it is partial (``ok`` None, the reason in
    ``error``) and still checks the chat template on the task's gold conversations when the tokenizer loads.
    """
    if k < 2:
        raise UserError(f"--k: {k} < 2; a group needs at least 2 completions to have a spread (GRPO's minimum)")
    if n_prompts < 1:
        raise UserError(f"--prompts: {n_prompts} < 1")
    start = time.perf_counter()
    report: dict = {
        "target": target.source,
        "task": target.task.name,
        "k": k,
        "notes": [],
        "sampling": _sampling(target),
    }
    rows = _prompts(target, n_prompts, report["notes"])
    report["prompts"] = len(rows)
    try:
        model, tokenizer, report["model"] = _load(target, model_path, model, tokenizer, report["notes"])
    except Exception as exc:  # a model that cannot be loaded: say why, keep what can be checked without it
        report.update(
            ok=None, error=f"model {model_path or target.model!r} could not be loaded: {type(exc).__name__}: {exc}"
        )
        report["fidelity"] = _template_only(target, rows, model_path)
        report["seconds"] = round(time.perf_counter() - start, 2)
        return report
    episodes = _sample(target, model, tokenizer, rows, k, progress)
    report.update(_judge(target, rows, episodes, k))
    if fidelity:
        tools = target.task.tools()
        limit = 64 if fidelity is True else int(fidelity)  # episodes re-rendered
        report["fidelity"] = _fidelity(tokenizer, rows, episodes, k, tools, limit)
    report["ok"] = report["verdict"]["verdict"] == "at the edge of ability"
    report["seconds"] = round(time.perf_counter() - start, 2)
    return report


def _sampling(target) -> dict:
    g = target.grpo
    out = {
        "temperature": g["temperature"],
        "max_completion_length": g["max_completion_length"],
        "max_tool_calling_iterations": g.get("max_tool_calling_iterations"),
        "top_p": 1.0,
        "top_k": 0,
    }
    ignored = {
        k: g[k]
        for k, d in (("top_p", 1.0), ("top_k", 0), ("min_p", None), ("repetition_penalty", 1.0))
        if k in g and g[k] != d
    }
    if ignored:
        out["not_applied"] = ignored  # the evaluation rollout samples with top_p 1, top_k 0 as TRL's defaults
    return out


def _prompts(target, n: int, notes: list[str]) -> list[dict]:
    size = target.train_size or n
    if n > size:
        notes.append(f"asked for {n} prompts but the training set has {size}; using all {size}")
        n = size
    rows = target.task.train_problems(n, target.seed)
    if len(rows) < n:
        notes.append(f"asked for {n} prompts; the task has {len(rows)}")
    if not rows:
        raise UserError(f"task {target.task.name}: no training prompts to sample")
    return rows


def _load(target, model_path, model, tokenizer, notes: list[str]):
    from agentgrpo.training.models import load_model, load_tokenizer, resolve_model, tiny_note

    path = model_path or resolve_model(target.model, target.task)
    if model_path is None and model is None and target.model == "tiny" and tiny_note(target.task.name):
        notes.append(tiny_note(target.task.name))
    tokenizer = tokenizer if tokenizer is not None else load_tokenizer(path)
    model = model if model is not None else load_model(path)
    return model, tokenizer, str(path)


def _sample(target, model, tokenizer, rows, k, progress):
    import torch
    from tqdm.auto import tqdm

    from agentgrpo.evaluation.rollout import rollout

    g = target.grpo
    repeated = [r for r in rows for _ in range(k)]
    was_training = model.training
    model.eval()
    rng = torch.get_rng_state()  # the check leaves the caller's random state as it found it
    torch.manual_seed(target.seed)
    try:
        with tqdm(
            total=len(repeated), desc=f"check: sampling {k} x {len(rows)}", disable=not progress, leave=False
        ) as bar:
            return rollout(
                model,
                tokenizer,
                repeated,
                target.task,
                max_completion_length=g["max_completion_length"],
                do_sample=True,
                temperature=g["temperature"],
                max_tool_calling_iterations=g.get("max_tool_calling_iterations"),
                batch_size=min(256, len(repeated)),
                progress=bar,
                tool_timeout=target.tool_timeout,
            )
    finally:
        model.train(was_training)
        torch.set_rng_state(rng)


def _judge(target, rows, episodes, k) -> dict:

    rs, task = target.rewards, target.task
    repeated = [r for r in rows for _ in range(k)]
    completions = [e.completion for e in episodes]
    columns = {c: [r.get(c) for r in repeated] for c in repeated[0] if c != "prompt"}
    kwargs = {
        "prompts": [r["prompt"] for r in repeated],
        **columns,
        "completion_ids": [e.completion_ids for e in episodes],
    }
    from agentgrpo.rewards.replay import replay_environments  # the same replay the audit gives rewards
    from agentgrpo.timeouts import TIMEOUTS

    with TIMEOUTS.apart() as replayed:
        envs = replay_environments(task, repeated, [(i // k, "", c) for i, c in enumerate(completions)],
                             target.tool_timeout)
    if envs is not None:
        kwargs["environments"] = envs
    scores = rs.score(completions, **kwargs)
    totals = scores["total"]
    success = _success(task, rs, scores, completions, kwargs)
    groups = [totals[i * k : (i + 1) * k] for i in range(len(rows))]
    success_groups = [success[i * k : (i + 1) * k] for i in range(len(rows))]
    rates = [sum(s) / k for s in success_groups]
    mixed = {}
    for g in KS:
        value, exact = mixed_fraction(groups, g)
        mixed[str(g)] = {
            "mixed": round(value, 4),
            "exact": exact,
            "binary_formula": round(sum(binary_mixed(p, g) for p in rates) / len(rates), 4),
        }
    present = [t for t in totals if t is not None]
    gen_batch = _generation_batch(target)
    return {
        "mean_reward": round(sum(present) / len(present), 4) if present else None,
        "unscorable": len(totals) - len(present),
        "reward_means": {n: _mean(v) for n, v in scores.items() if n != "total"},
        "success_reward": task.success_reward if task.success_reward in task.reward_funcs else "total at its max",
        "mixed_fraction": mixed,
        "pass_rates": {"histogram": pass_histogram(rates), "per_prompt": [round(r, 4) for r in rates]},
        "verdict": verdict(groups, rates, target.num_generations, gen_batch, _refill_rounds(target), success_groups),
        "tool_call_rate": round(sum(e.tool_calls > 0 for e in episodes) / len(episodes), 4),
        "truncation_rate": round(sum(e.truncated for e in episodes) / len(episodes), 4),
        "tool_timeouts": {"sampling": sum(e.tool_timeouts for e in episodes), "replay": replayed[0],
                          "tool_timeout": target.tool_timeout},
    }


def _refill_rounds(target) -> int | None:
    """The run's ``max_generation_rounds`` where it refills (its plan's `DynamicSampling`), else None."""
    settings = getattr(target.config, "dynamic_sampling", None)  # no plan (a bare model): none
    return settings.max_generation_rounds if settings is not None and settings.dynamic_sampling == "refill" else None


def _success(task, rs, scores, completions, kwargs) -> list[float]:
    name = task.success_reward
    if name in scores:
        values = scores[name]
    elif name in task.reward_funcs:
        values = task.reward_funcs[name](completions=completions, **kwargs)
    else:
        best = max((t for t in scores["total"] if t is not None), default=0.0)
        return [float(t is not None and t >= best - TIE) for t in scores["total"]]
    return [float(v is not None and v >= 1.0 - TIE) for v in values]


def _mean(values) -> float | None:
    present = [v for v in values if v is not None]
    return round(sum(present) / len(present), 4) if present else None


def _generation_batch(target) -> int:
    from agentgrpo.config import generation_batch_size

    return generation_batch_size(target.grpo, 1)


def _fidelity(tokenizer, rows, episodes, k, tools, limit) -> dict:
    from agentgrpo.preflight.fidelity import check_episodes

    prompts = [r["prompt"] for r in rows for _ in range(k)]
    return check_episodes(tokenizer, prompts, episodes, tools, limit)


def _template_only(target, rows, model_path) -> dict:
    """Without a model: the prefix check on the gold conversations, if the tokenizer loads."""
    from agentgrpo.preflight.fidelity import check_conversations
    from agentgrpo.preflight.probes import gold_of
    from agentgrpo.training.models import load_tokenizer, resolve_model

    try:
        tokenizer = load_tokenizer(model_path or resolve_model(target.model, target.task))
    except Exception as exc:
        return {"ok": None, "error": f"tokenizer could not be loaded either: {type(exc).__name__}: {exc}"}
    pairs = [(r["prompt"], gold_of(target.task, r)[0]) for r in rows[:8]]
    pairs = [(p, g) for p, g in pairs if g]
    if not pairs:
        return {"ok": None, "error": "no model and no gold conversations: nothing to render"}
    return check_conversations(tokenizer, [p for p, _ in pairs], [g for _, g in pairs], target.task.tools())


def format_signal(report: dict) -> str:
    """The signal check for a terminal."""
    from agentgrpo.preflight.fidelity import format_fidelity

    lines = [
        f"signal check of {report['target']}: {report['prompts']} prompts x {report['k']} samples "
        f"(temperature {report['sampling']['temperature']}, max_completion_length "
        f"{report['sampling']['max_completion_length']})"
    ]
    if report.get("error"):
        lines.append(f"PARTIAL REPORT: {report['error']}")
    else:
        v = report["verdict"]
        lines.append(
            f"mean trained reward {report['mean_reward']}, mean pass rate ({report['success_reward']}) "
            f"{v['mean_pass_rate']:.1%}, tool-call rate {report['tool_call_rate']:.1%}, truncated "
            f"{report['truncation_rate']:.1%}"
        )
        lines.append("groups with mixed rewards (non-zero std) for group size g:")
        for g, m in report["mixed_fraction"].items():
            lines.append(
                f"  g={g:>2}: {m['mixed']:.1%}"
                + ("" if m["exact"] else " (extrapolated: g > k)")
                + f"   [binary formula from pass rates: {m['binary_formula']:.1%}]"
            )
        hist = report["pass_rates"]["histogram"]
        lines.append("per-prompt pass rates: " + ", ".join(f"{b}: {n}" for b, n in hist.items()))
        rec = v["recommended_k"]
        lines.append(
            f"verdict: {v['verdict'].upper()}: at num_generations {v['train_k']}, {v['mixed_at_train_k']:.0%} "
            f"of groups are mixed (in success and in the trained reward), about {v['useful_groups_per_step']:g} "
            f"useful of {v['prompts_per_step']} "
            f"groups per step; smallest group size with mixed groups >= {TARGET_MIXED:.0%}: "
            f"{rec if rec else 'none up to 64'}"
        )
        if v.get("refill_rounds"):
            lines.append(f"  with dynamic_sampling refill ({v['refill_rounds']} rounds): about "
                         f"{v['useful_groups_per_step_with_refill']:g} useful of {v['prompts_per_step']} "
                         "groups per step")
        lines.append(f"  {v['advice']}")
        timeouts = report.get("tool_timeouts") or {}
        if timeouts.get("sampling") or timeouts.get("replay"):
            from agentgrpo.preflight.audit import timeout_note

            lines.append(f"TOOL TIMEOUTS: {timeout_note(timeouts['sampling'], timeouts['tool_timeout'], 'sampling')}"
                         + (f"; {timeouts['replay']} more replaying them for the rewards" if timeouts["replay"]
                            else ""))
    if report.get("sampling", {}).get("not_applied"):
        lines.append(
            f"note: sampled with top_p 1, top_k 0; the config's {report['sampling']['not_applied']} "
            "are not applied by the evaluation rollout"
        )
    if report.get("fidelity"):
        f = report["fidelity"]
        lines += format_fidelity(f) if "checked" in f else [f"token fidelity: not checked ({f.get('error')})"]
    lines += [f"note: {n}" for n in report["notes"]]
    lines.append(f"({report['seconds']:.1f} s)")
    return "\n".join(lines)
