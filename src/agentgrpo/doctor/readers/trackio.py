"""trackio's local store: one SQLite database per project (``<project>.db``), one ``metrics`` row per log call.

trackio keeps its databases in ``$TRACKIO_DIR``, else ``$HF_HOME/trackio`` (``~/.cache/huggingface/trackio``);
each ``metrics`` row holds ``run_name``, ``step`` and the logged dict as JSON (NaN/inf as strings). A run is
named ``trackio://PROJECT/RUN`` (``trackio://PROJECT`` when the project has one run), or by the database file,
``path/to/PROJECT.db`` (with ``#RUN`` when it holds several). Read with the standard library's sqlite3, so
reading needs no trackio install.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
from pathlib import Path

from agentgrpo.errors import UserError

SCHEME = "trackio://"


def trackio_dir() -> Path:
    """Where trackio keeps its project databases (the rule trackio itself uses)."""
    if os.environ.get("TRACKIO_DIR"):
        return Path(os.environ["TRACKIO_DIR"])
    hf_home = (
        os.environ.get("HF_HOME") or Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "huggingface"
    )
    return Path(hf_home) / "trackio"


def resolve(spec: str) -> tuple[Path, str | None]:
    """(database, run name or None) of ``trackio://PROJECT[/RUN]`` or ``FILE.db[#RUN]``.

    >>> resolve("/tmp/x/proj.db#run-1")
    (PosixPath('/tmp/x/proj.db'), 'run-1')
    """
    if spec.startswith(SCHEME):
        project, _, run = spec[len(SCHEME) :].partition("/")
        safe = "".join(c for c in project if c.isalnum() or c in "-_") or "default"
        return trackio_dir() / f"{safe}.db", run or None
    path, _, run = spec.partition("#")
    return Path(path), run or None


def is_spec(spec: str) -> bool:
    """True for a trackio run name (``trackio://...``) or a ``.db`` file with a ``#RUN``."""
    return spec.startswith(SCHEME) or bool(re.search(r"\.db#[^/]+$", spec))


def read_trackio(db: Path, run: str | None, label: str) -> tuple[list[dict], list[str], str]:
    """(records, notes, format) of one run of a trackio database."""
    if not db.is_file():
        where = (
            f" (trackio's folder: {trackio_dir()}, from $TRACKIO_DIR or $HF_HOME)" if label.startswith(SCHEME) else ""
        )
        raise UserError(f"{label}: no trackio database at {db}{where}")
    try:
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        try:
            runs = [r[0] for r in conn.execute("SELECT DISTINCT run_name FROM metrics ORDER BY id")]
            if run is None:
                if len(runs) != 1:
                    listed = ", ".join(runs[:20]) or "none"
                    raise UserError(
                        f"{label}: this trackio project holds {len(runs)} runs ({listed}); name one: "
                        f"trackio://{db.stem}/RUN or {db}#RUN"
                    )
                run = runs[0]
            elif run not in runs:
                raise UserError(f"{label}: no run {run!r} in {db} (runs: {', '.join(runs[:20]) or 'none'})")
            rows = conn.execute("SELECT step, metrics FROM metrics WHERE run_name = ? ORDER BY id", (run,)).fetchall()
        finally:
            conn.close()
    except sqlite3.DatabaseError as exc:
        raise UserError(f"{label}: a SQLite file but not a readable trackio store ({exc})") from None
    records, bad = [], 0
    for step, payload in rows:
        try:
            values = json.loads(payload)
        except (TypeError, json.JSONDecodeError):
            bad += 1
            continue
        if isinstance(values, dict):
            records.append({**{k: v for k, v in values.items() if not isinstance(v, dict | list)}, "step": step})
    notes = [f"trackio: {bad} unreadable metrics row(s) skipped"] if bad else []
    return records, notes + [f"trackio run {run!r} of {db.name}"], "trackio"
