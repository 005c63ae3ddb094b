"""`MetricTable`: one row per logged training step, one float column per canonical metric name.

Every reader produces one; the detectors, the report and the live doctor read only this. Missing values
are NaN, so a metric logged on some steps only (evaluation, tools) sits beside the others.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from itertools import chain
from operator import itemgetter

import numpy as np

try:  # an optional accelerator (a dependency of the package, but every path works without it)
    import orjson
except ImportError:  # pragma: no cover - depends on the install
    orjson = None

from agentgrpo.doctor import names


def to_float(value) -> float | None:
    """A logged value as a float, or None when it is not a number (strings like ``'0.5'`` count).

    >>> to_float("0.5"), to_float(True), to_float(None), to_float("n/a"), to_float([1])
    (0.5, 1.0, None, None, None)
    """
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value.strip())
        except ValueError:
            return None
    return None


@dataclass
class MetricTable:
    """Columns of metrics against sorted, unique training steps.

    >>> t = MetricTable.from_records([{"step": 2, "reward": "0.5"}, {"step": 1, "reward": 0.1, "kl": 0.0}])
    >>> t.steps.tolist(), t["reward"].tolist(), t.has("kl"), t.has("entropy")
    ([1, 2], [0.1, 0.5], True, False)
    """

    steps: np.ndarray
    columns: dict[str, np.ndarray]
    meta: dict = field(default_factory=dict)

    @classmethod
    def from_records(
        cls, records: Iterable[Mapping], meta: dict | None = None, rename: Mapping[str, str] | None = None
    ) -> MetricTable:
        """Build from dicts that each carry a step (``step``, ``global_step``, ``Step``, ...).

        Any known spelling of a metric is mapped to its canonical name; ``rename`` maps raw keys to canonical
        names first (``--map reward=score``), and then no other key takes those names. Spellings of one metric
        in the same row (old and new TRL names) are merged, the canonical spelling first, never added.
        Records for the same step are merged (later values win), e.g. a train and an eval row.
        """
        raw, logged_nan = _raw_columns(list(records))
        return cls.from_raw(raw, logged_nan, meta, rename)

    @classmethod
    def from_raw(
        cls,
        raw: dict[str, np.ndarray],
        logged_nan: dict[str, np.ndarray],
        meta: dict | None = None,
        rename: Mapping[str, str] | None = None,
    ) -> MetricTable:
        """`from_records` from its raw float columns (one per raw key, NaN where not logged) and the rows
        where NaN was logged as a value."""
        rename = dict(rename or {})
        taken = set(rename.values())
        by_name: dict[str, list[str]] = {}
        for key in raw:
            name = rename.get(key) or names.canonical(key)
            if key not in rename and name in taken:
                continue
            by_name.setdefault(name, []).append(key)
        for name, keys in by_name.items():
            keys.sort(key=lambda k, n=name: _spelling_rank(k, n))
        if "step" not in by_name:
            return cls(np.empty(0, dtype=np.int64), {}, dict(meta or {}))
        columns = {name: _first_finite([raw[k] for k in keys]) for name, keys in by_name.items()}
        steps = columns.pop("step")
        keep = np.isfinite(steps)
        nan_at = {
            name: sorted({int(s) for s in steps[mask & keep]})
            for name, keys in by_name.items()
            if name != "step" and (mask := _any_mask([logged_nan.get(k) for k in keys])) is not None
        }
        if not keep.all():
            steps = steps[keep]
            columns = {k: v[keep] for k, v in columns.items()}
        steps = steps.astype(np.int64)
        if len(steps) > 1 and np.any(steps[1:] < steps[:-1]):
            order = np.argsort(steps, kind="stable")
            steps = steps[order]
            columns = {k: v[order] for k, v in columns.items()}
        if len(steps) > 1 and np.any(steps[1:] == steps[:-1]):
            steps, columns = _merge_duplicates(steps, columns)
        table = cls(steps, {}, dict(meta or {}))
        table.meta["sources"] = {n: keys[0] for n, keys in by_name.items() if n != "step" and keys[0] != n}
        index = {int(s): i for i, s in enumerate(steps)} if nan_at else {}
        nan_at = {
            name: [s for s in at if s in index and np.isnan(columns[name][index[s]])] for name, at in nan_at.items()
        }
        nan_at = {name: at for name, at in nan_at.items() if at}
        if nan_at:
            table.meta["nan_steps"] = nan_at
        table.columns = {k: v for k, v in columns.items() if np.isfinite(v).any() or k in nan_at}
        return table

    def __len__(self) -> int:
        return len(self.steps)

    def __getitem__(self, name: str) -> np.ndarray:
        return self.columns[name]

    def has(self, name: str) -> bool:
        """True when the column exists and has at least one finite value."""
        col = self.columns.get(name)
        return col is not None and bool(np.isfinite(col).any())

    def series(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """(steps, values) of a column with the missing values dropped; empty arrays when absent."""
        col = self.columns.get(name)
        if col is None:
            return np.empty(0, dtype=np.int64), np.empty(0)
        ok = np.isfinite(col)
        return self.steps[ok], col[ok]

    def names(self) -> list[str]:
        """Column names that hold data, sorted."""
        return sorted(k for k in self.columns if self.has(k))

    def components(self) -> list[str]:
        """Reward functions with a ``rewards/<f>/mean`` column (training rows), in name order."""
        return sorted(c for k in self.names() if (c := names.component_of(k)))


@dataclass
class TextBlock:
    """Rows of text cells under one header, every row the header's width (a notebook's training table),
    standing for the records ``dict(zip(header, row))`` without building them: `records_to_table` converts
    its columns in one call, and `records()` gives the dicts whenever the general path is needed."""

    header: list[str]
    cells: list[str] | None  # the data rows' cells, row after row (None: only `numbers` was read)
    numbers: np.ndarray | None = None  # the same cells already parsed (rows x header), when read as numbers
    recount: object = None  # () -> cells: reads them again when only `numbers` was kept

    def __len__(self) -> int:
        if self.numbers is not None:
            return len(self.numbers)
        return len(self.cells) // max(len(self.header), 1)

    def text_cells(self) -> list[str]:
        if self.cells is None:
            self.cells = self.recount()
        return self.cells

    def records(self) -> list[dict]:
        cells, w = self.text_cells(), len(self.header)
        return [dict(zip(self.header, cells[i : i + w])) for i in range(0, len(cells), w)]

    def raw_columns(self) -> dict[str, np.ndarray] | None:
        """Every column as floats, parsed as one JSON array of numbers (`_text_numbers`); None when a cell
        is not one plain number or a name repeats (the records then say what each cell means)."""
        w = len(self.header)
        if w < 2 or len(set(self.header)) != w:
            return None
        block = self.numbers
        if block is None:
            cells = self.text_cells()
            if not cells or len(cells) % w:
                return None
            block = _text_numbers([tuple(cells)], len(cells))
            if block is None:
                return None
            block = block.reshape(-1, w)
        return dict(zip(self.header, block.T.copy()))


@dataclass
class ColumnBlock(TextBlock):
    """Rows already parsed into float columns (`numbers`: rows x header, NaN where a row has no value), with
    the rows where NaN was logged as a value (``logged_nan``: header name -> bool per row), and ``rows``,
    which builds the same rows as dicts whenever the general path is needed (a W&B run file's history)."""

    logged_nan: dict = field(default_factory=dict)
    rows: object = None  # () -> list[dict]
    widest: int = 0  # the most values in one row

    def records(self) -> list[dict]:
        return self.rows()

    def raw_columns(self) -> dict[str, np.ndarray] | None:
        if len(set(self.header)) != len(self.header):
            return None
        return dict(zip(self.header, self.numbers.T.copy()))


def _spelling_rank(key: str, name: str) -> tuple:
    """Order of trust among keys that spell one metric: the step keys by `names.STEP_KEYS`, else the
    canonical spelling first, then the others by name, a fallback spelling (`names.fallback_spelling`) last."""
    if name == "step":
        return (names.STEP_KEYS.index(key) if key in names.STEP_KEYS else len(names.STEP_KEYS), key)
    return (key != name, names.fallback_spelling(key), key)


def _raw_columns(records: list[Mapping]) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Every key of the records as a float column (NaN where a record lacks it or holds no number), and per
    key the rows where a NaN was logged as a value (``nan``, ``"NaN"``), not merely absent or non-numeric.

    Records with the same keys in the same order (nearly all of a log) are converted together, a column at a
    time (a column with a non-number in it, such as the notebook table's "No log", value by value). A cell
    holds one number or none: a list (per-sample rewards, token ids) is not a number here, whatever its length.
    """
    fast = _uniform_columns(records)
    if fast is not None:
        return fast
    groups: dict[tuple, list[int]] = {}
    for i, record in enumerate(records):
        groups.setdefault(tuple(record), []).append(i)
    out: dict[str, np.ndarray] = {}
    logged_nan: dict[str, np.ndarray] = {}
    for keys, rows in groups.items():
        values = [tuple(records[i].values()) for i in rows]
        index = np.array(rows)
        for key, raw in zip(keys, zip(*values)):
            try:  # a column of numbers (or numeric strings) converts in one call
                block = np.array(raw, dtype=float)
                if block.shape != (len(raw),):  # cells that are equal-length lists: not one number per row
                    raise ValueError(f"{key}: cells are not single numbers")
                nan_block = np.isnan(block)
            except (TypeError, ValueError):  # some cell is not a number ("No log", a list): one by one
                block = np.array([_number(v) for v in raw], dtype=float)
                nan_block = np.array([_is_nan(v) for v in raw], dtype=bool)
            col = out.get(key)
            if col is None:
                col = out[key] = np.full(len(records), math.nan)
            col[index] = block
            if nan_block.any():
                mask = logged_nan.setdefault(key, np.zeros(len(records), dtype=bool))
                mask[index] = nan_block
    return out, logged_nan


def _uniform_columns(records: list[Mapping]):
    """`_raw_columns` of records that all have the same keys, converted in one call (a block with a row per
    metric, in the first record's key order); None when they do not, or when some cell is not a number
    (then group by group, column by column)."""
    keys = tuple(records[0]) if records else ()
    if len(keys) < 2 or set(map(len, records)) != {len(keys)}:
        return None
    try:  # same length and every key of the first record: the same keys
        rows = list(map(itemgetter(*keys), records))
    except KeyError:
        return None
    block = _text_numbers(rows, len(keys))
    if block is None:
        try:
            block = np.array(rows, dtype=float)
        except (TypeError, ValueError):
            return None
    if block.shape != (len(records), len(keys)):
        return None
    block = block.T.copy()
    nan_block = np.isnan(block)
    out = dict(zip(keys, block))
    logged_nan = {key: nan_block[j] for j, key in enumerate(keys) if nan_block[j].any()}
    return out, logged_nan


def _text_numbers(rows: list[tuple], width: int) -> np.ndarray | None:
    """Rows of numbers written as text (a notebook table's cells), parsed as one JSON array of numbers by
    ``orjson`` (correctly rounded, as ``float`` parses them; several times faster than a float per cell);
    None when orjson is not installed, some cell is not text, or some cell is not one plain JSON number
    (``No log``, ``nan``, ``1.``, a quoted or empty cell): the general conversion then reads the rows.

    >>> _text_numbers([("1", "0.5"), ("2", "-1e-3")], 2).tolist(), _text_numbers([("1", "No log")], 2)
    ([[1.0, 0.5], [2.0, -0.001]], None)
    """
    if orjson is None or not rows or not isinstance(rows[0][0], str):
        return None
    try:
        text = ",".join(chain.from_iterable(rows))
    except TypeError:
        return None
    flat = json_numbers(text)
    if flat is None or len(flat) != len(rows) * width:
        return None
    return flat.reshape(len(rows), width)


def json_numbers(text: str) -> np.ndarray | None:
    """The comma-separated plain JSON numbers of ``text`` as floats, in one ``orjson`` call; None when
    orjson is not installed or some item is anything else (a string, ``true``, ``null``, ``nan``, empty).

    >>> json_numbers(" 1, -0.5 ,2e-3").tolist(), json_numbers("1,No log"), json_numbers("1,,2")
    ([1.0, -0.5, 0.002], None, None)
    """
    if orjson is None or any(c in text for c in '"[{tfn'):  # a string, list, object, true, false or null
        return None
    try:
        flat = orjson.loads("[" + text + "]")
    except ValueError:
        return None
    return np.array(flat, dtype=float)


def _is_nan(value) -> bool:
    number = to_float(value) if value is not None else None
    return number is not None and math.isnan(number)


def _number(value) -> float:
    number = to_float(value)
    return math.nan if number is None else number


def _any_mask(masks: list) -> np.ndarray | None:
    present = [m for m in masks if m is not None]
    if not present:
        return None
    out = present[0].copy()
    for m in present[1:]:
        out |= m
    return out


def _first_finite(columns: list[np.ndarray]) -> np.ndarray:
    """Merge columns that spell the same metric: the first finite value of each row."""
    out = columns[0]
    for col in columns[1:]:
        out = np.where(np.isnan(out), col, out)
    return out


def _merge_duplicates(steps: np.ndarray, columns: dict[str, np.ndarray]):
    """Collapse rows that share a step: per column, the last finite value wins."""
    unique = np.unique(steps)
    group = np.searchsorted(unique, steps)
    merged = {}
    for key, col in columns.items():
        out = np.full(len(unique), np.nan)
        ok = np.isfinite(col)
        out[group[ok]] = col[ok]  # later rows overwrite earlier ones (fancy assignment keeps the last)
        merged[key] = out
    return unique, merged
