"""What the doctor reads from an agentgrpo run directory's side files (read by `agentgrpo.rundir`): the reward
weights and the length cap of its config, the per-step curves of ``completions.jsonl``."""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from pathlib import Path

from agentgrpo.rundir import read_jsonl


def reward_weights(config: dict) -> dict[str, float]:
    """``{reward name: weight}`` from a config's ``rewards: [{name, weight}]`` list (top level or one down),
    or from parallel ``reward_funcs``/``reward_weights`` lists. Weight 0 marks a shadow reward.

    >>> reward_weights({"rewards": [{"name": "proxy", "weight": 1}, {"name": "correct", "weight": 0}]})
    {'proxy': 1.0, 'correct': 0.0}
    >>> reward_weights({"rewards": ["pkg.mod:proxy", {"name": "correct", "weight": 0}]})
    {'pkg.mod:proxy': 1.0, 'correct': 0.0}
    >>> reward_weights({"training": {"reward_funcs": ["a", "b"], "reward_weights": [1.0, 0.0]}})
    {'a': 1.0, 'b': 0.0}
    """
    candidates = [config] + [v for v in config.values() if isinstance(v, dict)]
    for section in candidates:
        rewards = section.get("rewards")
        if isinstance(rewards, list) and rewards and all(_is_spec(r) for r in rewards):
            return dict(_spec(r) for r in rewards)
        funcs, weights = section.get("reward_funcs"), section.get("reward_weights")
        if isinstance(funcs, list) and all(isinstance(f, str) for f in funcs):
            if not isinstance(weights, list) or len(weights) != len(funcs):
                weights = [1.0] * len(funcs)
            return {f: float(w) for f, w in zip(funcs, weights)}
    return {}


def length_cap(config: dict) -> int | None:
    """The run's ``max_completion_length`` (top level or one down), or None when the config does not say.

    >>> length_cap({"max_completion_length": 64}), length_cap({"training": {"max_completion_length": "96"}})
    (64, 96)
    >>> length_cap({}) is None, length_cap({"max_completion_length": None}) is None
    (True, True)
    """
    for section in [config] + [v for v in config.values() if isinstance(v, dict)]:
        value = section.get("max_completion_length")
        try:
            cap = int(float(value))
        except (TypeError, ValueError):
            continue
        if cap > 0:
            return cap
    return None


def _is_spec(item) -> bool:
    return isinstance(item, str) or (isinstance(item, dict) and isinstance(item.get("name"), str))


def _spec(item) -> tuple[str, float]:
    """A reward spec (a name, or ``{name, weight, alias}``) as (the name TRL logs it under, weight).

    >>> _spec({"name": "x.py:score", "alias": "score", "weight": 0}), _spec("correct_answer")
    (('score', 0.0), ('correct_answer', 1.0))
    """
    if isinstance(item, str):
        return item, 1.0
    name = item.get("alias") or item["name"]
    try:
        return name, float(item.get("weight", 1.0))
    except (TypeError, ValueError):
        return name, 1.0


def sample_curves(path: Path, max_bytes: int = 50_000_000) -> tuple[dict[int, float], dict[int, float]]:
    """Per step of ``completions.jsonl``: (the fraction of distinct completions among the samples, within
    each prompt's samples when a prompt has several (a GRPO group), else across the step's samples, on steps
    with at least 2 comparable samples;
    the share of the step's prompts whose most common completion is the step's most common one, on steps
    with at least 2 different prompts: 1.0 when every prompt got the same answer, one fixed output).
    ({}, {}) when the file is absent or over ``max_bytes``."""
    if not path.is_file() or path.stat().st_size > max_bytes:
        return {}, {}
    records = read_jsonl(path)
    groups: dict[int, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for r in records:
        if not isinstance(r.get("step"), int | float) or "completion" not in r:
            continue
        groups[int(r["step"])][_text(r.get("prompt"))].append(_text(r["completion"]))
    distinct, same = {}, {}
    for step, by_prompt in groups.items():
        sets = [c for c in by_prompt.values() if len(c) >= 2]
        if sets:
            distinct[step] = sum(len(set(c)) / len(c) for c in sets) / len(sets)
        else:
            flat = [c for cs in by_prompt.values() for c in cs]
            if len(flat) >= 2:
                distinct[step] = len(set(flat)) / len(flat)
        if len(by_prompt) >= 2:
            answers = [Counter(c).most_common(1)[0][0] for c in by_prompt.values()]
            top = Counter(answers).most_common(1)[0][1]
            same[step] = top / len(answers)
    return distinct, same


def _text(value) -> str:
    return value.strip() if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)
