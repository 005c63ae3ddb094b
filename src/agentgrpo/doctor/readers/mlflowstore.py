"""MLflow's tracking stores, read without mlflow: the file store (``mlruns/``) and the SQLite store (``mlflow.db``).

File store: ``mlruns/<experiment id>/<run id>/`` holds ``meta.yaml``, ``metrics/<name>`` (a name with ``/`` is
a sub-folder: ``metrics/train/reward``), one ``timestamp value step`` line per logged value (MLflow < 1.0:
``timestamp value``, step 0), ``params/<name>`` (the value as text) and ``tags/<name>``
(``tags/mlflow.runName``). A path is a run folder, an experiment folder, ``mlruns/`` or the folder holding it;
it must come down to one run with metrics. SQLite store (MLflow >= 3.7's default, ``sqlite:///mlflow.db``):
the ``metrics`` table (``key, value, timestamp, run_uuid, step, is_nan``), ``params`` and ``runs``; a path
``mlflow.db`` (``mlflow.db#RUN`` for one of several runs: a run id or name).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np

from agentgrpo.doctor.table import ColumnBlock
from agentgrpo.errors import UserError

try:
    import orjson
except ImportError:  # pragma: no cover - an optional speed-up
    orjson = None

LOOKED_FOR = "metrics/<name> files of 'timestamp value step' lines"


def is_run(folder: Path) -> bool:
    """A run folder of the file store: ``meta.yaml`` beside ``metrics/`` or ``params/`` or ``tags/``."""
    return (folder / "meta.yaml").is_file() and any((folder / d).is_dir() for d in ("metrics", "params", "tags"))


def find_runs(folder: Path) -> list[Path]:
    """The run folders at or below ``folder`` (a run, an experiment, ``mlruns/``, or a folder holding it)."""
    if is_run(folder):
        return [folder]
    for pattern in ("*", "*/*", "mlruns/*/*"):
        runs = sorted(p for p in folder.glob(pattern) if p.is_dir() and is_run(p))
        if runs:
            return [r for r in runs if r.parent.name != ".trash"]
    return []


def run_label(run: Path) -> str:
    """``<experiment>/<run id> (name)``, for messages."""
    name_file = run / "tags" / "mlflow.runName"
    name = name_file.read_text(encoding="utf-8", errors="replace").strip() if name_file.is_file() else ""
    return f"{run.parent.name}/{run.name}" + (f" ({name})" if name else "")


def pick_run(folder: Path) -> Path:
    """The one run of ``folder`` that has metric files; an error naming the runs when there are several."""
    runs = find_runs(folder)
    with_metrics = [r for r in runs if _metric_files(r)]
    if len(with_metrics) == 1:
        return with_metrics[0]
    if not with_metrics:
        shown = ", ".join(run_label(r) for r in runs[:8])
        raise UserError(
            f"{folder}: an MLflow store with {len(runs)} run(s) ({shown}) but no logged metric: looked for "
            f"{LOOKED_FOR} in each run folder. Did the run log metrics (mlflow.log_metric, or TRL with "
            "report_to='mlflow')?"
        )
    shown = ", ".join(run_label(r) for r in with_metrics[:8])
    raise UserError(
        f"{folder}: an MLflow store with {len(with_metrics)} runs with metrics ({shown}); pass one run's folder"
    )


def _metric_files(run: Path) -> list[Path]:
    metrics = run / "metrics"
    return sorted(p for p in metrics.rglob("*") if p.is_file()) if metrics.is_dir() else []


def read_file_store(run: Path) -> tuple[ColumnBlock, list[str], str, dict]:
    """(records, notes, format, params) of one file-store run folder; the records (one per step: ``step``,
    then each metric logged at it, in file order; a step logged twice in a file: its last value) as a
    `ColumnBlock`."""
    files = _metric_files(run)
    if not files:
        raise UserError(f"{run}: an MLflow run without logged metrics: looked for {LOOKED_FOR} under {run / 'metrics'}")
    series: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    bad = 0
    known: tuple[list, np.ndarray] | None = None  # the last file's step column: most files share it
    for file in files:
        key = file.relative_to(run / "metrics").as_posix()
        text = file.read_text(encoding="utf-8", errors="replace")
        fast = _whole_lines(text, known)
        if fast is None:
            steps, values, skipped = _line_by_line(text)
            bad += skipped
        else:
            steps, values, known = fast
        series[key] = (steps, values)
    params = {}
    if (run / "params").is_dir():
        for file in sorted(p for p in (run / "params").rglob("*") if p.is_file()):
            params[file.relative_to(run / "params").as_posix()] = file.read_text(encoding="utf-8", errors="replace")
    notes = [f"MLflow run {run_label(run)}: {len(files)} metric(s)"]
    if bad:
        notes.append(f"MLflow: {bad} unreadable metric line(s) skipped")
    return _by_step(series), notes, "mlflow", params


def _whole_lines(text: str, known: tuple[list, np.ndarray] | None):
    """(steps, values, (step list, steps)) of a metric file whose every line is ``timestamp value step``
    of plain JSON numbers (an int step), parsed in one ``orjson`` call (lines apart by a ``null``); None
    otherwise (nan, inf, MLflow < 1.0's two fields, a bad line: then line by line)."""
    body = text.rstrip("\n")
    if orjson is None or "n" in body:  # nan, inf, null: line by line (a None is then only a line's end)
        return None
    lines = body.count("\n") + 1
    try:
        flat = orjson.loads("[" + body.replace(" ", ",").replace("\n", ",null,") + "]")
    except orjson.JSONDecodeError:
        return None
    if len(flat) != 4 * lines - 1 or flat[3::4].count(None) != lines - 1:
        return None  # some line is not three fields
    values, step_list = flat[1::4], flat[2::4]
    if set(map(type, step_list)) != {int} or not set(map(type, values)) <= {int, float}:
        return None
    steps = known[1] if known is not None and known[0] == step_list else np.array(step_list, dtype=np.int64)
    return steps, np.array(values, dtype=float), (step_list, steps)


def _line_by_line(text: str) -> tuple[np.ndarray, np.ndarray, int]:
    """(steps, values, lines skipped) of a metric file read line by line (MLflow < 1.0's ``timestamp
    value`` lines: step 0)."""
    steps, values, bad = [], [], 0
    for line in text.splitlines():
        parts = line.split()
        if len(parts) not in (2, 3):
            bad += bool(parts)
            continue
        try:
            value = float(parts[1])
            step = int(parts[2]) if len(parts) == 3 else 0
        except ValueError:
            bad += 1
            continue
        steps.append(step)
        values.append(value)
    return np.array(steps, dtype=np.int64), np.array(values, dtype=float), bad


def _by_step(series: dict[str, tuple[np.ndarray, np.ndarray]]) -> ColumnBlock:
    """The records ``{"step": s, metric: value, ...}`` of every step logged, in step order (each metric in
    file order; a step logged twice in one file: the later value), as columns: NaN where a metric was not
    logged at a step."""
    keys = list(series)
    columns = [s for s, _ in series.values()]
    if columns and all(s is columns[0] for s in columns) and np.all(columns[0][1:] > columns[0][:-1]):
        steps = columns[0]  # every metric logged at the same steps (one array, read once)
    else:
        steps = np.unique(np.concatenate(columns)) if columns else np.empty(0, np.int64)
    numbers = np.full((len(keys) + 1, len(steps)), np.nan)
    present = np.zeros((len(keys) + 1, len(steps)), dtype=bool)
    numbers[0], present[0] = steps, True
    first = []
    for j, (at, values) in enumerate(series.values(), start=1):
        if len(at) > 1 and not np.all(at[1:] > at[:-1]):  # out of order or repeated: the last value of a step
            last = len(at) - 1 - np.unique(at[::-1], return_index=True)[1]
            at, values = at[last], values[last]
        pos = np.searchsorted(steps, at)
        numbers[j, pos], present[j, pos] = values, True
        first.append(int(pos.min()) if len(pos) else len(steps))
    order = [0] + [j + 1 for j in sorted(range(len(keys)), key=lambda j: (first[j], j)) if first[j] < len(steps)]
    header = ["step"] + [keys[j - 1] for j in order[1:]]
    numbers, present = numbers[order], present[order]
    nan_logged = np.isnan(numbers) & present
    logged_nan = {k: nan_logged[i] for i, k in enumerate(header) if nan_logged[i].any()}
    file_order = sorted(range(1, len(header)), key=lambda i: keys.index(header[i]))

    def rows() -> list[dict]:
        cols = [(header[i], numbers[i].tolist(), present[i].tolist()) for i in file_order]
        out = []
        for r, step in enumerate(steps.tolist()):
            row = {"step": step}
            for key, col, has in cols:
                if has[r]:
                    row[key] = col[r]
            out.append(row)
        return out

    widest = int(present.sum(axis=0).max()) if len(steps) else 0
    return ColumnBlock(header, None, numbers.T, logged_nan=logged_nan, rows=rows, widest=widest)


def is_mlflow_db(db: Path) -> bool:
    """True when the SQLite file has MLflow's ``metrics`` table (``run_uuid`` and ``key`` columns)."""
    try:
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        try:
            cols = {row[1] for row in conn.execute("PRAGMA table_info(metrics)")}
        finally:
            conn.close()
    except sqlite3.DatabaseError:
        return False
    return {"run_uuid", "key", "value", "step"} <= cols


def read_sqlite_store(db: Path, run: str | None, label: str) -> tuple[list[dict], list[str], str, dict]:
    """(records, notes, format, params) of one run of an MLflow SQLite store."""
    try:
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        try:
            runs = conn.execute(
                "SELECT r.run_uuid, r.name FROM runs r WHERE r.run_uuid IN (SELECT DISTINCT run_uuid FROM metrics) "
                "ORDER BY r.start_time"
            ).fetchall()
            if run is not None:
                runs = [r for r in runs if run in r]
                if not runs:
                    raise UserError(f"{label}: no run {run!r} with metrics in {db}")
            if len(runs) != 1:
                shown = ", ".join(f"{u} ({n})" for u, n in runs[:8]) or "none"
                if not runs:
                    raise UserError(
                        f"{label}: an MLflow database without logged metrics: looked for rows in its metrics table "
                        "(mlflow.log_metric, or TRL with report_to='mlflow')"
                    )
                raise UserError(
                    f"{label}: this MLflow database holds {len(runs)} runs with metrics ({shown}); "
                    f"name one: {db}#RUN (its id or name)"
                )
            uuid, name = runs[0]
            rows = conn.execute(
                "SELECT key, value, step, is_nan FROM metrics WHERE run_uuid = ? ORDER BY step, timestamp", (uuid,)
            ).fetchall()
            params = dict(conn.execute("SELECT key, value FROM params WHERE run_uuid = ?", (uuid,)).fetchall())
        finally:
            conn.close()
    except sqlite3.DatabaseError as exc:
        raise UserError(f"{label}: an MLflow SQLite store that could not be read ({exc})") from None
    by_step: dict[int, dict] = {}
    for key, value, step, is_nan in rows:
        by_step.setdefault(int(step), {"step": int(step)})[key] = float("nan") if is_nan else value
    return [by_step[s] for s in sorted(by_step)], [f"MLflow run {uuid} ({name}) of {db.name}"], "mlflow", params
