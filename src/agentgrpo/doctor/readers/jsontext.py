"""JSON that may be cut short: JSON Lines up to the last complete line, arrays up to the last whole object."""

from __future__ import annotations

import json
import re
from itertools import repeat

from agentgrpo.doctor.readers import fastjson

_DECODER = json.JSONDecoder()
_WS_COMMA = re.compile(r"[\s,]*")


def read_jsonl(text: str) -> tuple[list[dict], list[str]]:
    """The JSON objects of a JSON Lines text, and notes on lines that could not be read.

    A broken last line is what a run killed mid-write leaves; it is dropped with a note.

    >>> recs, notes = read_jsonl('{"step": 1}\\n{"step": 2}\\n{"step": 3, "rew')
    >>> [r["step"] for r in recs], notes
    ([1, 2], ['last line is incomplete (a run stopped mid-write?): read the 2 complete records before it'])
    """
    records: list[dict] = []
    bad: list[int] = []
    lines = text.splitlines()
    last = len(lines)
    filled = list(filter(str.strip, lines))
    whole = fastjson.loads_lines(filled)  # the common case, every line whole: one decode
    if whole is not None and all(map(isinstance, whole, repeat(dict))):
        return whole, []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            value = fastjson.loads(line)
        except json.JSONDecodeError:
            bad.append(number)
            continue
        if isinstance(value, dict):
            records.append(value)
        else:
            bad.append(number)
    notes = []
    if bad and bad[-1] == last:
        bad.pop()
        notes.append(
            "last line is incomplete (a run stopped mid-write?): "
            f"read the {len(records)} complete records before it"
        )
    if bad:
        shown = ", ".join(map(str, bad[:5])) + (" ..." if len(bad) > 5 else "")
        notes.append(f"skipped {len(bad)} unreadable line(s): {shown}")
    return records, notes


def objects_in_array(text: str, start: int) -> tuple[list, bool]:
    """The values of the JSON array opening at ``text[start] == '['``, and whether it was complete.

    >>> objects_in_array('[{"a": 1}, {"a": 2}, {"a"', 0)
    ([{'a': 1}, {'a': 2}], False)
    >>> objects_in_array('[1, 2]', 0)
    ([1, 2], True)
    """
    values = []
    pos = start + 1
    end = len(text)
    while True:
        pos = _WS_COMMA.match(text, pos).end()
        if pos >= end:
            return values, False
        if text[pos] == "]":
            return values, True
        try:
            value, pos = _DECODER.raw_decode(text, pos)
        except json.JSONDecodeError:
            return values, False
        values.append(value)


def recover_log_history(text: str) -> tuple[list | None, str]:
    """Records from a cut-short ``trainer_state.json`` or step-log array; (None, why) if there are none.

    >>> recover_log_history('{"global_step": 3, "log_history": [{"step": 1}, {"st')
    ([{'step': 1}], 'the file is cut short (a run stopped mid-write?): read the 1 complete records')
    """
    match = re.search(r'"log_history"\s*:\s*\[', text)
    if match:
        start = match.end() - 1
    else:
        stripped = text.lstrip()
        if not stripped.startswith("["):
            return None, "no 'log_history' array and not a JSON array of records"
        start = len(text) - len(stripped)
    values, complete = objects_in_array(text, start)
    records = [v for v in values if isinstance(v, dict)]
    if not records:
        return None, "no complete record before the file ends"
    why = "the file is cut short (a run stopped mid-write?)" if not complete else "the file is not valid JSON"
    return records, f"{why}: read the {len(records)} complete records"
