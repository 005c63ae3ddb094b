"""What an agent task is: problems, an environment with tools, and verifiable rewards.

Tasks do not know how they are trained. A task is plain data plus functions; `agentgrpo.training`
turns it into TRL datasets and trainers.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Task:
    name: str
    version: int
    description: str
    environment_factory: Callable[[], object] | None  # TRL environment_factory (None: no environment)
    reward_funcs: dict[str, Callable]  # the task's own verifiable rewards, by name (TRL signature)
    default_rewards: list[dict]  # [{"name", "weight"}]; weight 0 = shadow reward (logged, not trained on)
    train_problems: Callable[[int, int], list[dict]]  # (n, seed) -> rows, disjoint from the held-out set
    eval_problems: Callable[[int], list[dict]]  # (n) -> the fixed held-out rows
    demonstration: Callable[[dict, bool], dict] | None = None  # (row, use_tool) -> {"messages"} for SFT
    gold_completion: Callable[[dict], list[dict]] | None = None  # row -> what a perfect agent writes
    success_reward: str = "correct_answer"  # the reward whose value 1.0 means "solved" (for eval)
    columns: tuple[str, ...] = field(default=("id", "prompt", "answer"))
    tool_functions: tuple[Callable, ...] = ()  # plain tools (TRL's `tools=`), besides the environment's
    size: int | None = None  # rows available for training (None: problems are generated on demand)
    success_func: Callable | None = None  # eval's success function when it is not one of reward_funcs
    report: Callable[[], list[str]] | None = None  # extra lines `agentgrpo validate` prints (e.g. data checks)
    episode_stats: Callable[[list, list[dict]], dict[str, float]] | None = None  # (completions, rows) -> means

    def tools(self) -> list[Callable]:
        """Every tool the model sees: the plain tool functions and one environment instance's methods."""
        return [*self.tool_functions, *(environment_tools(self.environment_factory())
                                        if self.environment_factory else [])]

    def validate(self, n: int = 50) -> list[str]:
        """Check the verifier with no model: the gold completion earns every reward's maximum.

        Returns a list of problems (empty when the task is sound).
        """
        if self.gold_completion is None:
            return []
        rows = self.eval_problems(n)
        completions = [self.gold_completion(r) for r in rows]
        columns = {k: [r[k] for r in rows] for k in rows[0] if k != "prompt"}
        problems = []
        for name, func in self.reward_funcs.items():
            scores = func(completions=completions, prompts=[r["prompt"] for r in rows], **columns)
            worst = min(scores)
            if worst < 1.0:
                problems.append(f"reward {name!r}: the gold completion scored {worst} (< 1.0, the maximum)")
        return problems


def environment_tools(env) -> list[Callable]:
    """An environment's tools as TRL finds them: its public methods other than ``reset``."""
    return [getattr(env, n) for n in dir(type(env))
            if not n.startswith("_") and n not in ("reset", "get_reward") and callable(getattr(env, n))]


def distinct_rows(make, seed: int, n: int, held, keep_held: bool) -> list[dict]:
    """``n`` rows of ``make(rng)`` with distinct ``id``s, all on one side of a held-out split (``held(id)`` equal to
    ``keep_held``), drawn from ``random.Random(seed)``: the generated tasks' train and eval sets."""
    import random

    rng, seen, rows = random.Random(seed), set(), []
    while len(rows) < n:
        row = make(rng)
        if row["id"] in seen or held(row["id"]) != keep_held:
            continue
        seen.add(row["id"])
        rows.append(row)
    return rows
