"""The `reasoning` agent task: procedurally generated problems from ``reasoning-gym``, with a Python tool.

Problems come from reasoning-gym's generators (offline, seeded, verifiable), by default a mix of arithmetic
and counting ones where running code helps (`DEFAULT_DATASETS`). The agent may call ``run_python(code)``
(the coding task's tool: the program runs in `agentgrpo.sandbox`, never in the trainer's process) and ends
with its answer in ``<answer>...</answer>``. Rewards (`agentgrpo.rewards.procedural`):

* ``reasoning_gym_score`` (weight 1): reasoning-gym's own verifier (some give partial credit: a proxy);
* ``tags_format`` (weight 0.1): exactly one ``<answer>`` block;
* ``reasoning_gym_solved`` (weight 0, the shadow and the eval's success): the verifier's full score.

Difficulty is a knob: ``task: reasoning[difficulty=2]`` sets every generator's reasoning-gym curriculum to
that level (0 = easiest; levels past a generator's last use its last). ``datasets=a+b`` picks generators.
Both are part of the task name, so a run's config.yaml (and `agentgrpo eval` from it) keeps them.

``reasoning-easy`` (the tiny CPU model's variant, `agentgrpo demo --task reasoning-easy`): reasoning-gym's
``chain_sum`` at difficulty 2 (sums of two to four numbers of up to three digits), same rewards, with
demonstrations whose tool call computes: ``print(<the question's expression>)``, half of them, the other half
answering in the head. The default demonstrations print the known answer (a format lesson for a real model);
a 1M-parameter model cannot compute a gcd in its head, so only a tool that computes can teach it anything.

Version history (bump ``VERSION`` when scoring changes):
  1: first release.
"""

from __future__ import annotations

import functools
import json
import re

from agentgrpo.errors import UserError
from agentgrpo.rewards import get_reward
from agentgrpo.rewards.procedural import reasoning_gym_score, reasoning_gym_solved
from agentgrpo.tasks.base import Task
from agentgrpo.tasks.coding import CodingEnv, format_run

VERSION = 1
DEFAULT_DATASETS = ("chain_sum", "products", "gcd", "lcm", "prime_factorization", "count_primes",
                    "base_conversion", "letter_counting", "number_sorting")
MAX_DIFFICULTY = 10
EVAL_SEED = 20_251_204
SYSTEM_PROMPT = ("Solve the problem. You may run Python code with the run_python tool. End your reply with the "
                 "final answer alone inside <answer></answer>.")


def _reasoning_gym():
    try:
        import reasoning_gym
        from reasoning_gym.factory import DATASETS, create_curriculum
    except ImportError as exc:
        raise UserError("task reasoning: needs reasoning-gym (procedural problem generators, offline); install it "
                        "with `pip install 'agentgrpo[reasoning]'` (or `pip install reasoning-gym`).") from exc
    return reasoning_gym, DATASETS, create_curriculum


def check_options(difficulty: int, datasets: tuple[str, ...]) -> None:
    """A `UserError` naming the option, what is wrong and the allowed values."""
    if not isinstance(difficulty, int) or isinstance(difficulty, bool) or not 0 <= difficulty <= MAX_DIFFICULTY:
        raise UserError(f"task reasoning: difficulty={difficulty!r} is not an integer in 0..{MAX_DIFFICULTY}; "
                        "e.g. task: reasoning[difficulty=2]")
    if not datasets:
        raise UserError("task reasoning: datasets= is empty; name reasoning-gym generators, e.g. "
                        "reasoning[datasets=gcd+chain_sum]")
    _, known, _ = _reasoning_gym()
    from reasoning_gym.factory import has_curriculum

    unknown = [d for d in datasets if d not in known]
    if unknown:
        from agentgrpo.errors import did_you_mean

        raise UserError(f"task reasoning: unknown reasoning-gym generator {unknown[0]!r}. "
                        f"{did_you_mean(unknown[0], known)}")
    flat = [d for d in datasets if not has_curriculum(d)]
    if flat:
        raise UserError(f"task reasoning: generator {flat[0]!r} has no difficulty curriculum in reasoning-gym; "
                        "pick generators that have one (`reasoning_gym.factory.CURRICULA`)")


@functools.cache
def _generator(name: str, difficulty: int, seed: int, size: int):
    _, known, create_curriculum = _reasoning_gym()
    curriculum = create_curriculum(name)
    curriculum.set_global_level(difficulty)
    config = curriculum.generate_configuration({"seed": seed, "size": size})
    return known[name][0](config)


def _row(dataset: str, difficulty: int, seed: int, index: int, entry: dict) -> dict:
    return {
        "id": f"rg/{dataset}/d{difficulty}/s{seed}/{index}",
        "prompt": [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": entry["question"]}],
        "answer": str(entry["answer"]),
        "rg_dataset": dataset,
        "rg_entry": json.dumps(entry, default=_jsonable),
        "difficulty": difficulty,
    }


def _jsonable(value):
    if isinstance(value, set | frozenset | tuple):
        return list(value)
    return str(value)


def generate(datasets: tuple[str, ...], difficulty: int, seed: int, n: int) -> list[dict]:
    """``n`` problems, the generators taking turns, each generator seeded by ``seed`` and its name."""
    per = -(-n // len(datasets))
    columns = [[_row(d, difficulty, seed, i, _generator(d, difficulty, _seed(seed, d), per)[i]) for i in range(per)]
               for d in datasets]
    return [columns[i % len(datasets)][i // len(datasets)] for i in range(n)]


def _seed(seed: int, dataset: str) -> int:
    return (seed * 1_000_003 + sum(map(ord, dataset)) * 7919) % 2**31


def eval_problems(datasets, difficulty, n: int = 200) -> list[dict]:
    """The fixed held-out problems (a seed training never uses)."""
    return generate(datasets, difficulty, EVAL_SEED, n)


def train_problems(datasets, difficulty, n: int, seed: int) -> list[dict]:
    """``n`` training problems; any whose question is also among the first 500 held-out ones is replaced."""
    if seed == EVAL_SEED:
        seed += 1
    held = {r["prompt"][-1]["content"] for r in eval_problems(datasets, difficulty, 500)}
    rows, extra = [], 0
    while len(rows) < n:
        batch = generate(datasets, difficulty, seed + extra, n - len(rows))
        rows += [r for r in batch if r["prompt"][-1]["content"] not in held]
        extra += 1
    return rows[:n]


# --- gold and demonstrations ----------------------------------------------------------------------------


def demonstration(row: dict, use_tool: bool) -> dict:
    """An SFT example: optionally print the answer through ``run_python`` (its exact tool output), then answer."""
    messages = list(row["prompt"])
    if use_tool:
        code = f"print({row['answer']!r})"
        call = {"type": "function", "function": {"name": "run_python", "arguments": {"code": code}}}
        messages += [{"role": "assistant", "content": "", "tool_calls": [call]},
                     {"role": "tool", "name": "run_python", "content": format_run("passed", row["answer"] + "\n", "")}]
    messages.append({"role": "assistant", "content": f"<answer>{row['answer']}</answer>"})
    return {"messages": messages}


def gold_completion(row: dict) -> list[dict]:
    return demonstration(row, use_tool=True)["messages"][len(row["prompt"]):]


_EXPRESSION = re.compile(r"problem: ([0-9+\- ]+) =\s*$")
EASY_DATASETS, EASY_DIFFICULTY = ("chain_sum",), 2


def easy_demonstration(row: dict, use_tool: bool) -> dict:
    """An SFT example for reasoning-easy: the tool computes the question's expression (its exact output), or
    the answer comes directly."""
    match = _EXPRESSION.search(row["prompt"][-1]["content"])
    if not use_tool or match is None:
        return demonstration(row, use_tool)
    messages = list(row["prompt"])
    call = {"type": "function", "function": {"name": "run_python",
                                             "arguments": {"code": f"print({match.group(1).strip()})"}}}
    messages += [{"role": "assistant", "content": "", "tool_calls": [call]},
                 {"role": "tool", "name": "run_python", "content": format_run("passed", row["answer"] + "\n", "")},
                 {"role": "assistant", "content": f"<answer>{row['answer']}</answer>"}]
    return {"messages": messages}


@functools.cache
def easy_task() -> Task:
    """reasoning-easy: ``chain_sum`` at difficulty 2 with computing demonstrations (module docstring)."""
    import dataclasses

    return dataclasses.replace(
        make_task(EASY_DIFFICULTY, EASY_DATASETS), name="reasoning-easy",
        description="reasoning-gym chain_sum at difficulty 2 with a sandboxed run_python tool and demonstrations "
                    "that compute in it: the tiny CPU model's variant.",
        demonstration=easy_demonstration,
        gold_completion=lambda row: easy_demonstration(row, True)["messages"][len(row["prompt"]):])


def make_task(difficulty: int = 0, datasets: tuple[str, ...] = DEFAULT_DATASETS) -> Task:
    """The task at ``difficulty`` over ``datasets`` (reasoning-gym generator names)."""
    datasets = tuple(datasets)
    check_options(difficulty, datasets)
    name = "reasoning" if (difficulty, datasets) == (0, DEFAULT_DATASETS) else \
        f"reasoning[difficulty={difficulty}" + ("" if datasets == DEFAULT_DATASETS else
                                                 f",datasets={'+'.join(datasets)}") + "]"
    format_reward = get_reward("tags_format", tags=["answer"])
    format_reward.max_reward = 1.0
    return Task(
        name=name,
        version=VERSION,
        description="reasoning-gym problems (arithmetic, counting, sorting, ...) with a sandboxed run_python tool; "
                    "reward = reasoning-gym's verifier; difficulty knob reasoning[difficulty=N].",
        environment_factory=CodingEnv,
        reward_funcs={"reasoning_gym_score": reasoning_gym_score, "tags_format": format_reward,
                      "reasoning_gym_solved": reasoning_gym_solved},
        default_rewards=[{"name": "reasoning_gym_score", "weight": 1.0}, {"name": "tags_format", "weight": 0.1},
                         {"name": "reasoning_gym_solved", "weight": 0.0}],
        train_problems=functools.partial(train_problems, datasets, difficulty),
        eval_problems=functools.partial(eval_problems, datasets, difficulty),
        demonstration=demonstration,
        gold_completion=gold_completion,
        success_reward="reasoning_gym_solved",
        columns=("id", "prompt", "answer", "rg_dataset", "rg_entry", "difficulty"),
    )


def parse_options(text: str) -> dict:
    """``"difficulty=2,datasets=gcd+lcm"`` as keyword arguments of `make_task`.

    >>> parse_options("difficulty=2,datasets=gcd+lcm")
    {'difficulty': 2, 'datasets': ('gcd', 'lcm')}
    """
    options = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        key, sep, value = part.partition("=")
        key, value = key.strip(), value.strip()
        if not sep or key not in ("difficulty", "datasets"):
            raise UserError(f"task reasoning[...]: {part!r} is not an option; use difficulty=N and/or "
                            "datasets=a+b, e.g. reasoning[difficulty=2,datasets=gcd+lcm]")
        if key == "difficulty":
            try:
                options[key] = int(value)
            except ValueError:
                raise UserError(f"task reasoning: difficulty={value!r} is not an integer in 0..{MAX_DIFFICULTY}") \
                    from None
        else:
            options[key] = tuple(d.strip() for d in value.split("+") if d.strip())
    return options


def task_with_options(text: str) -> Task:
    return make_task(**parse_options(text))


@functools.cache
def default_task() -> Task:
    return make_task()


def __getattr__(name: str):
    if name == "TASK":  # built on first use: reasoning-gym is imported only when the task is
        return default_task()
    if name == "EASY_TASK":
        return easy_task()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
