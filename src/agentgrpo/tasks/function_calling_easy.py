"""The `function-calling-easy` task: function calls whose arguments must be looked up with a tool, not guessed.

The tiny CPU model's variant (`agentgrpo demo --task function-calling-easy`): BFCL's prompts carry a few
hundred tokens of unfamiliar JSON schemas each, far beyond a 1M-parameter model. Here every prompt lists the
same two functions, ``set_alarm(hour, minute)`` and ``set_reminder(hour, minute)``, and a request that names an
event of the user's calendar but not its time: "Set an alarm for the standup with Kavo." The time is in the
calendar, which the agent reads with the tool ``lookup_event(name)`` (the environment, one calendar per row:
``reset(**row)``): it answers ``{"event": "standup with Kavo", "hour": 14, "minute": 30}``, and the gold answer
is ``[{"name": "set_alarm", "arguments": {"hour": 14, "minute": 30}}]``. The failure it teaches against is an
agent hallucinating argument values instead of looking them up.

The answer, the rewards and the eval's success are exactly `function-calling`'s (`agentgrpo.rewards.calls`,
BFCL's AST comparison on the final assistant message, after any tool turns): an answer without a lookup is
scored by the same rule, and calling the tool earns nothing as such.

Why the tool pays (the demonstrations' lever, as in the calculator and coding-easy): an event's time is a
deterministic function of its name (`event_time`, from a SHA-256 of it) that no model can compute, over
generated names (12 kinds of event x 4,900 two-syllable names) far too many to memorise, and the eval's
events are never trained on (20% of event names held out by a hash of the name, so a held-out request's
answer is never seen). Half the demonstrations look the time up and copy it from the tool's reply (the tool
route); half answer directly with the right time (the direct route: to the model, a guess). The tool's reply
is JSON with the answer's own ``"hour": H, "minute": M`` text, so the copy is token for token; version 1's
currency codes were guessed, not copied, by its warm start (docs/tasks.md, "The tiny model"), so the values
are integers only. The lookup is a calendar search that returns the closest match (the event of that name,
else the one of the same kind): the shipped 1500-step warm start copies the kind of event into its call but
sometimes miscopies the person's name ("budget meeting with Nuta" for "... with Vuta": 27 of its 175 tool calls
in two sampled passes over 200 held-out requests), which an exact-name lookup would refuse.

Version history (bump ``VERSION`` when scoring changes):
  1: three functions (weather, currency conversion, alarm) with every argument in the request; no tool.
  2: two functions whose time is looked up with ``lookup_event`` (an environment); 20% held out by event name.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import random
import re

from agentgrpo.rewards._text import tool_calls
from agentgrpo.rewards.calls import function_call_stats
from agentgrpo.tasks.base import distinct_rows
from agentgrpo.tasks.function_calling import _row, _with_answer, held_out, make_task

VERSION = 2
EVAL_SEED = 20_251_204
TOOL = "lookup_event"
EVENTS = ("standup", "dentist visit", "team lunch", "design review", "yoga class", "interview", "budget meeting",
          "school pickup", "flight", "haircut", "piano lesson", "doctor visit")
_CONSONANTS, _VOWELS = "bdfgklmnprstvz", "aeiou"
FIRST_HOUR, HOURS = 6, 16  # times are 06:00-21:59
TEMPLATES = {
    "set_alarm": ("Set an alarm for the {e}.", "Wake me up for the {e}.", "I need an alarm for the {e}."),
    "set_reminder": ("Remind me of the {e}.", "Add a reminder for the {e}.", "Set a reminder for the {e}."),
}
_EVENT_IN_REQUEST = re.compile(r"the (.+)\.$")
_TIME = {"type": "dict", "properties": {
    "hour": {"type": "integer", "description": "Hour, 0-23."},
    "minute": {"type": "integer", "description": "Minute, 0-59."}}, "required": ["hour", "minute"]}
FUNCTIONS = [
    {"name": "set_alarm", "description": "Set an alarm at a time of day.", "parameters": _TIME},
    {"name": "set_reminder", "description": "Set a reminder at a time of day.", "parameters": _TIME},
]


def names() -> list[str]:
    """The generated person names: every two-syllable consonant-vowel pair (4,900), e.g. "Kavo"."""
    syllables = [c + v for c in _CONSONANTS for v in _VOWELS]
    return [(a + b).capitalize() for a in syllables for b in syllables]


def event_time(event: str) -> tuple[int, int]:
    """The calendar's (hour, minute) for an event: a deterministic function of its name no model can compute.

    >>> event_time("standup with Kavo") == event_time("standup with Kavo")
    True
    """
    value = int.from_bytes(hashlib.sha256(event.encode()).digest()[:8], "big")
    return FIRST_HOUR + value % HOURS, (value // HOURS) % 60


def event_of(request: str) -> str:
    """The event a request names (every template ends with "the <event>.")."""
    match = _EVENT_IN_REQUEST.search(request)
    if match is None:
        raise ValueError(f"function-calling-easy: no event in request {request!r}")
    return match.group(1)


def held_out_request(request: str) -> bool:
    """Whether a request is in the eval split: 20% of event names, by a hash of the name (so a held-out event's
    time is never in a training row, whatever the wording)."""
    return held_out(event_of(request))


def make_request(rng: random.Random) -> dict:
    """One row: a request naming an event, the functions, BFCL's ground truth and the event (for the calendar)."""
    function = rng.choice(sorted(TEMPLATES))
    event = f"{rng.choice(EVENTS)} with {rng.choice(_NAMES)}"
    question = rng.choice(TEMPLATES[function]).format(e=event)
    hour, minute = event_time(event)
    entry = {"id": question, "category": "lookup", "question": [{"role": "user", "content": question}],
             "functions": FUNCTIONS, "ground_truth": [{function: {"hour": [hour], "minute": [minute]}}]}
    row = _with_answer(_row(entry))
    return {**row, "id": question, "event": event}


_NAMES = names()


# --- the environment --------------------------------------------------------------------------------------


def _key(name: str) -> str:
    name = " ".join(name.lower().split())
    return name[4:] if name.startswith("the ") else name


class CalendarEnv:
    """TRL ``environment_factory`` environment: the user's calendar for one row (``reset(**row)``); its one
    tool, ``lookup_event``, answers with an event's time. Like a calendar search it returns the closest match:
    the event of that name, else the calendar's event of the same kind ("standup", the words before "with"),
    so a misspelt person's name still finds it. No match raises (TRL shows the model ``{"error": ...}`` and
    counts a tool failure)."""

    def __init__(self) -> None:
        self.calendar: dict[str, str] = {}
        self.calls = 0
        self.failures = 0

    def reset(self, **row) -> None:
        if "event" not in row:
            raise ValueError("function-calling-easy: the row has no 'event' column; build rows with "
                             "function_calling_easy.train_problems")
        self.calendar = {_key(row["event"]): row["event"]}
        self.calls = 0
        self.failures = 0

    def lookup_event(self, name: str) -> str:
        """Look up an event in the user's calendar.

        Args:
            name: The event as the request names it, for example "standup with Kavo".

        Returns:
            The event and its start time as JSON.
        """
        self.calls += 1
        event = None
        if isinstance(name, str):
            kind = _key(name).split(" with ")[0]
            event = self.calendar.get(_key(name)) or next(
                (e for k, e in self.calendar.items() if k.split(" with ")[0] == kind), None)
        if event is None:
            self.failures += 1
            raise ValueError(f"no event named {name!r} in the calendar")
        hour, minute = event_time(event)
        return json.dumps({"event": event, "hour": hour, "minute": minute})


# --- data, demonstrations, statistics -------------------------------------------------------------------


def _generate(seed: int, n: int, held: bool) -> list[dict]:
    """``n`` distinct requests on one side of the held-out split."""
    return distinct_rows(make_request, seed, n, held_out_request, held)


def eval_problems(n: int = 200) -> list[dict]:
    """The fixed held-out requests."""
    return _generate(EVAL_SEED, n, held=True)


def train_problems(n: int, seed: int) -> list[dict]:
    """``n`` distinct training requests, never one about a held-out event."""
    return _generate(seed, n, held=False)


def demonstration(row: dict, use_tool: bool) -> dict:
    """An SFT example: optionally look the event up (the calendar's exact reply), then answer with the calls."""
    messages = list(row["prompt"])
    if use_tool:
        env = CalendarEnv()
        env.reset(**row)
        call = {"type": "function", "function": {"name": TOOL, "arguments": {"name": row["event"]}}}
        messages += [{"role": "assistant", "content": "", "tool_calls": [call]},
                     {"role": "tool", "name": TOOL, "content": env.lookup_event(row["event"])}]
    messages.append({"role": "assistant", "content": row["answer"]})
    return {"messages": messages}


def gold_completion(row: dict) -> list[dict]:
    """What a perfect agent writes: look the event up, answer with its time."""
    return demonstration(row, use_tool=True)["messages"][len(row["prompt"]):]


def episode_stats(completions, rows: list[dict]) -> dict[str, float]:
    """function-calling's reasons, plus the lookups: per episode, the share of episodes with one, and the share
    of exact answers on each route (``success_with_lookup``, ``success_without_lookup``; absent when no
    episode took that route)."""
    stats = function_call_stats(completions, rows)
    exact = _BASE.reward_funcs["function_calls_exact"](completions=completions,
                                                       ground_truth=[r["ground_truth"] for r in rows])
    looked = [sum(c.name == TOOL for c in tool_calls(completion)) for completion in completions]
    n = max(1, len(completions))
    stats["function_calling/lookups_per_episode"] = sum(looked) / n
    stats["function_calling/lookup_frac"] = sum(k > 0 for k in looked) / n
    for label, route in (("with", [s for s, k in zip(exact, looked, strict=True) if k]),
                         ("without", [s for s, k in zip(exact, looked, strict=True) if not k])):
        if route:
            stats[f"function_calling/success_{label}_lookup"] = sum(route) / len(route)
    return stats


_BASE = make_task("offline")
TASK = dataclasses.replace(
    _BASE,
    name="function-calling-easy",
    version=VERSION,
    description="function-calling's answer format and rewards on two functions whose time argument must be looked "
                "up with a lookup_event tool (an event calendar), not guessed: the tiny CPU model's variant.",
    environment_factory=CalendarEnv,
    train_problems=train_problems,
    eval_problems=eval_problems,
    demonstration=demonstration,
    gold_completion=gold_completion,
    columns=(*_BASE.columns, "event"),
    episode_stats=episode_stats,
)
