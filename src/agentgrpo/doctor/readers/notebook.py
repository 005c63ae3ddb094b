"""Jupyter notebooks (``.ipynb``): the metrics a training cell left in its outputs.

The Trainer's notebook progress callback displays an HTML table (``Step``, ``Training Loss``, ``reward``,
``rewards / f / mean``, ... with values as text); that is read first. Without such a table, the printed
metric dicts and step lines of the cells' stream outputs are read as a console log; with a table that lacks
the reward (only the loss), the printed records that carry it are read beside the table, merged by step.
Cells that raised are noted. A notebook is JSON: it is read with ``json`` alone (nbformat 4 and the older 3,
whose cells sit in ``worksheets``), so the default install reads notebooks; ``nbformat`` is not needed.
"""

from __future__ import annotations

import json
import re
from html import unescape
from itertools import chain, repeat

from agentgrpo import fastjson
from agentgrpo.doctor import names
from agentgrpo.doctor.readers import tidy
from agentgrpo.doctor.readers.textlog import parse_text
from agentgrpo.doctor.table import TextBlock, json_numbers
from agentgrpo.errors import UserError

_TAG = re.compile(r"<[^>]+>")


_ROW_END = re.compile(r"</tr\s*>", re.IGNORECASE)
_CELL_END = re.compile(r"</t[hd]\s*>", re.IGNORECASE)
_SPACE = re.compile(r"\s+")
_ROW_SEP, _CELL_SEP = "\ue000", "\ue001"  # private-use characters: never in a table, and not whitespace


def html_tables(html: str) -> list[list[list[str]]]:
    """Rows of cell texts of each table in ``html`` (the regular tables pandas and the Trainer print).

    Each table is processed as one string (cell and row ends marked, tags stripped and entities unescaped
    once), so a 100,000-row table costs a few passes, not a regex per cell.

    >>> html_tables("<table><tr><th>Step</th><th>reward</th></tr><tr><td>1</td><td>&minus;0.5</td></tr></table>")
    [[['Step', 'reward'], ['1', '−0.5']]]
    >>> html_tables("<table><thead><tr><th> a  b </th></tr></thead><tbody>\\n"
    ...             "<tr><td><b>1</b></td></tr></tbody></table>")
    [[['a b'], ['1']]]
    """
    tables = []
    for table in _tables(html):
        simple = _simple_table(table)
        if simple is not None:
            tables.append(simple)
            continue
        text = _CELL_END.sub(_CELL_SEP, _ROW_END.sub(_ROW_SEP, table))
        text = _TAG.sub("", text)
        if "&" in text:
            text = unescape(text)
        text = _SPACE.sub(" ", text)
        rows = []
        for row in text.split(_ROW_SEP):
            cells = row.split(_CELL_SEP)[:-1]  # what follows the last cell's end is not a cell
            if cells:
                rows.append([c.strip() for c in cells])
        tables.append(rows)
    return tables


def _tables(html: str) -> list[str]:
    """Each ``<table ...> ... </table>`` of ``html`` (found with str.find: a lazy regex over a 50 MB output
    backtracks at every character)."""
    low = html.lower()
    out, pos = [], 0
    while True:
        start = low.find("<table", pos)
        if start < 0:
            return out
        end = low.find("</table>", start)
        if end < 0:
            return out
        out.append(html[start : end + len("</table>")])
        pos = end + len("</table>")


_SIMPLE_CELL = re.compile(r"<t[hd](?:\s[^>]*)?>([^<&]*)</t[hd]\s*>")


def _simple_table(table: str) -> list[list[str]] | None:
    """The rows of a table whose cells hold plain text and whose rows all have the header's width (the
    Trainer's table): one regex pass, no per-cell work; None for any other table."""
    if any(tag in table for tag in ("<TD", "<TH", "<TR", "</T")):  # upper-case tags: the general path
        return None
    cells = _SIMPLE_CELL.findall(table)
    rows = table.count("<tr>") + table.count("<tr ")
    opened = table.count("<td") + table.count("<th") - table.count("<thead")
    if not rows or len(cells) % rows or opened != len(cells):
        return None
    width = len(cells) // rows
    if any(c != c.strip() or "  " in c for c in cells[:width]):  # header needs the general path's spacing
        return None
    return [cells[i : i + width] for i in range(0, len(cells), width)]


def is_metric_table(table: list[list[str]]) -> bool:
    """A header that names a step (or epoch) and at least one training metric, and a row under it."""
    if len(table) < 2:
        return False
    canon = [names.canonical(h) for h in table[0]]
    return bool({"step", "epoch"} & set(canon)) and any(names.is_metric(c) for c in canon if c != "epoch")


_BODY_TAGS = ("<td>", "<tr>", "</tr>", "</thead>", "<tbody>", "</tbody>", "</table>")


def numeric_table(table: str) -> TextBlock | None:
    """The Trainer's table read without a string per cell: its header as `html_tables` reads it, and every
    data cell (bare ``<td>``, text without ``<`` or ``&``) a plain number, parsed from the body with the tags
    taken out, as one JSON array. None for any other table (then `html_tables` reads it); what it returns
    is what `html_tables` gives, converted.

    >>> b = numeric_table("<table><tr><th>Step</th><th>reward</th></tr><tr><td>1</td><td>0.5</td></tr></table>")
    >>> b.header, b.numbers.tolist(), b.text_cells()
    (['Step', 'reward'], [[1.0, 0.5]], ['1', '0.5'])
    """
    if any(tag in table for tag in ("<TD", "<TH", "<TR", "</T")):
        return None
    head_end = table.find("</tr>")
    if head_end < 0:
        return None
    head_end += len("</tr>")
    head, body = table[:head_end], table[head_end:]
    header = _SIMPLE_CELL.findall(head)
    rows = body.count("<tr>")
    opened = table.count("<td") + table.count("<th") - table.count("<thead")
    cells = body.count("<td>")
    if (
        not header
        or not rows
        or "<tr " in body
        or opened != len(header) + cells
        or cells != rows * len(header)
        or head.count("<tr>") + head.count("<tr ") != 1
        or any(c != c.strip() or "  " in c for c in header)
    ):
        return None
    text = body.replace("</td>", ",")
    for tag in _BODY_TAGS:
        text = text.replace(tag, "")
    if "<" in text or ">" in text or "&" in text:
        return None
    numbers = json_numbers(text.rstrip().rstrip(","))
    if numbers is None or len(numbers) != cells:
        return None
    return TextBlock(header, None, numbers.reshape(rows, len(header)), lambda: _data_cells(table))


def _data_cells(table: str) -> list[str]:
    rows = html_tables(table)[0]
    return list(chain.from_iterable(rows[1:]))


def metric_records(table: list[list[str]]) -> list[dict]:
    """Records of a table whose header names a step (or epoch) and at least one training metric, else []."""
    if not is_metric_table(table):
        return []
    header = table[0]
    rows = table[1:]
    if set(map(len, rows)) == {len(header)}:  # every row whole (the Trainer's table): zipped in C
        return list(map(dict, map(zip, repeat(header), rows)))
    return [dict(zip(header, row)) for row in rows if len(row) == len(header)]


def _text(value) -> str:
    return "".join(value) if isinstance(value, list) else str(value or "")


def _cells(text: str, source) -> list[dict]:
    """The cells of a notebook's JSON (format 4, or format 3's worksheets); a UserError when it is not one."""
    try:
        nb = fastjson.loads(text)
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


def _printed_rewards(streams: list[str]) -> tuple[list[dict], list[str], str] | None:
    """(records, notes, format) of the cells' printed text when some record there names the reward, else None."""
    if not streams:
        return None
    records, notes, fmt = parse_text("\n".join(streams))
    return (records, notes, fmt) if any(names.carries_reward(r) for r in records) else None


def _merge_by_step(table: list[dict], printed: list[dict], notes: list[str]) -> list[dict]:
    """The table's records and the printed ones as one record per step, in step order (each list's restarts
    resolved first, as for any log; a printed value beside a table value of the same key: the table's)."""
    table, table_notes = tidy.drop_superseded(table)
    printed, printed_notes = tidy.drop_superseded(printed)
    notes += table_notes + printed_notes
    steps = tidy.steps_of(table) + tidy.steps_of(printed)
    if any(s is None for s in steps):  # a record without a step: kept in file order, numbered later
        return table + printed
    merged: dict[float, dict] = {}
    for step, record in zip(steps, table + printed):
        row = merged.setdefault(step, {})
        for key, value in record.items():
            row.setdefault(key if names.canonical(str(key)) != "step" else "step", value)
    return [merged[s] for s in sorted(merged)]


def _with_reward(table) -> bool:
    return names.carries_reward(table.header if isinstance(table, TextBlock) else table[0])


def _training_tables(tables: list, notes: list[str]) -> list:
    """The tables of the RL run: where some table carries a reward, a table without one (an SFT warm-up's
    loss-only table earlier in the notebook) is another training and is left out, with a note."""
    kept = [t for t in tables if _with_reward(t)]
    if not kept or len(kept) == len(tables):
        return tables
    notes.append(
        f"{len(tables) - len(kept)} progress table(s) without a reward (another training in the notebook, "
        "such as an SFT warm-up) left out; the run is read from the table(s) that log the reward"
    )
    return kept


def read_notebook(text: str, source) -> tuple[list[dict] | TextBlock, list[str], str]:
    """(records, notes, format) from a notebook's JSON text; one training table whose rows are all whole
    comes back as a `TextBlock` (its records without a dict per row; ``.records()`` gives them)."""
    cells = _cells(text, source)
    table_records, streams, notes, whole = [], [], [], []
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
                    for table_html in _tables(html):
                        fast = numeric_table(table_html)
                        if fast is not None:
                            if is_metric_table([fast.header, []]):
                                whole.append(fast)
                            continue
                        whole += [table for table in html_tables(table_html) if is_metric_table(table)]
                elif _plain(output) is not None:
                    streams.append(_plain(output))
            elif kind == "error":
                notes.append(
                    f"notebook cell {number} raised {output.get('ename', 'an error')}: "
                    f"{str(output.get('evalue', ''))[:120]}"
                )
    whole = _training_tables(whole, notes)
    printed = None
    if whole and not any(map(_with_reward, whole)):
        printed = _printed_rewards(streams)  # the table lacks the reward: the printed step lines may hold it
    if printed is None and len(whole) == 1 and isinstance(whole[0], TextBlock):  # the Trainer's table, as numbers
        return whole[0], notes, "notebook (training table)"
    if printed is None and len(whole) == 1 and set(map(len, whole[0])) == {len(whole[0][0])}:  # every row whole
        table = whole[0]
        return TextBlock(table[0], list(chain.from_iterable(table[1:]))), notes, "notebook (training table)"
    for table in whole:
        if isinstance(table, TextBlock):
            table = [table.header] + [list(r) for r in zip(*[iter(table.text_cells())] * len(table.header))]
        table_records += metric_records(table)
    if table_records and printed is not None:
        records, text_notes, fmt = printed
        notes += text_notes + [
            f"the training table has no reward: {len(records)} records of the cells' printed output ({fmt}) "
            "read beside it, merged by step"
        ]
        return _merge_by_step(table_records, records, notes), notes, f"notebook (training table + {fmt})"
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
