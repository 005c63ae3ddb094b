"""Find the final answer in an assistant's text, and read numbers from it, refusing ambiguous answers.

Where the answer is looked for, in order: ``\\boxed{...}`` (or ``\\fbox``), ``<answer>...</answer>``,
a ``####`` line (GSM8K), the last "answer is ..." / "answer: ...", else the whole text when it is one short
line. Two or more *different* boxed (or tagged) answers count as no answer: spamming candidates earns nothing.
"""

from __future__ import annotations

import re
import unicodedata

MAX_ANSWER_CHARS = 1000  # longer "answers" are not answers
_MARKER = re.compile(
    r"(?:final answer|answer)\s*(?:is|:|=)\s*:?\s*(.+?)\s*(?=\.\s|\.$|;|\n|$)", re.IGNORECASE
)
_HASHES = re.compile(r"^\s*####\s*(.+?)\s*$", re.MULTILINE)
_TAG = re.compile(r"<answer>(.*?)</answer>", re.DOTALL | re.IGNORECASE)
_NUMBER = re.compile(
    r"(?<![\w.])([-+]?)(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?(?:[eE]([-+]?\d+))?(?:\s*/\s*(\d+))?(?!\w)"
)
_BOX_OPEN = re.compile(r"\\(?:boxed|fbox)\s*\{")
_HEDGE = re.compile(r"\b(?:or|either)\b|\?", re.IGNORECASE)


def boxed(text: str) -> list[str]:
    r"""Contents of every ``\boxed{...}`` / ``\fbox{...}``, braces balanced.

    >>> boxed(r"so \boxed{\frac{1}{3}} and \fbox{2}")
    ['\\frac{1}{3}', '2']
    """
    found = []
    for match in _BOX_OPEN.finditer(text):
        depth, start = 1, match.end()
        for i in range(start, len(text)):
            depth += {"{": 1, "}": -1}.get(text[i], 0)
            if depth == 0:
                found.append(text[start:i].strip())
                break
    return found


def answer_span(text: str) -> str | None:
    """The answer the text commits to, or None (no answer, or several different ones).

    >>> answer_span("I think 12*7 is... The answer is 84.")
    '84'
    >>> answer_span(r"\\boxed{12} or maybe \\boxed{13}") is None
    True
    >>> answer_span("84")
    '84'
    """
    if not isinstance(text, str):
        return None
    if _BOX_OPEN.search(text) and not boxed(text):
        return None  # an unclosed box is malformed, not a bare answer
    for candidates in (boxed(text), _TAG.findall(text), _HASHES.findall(text)):
        distinct = {" ".join(c.split()) for c in candidates}
        if len(distinct) > 1:
            return None
        if distinct:
            return _clean(distinct.pop())
    markers = _MARKER.findall(text)
    if markers:
        return _clean(markers[-1])
    stripped = text.strip()
    if stripped and "\n" not in stripped and len(stripped) <= 200:
        return _clean(stripped)
    return None


def _clean(span: str) -> str | None:
    span = span.strip().strip("*").strip()
    span = span[:-1] if span.endswith(".") and not span.endswith("..") else span
    span = span.strip().strip("$").strip()
    return span if 0 < len(span) <= MAX_ANSWER_CHARS else None


def hedged(span: str) -> bool:
    """Whether an answer hedges between options ("12 or 13", "either", a question mark).

    >>> hedged("12 or 13"), hedged("84")
    (True, False)
    """
    return bool(_HEDGE.search(span))


def ascii_digits(text: str) -> str:
    """Unicode decimal digits (Arabic-Indic, fullwidth, ...) as ASCII; superscripts and the like are kept.

    >>> ascii_digits("٨٤ and ８４ but not ²")
    '84 and 84 but not ²'
    """
    return "".join(str(unicodedata.decimal(c)) if c.isdecimal() and not c.isascii() else c for c in text)


def numbers(text: str) -> list[float]:
    """Every number written in ``text`` (ints, decimals, 1,234 groups, 1e3, 3/4), as floats.

    >>> numbers("1,234.5 apples, -3/4 of a pie and 2e3")
    [1234.5, -0.75, 2000.0]
    """
    out = []
    for sign, whole, frac, exp, denom in _NUMBER.findall(ascii_digits(text)):
        value = float(f"{sign}{whole.replace(',', '')}{frac}" + (f"e{exp}" if exp else ""))
        if denom:
            value = value / float(denom) if float(denom) else float("nan")
        out.append(value)
    return out
