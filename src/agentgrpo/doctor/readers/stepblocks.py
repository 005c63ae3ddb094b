"""Multi-line step reports: a header line naming the step, then one ``name: value`` line per metric.

Trainers that print a report per step rather than a line (NeMo RL's ``===== Step 12/500 =====`` followed by
``• Avg Reward: 0.31``, ``• Mean Generation Length: 288.5``; custom loops' ``Step 12:`` then indented
``reward: 0.31``) put the step and the metrics on different lines, so neither the step-line nor the console
reader sees a record. Here a **header** is a line that holds a step marker (``step N``, ``step N/M``,
``iteration N``) and nothing else but decoration (``=``, ``-``, ``#``, ``*``, brackets, emoji); every
following line with exactly one ``name: value`` (or ``name = value``) pair, bulleted or indented, belongs to
that step until the next header. A block becomes a record when one of its names is a training metric.

A banner is a header too: a title between runs of ``=`` (or ``-``, ``#``) that names the step in it
(``==== PHASE 9: POST-UPDATE PERFORMANCE (step 50) ====``, a custom debug loop). A header may name the epoch before
the step (Search-R1/verl prints ``epoch 0, step 12``). A line of a metric's
statistics (``Batch reward stats - mean: 1.18, min: -0.3, max: 5.0``: a phrase, then two or more of ``mean``,
``avg``, ``min``, ``max``, ``std``, ``median``) gives them under the metric the phrase names (``reward/mean``,
``reward/min``, ...: the reward, its batch's worst and best).
"""

from __future__ import annotations

import re

from agentgrpo.doctor import names

_NUMBER = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|[-+]?(?i:nan|inf(?:inity)?)"
_EPOCH = r"(?:epoch\s*[#:=]?\s*\d+\s*[,;|/]?\s*)?"  # ``epoch 0, `` before the step
_MARK = r"(?:global[ _])?(?:step|iteration|iter|update)\s*[#:=]?\s*"  # the step marker, before its number
_HEADER = re.compile(r"^[^\w]*" + _EPOCH + _MARK + r"(\d+)(?:\s*(?:/|of)\s*\d+)?[^\w]*$", re.IGNORECASE)
# a banner: a run of at least three = (or - or #) on both sides of a title that names the step in it
# (``==== PHASE 9: POST-UPDATE PERFORMANCE (step 50) ====``)
_BANNER_OPEN = r"^\s*([=#-])\1{2,}[^=#\n]*?\bstep\s*[#:=]?\s*"
_BANNER = re.compile(_BANNER_OPEN + r"(\d+)\b[^=#\n]*?\1{3,}\s*$", re.IGNORECASE)
# a log line's time stamp before its text (``15:11:51 | ``, ``[2025-01-02 15:11:51,123] ``), set aside
_STAMP = re.compile(r"^\s*\[?(?:\d{4}-\d{2}-\d{2}[ T])?\d{1,2}:\d{2}:\d{2}(?:[.,]\d+)?\]?\s*[|:-]?\s*")
# one pair on the line: an optional bullet, a name (words, spaces, / . - allowed), ':' or '=', a number with
# at most a unit after it (``12.5s``, ``40%``)
_ITEM = re.compile(
    r"^\s*(?:[-*•·>|]\s*)?([A-Za-z][\w /.()\-]*?)\s*(?::|=)\s*(" + _NUMBER + r")\s*(?:%|[A-Za-z]{1,3})?\s*$"
)


_STAT = r"(mean|avg|average|min|max|std|median)\s*[:=]\s*(" + _NUMBER + r")"
_STATS = re.compile(r"([A-Za-z][A-Za-z_ ]*?)\s*[-:]\s*" + _STAT + r"(?:\s*,\s*" + _STAT + ")+")
_STAT_PAIR = re.compile(_STAT)


def statistics(line: str) -> dict | None:
    """The statistics of one metric printed on one line, under ``<metric>/<statistic>``; None when the line is
    not such a line or its phrase names no metric the doctor knows.

    >>> statistics("D[DEBUG] Batch reward stats - mean: 1.1828, min: -0.3000, max: 5.0000!`")
    {'reward/mean': '1.1828', 'reward/min': '-0.3000', 'reward/max': '5.0000'}
    >>> statistics("Lengths - mean: 120, max: 512"), statistics("done - mean: 1, max: 2")
    (None, None)
    """
    match = _STATS.search(line)
    if match is None:
        return None
    words = re.findall(r"[a-z]+", match.group(1).lower())
    metric = next((w for w in reversed(words) if names.is_metric(names.canonical(f"{w}/mean"))), None)
    if metric is None:
        return None
    return {f"{metric}/{stat}": value for stat, value in _STAT_PAIR.findall(match.group(0))}


def parse_blocks(text: str) -> list[dict]:
    """The record of each step report in ``text``.

    >>> log = "===== Step 1/30 =====\\n  • Loss: 0.02\\n  • Avg Reward: 0.25\\n\\n===== Step 2/30 =====\\n"
    >>> parse_blocks(log + "  • Loss: 0.01\\n  • Avg Reward: 0.5\\n  • Total step time: 12.5s\\n")
    [{'Loss': '0.02', 'Avg Reward': '0.25', 'step': 1}, {'Loss': '0.01', 'Avg Reward': '0.5', \
'Total step time': '12.5', 'step': 2}]
    >>> parse_blocks("Step 3:\\n    elapsed: 4\\nStep 4:\\n    reward: 1\\n")  # no metric in step 3's block
    [{'reward': '1', 'step': 4}]
    >>> parse_blocks("step 5 of 10: reward=1\\nloss: 2")  # a header holds nothing but its step
    []
    """
    records, current = [], None
    for line in text.splitlines():
        header = _HEADER.match(line)
        banner = _BANNER.match(line) if header is None and "step" in line.lower() else None
        if header or banner:
            _keep(records, current)
            current = {"step": int(header.group(1) if header else banner.group(2))}
            continue
        if current is None:
            continue
        line = _STAMP.sub("", line, count=1)
        item = _ITEM.match(line)
        if item:
            current[item.group(1).strip()] = item.group(2)
        elif (stats := statistics(line)) is not None:
            current.update(stats)
    _keep(records, current)
    return records


def _keep(records: list[dict], block: dict | None) -> None:
    if block and any(names.is_metric(names.canonical(k)) for k in block if k != "step"):
        step = block.pop("step")
        block["step"] = step
        records.append(block)


def read_step_blocks(text: str) -> tuple[list[dict], list[str]]:
    """Records from every step report of ``text``, and a note on what was read."""
    if not _HEADER_ANYWHERE.search(text):  # one pass over a text that has no header at all
        return [], []
    records = parse_blocks(text)
    if not records:
        return [], []
    return records, [f"text log: read {len(records)} step reports (a `Step N` header, then `name: value` lines)"]


_HEADER_ANYWHERE = re.compile(
    r"^[^\w\n]*" + _EPOCH + _MARK + r"\d+|" + _BANNER_OPEN + r"\d+", re.IGNORECASE | re.MULTILINE
)
