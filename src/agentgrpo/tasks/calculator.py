"""The `calculator` agent task: multi-digit arithmetic that a tiny model cannot do in its head.

Each problem is ``a * b + c`` with two-digit ``a``, ``b`` and ``c``. The agent has one tool,
``calculate(expression)``; the reward checks the final answer exactly. A model that answers directly
guesses; a model that copies the expression into the tool and the tool's result into its answer wins.
GRPO has to discover that from outcomes, because the SFT demonstrations use the tool only half the time.

The ``hard`` variant (task ``calculator-hard``) asks the same questions under another system prompt
("Reply with the number only."), one the shipped SFT'd model never saw: it starts at about 15% success,
copying the expression into its tool wrongly more often than not, so most groups start all wrong (and, once
it has learned, most groups are all right). It is the regime where dynamic sampling matters
(``dynamic_sampling`` in the config): many groups carry no learning signal.

Version history (bump ``VERSION`` when scoring changes):
  1: first release.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import operator
import random
import re

from agentgrpo.tasks.base import Task

VERSION = 1
SYSTEM_PROMPT = "Answer with the number only."
EVAL_SEED = 20_251_202  # the held-out set; training problems never collide with it
_INT = re.compile(r"^\s*(-?\d+)\s*$")


# --- problems -----------------------------------------------------------------------------------------


VARIANTS = {"demo": SYSTEM_PROMPT, "hard": "Reply with the number only."}  # variant -> system prompt


def make_problem(rng: random.Random, variant: str = "demo") -> dict:
    """One problem as a dataset row (prompt in conversational form, the gold answer as a string).

    ``variant="hard"``: the same problem under the hard variant's system prompt (see the module docstring).
    """
    if variant not in VARIANTS:
        raise ValueError(f"calculator variant {variant!r}: expected one of {list(VARIANTS)}")
    a, b, c = rng.randint(10, 99), rng.randint(10, 99), rng.randint(10, 99)
    expression = f"{a} * {b} + {c}"
    return {
        "id": f"{a}*{b}+{c}",
        "prompt": [
            {"role": "system", "content": VARIANTS[variant]},
            {"role": "user", "content": f"What is {expression}?"},
        ],
        "expression": expression,
        "answer": str(a * b + c),
    }


def eval_problems(n: int = 200, variant: str = "demo") -> list[dict]:
    """The fixed held-out set: ``n`` distinct problems from a seed training never uses."""
    return _distinct(random.Random(EVAL_SEED), n, exclude=set(), variant=variant)


def train_problems(n: int, seed: int, variant: str = "demo") -> list[dict]:
    """``n`` distinct training problems, none of which is in the held-out set (first 1,000 ids)."""
    held_out = {p["id"] for p in eval_problems(1000, variant)}
    return _distinct(random.Random(seed), n, exclude=held_out, variant=variant)


def _distinct(rng: random.Random, n: int, exclude: set[str], variant: str = "demo") -> list[dict]:
    seen, rows = set(exclude), []
    while len(rows) < n:
        row = make_problem(rng, variant)
        if row["id"] not in seen:
            seen.add(row["id"])
            rows.append(row)
    return rows


# --- the tool -----------------------------------------------------------------------------------------

_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul}


def safe_arithmetic(expression: str) -> int:
    """Evaluate integer ``+ - *`` and parentheses, nothing else (no names, no calls, no powers).

    >>> safe_arithmetic("37 * 48 + 25")
    1801
    >>> safe_arithmetic("__import__('os')")
    Traceback (most recent call last):
    ...
    ValueError: unsupported expression: only integers, + - * and parentheses are allowed
    """
    if not isinstance(expression, str) or len(expression) > 200:
        raise ValueError("expression must be a string of at most 200 characters")
    try:
        tree = ast.parse(expression, mode="eval")
    except SyntaxError as exc:
        raise ValueError(f"cannot parse expression {expression!r}") from exc
    return _eval_node(tree.body)


def _eval_node(node: ast.AST) -> int:
    if isinstance(node, ast.Constant) and type(node.value) is int and abs(node.value) < 10**9:
        return node.value
    if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
        return _OPS[type(node.op)](_eval_node(node.left), _eval_node(node.right))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -_eval_node(node.operand)
    raise ValueError("unsupported expression: only integers, + - * and parentheses are allowed")


class CalculatorEnv:
    """TRL ``environment_factory`` environment: one instance per rollout, ``reset`` between rollouts.

    Public methods other than ``reset`` are the tools the model sees (TRL reads their docstrings).
    """

    def __init__(self) -> None:
        self.calls = 0
        self.failures = 0

    def reset(self, **example) -> None:
        self.calls = 0
        self.failures = 0

    def calculate(self, expression: str) -> str:
        """Evaluate an arithmetic expression.

        Args:
            expression: Integers with + - * and parentheses, for example "12 * 34 + 5".

        Returns:
            The value of the expression.
        """
        self.calls += 1
        try:
            return str(safe_arithmetic(expression))
        except ValueError:
            self.failures += 1
            raise


# --- rewards (TRL signature) --------------------------------------------------------------------------


def final_text(completion) -> str:
    """The text of the last assistant message (or the completion itself when it is plain text)."""
    if isinstance(completion, str):
        return completion
    for message in reversed(completion):
        if message.get("role") == "assistant":
            return message.get("content") or ""
    return ""


def correct_answer(completions, answer, **kwargs) -> list[float]:
    """1.0 when the final assistant message is exactly the gold integer, else 0.0.

    The whole final message must be the number: "12 or 13" or a number hidden in a tool message fails.

    >>> correct_answer(["1801", " 1801\\n", "1800", "1801 or 1802"], answer=["1801"] * 4)
    [1.0, 1.0, 0.0, 0.0]
    >>> tool_only = [{"role": "tool", "name": "calculate", "content": "1801"}]
    >>> correct_answer([tool_only], answer=["1801"])
    [0.0]
    """
    rewards = []
    for completion, gold in zip(completions, answer, strict=True):
        match = _INT.match(final_text(completion))
        rewards.append(1.0 if match and int(match.group(1)) == int(gold) else 0.0)
    return rewards


def well_formed(completions, **kwargs) -> list[float]:
    """1.0 when the episode ends with a bare integer answer after any tool calls, else 0.0.

    >>> well_formed(["42", "the answer is 42", ""])
    [1.0, 0.0, 0.0]
    """
    return [1.0 if _INT.match(final_text(c)) else 0.0 for c in completions]


# --- demonstrations for the SFT warm start ------------------------------------------------------------


def demonstration(problem: dict, use_tool: bool) -> dict:
    """An SFT example: the prompt plus a *correct* answer, through the tool or directly."""
    messages = list(problem["prompt"])
    if use_tool:
        call = {"type": "function", "function": {"name": "calculate",
                                                 "arguments": {"expression": problem["expression"]}}}
        messages += [
            {"role": "assistant", "content": "", "tool_calls": [call]},
            {"role": "tool", "name": "calculate", "content": problem["answer"]},
        ]
    messages.append({"role": "assistant", "content": problem["answer"]})
    return {"messages": messages}


def gold_completion(problem: dict) -> list[dict]:
    """What a perfect agent writes: call the tool, answer with its result."""
    return demonstration(problem, use_tool=True)["messages"][len(problem["prompt"]):]


TASK = Task(
    name="calculator",
    version=VERSION,
    description="Two-digit a*b+c; one `calculate` tool; reward = exact final answer (+ a small format reward).",
    environment_factory=CalculatorEnv,
    reward_funcs={"correct_answer": correct_answer, "well_formed": well_formed},
    default_rewards=[{"name": "correct_answer", "weight": 1.0}, {"name": "well_formed", "weight": 0.1}],
    train_problems=train_problems,
    eval_problems=eval_problems,
    demonstration=demonstration,
    gold_completion=gold_completion,
    columns=("id", "prompt", "expression", "answer"),
)

HARD_TASK = dataclasses.replace(
    TASK,
    name="calculator-hard",
    description="The calculator task under a system prompt the SFT'd model never saw: about 15% success at "
                "the start, most groups all wrong (dynamic sampling's regime).",
    train_problems=functools.partial(train_problems, variant="hard"),
    eval_problems=functools.partial(eval_problems, variant="hard"),
)
