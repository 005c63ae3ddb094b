"""Logging lines that print one training step's metrics as ``key: value`` pairs without naming the step.

Custom loops log a step as ``rl_loss: -0.002, l2_norm: 0.14, token_entropy: 0.81, reward_data: {...}``: no step
counter on the line (the loop counts rollouts elsewhere), often a printed dict as one value. Such a line is a
record when its key sequence is the most common of the log's sequences of at least ``MIN_KEYS`` keys, one a
known training measurement, printed ``MIN_LINES`` times or more; a line of evaluation keys only (``eval_acc: 0.48``)
printed between them joins the step before it; the records are numbered in file
order. A dict printed as a value joins the record under its key (``reward_data/total_reward``); a dict of sums
with their count (``total_num: 256``, ``total_reward: 144.0``) also gives each sum's mean under
the sum's own name (``reward = 144 / 256``): sums over a batch are means times a count.
"""

from __future__ import annotations

import re
from collections import Counter

from agentgrpo.doctor import names
from agentgrpo.doctor.readers.console import parse_dict
from agentgrpo.doctor.readers.steplines import _PAIR, parse_line

MIN_LINES = 10  # a key sequence printed fewer times is not a per-step log
MIN_KEYS = 3  # fewer pairs on a line are a status print, not a step's metrics
# a count of the items a dict's sums are over: ``total_num``, ``num``, ``count``, ``n``, ``total_count``
_COUNT_KEY = re.compile(r"^(?:total_)?(?:num|count|n)(?:_samples|_items)?$")
_DICT_VALUE = re.compile(r"(?<![\w/.])([A-Za-z_][\w/.\-]*)\s*[:=]\s*(\{[^{}\n]*\})")


def _record(line: str) -> dict | None:
    """The ``key: value`` pairs of one line, with its printed dict values joined under their keys and the means
    of their sums (`_means`) beside them; None when the line names a step (the step-line reader's) or holds no
    pair.

    >>> _record("INFO - rl_loss: -0.5, l2_norm: 0.1, reward_data: {'total_num': 4, 'total_reward': 3.0}")
    {'rl_loss': '-0.5', 'l2_norm': '0.1', 'reward_data/total_num': 4, 'reward_data/total_reward': 3.0, \
'reward': 0.75}
    """
    record: dict = {}
    means: dict = {}
    rest = line
    for key, text in _DICT_VALUE.findall(line):
        inner = parse_dict(text)
        if inner is None:
            return None
        rest = rest.replace(text, " ")
        record.update({f"{key}/{k}": v for k, v in inner.items()})
        means.update(_means(inner))
    pairs = dict(_PAIR.findall(rest))
    if not pairs or parse_line(rest) is not None:
        return None
    record = {**{k: v[:-1] if v.endswith("%") else v for k, v in pairs.items()}, **record}
    return {**record, **{k: v for k, v in means.items() if k not in record}}


def _means(sums: dict) -> dict:
    """Each ``total_X`` of a dict that carries its count, as the mean ``X``; {} without a count.

    >>> _means({"total_num": 256, "total_reward": 144.0, "total_format_reward": 240.0})
    {'reward': 0.5625, 'format_reward': 0.9375}
    >>> _means({"total_reward": 144.0})
    {}
    """
    counts = [k for k in sums if _COUNT_KEY.match(str(k))]
    try:
        count = float(sums[counts[0]]) if counts else 0.0
    except (TypeError, ValueError):
        return {}
    if not count > 0:
        return {}
    out = {}
    for key, value in sums.items():
        if str(key).startswith("total_") and key not in counts and isinstance(value, int | float):
            out[str(key)[len("total_") :]] = value / count
    return out


def read_kv_lines(text: str) -> tuple[list[dict], list[str]]:
    """Records from the log's most common ``key: value`` line (module docstring), numbered 1, 2, ... in file
    order, and a note; ([], []) when no such line repeats."""
    found = [r for line in text.splitlines() if ": " in line and (r := _record(line)) is not None]
    if len(found) < MIN_LINES:
        return [], []
    sequences = [
        (keys, count)
        for keys, count in Counter(tuple(r) for r in found).most_common()
        if count >= MIN_LINES and len(keys) >= MIN_KEYS and any(names.is_metric(names.canonical(k)) for k in keys)
    ]
    if not sequences:
        return [], []
    keys = sequences[0][0]
    records: list[dict] = []
    evals = 0
    for record in found:
        if tuple(record) == keys:
            records.append(dict(record, step=len(records) + 1))
        elif records and _evaluation(record):
            records[-1].update(record)  # an evaluation printed between steps belongs to the step before it
            evals += 1
    note = f"text log: read {len(records)} metric lines without a step (`key: value, ...`), numbered in file order"
    if evals:
        note += f"; {evals} evaluation lines between them joined to the step before each"
    return records, [note]


def _evaluation(record: dict) -> bool:
    """Whether every key of a line is an evaluation's (``eval_acc``, ``eval/loss``)."""
    return all(names.canonical(str(k)).startswith("eval/") for k in record)
