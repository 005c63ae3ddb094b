"""JSON that may be cut short: arrays up to the last whole object (JSON Lines: `agentgrpo.rundir.parse_jsonl`)."""

from __future__ import annotations

import json
import re

_DECODER = json.JSONDecoder()
_WS_COMMA = re.compile(r"[\s,]*")


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
