"""Function-calling rewards: the answer's JSON function calls against the expected ones, compared as structures.

The answer is the final assistant message: a JSON list of calls ``[{"name": ..., "arguments": {...}}]`` (a
single call object, or the list inside one ```json fence, is accepted too). The expected calls use the
Berkeley Function Calling Leaderboard's ``ground_truth`` shape: ``[{function_name: {param: [acceptable
values]}}]``, where ``""`` among the acceptable values means the parameter may be left out.

A call matches an expected one when the names are equal, it passes no parameter the expected call does not
list, it omits none that must be given, and every value it passes is one of the acceptable values. Values
compare as structures: numbers by value (``5 == 5.0``, but a boolean is never a number), lists element by
element, dicts key by key, strings after BFCL's normalisation (case, spaces and ``,./-_*^`` ignored). The
calls of a row are matched in any order (BFCL's parallel categories), one expected call per given call.

Every answer gets one reason (``REASONS``): ``ok`` or the first thing wrong, so non-JSON answers and the
like are counted, never a crash.
"""

from __future__ import annotations

import json
import re

from agentgrpo.rewards._text import completion_text

REASONS = ("ok", "not_json", "not_calls", "wrong_call_count", "wrong_function", "unexpected_argument",
           "missing_argument", "wrong_value")
_FENCE = re.compile(r"^```[ \t]*(?:json)?[ \t]*\n(.*?)\n?```$", re.DOTALL | re.IGNORECASE)
_STRIP = re.compile(r"[ ,./\-_*^]")


def parse_calls(text: str) -> tuple[list[dict] | None, str]:
    """(the calls as ``[{"name", "arguments"}]``, ``"ok"``), or (None, the reason) when they are not.

    >>> parse_calls('[{"name": "f", "arguments": {"x": 1}}]')
    ([{'name': 'f', 'arguments': {'x': 1}}], 'ok')
    >>> parse_calls('```json\\n{"name": "f", "arguments": {}}\\n```')
    ([{'name': 'f', 'arguments': {}}], 'ok')
    >>> parse_calls("f(x=1)"), parse_calls('[{"name": "f"}]'), parse_calls('{"x": 1}')
    ((None, 'not_json'), (None, 'not_calls'), (None, 'not_calls'))
    """
    text = (text or "").strip()
    fenced = _FENCE.match(text)
    if fenced:
        text = fenced.group(1).strip()
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return None, "not_json"
    if isinstance(value, dict):
        value = [value]
    if not isinstance(value, list) or not all(_is_call(c) for c in value):
        return None, "not_calls"
    return [{"name": c["name"], "arguments": c["arguments"]} for c in value], "ok"


def _is_call(call) -> bool:
    return (isinstance(call, dict) and set(call) == {"name", "arguments"} and isinstance(call["name"], str)
            and isinstance(call["arguments"], dict))


def normalise_string(text: str) -> str:
    """BFCL's string comparison: lower case, without spaces and ``,./-_*^``.

    >>> normalise_string("New York, NY") == normalise_string("new york ny")
    True
    """
    return _STRIP.sub("", text.lower())


def value_matches(given, acceptable) -> bool:
    """Whether one given value equals one acceptable value, compared as a structure.

    >>> value_matches(5, 5.0), value_matches(True, 1), value_matches("San Francisco", "san francisco")
    (True, False, True)
    >>> value_matches([1, "A"], [1.0, "a"]), value_matches({"k": 1}, {"k": [1]}), value_matches([1], [1, 2])
    (True, True, False)
    """
    if isinstance(given, bool) or isinstance(acceptable, bool):
        return type(given) is type(acceptable) and given == acceptable
    if isinstance(given, int | float) and isinstance(acceptable, int | float):
        return given == acceptable
    if isinstance(given, str) and isinstance(acceptable, str):
        return normalise_string(given) == normalise_string(acceptable)
    if isinstance(given, list | tuple) and isinstance(acceptable, list | tuple):
        return len(given) == len(acceptable) and all(map(value_matches, given, acceptable))
    if isinstance(given, dict) and isinstance(acceptable, dict):
        return _dict_matches(given, acceptable)
    return given is None and acceptable is None


def _dict_matches(given: dict, acceptable: dict) -> bool:
    """A dict value; as in BFCL, an acceptable dict's values are lists of acceptable values ("" = optional).

    >>> _dict_matches({"school": "Bluebird HS"}, {"school": ["Bluebird High School", "Bluebird HS"], "dept": [""]})
    True
    >>> _dict_matches({}, {"school": ["Bluebird HS"]}), _dict_matches({"x": 1}, {"school": [""]})
    (False, False)
    """
    if any(k not in acceptable for k in given):
        return False
    for key, ok in acceptable.items():
        options = ok if isinstance(ok, list) else [ok]
        if key not in given:
            if "" not in options:
                return False
        elif not any(value_matches(given[key], o) for o in options if not (o == "" and given[key] != "")):
            return False
    return True


def gold_value(acceptable: list):
    """A value the comparison accepts: the first acceptable one that is not the "leave it out" marker.

    >>> gold_value(["", 0]), gold_value([{"school": ["Bluebird HS"], "dept": [""]}])
    (0, {'school': 'Bluebird HS'})
    """
    return _plain(next(v for v in acceptable if v != ""))


def _plain(value):
    """An acceptable value with every nested BFCL dict (values = lists of options) resolved to one option."""
    if isinstance(value, dict) and all(isinstance(v, list) for v in value.values()):
        return {k: gold_value(v) for k, v in value.items() if any(o != "" for o in v)}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def call_mismatch(call: dict, expected: dict) -> str:
    """``"ok"`` when ``call`` matches the expected call ``{name: {param: [acceptable values]}}``, else why not.

    >>> expected = {"area": {"base": [10], "unit": ["cm", ""]}}
    >>> [call_mismatch({"name": "area", "arguments": a}, expected) for a in
    ...  [{"base": 10}, {"base": 10.0, "unit": "CM"}, {"base": 9}, {}, {"base": 10, "color": "red"}]]
    ['ok', 'ok', 'wrong_value', 'missing_argument', 'unexpected_argument']
    """
    (name, params), = expected.items()
    if call["name"] != name:
        return "wrong_function"
    arguments = call["arguments"]
    if any(k not in params for k in arguments):
        return "unexpected_argument"
    if any(k not in arguments and "" not in values for k, values in params.items()):
        return "missing_argument"
    for key, given in arguments.items():
        if not any(value_matches(given, ok) for ok in params[key] if not (ok == "" and given != "")):
            return "wrong_value"
    return "ok"


def match_calls(calls: list[dict], expected: list[dict]) -> tuple[int, str]:
    """(the most expected calls matched one-to-one in any order, the first reason a call failed or "ok").

    >>> e = [{"f": {"x": [1]}}, {"f": {"x": [2]}}]
    >>> match_calls([{"name": "f", "arguments": {"x": 2}}, {"name": "f", "arguments": {"x": 1}}], e)
    (2, 'ok')
    >>> match_calls([{"name": "f", "arguments": {"x": 2}}, {"name": "f", "arguments": {"x": 3}}], e)
    (1, 'wrong_value')
    """
    table = [[call_mismatch(c, e) for e in expected] for c in calls]
    best = _max_matching([[r == "ok" for r in row] for row in table])
    if best == len(calls) == len(expected):
        return best, "ok"
    for row in table:
        if "ok" not in row:
            return best, _closest(row)
    return best, "wrong_call_count"


def _closest(reasons: list[str]) -> str:
    """The most specific failure among a call's comparisons (a right function with a wrong value wins)."""
    order = ("wrong_value", "missing_argument", "unexpected_argument", "wrong_function")
    return next((r for r in order if r in reasons), "wrong_function")


def _max_matching(ok: list[list[bool]]) -> int:
    """Size of a maximum bipartite matching (calls x expected calls), by augmenting paths."""
    owner: dict[int, int] = {}

    def augment(i: int, seen: set[int]) -> bool:
        for j, good in enumerate(ok[i]):
            if good and j not in seen:
                seen.add(j)
                if j not in owner or augment(owner[j], seen):
                    owner[j] = i
                    return True
        return False

    return sum(augment(i, set()) for i in range(len(ok)))


def score_calls(text: str, expected: list[dict]) -> tuple[float, float, str]:
    """(share of the calls right: matched / max(given, expected); 1.0 when all exactly right; the reason)."""
    calls, reason = parse_calls(text)
    if calls is None:
        return 0.0, 0.0, reason
    matched, reason = match_calls(calls, expected)
    share = matched / max(len(calls), len(expected), 1)
    return share, float(reason == "ok"), reason


def _expected(value) -> list[dict]:
    return json.loads(value) if isinstance(value, str) else list(value)


def function_calls(column: str = "ground_truth"):
    """Reward: the share of the expected calls the answer makes right (extra calls count against it).

    Logs each answer's reason (``function_call_reason``) and, per step, ``function_calling/<reason>_frac``.

    >>> reward = function_calls()
    >>> gt = [[{"f": {"x": [1]}}, {"g": {}}]] * 3
    >>> reward(['[{"name": "f", "arguments": {"x": 1}}]', "call f with x=1",
    ...         '[{"name": "g", "arguments": {}}, {"name": "f", "arguments": {"x": 1}}]'], ground_truth=gt)
    [0.5, 0.0, 1.0]
    """

    def function_calls(completions, log_extra=None, log_metric=None, **kwargs) -> list[float]:
        results = [score_calls(completion_text(c), _expected(e)) for c, e in zip(completions, kwargs[column],
                                                                                   strict=True)]
        reasons = [r for _, _, r in results]
        if callable(log_extra):
            log_extra("function_call_reason", reasons)
        if callable(log_metric) and reasons:
            for reason in REASONS:
                log_metric(f"function_calling/{reason}_frac", reasons.count(reason) / len(reasons))
        return [share for share, _, _ in results]

    function_calls.max_reward = 1.0
    function_calls.__doc__ = ("Share of the expected calls the answer makes right, compared as structures "
                              "(extra calls count against it).")
    return function_calls


def function_calls_exact(column: str = "ground_truth"):
    """Reward: 1.0 when the answer makes exactly the expected calls (any order), else 0.0 (BFCL's metric).

    >>> function_calls_exact()(['[{"name": "f", "arguments": {"x": 1.0}}]', "[]"],
    ...                        ground_truth=[[{"f": {"x": [1]}}]] * 2)
    [1.0, 0.0]
    """

    def function_calls_exact(completions, **kwargs) -> list[float]:
        return [score_calls(completion_text(c), _expected(e))[1] for c, e in zip(completions, kwargs[column],
                                                                                 strict=True)]

    function_calls_exact.max_reward = 1.0
    function_calls_exact.__doc__ = "1.0 when the answer makes exactly the expected calls (any order), else 0.0."
    return function_calls_exact


def function_calls_format(completions, **kwargs) -> list[float]:
    """1.0 when the final message parses as a JSON list of ``{"name", "arguments"}`` calls, else 0.0.

    >>> function_calls_format(['[{"name": "f", "arguments": {}}]', "f()", "[]"])
    [1.0, 0.0, 1.0]
    """
    return [1.0 if parse_calls(completion_text(c))[0] is not None else 0.0 for c in completions]


function_calls_format.max_reward = 1.0


def function_call_stats(completions, rows: list[dict], column: str = "ground_truth") -> dict[str, float]:
    """For evaluation: the share of answers with each reason (``ok``, ``not_json``, ...).

    >>> function_call_stats(["f(1)", "[]"], [{"ground_truth": [{"f": {}}]}] * 2)["function_calling/not_json_frac"]
    0.5
    """
    stats: dict[str, float] = {}
    function_calls(column)(completions, log_metric=stats.__setitem__, **{column: [r[column] for r in rows]})
    return stats
