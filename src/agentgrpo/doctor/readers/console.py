"""Console output of a Trainer run: the metric dicts it prints (``{'loss': 0.07, 'reward': 1.75, ...}``).

Dicts are Python reprs or JSON, one per line, often behind tqdm progress bars; values may be strings.
The step of each dict is not printed, so it is inferred: the training progress bar's counter before it
(``490/29790 [``), else a stated ``logging_steps``, else the record's position.
"""

from __future__ import annotations

import ast
import json
import re
from collections import Counter

_DICT_START = re.compile(r"\{\s*['\"]")
_PAIR = re.compile(
    r"['\"]([^'\"]+)['\"]\s*:\s*(?:[A-Za-z_.]+\()?['\"]?(-?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|nan|inf|-inf)"
)
_TQDM = re.compile(r"(\d+)/(\d+) \[")
_LOGGING_STEPS = re.compile(r"logging_steps\s*[=:]\s*(\d+)")


def parse_dict(text: str) -> dict | None:
    """A printed metric dict: a Python literal, else JSON, else its ``'key': number`` pairs.

    >>> parse_dict("{'loss': 0.1, 'reward': '0.5'}")
    {'loss': 0.1, 'reward': '0.5'}
    >>> parse_dict("{'kl': tensor(0.25), 'step': 3}")
    {'kl': '0.25', 'step': '3'}
    """
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        try:
            value = json.loads(text)
        except json.JSONDecodeError:
            pairs = _PAIR.findall(text)
            return dict(pairs) if pairs else None
    return value if isinstance(value, dict) else None


def find_dicts(text: str) -> list[tuple[int, dict]]:
    """(offset in text, dict) for every metric dict printed on a line of ``text``."""
    found = []
    offset = 0
    for line in text.splitlines(keepends=True):
        match = _DICT_START.search(line)
        if match:
            end = line.rfind("}")
            if end > match.start():
                parsed = parse_dict(line[match.start() : end + 1])
                if parsed:
                    found.append((offset + match.start(), parsed))
        offset += len(line)
    return found


def _progress_counters(text: str) -> list[tuple[int, int]]:
    """(offset, count) of the training progress bar: the tqdm bar whose total shows up most often."""
    matches = [(m.start(), int(m.group(1)), int(m.group(2))) for m in _TQDM.finditer(text)]
    if not matches:
        return []
    main_total = Counter(total for _, _, total in matches).most_common(1)[0][0]
    return [(pos, count) for pos, count, total in matches if total == main_total]


def _steps_from_progress(text: str, offsets: list[int]) -> list[int] | None:
    counters = _progress_counters(text)
    if not counters:
        return None
    steps, i, current = [], 0, None
    for offset in offsets:
        while i < len(counters) and counters[i][0] < offset:
            current = counters[i][1]
            i += 1
        steps.append(current)
    if None in steps or any(b <= a for a, b in zip(steps, steps[1:])):
        return None
    return steps


def read_console(text: str) -> tuple[list[dict], list[str]]:
    """Records (with ``step``) from console text, and notes on how the steps were found."""
    found = find_dicts(text)
    if not found:
        return [], []
    records = [d for _, d in found]
    if all("step" in r or "global_step" in r for r in records):
        return records, []
    from agentgrpo.doctor.names import SUMMARY_KEYS

    is_step = [not (SUMMARY_KEYS & r.keys()) for r in records]
    offsets = [off for (off, _), keep in zip(found, is_step) if keep]
    step_records = [r for r, keep in zip(records, is_step) if keep]
    extras = [r for r, keep in zip(records, is_step) if not keep]
    steps = _steps_from_progress(text, offsets)
    how = "the progress bar's step counter before each dict"
    if steps is None:
        stated = _LOGGING_STEPS.search(text)
        every = int(stated.group(1)) if stated else 1
        steps = [every * (i + 1) for i in range(len(step_records))]
        how = (
            f"position x logging_steps={every} (stated in the log)"
            if stated
            else "record position (1, 2, ...)"
        )
    for record, step in zip(step_records, steps):
        record["step"] = step
    return step_records + extras, [f"console log: steps inferred from {how}"]
