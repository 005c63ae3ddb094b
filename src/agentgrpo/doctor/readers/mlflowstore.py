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

from agentgrpo.errors import UserError

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


def read_file_store(run: Path) -> tuple[list[dict], list[str], str, dict]:
    """(records, notes, format, params) of one file-store run folder."""
    files = _metric_files(run)
    if not files:
        raise UserError(f"{run}: an MLflow run without logged metrics: looked for {LOOKED_FOR} under {run / 'metrics'}")
    by_step: dict[int, dict] = {}
    bad = 0
    for file in files:
        key = file.relative_to(run / "metrics").as_posix()
        for line in file.read_text(encoding="utf-8", errors="replace").splitlines():
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
            by_step.setdefault(step, {"step": step})[key] = value
    params = {}
    if (run / "params").is_dir():
        for file in sorted(p for p in (run / "params").rglob("*") if p.is_file()):
            params[file.relative_to(run / "params").as_posix()] = file.read_text(encoding="utf-8", errors="replace")
    notes = [f"MLflow run {run_label(run)}: {len(files)} metric(s)"]
    if bad:
        notes.append(f"MLflow: {bad} unreadable metric line(s) skipped")
    return [by_step[s] for s in sorted(by_step)], notes, "mlflow", params


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
