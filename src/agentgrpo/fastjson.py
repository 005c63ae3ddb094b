"""JSON decoding for large logs: ``orjson`` (several times faster than ``json``) when it is installed, the
standard library otherwise, and the same values either way.

Python's ``json`` writes NaN and infinities as bare ``NaN`` / ``Infinity`` tokens, which orjson rejects; they
are quoted first (``"NaN"``, which the readers read as a logged NaN, as they read the string ``"nan"``). Text
that still does not parse goes to the standard library, whose error messages the readers report.
"""

from __future__ import annotations

import json
import re

try:  # an optional accelerator: the doctor reads every format without it
    import orjson
except ImportError:  # pragma: no cover - depends on the install
    orjson = None

_BARE = re.compile(r"(?<![\w\"])(-?Infinity|NaN)(?![\w\"])")


def loads(text: str):
    """``json.loads(text)``, faster; bare NaN/Infinity values come back as the strings "NaN"/"Infinity".

    >>> loads('{"a": NaN, "b": [1, -Infinity]}')
    {'a': 'NaN', 'b': [1, '-Infinity']}
    """
    if orjson is not None:
        try:
            return orjson.loads(text)
        except orjson.JSONDecodeError:
            try:
                return orjson.loads(_BARE.sub(r'"\1"', text))
            except orjson.JSONDecodeError:
                pass
    return json.loads(text)


def loads_lines(lines: list[str]) -> list | None:
    """The values of JSON Lines in one decode (as one array), or None when some line does not parse alone.

    >>> loads_lines(['{"a": 1}', '{"a": NaN}']), loads_lines(['{"a": 1}', '{"a'])
    ([{'a': 1}, {'a': 'NaN'}], None)
    """
    try:
        values = loads("[" + ",".join(lines) + "]")
    except json.JSONDecodeError:
        return None
    return values if isinstance(values, list) and len(values) == len(lines) else None


def loads_jsonl_text(text: str) -> list | None:
    """The values of a whole JSON Lines text in one decode (its newlines read as the commas of one array),
    without splitting it into lines; None when that is not exactly one value per line (a blank or broken
    line, two values on a line), which the line-by-line reader then handles.

    >>> loads_jsonl_text('{"a": 1}\\n{"a": NaN}\\n'), loads_jsonl_text('{"a": 1}\\n\\n{"a": 2}')
    ([{'a': 1}, {'a': 'NaN'}], None)
    """
    body = text.strip()
    if "\r" in body:
        body = body.replace("\r\n", "\n")
    try:
        values = loads("[" + body.replace("\n", ",") + "]")
    except json.JSONDecodeError:
        return None
    return values if isinstance(values, list) and len(values) == body.count("\n") + 1 else None
