"""The `coding-easy` task: the coding task's format, tool and rewards on generated programming-by-example problems.

The tiny CPU model's variant (`agentgrpo demo --task coding-easy`): writing a function from a docstring is out
of reach for a 1M-parameter model. Here every problem, generated from a template, asks for a one-line function
with ONE unknown whole number K, which the visible example fixes: "Write a function `shift(x)` that returns x
plus a fixed whole number" with ``assert shift(23) == 61`` (K = 38). Four families: x + K, x - K, x * K and a
list with K added to every element. The hidden tests call the function on three other inputs, so only the right
K passes them (a solution that special-cases the visible example earns nothing).

Everything else is `coding`'s: the system prompt, the ``run_python`` tool (the program runs in
`agentgrpo.sandbox`, never in the trainer's process), the final ```python block, and the rewards
(``hidden_tests_passed``, ``code_block_format``, ``all_tests_passed`` as the eval's success).

Why the tool pays (the demonstrations' lever): K has to be worked out from the example (61 - 23, 161 // 7). A
demonstration either computes it with ``run_python`` (``print(61 - 23)``, the tool's exact answer, then the
function with that number) or writes the function directly with K worked out in the head. The tiny model
cannot subtract or divide in its head reliably, so the direct route mostly fails; GRPO finds from outcomes
that the tool pays, as in the calculator. A fixed 20% of the problems (by a hash of the prompt's text) is
held out for eval.

Version history (bump ``VERSION`` when scoring changes):
  1: first release.
"""

from __future__ import annotations

import dataclasses
import hashlib
import random

from agentgrpo.tasks.base import Task, distinct_rows
from agentgrpo.tasks.coding import TASK as CODING
from agentgrpo.tasks.coding import _answer, _row, _user_text, format_run, visible_test_share

VERSION = 1
EVAL_SEED = 20_251_206
EVAL_PERCENT = 20
# family -> (function names, what the function returns, argument name)
FAMILIES = {
    "add": (("shift", "add_k", "plus"), "x plus a fixed whole number", "x"),
    "sub": (("lower", "sub_k", "minus"), "x minus a fixed whole number", "x"),
    "mul": (("scale", "mul_k", "times"), "x times a fixed whole number", "x"),
    "list": (("bump", "add_all", "raise_all"), "the list xs with a fixed whole number added to every element", "xs"),
}


def held_out(text: str) -> bool:
    """Whether a problem is in the fixed eval split (``EVAL_PERCENT`` percent, by a hash of its prompt text)."""
    return int(hashlib.sha256(text.encode()).hexdigest(), 16) % 100 < EVAL_PERCENT


def _body(family: str, k: int) -> str:
    return {"add": f"x + {k}", "sub": f"x - {k}", "mul": f"x * {k}", "list": f"[v + {k} for v in xs]"}[family]


def _apply(family: str, k: int, x):
    """The plain-Python value of the family's function (what the tests assert; the oracle of the tests)."""
    if family == "list":
        return [v + k for v in x]
    return {"add": x + k, "sub": x - k, "mul": x * k}[family]


def _input(rng: random.Random, family: str, k: int):
    if family == "mul":
        return rng.randint(2, 9)
    if family == "sub":
        return rng.randint(k + 10, k + 99)
    if family == "list":
        return [rng.randint(1, 9) for _ in range(rng.randint(1, 3))]
    return rng.randint(10, 99)


def make_problem(rng: random.Random) -> dict:
    """One problem: a family, a function name, K, the visible example, three hidden asserts and the solution."""
    family = rng.choice(sorted(FAMILIES))
    names, returns, arg = FAMILIES[family]
    name, k = rng.choice(names), rng.randint(10, 99)
    if family == "mul":
        k = rng.randint(11, 49)
    inputs = []
    while len(inputs) < 4:  # the visible example and three hidden tests, on four different inputs
        x = _input(rng, family, k)
        if x not in inputs:
            inputs.append(x)
    asserts = [f"assert {name}({x!r}) == {_apply(family, k, x)!r}" for x in inputs]
    solution = f"def {name}({arg}):\n    return {_body(family, k)}\n"
    statement = f"Write a function `{name}({arg})` that returns {returns}."
    row = _row("generated", "", name, _user_text(statement, asserts[0]), asserts[1:], asserts[0], solution)
    row["id"] = row["prompt"][-1]["content"]
    return {**row, "family": family, "k": k,
            "k_expression": k_expression(family, inputs[0], _apply(family, k, inputs[0]))}


def k_expression(family: str, x, y) -> str:
    """What the tool computes K with, from the visible example ``f(x) == y`` alone.

    >>> k_expression("add", 23, 61), k_expression("sub", 90, 52), k_expression("mul", 7, 161)
    ('61 - 23', '90 - 52', '161 // 7')
    >>> k_expression("list", [4, 1], [42, 39])
    '42 - 4'
    """
    if family == "list":
        x, y = x[0], y[0]
    return {"add": f"{y} - {x}", "sub": f"{x} - {y}", "mul": f"{y} // {x}", "list": f"{y} - {x}"}[family]


def _generate(seed: int, n: int, held: bool) -> list[dict]:
    """``n`` distinct problems on one side of the held-out split."""
    return distinct_rows(make_problem, seed, n, held_out, held)


def eval_problems(n: int = 200) -> list[dict]:
    """The fixed held-out problems."""
    return _generate(EVAL_SEED, n, held=True)


def train_problems(n: int, seed: int) -> list[dict]:
    """``n`` distinct training problems, never a held-out one."""
    return _generate(seed, n, held=False)


def demonstration(problem: dict, use_tool: bool) -> dict:
    """An SFT example: optionally compute K with ``run_python`` (its exact output), then answer with the function."""
    messages = list(problem["prompt"])
    if use_tool:
        call = {"type": "function", "function": {"name": "run_python",
                                                 "arguments": {"code": f"print({problem['k_expression']})"}}}
        messages += [{"role": "assistant", "content": "", "tool_calls": [call]},
                     {"role": "tool", "name": "run_python", "content": format_run("passed", f"{problem['k']}\n", "")}]
    messages.append({"role": "assistant", "content": _answer(problem["solution"])})
    return {"messages": messages}


def gold_completion(problem: dict) -> list[dict]:
    """What a perfect agent writes: compute K in the tool, answer with the function."""
    return demonstration(problem, use_tool=True)["messages"][len(problem["prompt"]):]


def report() -> list[str]:
    """Lines `agentgrpo validate` prints: the split, and what the visible example alone is worth."""
    train, held = train_problems(500, seed=0), eval_problems(200)
    overlap = {r["id"] for r in train} & {r["id"] for r in held}
    share = visible_test_share(train[:100])
    return [f"held out by a hash of the prompt ({EVAL_PERCENT}%): {len(overlap)} of 200 eval problems among 500 "
            "training ones",
            f"visible example vs reward ({share['rows']} training rows): a solution that only special-cases the "
            f"visible example passes {share['visible_only_visible']:.0%} of visible tests and earns "
            f"{share['visible_only_hidden']:.1%} of the hidden-tests reward (the reference solutions: "
            f"{share['gold_hidden']:.0%})"]


TASK: Task = dataclasses.replace(
    CODING,
    name="coding-easy",
    version=VERSION,
    description="coding's format, run_python tool and hidden-test rewards on generated one-line functions whose "
                "constant the visible example fixes: the tiny CPU model's variant.",
    train_problems=train_problems,
    eval_problems=eval_problems,
    demonstration=demonstration,
    gold_completion=gold_completion,
    report=report,
)
