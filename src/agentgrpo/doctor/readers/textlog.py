"""Plain-text logs: JSON Lines, console output with metric dicts, step lines, metric lines without a step, step
reports, printed tables, headed CSV.

``parse_text`` tries each and keeps whichever reads the most records. Used for text files and for the
text outputs of a notebook's cells.
"""

from __future__ import annotations

import csv
import io
import json
import re
from itertools import repeat

from agentgrpo import fastjson
from agentgrpo.doctor import names
from agentgrpo.doctor import thresholds as th
from agentgrpo.doctor.readers.console import dict_lines, line_count, no_text_table, read_console
from agentgrpo.doctor.readers.kvlines import read_kv_lines
from agentgrpo.doctor.readers.stepblocks import read_step_blocks
from agentgrpo.doctor.readers.steplines import read_step_lines
from agentgrpo.doctor.readers.texttable import read_text_tables
from agentgrpo.doctor.table import TextBlock
from agentgrpo.rundir import METRICS, parse_jsonl


def one_json_value(text: str) -> bool:
    try:
        fastjson.loads(text)
    except json.JSONDecodeError:
        return False
    return True


def parse_text(text: str) -> tuple[list[dict], list[str], str]:
    """JSON Lines, console output with metric dicts, plain step lines, or a headed CSV: whichever reads most,
    except that a trainer's metric dicts carrying the reward are the rows whenever the text has them."""
    if starts_with(text, "{"):  # JSON Lines, every line whole: one decode, no split
        whole = fastjson.loads_jsonl_text(text)
        if whole and all(map(isinstance, whole, repeat(dict))):
            return whole, [], METRICS
    head = _first_lines(text, 50)
    if _mostly_json(head):
        lines = list(filter(str.strip, text.splitlines()))
        records, notes = parse_jsonl(text)
        if records and len(records) >= len(lines) // 2:
            return records, notes, METRICS
    candidates = [(*read_console(text), "console log")]
    dicts = dict_lines(text)
    # a step line is a line without a printed dict: when the console reader read as many records as there
    # are such lines, step lines cannot read more (and the first reader wins a tie)
    more_lines = dicts is None or line_count(text) - dicts > len(candidates[0][0])
    stepless = (*read_kv_lines(text), "text metric lines") if more_lines else ([], [], "")
    if (
        _metric_dicts(candidates[0][0])
        and not _outnumbered(candidates[0][0], stepless[0])
        and len(candidates[0][0]) >= th.MIN_POINTS
    ):
        # the trainer's per-step dicts are the rows: no other reading replaces them. A handful of dicts (fewer
        # than a trend needs: an evaluation summary printed twice) pre-empts nothing; the readings compete
        return candidates[0]
    candidates.append(stepless)
    if more_lines:
        candidates.append((*read_step_lines(text), "text step lines"))
    candidates.append((*read_step_blocks(text), "text step reports"))
    if not no_text_table(text):
        candidates.append((*read_text_tables(text), "text table"))
    if head and _looks_like_csv(head[0]):
        candidates.append((*read_csv(text, ","), "csv"))
    # the reading with the most records, among those that carry a reward when any does (a reading without one
    # is unusable: a debug loop's per-sample lines outnumber its per-step reward reports)
    records, notes, fmt = max(candidates, key=lambda c: (_metric_dicts(c[0]), len(c[0])))
    return records, notes, fmt


def _outnumbered(dicts, lines: list[dict]) -> bool:
    """Whether metric lines that carry the reward (`read_kv_lines`) outnumber the printed dicts that do: the
    dicts are then prints of a few samples' rewards between the steps (``reward: {'reward': 0.0, ...}``), not
    the steps."""
    return len(lines) > len(dicts) and names.carries_reward(lines[0])


def _metric_dicts(records) -> bool:
    """Whether the console reader's records are a trainer's per-step metric dicts with the reward in them
    (TRL's ``{'loss': ..., 'reward': ..., ...}``): printed step lines beside them (``Batch accuracy: 3/8``,
    a callback's own prints) may not stand in for those rows."""
    if isinstance(records, TextBlock):  # one flat dict per line, the same keys each time
        return names.carries_reward(records.header)
    return any(names.carries_reward(r) for r in records[:50])


def starts_with(text: str, prefix: str) -> bool:
    """``text.lstrip().startswith(prefix)`` without copying a long text that begins with whitespace.

    >>> starts_with("  \\n {'a': 1}", "{"), starts_with("   ", "{"), starts_with("x{", "{")
    (True, False, False)
    """
    first = _NON_SPACE.search(text)
    return first is not None and text.startswith(prefix, first.start())


_NON_SPACE = re.compile(r"\S")  # as str.isspace tells whitespace, which str.lstrip strips


def _first_lines(text: str, n: int) -> list[str]:
    """The first ``n`` non-blank lines of ``text`` (``text.splitlines()``, blank ones dropped), split from a
    prefix of the text when that holds them.

    >>> _first_lines("a\\n\\nb\\nc", 2), _first_lines("a\\n", 5)
    (['a', 'b'], ['a'])
    """
    size = 1 << 16
    while True:
        lines = list(filter(str.strip, text[:size].splitlines()))
        if size >= len(text):
            return lines[:n]
        if len(lines) > n:  # the last line of the prefix may be cut: only the lines before it are kept
            return lines[:n]
        size *= 4


def _mostly_json(sample: list[str]) -> bool:
    """True when at least half of the sampled lines are JSON objects."""
    return sum(one_json_value(line) and line.lstrip().startswith("{") for line in sample) * 2 >= len(sample) > 0


def _looks_like_csv(header: str) -> bool:
    fields = [f.strip() for f in header.split(",")]
    return len(fields) >= 2 and any(names.canonical(f) == "step" for f in fields)


def read_csv(text: str, delimiter: str) -> tuple[list[dict], list[str]]:
    """Rows of a headed CSV/TSV; blank cells are missing values, short rows are skipped with a note."""
    rows = list(csv.reader(io.StringIO(text), delimiter=delimiter))
    if len(rows) < 2:
        return [], ["CSV has a header but no rows"]
    header = rows[0]
    keep = [i for i, h in enumerate(header) if not names.is_tracker_extra(h)]
    records, notes = [], []
    for number, row in enumerate(rows[1:], start=2):
        if not row:
            continue
        if len(row) != len(header):
            notes.append(f"CSV row {number} has {len(row)} fields, header has {len(header)}: skipped")
            continue
        records.append({header[i]: row[i] for i in keep if row[i].strip() != ""})
    return records, notes
