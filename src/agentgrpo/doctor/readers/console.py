"""Console output of a Trainer run: the metric dicts it prints (``{'loss': 0.07, 'reward': 1.75, ...}``).

Dicts are Python reprs or JSON, often behind tqdm progress bars, sometimes hard-wrapped mid-key across
lines; values may be strings, bare ``nan``/``inf`` or ``tensor(...)``. Dicts with no training metric in them
(a tokenizer's ``{'pad_token_id': 0}``) are not records. The step of each dict is not printed, so it is
inferred: the training progress bar's counter next to it (``490/29790 [``), else a stated
``logging_steps``, else the record's position.
"""

from __future__ import annotations

import ast
import json
import re
from itertools import accumulate

import numpy as np

from agentgrpo.doctor import names
from agentgrpo.doctor.readers import fastjson

_DICT_START = re.compile(r"\{\s*['\"]")
_NUMBER = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|[-+]?(?i:nan|inf(?:inity)?)"
_PAIR = re.compile(r"['\"]([^'\"]+)['\"]\s*:\s*(?:[A-Za-z_.]+\()?['\"]?(" + _NUMBER + r")")
_TQDM = re.compile(r"(?<!\d)(\d+)/(\d+) \[")
_LOGGING_STEPS = re.compile(r"logging_steps\s*[=:]\s*(\d+)")
_BARE_NUMBER = re.compile(r"(?<=[:\s])(-?(?:nan|inf))(?=\s*[,}])")
_MAX_WRAPPED_LINES = 40


def parse_dict(text: str) -> dict | None:
    """A printed metric dict: its ``'key': number`` pairs (numbers may be quoted, bare ``nan``/``inf``, or
    wrapped as ``tensor(...)``), else the whole dict as a Python literal or JSON.

    >>> parse_dict("{'loss': 0.1, 'reward': '0.5'}")
    {'loss': 0.1, 'reward': '0.5'}
    >>> parse_dict("{'kl': tensor(0.25, device='cuda:0'), 'step': 3}")
    {'kl': '0.25', 'step': '3'}
    >>> parse_dict("{'grad_norm': nan, 'kl': inf, 'reward': -0.5, 'mode': 'train'}")
    {'grad_norm': 'nan', 'kl': 'inf', 'reward': -0.5}
    """
    fast = _as_json(text)
    if fast is not None:
        return fast
    pairs = _PAIR.findall(text)
    if pairs:
        return dict(pairs)
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError):
        try:
            value = json.loads(text)
        except json.JSONDecodeError:
            return None
    return value if isinstance(value, dict) else None


def _as_json(text: str) -> dict | None:
    """The common case fast: a flat dict of plain numbers printed by Python (single quotes, bare nan/inf)
    read as JSON in one call. None when it is anything else (``tensor(...)``, nesting, a boolean), which
    the general path reads."""
    if "(" in text or "\\" in text:
        return None
    try:
        value = fastjson.loads(_BARE_NUMBER.sub(r'"\1"', text.replace("'", '"')))
    except (ValueError, TypeError):
        return None
    return _plain_numbers(value)


def _plain_numbers(value) -> dict | None:
    """`_as_json`'s decoded value as the record, or None when the general path must read it."""
    if not isinstance(value, dict) or not value:
        return None
    kinds = set(map(type, value.values()))
    if kinds <= {int, float}:
        return value  # numbers as numbers (the general path gives strings; the table reads both)
    if bool in kinds or not kinds <= {int, float, str}:
        return None
    # a non-numeric string value ('mode': 'train') is skipped, as the general path skips it
    return {k: v for k, v in value.items() if not isinstance(v, str) or _NUMBER_ONLY.fullmatch(v)}


_NUMBER_ONLY = re.compile(_NUMBER)


def is_metric_record(record: dict) -> bool:
    """True when a dict holds at least one training metric (any known name or spelling)."""
    return any(names.is_metric(names.canonical(str(k))) for k in record)


def find_dicts(text: str) -> tuple[list[tuple[int, dict]], int]:
    """(offset in text, dict) for every metric dict printed in ``text``, also when wrapped over lines; and
    how many of them were cut short (no closing brace: the values before the cut are read)."""
    found, cut = [], 0
    lines = _split_lines(text)
    starts = _line_offsets(lines)
    candidates = [(i, m.start()) for i, m in enumerate(map(_DICT_START.search, lines)) if m]
    flat = _flat_dicts(lines, candidates)
    metric_keys: dict[tuple, bool] = {}
    i = 0
    for line_no, start in candidates:
        if line_no < i:  # a line a wrapped dict above already used
            continue
        i = line_no
        if i in flat:
            parsed, used, closed = flat[i], 1, True
        else:
            parsed, used, closed = _dict_at(lines, i, start)
        if parsed:
            keys = tuple(parsed)
            metric = metric_keys.get(keys)
            if metric is None:
                metric = metric_keys[keys] = is_metric_record(parsed)
            if metric:
                found.append((starts[i] + start, parsed))
                cut += not closed
        i += max(used, 1)
    return found, cut


def _flat_dicts(lines: list[str], candidates: list[tuple[int, int]]) -> dict[int, dict]:
    """`_dict_at` of the lines that hold one flat dict of plain numbers closed on the same line (nearly every
    line of a long log), all decoded as one JSON array: {line index: dict}. Lines whose dict is anything
    else, or every line when the batch does not decode, are left to `_dict_at`."""
    index, chunks = [], []
    for i, start in candidates:
        chunk = lines[i][start:].rstrip("\r\n")
        # one brace pair, quotes paired, nothing `_as_json` declines: in the array the dict is one element
        if chunk.count("{") != 1 or chunk.count("}") != 1 or "(" in chunk or "\\" in chunk:
            continue
        chunk = chunk[: chunk.rfind("}") + 1]
        if (chunk.count("'") + chunk.count('"')) % 2:
            continue
        index.append(i)
        chunks.append(_BARE_NUMBER.sub(r'"\1"', chunk) if "nan" in chunk or "inf" in chunk else chunk)
    if not chunks or fastjson.orjson is None:
        return {}
    joined = "[" + ",".join(chunks).replace("'", '"') + "]"
    try:  # orjson alone: a dict then decodes as `_as_json` decodes it on its own (its first try)
        values = fastjson.orjson.loads(joined)
    except (ValueError, TypeError):
        return {}
    if not isinstance(values, list) or len(values) != len(chunks):
        return {}
    out = {}
    for i, value in zip(index, values):
        parsed = _plain_numbers(value)
        if parsed is not None:
            out[i] = parsed
    return out


def _line_offsets(lines: list[str]) -> list[int]:
    return list(accumulate(map(len, lines[:-1]), initial=0)) if lines else []


_last_split: tuple[str, list[str]] = ("", [])


def _split_lines(text: str) -> list[str]:
    """``text.splitlines(keepends=True)``, split once for the several passes over one log."""
    global _last_split
    if _last_split[0] is not text:
        _last_split = (text, text.splitlines(keepends=True))
    return _last_split[1]


def _dict_at(lines: list[str], i: int, start: int) -> tuple[dict | None, int, bool]:
    """The dict starting at ``lines[i][start]``, joining the following lines while it is not closed.

    Returns (dict or None, number of lines used, whether it was closed).
    """
    chunk = lines[i][start:].rstrip("\r\n")
    end = chunk.rfind("}")
    if end >= 0:
        parsed = parse_dict(chunk[: end + 1])
        if parsed is not None and chunk.count("{") <= chunk.count("}"):
            return parsed, 1, True
    for extra in range(1, min(_MAX_WRAPPED_LINES, len(lines) - i)):
        nxt = lines[i + extra].rstrip("\r\n")
        if _DICT_START.match(nxt.lstrip()):  # a new dict begins: the previous one was cut short
            break
        chunk += nxt
        end = chunk.rfind("}")
        if end >= 0 and chunk.count("{") <= chunk.count("}"):
            return parse_dict(chunk[: end + 1]), extra + 1, True
    end = chunk.rfind("}")
    return parse_dict(chunk[: end + 1] if end >= 0 else chunk), 1, end >= 0


def _progress_counters(text: str) -> list[tuple[int, int]]:
    """(offset, count) of the training progress bar: the tqdm bar that counts through the most values."""
    lines = _split_lines(text)
    matches = [
        (offset + m.start(), int(m.group(1)), int(m.group(2)))
        for line, offset in zip(lines, _line_offsets(lines))
        if " [" in line
        for m in _TQDM.finditer(line)
    ]
    if not matches:
        return []
    distinct: dict[int, set[int]] = {}
    for _, count, total in matches:
        distinct.setdefault(total, set()).add(count)
    # the training bar counts through many values; a per-step bar (vLLM's "Processed prompts: 64/64")
    # shows up as often but repeats the same few counts
    main_total = max(distinct, key=lambda total: (len(distinct[total]), total))
    return [(pos, count) for pos, count, total in matches if total == main_total]


def _steps_from_progress(text: str, offsets: list[int]) -> tuple[list[int] | None, str]:
    """Each dict's step from the progress bar: the counter shown before it (the Trainer updates the bar, then
    prints the dict), else the counter after it (a notebook's streams can reorder them)."""
    counters = _progress_counters(text)
    if not counters:
        return None, ""
    positions = np.array([pos for pos, _ in counters])
    counts = [count for _, count in counters]
    shown = np.searchsorted(positions, np.array(offsets, dtype=positions.dtype), side="left").tolist()
    before = [counts[i - 1] if i > 0 else None for i in shown]
    after = [counts[i] if i < len(counts) else None for i in shown]
    if _increasing(before) and before[0] > 0:
        return before, "the progress bar's step counter before each dict"
    if after and after[-1] is None and len(after) > 1 and after[-2] is not None:
        after[-1] = after[-2] + (after[-2] - after[-3] if len(after) > 2 else 1)
    if _increasing(after):
        return after, "the progress bar's step counter after each dict"
    return None, ""


def _logging_every(text: str, n_records: int) -> tuple[int, str]:
    """Steps between two dicts, when the progress bar cannot place each one (stdout and stderr buffered
    apart): a stated ``logging_steps``, else the bar's last count over the number of dicts when it divides
    exactly, else 1."""
    stated = _LOGGING_STEPS.search(text)
    if stated and int(stated.group(1)) > 0:
        every = int(stated.group(1))
        return every, f"position x logging_steps={every} (stated in the log)"
    counters = _progress_counters(text)
    last = max((count for _, count in counters), default=0)
    if n_records and last >= n_records and last % n_records == 0:
        every = last // n_records
        return every, f"position x {every} (the progress bar's last count, {last}, over {n_records} dicts)"
    return 1, "record position (1, 2, ...)"


def _increasing(steps: list) -> bool:
    return bool(steps) and None not in steps and all(b > a for a, b in zip(steps, steps[1:]))


def _eval_flags(records: list[dict]) -> list[bool]:
    """`_is_eval` of each record, decided once per distinct key set."""
    seen: dict[tuple, bool] = {}
    flags = []
    for record in records:
        keys = tuple(record)
        flag = seen.get(keys)
        if flag is None:
            flag = seen[keys] = _is_eval(record)
        flags.append(flag)
    return flags


def _is_eval(record: dict) -> bool:
    keys = [k for k in record if k != "epoch"]
    return bool(keys) and all(str(k).startswith(("eval_", "eval/")) for k in keys)


def read_console(text: str) -> tuple[list[dict], list[str]]:
    """Records (with ``step``) from console text, and notes on how the steps were found."""
    found, cut = find_dicts(text)
    if not found:
        return [], []
    cut_note = [f"{cut} printed dict(s) cut short (no closing brace): read the values before the cut"] if cut else []
    records = [d for _, d in found]
    if all(any(names.canonical(str(k)) == "step" for k in r) for r in records):
        return records, cut_note
    evals = _eval_flags(records)
    is_step = [not (names.SUMMARY_KEYS & r.keys()) and not e for r, e in zip(records, evals)]
    offsets = [off for (off, _), keep in zip(found, is_step) if keep]
    step_records = [r for r, keep in zip(records, is_step) if keep]
    steps, how = _steps_from_progress(text, offsets)
    if steps is None:
        every, how = _logging_every(text, len(step_records))
        steps = [every * (i + 1) for i in range(len(step_records))]
    step_of = {id(r): s for r, s in zip(step_records, steps)}
    out, last = [], None
    for record, keep, evaluation in zip(records, is_step, evals):
        if keep:
            last = step_of[id(record)]
            out.append(dict(record, step=last))
        elif evaluation and last is not None:
            out.append(dict(record, step=last))
        else:
            out.append(record)
    return out, [f"console log: steps inferred from {how}"] + cut_note
