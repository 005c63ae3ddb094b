"""The `function-calling-easy` task: the function-calling task's format and rewards on three simple functions.

The tiny CPU model's variant (`agentgrpo demo --task function-calling-easy`): BFCL's prompts carry a few
hundred tokens of unfamiliar JSON schemas each, far beyond a 1M-parameter model. Here every prompt lists the
same three functions (weather, currency conversion, alarm); the request, generated from templates, names one of
them in other words and gives its arguments (a city, an amount and two currencies, a time). The answer, the
rewards and the eval's success are exactly `function-calling`'s (`agentgrpo.rewards.calls`, BFCL's AST
comparison): the agent must pick the function and copy every argument. A fixed 20% of the requests (by a
hash of their text) is held out for eval, as in `function-calling`.

Version history (bump ``VERSION`` when scoring changes):
  1: first release.
"""

from __future__ import annotations

import random

from agentgrpo.tasks.base import Task, distinct_rows
from agentgrpo.tasks.function_calling import _row, _with_answer, held_out, make_task

VERSION = 1
EVAL_SEED = 20_251_204
CITIES = ("Paris", "Rome", "Berlin", "Madrid", "Tokyo", "Cairo", "Lima", "Oslo", "Dublin", "Vienna", "Prague",
          "Lisbon", "Athens", "Seoul", "Delhi", "Sydney", "Toronto", "Chicago", "Boston", "Denver")
CURRENCIES = ("USD", "EUR", "GBP", "JPY", "CHF", "CAD")
UNITS = ("celsius", "fahrenheit")
FUNCTIONS = [
    {"name": "get_weather", "description": "Current weather in a city.",
     "parameters": {"type": "dict", "properties": {
         "city": {"type": "string", "description": "City name."},
         "unit": {"type": "string", "enum": list(UNITS), "description": "Temperature unit."}},
         "required": ["city", "unit"]}},
    {"name": "convert_currency", "description": "Convert an amount of money between currencies.",
     "parameters": {"type": "dict", "properties": {
         "amount": {"type": "integer", "description": "Amount to convert."},
         "from_currency": {"type": "string", "description": "Currency code to convert from."},
         "to_currency": {"type": "string", "description": "Currency code to convert to."}},
         "required": ["amount", "from_currency", "to_currency"]}},
    {"name": "set_alarm", "description": "Set an alarm at a time of day.",
     "parameters": {"type": "dict", "properties": {
         "hour": {"type": "integer", "description": "Hour, 0-23."},
         "minute": {"type": "integer", "description": "Minute, 0-59."}},
         "required": ["hour", "minute"]}},
]


def make_request(rng: random.Random) -> dict:
    """One BFCL-shaped entry (question, functions, ground truth) from a template."""
    kind = rng.randrange(3)
    if kind == 0:
        city, unit = rng.choice(CITIES), rng.choice(UNITS)
        text = rng.choice(("What is the weather in {c} in {u}?", "How warm is it in {c}? Answer in {u}."))
        question, truth = text.format(c=city, u=unit), {"get_weather": {"city": [city], "unit": [unit]}}
    elif kind == 1:
        amount = rng.randint(10, 999)
        src, dst = rng.sample(CURRENCIES, 2)
        text = rng.choice(("Convert {a} {s} to {d}.", "How much is {a} {s} in {d}?"))
        question = text.format(a=amount, s=src, d=dst)
        truth = {"convert_currency": {"amount": [amount], "from_currency": [src], "to_currency": [dst]}}
    else:
        hour, minute = rng.randint(0, 23), rng.randint(0, 59)
        text = rng.choice(("Set an alarm for {h}:{m:02d}.", "Wake me up at {h}:{m:02d}."))
        question, truth = text.format(h=hour, m=minute), {"set_alarm": {"hour": [hour], "minute": [minute]}}
    return {"id": question, "category": "easy", "question": [{"role": "user", "content": question}],
            "functions": FUNCTIONS, "ground_truth": [truth]}


def _generate(seed: int, n: int, held: bool) -> list[dict]:
    """``n`` distinct requests on one side of the held-out split."""
    return [_with_answer(_row(entry)) for entry in distinct_rows(make_request, seed, n, held_out, held)]


def eval_problems(n: int = 200) -> list[dict]:
    """The fixed held-out requests."""
    return _generate(EVAL_SEED, n, held=True)


def train_problems(n: int, seed: int) -> list[dict]:
    """``n`` training requests (never a held-out one; distinct up to the template space, then cycled)."""
    rows = _generate(seed, min(n, 5000), held=False)
    return (rows * (n // len(rows) + 1))[:n]


_BASE = make_task("offline")
TASK = Task(
    name="function-calling-easy",
    version=VERSION,
    description="function-calling's answer format and rewards on three simple functions (weather, currency, "
                "alarm) with templated requests: the tiny CPU model's variant.",
    environment_factory=None,
    reward_funcs=_BASE.reward_funcs,
    default_rewards=_BASE.default_rewards,
    train_problems=train_problems,
    eval_problems=eval_problems,
    demonstration=_BASE.demonstration,
    gold_completion=_BASE.gold_completion,
    success_reward=_BASE.success_reward,
    columns=_BASE.columns,
    episode_stats=_BASE.episode_stats,
)
