"""Tables printed as text: a printed pandas DataFrame, a Markdown table, aligned columns.

A header line names a step column (``step``, ``Step``, ``global_step``, ...) and at least one training metric;
the lines below it that hold the same number of cells (a leading DataFrame index allowed) are its rows,
until a line that does not fit. Cells are split on ``|`` when the line has them, else on whitespace.
"""

from __future__ import annotations

import re

from agentgrpo.doctor import names
from agentgrpo.doctor.table import to_float

_SEPARATOR = re.compile(r"^[\s|:+\-=]+$")  # Markdown |---|---| and ===== rules


def _cells(line: str) -> list[str]:
    if line.count("|") >= 2:
        return [c.strip() for c in line.strip().strip("|").split("|")]
    return line.split()


def _is_header(cells: list[str]) -> bool:
    canon = [names.canonical(c) for c in cells]
    return "step" in canon and any(names.is_metric(c) for c in canon)


def read_text_tables(text: str) -> tuple[list[dict], list[str]]:
    """Records of every text table in ``text``, and a note saying how many rows were read.

    >>> recs, _ = read_text_tables("   step  reward    kl\\n0     1    0.5  0.01\\n1     2    0.6   NaN\\ndone")
    >>> recs
    [{'step': '1', 'reward': '0.5', 'kl': '0.01'}, {'step': '2', 'reward': '0.6', 'kl': 'NaN'}]
    >>> read_text_tables("| Step | reward |\\n|---|---|\\n| 1 | 0.5 |")[0]
    [{'Step': '1', 'reward': '0.5'}]
    """
    records: list[dict] = []
    header: list[str] | None = None
    for line in text.splitlines():
        if header is None:
            if "{" in line:
                continue
            lowered = line.lower()
            if not ("step" in lowered or "iter" in lowered) or not line.strip():
                continue
            cells = _cells(line)
            header = cells if _is_header(cells) else None
            continue
        if not line.strip():
            continue
        cells = _cells(line)
        if _SEPARATOR.match(line):
            continue
        if len(cells) == len(header) + 1 and to_float(cells[0]) is not None:
            cells = cells[1:]  # a DataFrame's index column
        if len(cells) == len(header) and to_float(cells[header_step(header)]) is not None:
            records.append(dict(zip(header, cells)))
        else:
            header = cells if _is_header(cells) else None
    notes = [f"text table: read {len(records)} rows"] if records else []
    return records, notes


def header_step(header: list[str]) -> int:
    """Index of the step column of a header."""
    return next(i for i, c in enumerate(header) if names.canonical(c) == "step")
