"""Combine rewards: a weighted sum for training, and shadow rewards (weight 0) that are only watched.

`build_rewards` turns a config's list of specs into a `RewardSet`: guarded functions and weights, ready
for ``GRPOTrainer(reward_funcs=rs.funcs, args=GRPOConfig(reward_weights=rs.weights))``. TRL logs each one
as ``rewards/<name>/mean`` and ``/std`` and sums them with the weights; a weight-0 reward is logged beside
the proxy but never moves the policy.

One TRL detail is handled here: TRL treats a completion as unscorable (advantage 0) only when *every*
reward is None. A shadow reward with a value would make such a row look scorable (trained reward 0), so
shadow rewards return None on rows where every trained reward did.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

from agentgrpo.errors import ConfigError, UserError
from agentgrpo.rewards.guard import GuardedReward
from agentgrpo.rewards.registry import get_reward

_SPEC_KEYS = {"name", "weight", "params", "alias"}


@dataclass
class RewardSet:
    funcs: list[GuardedReward]  # trained rewards first, then shadow rewards
    weights: list[float]
    names: list[str]
    shadow_names: list[str]

    @classmethod
    def from_functions(cls, named: list[tuple[str, float, Callable]], strict: bool = False) -> RewardSet:
        """Guard ready-made functions ``(name, weight, func)`` (a task's own rewards, say) and link the
        shadow rewards to the trained ones; trained rewards come first, as the shadows need.

        >>> def always(completions, **kw): return [1.0] * len(completions)
        >>> def never(completions, **kw): return [None] * len(completions)
        >>> rs = RewardSet.from_functions([("always", 0.0, always), ("maybe", 1.0, never)])
        >>> rs.names, rs.score(["x"])
        (['maybe', 'always'], {'maybe': [None], 'always': [None], 'total': [None]})
        """
        named = sorted(named, key=lambda entry: entry[1] == 0)  # stable: trained first, then shadows
        ledger = _Ledger(sum(w != 0 for _, w, _ in named))
        funcs = []
        for name, weight, func in named:
            guarded = GuardedReward(func, name=name, strict=strict)
            guarded.after = ledger.record if weight != 0 else ledger.mask
            funcs.append(guarded)
        names = [n for n, _, _ in named]
        return cls(funcs, [float(w) for _, w, _ in named], names, [n for n, w, _ in named if w == 0])

    def fresh(self, strict: bool = False) -> RewardSet:
        """The same functions and weights behind new guards (their own error counts and shadow ledger): for a
        second user of a run's rewards (the preflight audit, eval's success function) next to the trainer."""
        return RewardSet.from_functions([(n, w, f.func) for n, w, f in zip(self.names, self.weights, self.funcs,
                                                                           strict=True)], strict=strict)

    @property
    def trained_names(self) -> list[str]:
        return [n for n in self.names if n not in self.shadow_names]

    def score(self, completions, **kwargs) -> dict[str, list]:
        """Every reward's values, plus ``"total"``: the weighted sum of trained rewards (None where all are).

        The same arithmetic as TRL's ``sum_then_normalize`` before normalisation; for eval and audits.
        """
        values = {f.__name__: f(completions=completions, **kwargs) for f in self.funcs}
        totals = []
        for i in range(len(completions)):
            row = [
                (w, values[n][i])
                for n, w in zip(self.names, self.weights, strict=True)
                if n not in self.shadow_names
            ]
            present = [w * v for w, v in row if v is not None]
            totals.append(sum(present) if present else None)
        return {**values, "total": totals}


class _Ledger:
    """Which rows of the current batch got a value from at least one trained reward."""

    def __init__(self, n_trained: int):
        self.n_trained, self.key, self.seen, self.scorable = n_trained, None, 0, []

    def record(self, completions, out: list) -> list:
        key = (id(completions), len(completions))
        if key != self.key:
            self.key, self.seen, self.scorable = key, 0, [False] * len(completions)
        self.seen += 1
        self.scorable = [s or v is not None for s, v in zip(self.scorable, out, strict=True)]
        return out

    def mask(self, completions, out: list) -> list:
        if (id(completions), len(completions)) != self.key or self.seen != self.n_trained:
            return out  # called on its own (not after the trained rewards of this batch): nothing to align
        return [v if s else None for v, s in zip(out, self.scorable, strict=True)]


@dataclass(frozen=True)
class RewardSpec:
    """One parsed entry of a ``rewards`` list (the one parser: config, CLI and Python API use it)."""

    name: str
    weight: float = 1.0
    params: dict = field(default_factory=dict)
    alias: str | None = None
    func: Callable | None = None  # a function given directly (Python API); ``name`` is its __name__

    def to_dict(self) -> dict:
        """As recorded in config.yaml (a function given directly is recorded by name)."""
        out = {"name": self.name, "weight": self.weight}
        if self.params:
            out["params"] = dict(self.params)
        if self.alias:
            out["alias"] = self.alias
        return out


def parse_specs(specs, weights: list[float] | None = None) -> tuple[list[RewardSpec], list[str]]:
    """``rewards`` as `RewardSpec`s, and every problem with it. A single name counts as a one-item list.

    >>> parse_specs("exact_answer")[0][0].name
    'exact_answer'
    >>> parse_specs(["a", {"name": "b", "weight": float("nan")}])[1]
    ['rewards[1] (b): weight must be a finite number, got nan']
    """
    problems: list[str] = []
    if isinstance(specs, str) or callable(specs):
        specs = [specs]
    entries = _entries(specs, weights, problems)
    return entries, problems


def build_rewards(specs, strict: bool = False, weights: list[float] | None = None,
                  resolve: Callable[[RewardSpec], Callable] | None = None) -> RewardSet:
    """A `RewardSet` from specs: names, or ``{"name", "weight", "params", "alias"}`` dicts.

    ``weights`` (optional) gives every spec's weight as one list instead. ``resolve`` turns a spec into its
    function (default: the library's `get_reward`, which also takes ``file.py:fn`` and ``module:fn``). All
    problems are reported at once.

    >>> rs = build_rewards(["exact_answer", {"name": "tool_call_count", "weight": 0}])
    >>> rs.names, rs.weights, rs.shadow_names
    (['exact_answer', 'tool_call_count'], [1.0, 0.0], ['tool_call_count'])
    >>> build_rewards(["exact_answer", "tool_success"], weights=[1.0])
    Traceback (most recent call last):
    ...
    agentgrpo.errors.ConfigError: 1 problem in the config:
      - reward weights: 1 weights for 2 rewards; give one weight per reward
    """
    entries, problems = parse_specs(specs, weights)
    built = []
    for index, spec in enumerate(entries):
        try:
            func = spec.func if spec.func is not None else (resolve or _library)(spec)
        except ConfigError as exc:
            problems.extend(f"rewards[{index}] ({spec.name}): {p}" for p in exc.problems)
            continue
        except (UserError, TypeError, ValueError) as exc:
            problems.append(f"rewards[{index}] ({spec.name}): {exc}")
            continue
        built.append((spec.alias or getattr(func, "__name__", spec.name), spec.weight, func))
    _check_names(built, problems)
    if built and all(w == 0 for _, w, _ in built):
        problems.append(
            "reward weights: every weight is 0, so nothing would be trained; give one a weight > 0"
        )
    if problems:
        raise ConfigError(problems)
    return RewardSet.from_functions(built, strict=strict)


def _library(spec: RewardSpec) -> Callable:
    return get_reward(spec.name, **spec.params)


def _entries(specs, weights, problems: list[str]) -> list[RewardSpec]:
    if not isinstance(specs, list | tuple) or not specs:
        problems.append(
            f"rewards: must be a non-empty list of names or {{name, weight, params}}, got {specs!r}"
        )
        return []
    if weights is not None and (not isinstance(weights, list | tuple) or len(weights) != len(specs)):
        count = len(weights) if isinstance(weights, list | tuple) else type(weights).__name__
        problems.append(
            f"reward weights: {count} weights for {len(specs)} rewards; give one weight per reward"
        )
        weights = None
    entries = []
    for i, spec in enumerate(specs):
        entry = _entry(i, spec, None if weights is None else weights[i], problems)
        if entry:
            entries.append(entry)
    return entries


def _entry(i: int, spec, list_weight, problems: list[str]) -> RewardSpec | None:
    func = None
    if callable(spec) and not isinstance(spec, str):
        func, spec = spec, {"name": getattr(spec, "__name__", type(spec).__name__)}
    spec = {"name": spec} if isinstance(spec, str) else spec
    if not isinstance(spec, dict) or not isinstance(spec.get("name"), str) or not spec.get("name"):
        problems.append(f"rewards[{i}]: {spec!r} is not a name or a mapping with a 'name'")
        return None
    unknown = set(spec) - _SPEC_KEYS
    if unknown:
        problems.append(
            f"rewards[{i}] ({spec['name']}): unknown keys {sorted(unknown)}; use {sorted(_SPEC_KEYS)}"
        )
    if list_weight is not None and "weight" in spec:
        problems.append(
            f"rewards[{i}] ({spec['name']}): weight given both in the spec and in weights; keep one"
        )
    weight = spec.get("weight", 1.0) if list_weight is None else list_weight
    if isinstance(weight, bool) or not isinstance(weight, int | float) or not math.isfinite(weight):
        problems.append(f"rewards[{i}] ({spec['name']}): weight must be a finite number, got {weight!r}")
        weight = 1.0
    params = spec.get("params") or {}
    if not isinstance(params, dict):
        problems.append(f"rewards[{i}] ({spec['name']}): params must be a mapping, got {params!r}")
        params = {}
    alias = spec.get("alias")
    if alias is not None and not (isinstance(alias, str) and alias):
        problems.append(f"rewards[{i}] ({spec['name']}): alias must be a non-empty string")
        alias = None
    return RewardSpec(spec["name"], float(weight), params, alias, func)


def _check_names(built, problems: list[str]) -> None:
    seen = set()
    for name, _, _ in built:
        if name in seen:
            problems.append(
                f"rewards: {name!r} appears twice (its weight would count twice) and TRL would log both as "
                f"rewards/{name}/...; list it once, or give the second one an 'alias' to score it twice on purpose"
            )
        seen.add(name)
