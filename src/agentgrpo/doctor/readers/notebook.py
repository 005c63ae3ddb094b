"""Jupyter notebooks (``.ipynb``): the metrics a training cell left in its outputs.

The Trainer's notebook progress callback displays an HTML table (``Step``, ``Training Loss``, ``reward``,
``rewards / f / mean``, ... with values as text); that is read first. Without such a table, the printed
metric dicts and step lines of the cells' stream outputs are read as a console log. Cells that raised are
noted. A notebook is JSON: it is read with ``json`` alone (nbformat 4 and the older 3, whose cells sit in
``worksheets``), so the default install reads notebooks; ``nbformat`` is not needed.
"""

from __future__ import annotations

import json
import re
from html import unescape

from agentgrpo.doctor import names
from agentgrpo.doctor.readers.textlog import parse_text
from agentgrpo.errors import UserError


_TABLE = re.compile(r"<table\b.*?</table>", re.IGNORECASE | re.DOTALL)
_ROW = re.compile(r"<tr\b[^>]*>(.*?)</tr>", re.IGNORECASE | re.DOTALL)
_CELL = re.compile(r"<t[hd]\b[^>]*>(.*?)</t[hd]>", re.IGNORECASE | re.DOTALL)
_TAG = re.compile(r"<[^>]+>")


def html_tables(html: str) -> list[list[list[str]]]:
    """Rows of cell texts of each table in ``html`` (the regular tables pandas and the Trainer print).

    >>> html_tables("<table><tr><th>Step</th><th>reward</th></tr><tr><td>1</td><td>&minus;0.5</td></tr></table>")
    [[['Step', 'reward'], ['1', '−0.5']]]
    """
    tables = []
    for table in _TABLE.finditer(html):
        rows = []
        for row in _ROW.findall(table.group(0)):
            cells = [" ".join(unescape(_TAG.sub("", c)).split()) for c in _CELL.findall(row)]
            if cells:
                rows.append(cells)
        tables.append(rows)
    return tables


def metric_records(table: list[list[str]]) -> list[dict]:
    """Records of a table whose header names a step (or epoch) and at least one training metric, else []."""
    if len(table) < 2:
        return []
    header = table[0]
    canon = [names.canonical(h) for h in header]
    if not ({"step", "epoch"} & set(canon)) or not any(names.is_metric(c) for c in canon if c != "epoch"):
        return []
    return [dict(zip(header, row)) for row in table[1:] if len(row) == len(header)]


def _text(value) -> str:
    return "".join(value) if isinstance(value, list) else str(value or "")


def _cells(text: str, source) -> list[dict]:
    """The cells of a notebook's JSON (format 4, or format 3's worksheets); a UserError when it is not one."""
    try:
        nb = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UserError(
            f"{source}: not a readable Jupyter notebook (invalid JSON: {exc}); was it saved completely? "
            "Re-save it from Jupyter, or pass the training log itself."
        ) from None
    if not isinstance(nb, dict):
        raise UserError(f"{source}: not a Jupyter notebook (its JSON is a {type(nb).__name__}, not an object)")
    cells = nb.get("cells")
    if cells is None and isinstance(nb.get("worksheets"), list):  # nbformat 3
        cells = [c for ws in nb["worksheets"] if isinstance(ws, dict) for c in ws.get("cells") or []]
    if not isinstance(cells, list):
        raise UserError(f"{source}: not a Jupyter notebook (no 'cells' list); pass the training log itself")
    return [c for c in cells if isinstance(c, dict)]


def _html(output: dict) -> str:
    data = output.get("data") if isinstance(output.get("data"), dict) else output  # format 3: keys at the top
    return _text(data.get("text/html", data.get("html")))


def _plain(output: dict) -> str | None:
    data = output.get("data") if isinstance(output.get("data"), dict) else output
    value = data.get("text/plain", data.get("text"))
    return None if value is None else _text(value)


def read_notebook(text: str, source) -> tuple[list[dict], list[str], str]:
    """(records, notes, format) from a notebook's JSON text."""
    cells = _cells(text, source)
    table_records, streams, notes = [], [], []
    for number, cell in enumerate(cells, start=1):
        for output in cell.get("outputs") or []:
            if not isinstance(output, dict):
                continue
            kind = output.get("output_type")
            if kind == "stream":
                streams.append(_text(output.get("text")))
            elif kind in ("display_data", "execute_result", "update_display_data", "pyout"):
                html = _html(output)
                if "<table" in html:
                    for table in html_tables(html):
                        table_records += metric_records(table)
                elif _plain(output) is not None:
                    streams.append(_plain(output))
            elif kind == "error":
                notes.append(
                    f"notebook cell {number} raised {output.get('ename', 'an error')}: "
                    f"{str(output.get('evalue', ''))[:120]}"
                )
    if table_records:
        return table_records, notes, "notebook (training table)"
    records, text_notes, fmt = parse_text("\n".join(streams))
    if not records:
        raise UserError(
            f"{source}: a notebook with no training metrics in its outputs (no progress-callback table, no "
            "printed metric dicts or step lines). Was it saved after training ran, with outputs? "
            "Or pass the run's trainer_state.json."
        )
    return records, notes + text_notes, f"notebook ({fmt})"
