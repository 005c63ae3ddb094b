"""The trackers users keep: W&B run files (written offline by wandb itself) and MLflow stores (written by mlflow).

Each store is written by the real library in a subprocess (skipped when the library is not installed) from
generated values, and read back through `read_run` from every folder a user may pass; the oracle is the
values logged. The LevelDB framing of a ``.wandb`` file is checked against an independent writer of the
documented format on generated payloads, blocks crossed included.
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import random
import struct
import subprocess
import sys
import textwrap
import zlib

import numpy as np
import pytest

from agentgrpo.doctor.readers import read_run, wandbrun
from agentgrpo.errors import UserError

STEPS = 23
NAN_STEP = 7


def _values(seed: int) -> list[dict]:
    """Generated TRL-style logs, under the names TRL gives them in a tracker (``train/`` prefix)."""
    rng = random.Random(seed)
    rows = []
    for step in range(1, STEPS + 1):
        rows.append(
            {
                "train/reward": rng.uniform(-1, 2),
                "train/reward_std": rng.uniform(0, 1),
                "train/kl": float("nan") if step == NAN_STEP else rng.uniform(0, 0.3),
                "train/completions/mean_length": rng.uniform(50, 300),
                "train/rewards/correct/mean": rng.uniform(0, 1),
                "train/rewards/format/mean": rng.uniform(0, 1),
                "train/global_step": step,
            }
        )
    return rows


def _write(script: str, tmp_path, **env) -> None:
    """Run ``script`` in a fresh interpreter (trackers start services and keep global state)."""
    full_env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), **env}
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script)],
        cwd=tmp_path,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr[-3000:]


def _check(run, rows: list[dict], cap: int | None) -> None:
    table = run.table
    assert table.steps.tolist() == list(range(1, STEPS + 1))
    assert np.allclose(table["reward"], [r["train/reward"] for r in rows])
    assert np.allclose(table["reward_std"], [r["train/reward_std"] for r in rows])
    assert np.allclose(table["completions/mean_length"], [r["train/completions/mean_length"] for r in rows])
    kl = table["kl"]
    expected = np.array([r["train/kl"] for r in rows])
    assert np.isnan(kl[NAN_STEP - 1]) and np.allclose(np.delete(kl, NAN_STEP - 1), np.delete(expected, NAN_STEP - 1))
    assert table.meta["nan_steps"] == {"kl": [NAN_STEP]}
    assert table.components() == ["correct", "format"]
    assert table.meta.get("max_completion_length") == cap


# -- W&B ---------------------------------------------------------------------------------------------------

WANDB_SCRIPT = """
import json, wandb
rows = json.load(open("rows.json"))
for name, data in (("a", rows), ("empty", [])):
    run = wandb.init(mode="offline", project="p", dir=".", name=name, config={"max_completion_length": 256})
    for r in data:
        wandb.log(r, step=r["train/global_step"])
    if data:
        wandb.log({"train/completions_table": wandb.Table(columns=["c"], data=[["x"]])}, step=len(data))
    run.finish()
"""


@pytest.fixture(scope="module")
def wandb_runs(tmp_path_factory):
    """Two offline runs written by wandb: one with the generated logs, one that logged nothing."""
    if importlib.util.find_spec("wandb") is None:
        pytest.skip("wandb not installed (pip install 'agentgrpo[wandb]')")
    tmp = tmp_path_factory.mktemp("wandb")
    rows = _values(1)
    (tmp / "rows.json").write_text(json.dumps(rows, allow_nan=True))
    _write(WANDB_SCRIPT, tmp, WANDB_MODE="offline", WANDB_SILENT="true", WANDB_DISABLE_GIT="true")
    runs = sorted(p.parent for p in (tmp / "wandb").glob("offline-run-*/*.wandb"))
    assert len(runs) == 2, runs
    full = next(r for r in runs if _has_history(r))
    empty = next(r for r in runs if r != full)
    return tmp, full, empty, rows


def _has_history(run_dir) -> bool:
    try:
        wandbrun.read_wandb(next(run_dir.glob("*.wandb")))
    except UserError:
        return False
    return True


def test_wandb_offline_run_read_from_each_folder(wandb_runs):
    tmp, full, empty, rows = wandb_runs
    for path in (full, next(full.glob("*.wandb"))):
        run = read_run(path)
        assert run.fmt == "wandb"
        _check(run, rows, 256)
    assert run.config["max_completion_length"] == 256
    # the project folder and wandb/ hold two runs: the doctor asks for one and names them
    for path in (tmp, tmp / "wandb"):
        with pytest.raises(UserError, match=r"W&B run files of 2 runs .*pass one run's folder"):
            read_run(path)


def test_wandb_run_without_metrics_says_what_was_looked_for(wandb_runs):
    _, _, empty, _ = wandb_runs
    with pytest.raises(UserError, match=r"without logged metrics: looked for history records.*found none"):
        read_run(empty)


def test_wandb_file_cut_short_reads_whole_records(wandb_runs, tmp_path):
    _, full, _, rows = wandb_runs
    data = next(full.glob("*.wandb")).read_bytes()
    whole, _ = wandbrun.scan(data)
    for cut in (len(data) - 3, len(data) // 2, len(data) // 3 + 11):
        part = tmp_path / f"cut{cut}.wandb"
        part.write_bytes(data[:cut])
        payloads, why = wandbrun.scan(data[:cut])
        assert payloads == whole[: len(payloads)] and len(payloads) < len(whole) and why
        try:
            run = read_run(part)
        except UserError as exc:  # cut before the first history row: said so
            assert "without logged metrics" in str(exc)
            continue
        n = len(run.table)
        assert 0 < n <= STEPS and np.allclose(run.table["reward"], [r["train/reward"] for r in rows[:n]])
        assert any("cut short" in note for note in run.notes)


def test_wandb_missing_package_is_a_clear_error(wandb_runs, monkeypatch):
    _, full, _, _ = wandb_runs
    monkeypatch.setitem(sys.modules, "wandb.proto", None)
    monkeypatch.setitem(sys.modules, "wandb.proto.wandb_internal_pb2", None)
    with pytest.raises(UserError, match=r"needs wandb: pip install wandb"):
        read_run(full)


ORACLE_SCRIPT = """
import json, math, random, sys, wandb
rng = random.Random(int(sys.argv[1]))
keys = ["train/reward", "train/kl", "train/entropy", "train/rewards/correct/mean", "eval/reward", "x" * 140]
run = wandb.init(mode="offline", project="p", dir=".", config={"max_completion_length": 128})
step = 0
for _ in range(180):
    step += rng.choice([1, 1, 1, 2, 7])  # missing steps; and 130, whose varint holds a value tag's bytes
    step = 130 if 123 < step < 130 else step
    row = {k: rng.uniform(-2, 2) for k in keys if rng.random() < 0.7}
    row["train/reward"] = rng.choice([rng.uniform(0, 1), float("nan"), 3, float("inf"), -float("inf")])
    if rng.random() < 0.1:
        row["note"] = rng.choice(["text", True, None, [1, 2], "NaN", "y" * 200])  # a value of 200 bytes
    if sys.argv[1] == "2" and rng.random() < 0.1:
        row["nested"] = {"a": rng.uniform(0, 1)}  # a two-part nested key: read record by record
    if rng.random() < 0.5:
        row["train/global_step"] = step
    wandb.log(row, step=step)
run.finish()
"""


@pytest.mark.parametrize("seed", range(3))
def test_wandb_bulk_read_equals_the_record_by_record_read(tmp_path, seed, monkeypatch):
    """Oracle: on a run written offline by wandb itself (generated values: NaN, +-Infinity, ints, keys
    missing from rows, skipped steps, non-numeric values, a key over 127 bytes), the bulk read gives the
    rows of wandb's own schema decoded record by record, and the same table, notes and config."""
    if importlib.util.find_spec("wandb") is None:
        pytest.skip("wandb not installed (pip install 'agentgrpo[wandb]')")
    from agentgrpo.doctor.readers import fasthistory

    full_env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    env = dict(full_env, WANDB_MODE="offline", WANDB_SILENT="true", WANDB_DISABLE_GIT="true")
    done = subprocess.run(
        [sys.executable, "-c", ORACLE_SCRIPT, str(seed)], cwd=tmp_path, env=env, capture_output=True, timeout=180
    )
    assert done.returncode == 0, done.stderr[-3000:]
    file = next(tmp_path.glob("wandb/offline-run-*/*.wandb"))
    block, notes, fmt, config = wandbrun.read_wandb(file)
    rows, slow_notes, slow_fmt, slow_config = wandbrun.read_wandb(file, bulk=False)
    assert isinstance(block, fasthistory.ColumnBlock) == (seed != 2), "the bulk read gave up on a run wandb wrote"
    if seed == 2:
        assert repr(block) == repr(rows)
        return
    assert (notes, fmt, config) == (slow_notes, slow_fmt, slow_config)
    assert repr(block.records()) == repr(rows)  # NaN included; same keys, same order, same types
    assert len(block) == len(rows) and block.header == list(dict.fromkeys(k for r in rows for k in r))
    for j, key in enumerate(block.header):
        expected = [r.get(key, math.nan) for r in rows]
        assert np.array_equal(block.numbers[:, j], np.array(expected, dtype=float), equal_nan=True), key
    fast = read_run(file)
    monkeypatch.setattr(fasthistory, "read", lambda *args: None)
    slow = read_run(file)
    assert fast.notes == slow.notes and fast.config == slow.config
    assert fast.table.meta == slow.table.meta and np.array_equal(fast.table.steps, slow.table.steps)
    assert list(fast.table.columns) == list(slow.table.columns)
    for name, col in slow.table.columns.items():
        assert np.array_equal(fast.table[name], col, equal_nan=True), name


def _leveldb_log(payloads: list[bytes]) -> bytes:
    """An independent writer of the LevelDB log format (doc/log_format.md) with W&B's 7-byte file header."""
    out = bytearray(b":W&B" + struct.pack("<HB", 0xBEE1, 0))
    for data in payloads:
        first = True
        while True:
            left = 32768 - len(out) % 32768
            if left < 7:
                out += b"\x00" * left
                left = 32768
            room = left - 7
            chunk, data = data[:room], data[room:]
            kind = (1 if first else 4) if not data else (2 if first else 3)
            crc = zlib.crc32(chunk, zlib.crc32(bytes([kind]))) & 0xFFFFFFFF
            out += struct.pack("<IHB", crc, len(chunk), kind) + chunk
            first = False
            if not data:
                break
    return bytes(out)


@pytest.mark.parametrize("seed", range(6))
def test_wandb_framing_against_an_independent_writer(seed):
    rng = random.Random(seed)
    sizes = [rng.choice([0, 1, 6, 7, 100, 32760, 32761, 40000, 70000]) for _ in range(rng.randint(1, 12))]
    payloads = [bytes(rng.getrandbits(8) for _ in range(n)) for n in sizes]
    data = _leveldb_log(payloads)
    assert wandbrun.scan(data) == (payloads, "")
    flipped = bytearray(data)
    flipped[len(data) // 2] ^= 0xFF
    got, why = wandbrun.scan(bytes(flipped))
    assert got == payloads[: len(got)] and (why or got == payloads)


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        out.append((n & 0x7F) | (0x80 if n > 0x7F else 0))
        n >>= 7
        if not n:
            return bytes(out)


def _record(rng: random.Random, num: int, odd: float) -> bytes:
    """A Record-shaped payload: ``num`` then a history, summary, config or other field; or random bytes."""
    body = bytes(rng.getrandbits(8) for _ in range(rng.choice([0, 3, 120, 2000, 40000])))
    field = rng.choice([2, 2, 2, 3, 3, 5, 17, 26, 9])
    tag = _varint((field << 3) | 2)
    shapes = [
        b"\x08" + _varint(num) + tag + _varint(len(body)) + body,
        b"\x08" + _varint(num) + tag + _varint(len(body) + 5) + body,  # a length past the payload's end
        tag + _varint(len(body)) + body,  # no num
        bytes(rng.getrandbits(8) for _ in range(rng.randint(0, 40))),
    ]
    return shapes[0] if rng.random() >= odd else rng.choice(shapes)


@pytest.mark.parametrize("seed", range(8))
def test_wandb_bulk_framing_equals_the_chunk_by_chunk_scan(seed):
    """Oracle: on files of the independent writer (records crossing blocks, history and other records,
    odd shapes, then a flipped byte), the numpy walk finds the same history bodies and kept records as
    `scan` and the record-by-record split, or hands the file to them."""
    from functools import partial

    from agentgrpo.doctor.readers import wandbframes

    rng = random.Random(seed)
    payloads = [_record(rng, num, 0.0 if seed % 2 else 0.05) for num in range(1, rng.randint(2, 60))]
    data = _leveldb_log(payloads)
    oneof, wanted = frozenset({2, 3, 5, 9, 17, 26}), {2, 5, 17}
    classify = partial(wandbrun._classify, oneof=oneof, wanted=wanted)
    for blob in (data, data[: len(data) * 2 // 3], bytes(b ^ 0xFF if i == len(data) // 2 else b for i, b in
                                                          enumerate(data))):
        found = wandbframes.history_bodies(blob, classify, oneof - wanted)
        scanned, why = wandbrun.scan(blob)
        expected = wandbrun._split_history(scanned, oneof, wanted)
        if found is None:
            assert why or expected[1] is None or blob != data
            continue
        bodies, rest, skipped = found
        assert not why
        assert expected[1] is not None
        assert [bytes(blob[b[0] : b[1]]) if isinstance(b, tuple) else b for b in bodies] == expected[0]
        assert (rest, skipped) == (expected[1], expected[2])
        if blob == data:
            assert len(bodies) + len(rest) + skipped == len(payloads)
    if seed % 2:  # plain records only: read in bulk
        assert wandbframes.history_bodies(data, classify, oneof - wanted) is not None


def test_not_a_wandb_file(tmp_path):
    if importlib.util.find_spec("wandb") is None:
        pytest.skip("wandb not installed")
    bad = tmp_path / "run-x.wandb"
    bad.write_bytes(b":W&Bxx\x00garbage")
    with pytest.raises(UserError, match="not a W&B run file"):
        read_run(bad)


def test_tracker_folders_without_a_run_say_what_was_looked_for(tmp_path):
    """A wandb/ folder, a run folder without its .wandb file, an mlruns/ store with no run: each error names
    the tracker and the files looked for, not only the generic list of log formats."""
    (tmp_path / "p" / "wandb" / "offline-run-20260101_000000-abc123" / "files").mkdir(parents=True)
    (tmp_path / "m" / "mlruns" / "0").mkdir(parents=True)
    (tmp_path / "m" / "mlruns" / "0" / "meta.yaml").write_text("experiment_id: '0'\n")
    wandb_message = r"a W&B folder without a run file: looked for run-\*\.wandb here.*found none"
    run = tmp_path / "p" / "wandb" / "offline-run-20260101_000000-abc123"
    for path in (tmp_path / "p", tmp_path / "p" / "wandb", run):
        with pytest.raises(UserError, match=wandb_message):
            read_run(path)
    mlflow_message = r"an MLflow store without a run: looked for run folders .*meta\.yaml and metrics/.*found none"
    for path in (tmp_path / "m", tmp_path / "m" / "mlruns", tmp_path / "m" / "mlruns" / "0"):
        with pytest.raises(UserError, match=mlflow_message):
            read_run(path)
    (tmp_path / "other").mkdir()
    with pytest.raises(UserError, match=r"no training log in this directory \(found: nothing\)"):
        read_run(tmp_path / "other")


# -- MLflow ------------------------------------------------------------------------------------------------

MLFLOW_SCRIPT = """
import json, mlflow
rows = json.load(open("rows.json"))
mlflow.set_tracking_uri(open("uri.txt").read())
mlflow.set_experiment("grpo")
with mlflow.start_run(run_name="a"):
    mlflow.log_params({"max_completion_length": 192, "learning_rate": 1e-6})
    for r in rows:
        step = r["train/global_step"]
        mlflow.log_metrics({k: v for k, v in r.items() if k != "train/global_step"}, step=step)
with mlflow.start_run(run_name="nothing"):
    mlflow.log_params({"lr": 1})
"""


def _mlflow_store(tmp, uri: str) -> list[dict]:
    if importlib.util.find_spec("mlflow") is None:
        pytest.skip("mlflow not installed (pip install mlflow-skinny)")
    rows = _values(2)
    (tmp / "rows.json").write_text(json.dumps(rows, allow_nan=True))
    (tmp / "uri.txt").write_text(uri)
    _write(MLFLOW_SCRIPT, tmp, MLFLOW_ALLOW_FILE_STORE="true")
    return rows


def test_mlflow_file_store_read_from_each_folder(tmp_path):
    rows = _mlflow_store(tmp_path, f"file://{tmp_path / 'mlruns'}")
    run_dir = next(p.parent.parent for p in (tmp_path / "mlruns").glob("*/*/metrics/train"))
    for path in (tmp_path, tmp_path / "mlruns", run_dir.parent, run_dir):
        run = read_run(path)
        assert run.fmt == "mlflow"
        _check(run, rows, 192)
    empty = next(p for p in run_dir.parent.iterdir() if p.is_dir() and p != run_dir)
    expected = r"MLflow store with 1 run.* \(nothing\)\) but no logged metric: looked for metrics/<name> files"
    with pytest.raises(UserError, match=expected):
        read_run(empty)


def test_mlflow_sqlite_store(tmp_path):
    if importlib.util.find_spec("sqlalchemy") is None or importlib.util.find_spec("alembic") is None:
        pytest.skip("mlflow's SQLite store needs sqlalchemy and alembic")
    rows = _mlflow_store(tmp_path, f"sqlite:///{tmp_path / 'mlflow.db'}")
    for path in (tmp_path / "mlflow.db", tmp_path):  # the database, or the folder MLflow created it in
        run = read_run(path)
        assert run.fmt == "mlflow"
        _check(run, rows, 192)
    assert read_run(f"{tmp_path / 'mlflow.db'}#a").table.steps.tolist() == list(range(1, STEPS + 1))


def test_mlflow_store_without_any_metric(tmp_path):
    run = tmp_path / "mlruns" / "0" / "abc"
    (run / "params").mkdir(parents=True)
    (run / "metrics").mkdir()
    (run / "meta.yaml").write_text("run_id: abc\n")
    with pytest.raises(UserError, match=r"MLflow store with 1 run\(s\) .*no logged metric: looked for metrics/<name>"):
        read_run(tmp_path)


def test_committed_stores_written_by_the_libraries():
    """Stores written by mlflow 3.18 and wandb 0.31 (tests/data/trackers/README.md), read without writing."""
    from pathlib import Path

    data = Path(__file__).parent / "data" / "trackers"
    run = read_run(data / "mlruns")
    assert run.fmt == "mlflow" and len(run.table) == 40 and run.table.meta["max_completion_length"] == 256
    if importlib.util.find_spec("wandb") is not None:
        run = read_run(data / "wandb")
        assert run.fmt == "wandb" and len(run.table) == 40 and run.table.meta["max_completion_length"] == 256


def test_public_wandb_run_written_by_wandb_0_14():
    """A public 2023 run file (wandb 0.14.2's Python writer): every row read; the last equals wandb-summary.json."""
    if importlib.util.find_spec("wandb") is None:
        pytest.skip("wandb not installed")
    from pathlib import Path

    run_dir = Path(__file__).parent / "data" / "trackers" / "public-wandb-2023" / "run-20230420_073822-clnzftry"
    rows, _, fmt, _ = wandbrun.read_wandb(run_dir / "run-clnzftry.wandb")
    rows = rows.records()
    summary = json.loads((run_dir / "files" / "wandb-summary.json").read_text())
    assert fmt == "wandb" and len(rows) == summary["_step"] + 1
    assert [r["_step"] for r in rows] == list(range(len(rows)))
    assert {k: rows[-1][k] for k in ("loss", "lr", "epoch", "batch_id")} == {
        k: summary[k] for k in ("loss", "lr", "epoch", "batch_id")
    }
    with pytest.raises(UserError, match=r"78 logged steps but no reward metric .*found: .*loss"):
        read_run(run_dir)


# -- W&B "Export CSV" ------------------------------------------------------------------------------------


def _export(tmp_path, runs: list[str], seed: int):
    """A W&B panel export of ``runs``: ``Step``, then per run ``<run> - train/<metric>`` with its
    ``__MIN``/``__MAX`` band; a run's cell blank where it did not log that step."""
    rng = random.Random(seed)
    values = {run: {s: (rng.uniform(-1, 2), rng.uniform(0, 0.2)) for s in range(1, STEPS + 1)} for run in runs}
    for run in runs[1:]:
        del values[run][rng.randint(1, STEPS)]  # a step this run did not log
    header = ["Step"] + [
        f"{run} - train/{m}{band}" for run in runs for m in ("reward", "kl") for band in ("", "__MIN", "__MAX")
    ]
    lines = [",".join(f'"{h}"' for h in header)]
    for s in range(1, STEPS + 1):
        cells = [str(s)]
        for run in runs:
            for j in range(2):
                cell = "" if s not in values[run] else repr(values[run][s][j])
                cells += [cell, cell, cell]
        lines.append(",".join(cells))
    path = tmp_path / f"wandb_export_{seed}.csv"
    path.write_text("\n".join(lines) + "\n")
    return path, values


@pytest.mark.parametrize("seed,runs", [(0, ["run-a"]), (1, ["grpo lr=1e-6", "grpo lr=3e-6"]), (2, ["x", "y", "z"])])
def test_wandb_csv_export_one_run_at_a_time(tmp_path, seed, runs):
    path, values = _export(tmp_path, runs, seed)
    if len(runs) > 1:
        with pytest.raises(UserError, match=rf"metrics of {len(runs)} runs .*#RUN"):
            read_run(path)
    for run in runs:
        table = read_run(path if len(runs) == 1 else f"{path}#{run}").table
        steps = sorted(values[run])
        assert table.steps.tolist() == steps
        assert np.allclose(table["reward"], [values[run][s][0] for s in steps])
        assert np.allclose(table["kl"], [values[run][s][1] for s in steps])
        assert not any("__" in name for name in table.names())
    with pytest.raises(UserError, match="no run 'nope'"):
        read_run(f"{path}#nope")


def test_csv_with_dashes_in_metric_names_is_one_run(tmp_path):
    path = tmp_path / "log.csv"
    path.write_text("step,reward,train - loss,eval - acc\n" + "".join(f"{s},{s / 10},0.5,0.1\n" for s in range(1, 9)))
    assert read_run(path).table.steps.tolist() == list(range(1, 9))


def test_mlflow_file_store_old_lines_and_bad_lines_are_counted(tmp_path):
    """MLflow < 1.0 wrote `timestamp value` (no step: step 0); a line that is not a metric line is counted in a
    note, never silently dropped; values are read as written."""
    run = tmp_path / "mlruns" / "1" / "r1"
    (run / "metrics").mkdir(parents=True)
    (run / "meta.yaml").write_text("run_id: r1\n")
    rng = random.Random(5)
    rewards = [rng.uniform(-1, 1) for _ in range(12)]
    (run / "metrics" / "reward").write_text("".join(f"{1000 + s} {r!r} {s}\n" for s, r in enumerate(rewards, 1)))
    (run / "metrics" / "kl").write_text("".join(f"{1000 + s} 0.01 {s}\n" for s in range(1, 13)) + "garbage here\n")
    (run / "metrics" / "old_style").write_text("1000 0.5\n")
    got = read_run(tmp_path)
    assert got.table.steps.tolist() == list(range(0, 13))
    assert np.allclose(got.table["reward"][1:], rewards)
    assert any("1 unreadable metric line" in note for note in got.notes)


def _mlflow_reference(run) -> tuple[list[dict], int]:
    """Oracle: the file store read line by line in plain Python (the reader before its column-wise read)."""
    by_step, bad = {}, 0
    for file in sorted(p for p in (run / "metrics").rglob("*") if p.is_file()):
        key = file.relative_to(run / "metrics").as_posix()
        for line in file.read_text(encoding="utf-8", errors="replace").splitlines():
            parts = line.split()
            if len(parts) not in (2, 3):
                bad += bool(parts)
                continue
            try:
                value, step = float(parts[1]), int(parts[2]) if len(parts) == 3 else 0
            except ValueError:
                bad += 1
                continue
            by_step.setdefault(step, {"step": step})[key] = value
    return [by_step[s] for s in sorted(by_step)], bad


def _odd_line(rng: random.Random, step: int) -> str:
    return rng.choice(
        [
            f"1000 nan {step}\n", f"1000 inf {step}\n", f"1000 -inf {step}\n", "1000 0.5\n", "garbage here\n",
            f"1000 {step}\n", f"1000  0.25 {step}\n", f"1000 0.25 {step}\r\n", f"1000 0.25 {step}.0\n",
            f"1000 1_0 {step}\n", f"1000 +1 {step}\n", f"1000 true {step}\n", "\n", f"1000 1e400 {step}\n",
            f"1000 0.1 {step} extra\n", f"null 0.3 {step}\n", f" 1000 0.2 {step}\n", f"1000 7 {step}\n",
        ]
    )


@pytest.mark.parametrize("seed", range(8))
def test_mlflow_column_read_equals_line_by_line(tmp_path, seed, monkeypatch):
    """Generated file stores (metrics at shared and at their own steps, steps repeated and out of order,
    nan/inf, old two-field lines, bad lines, sub-folder names): the column-wise read gives the records of the
    plain line-by-line oracle, and `read_run` the table those records give."""
    from agentgrpo.doctor.readers import mlflowstore
    from agentgrpo.doctor.readers import read as read_module

    rng = random.Random(seed)
    run = tmp_path / "mlruns" / "0" / "r"
    (run / "metrics" / "rewards").mkdir(parents=True)
    (run / "meta.yaml").write_text("run_id: r\n")
    shared = sorted(rng.sample(range(1, 400), 150))
    names = ["reward", "kl", "rewards/correct", "entropy", "train_runtime" if seed == 3 else "loss"]
    for i, name in enumerate(names):
        steps = shared if i < 3 or rng.random() < 0.5 else sorted(rng.sample(range(0, 500), rng.randint(1, 60)))
        if seed % 2 and i == 4:
            steps = steps[:40] + steps[:10]  # logged again (a resumed run)
        lines = [f"{1700000000000 + s} {rng.uniform(-1, 1)!r} {s}\n" for s in steps]
        if seed % 4 == 2 and i == 1:
            lines = [_odd_line(rng, s) if rng.random() < 0.2 else line for line, s in zip(lines, steps)]
        (run / "metrics" / name).write_text("".join(lines).rstrip("\n") if i == 2 else "".join(lines))
    block, notes, fmt, _ = mlflowstore.read_file_store(run)
    expected, bad = _mlflow_reference(run)
    assert repr(block.records()) == repr(expected)
    assert any(f"{bad} unreadable" in n for n in notes) == (bad > 0)
    fast = read_run(run)
    monkeypatch.setattr(read_module, "_block_table", lambda *args: None)  # the general path, from the records
    slow = read_run(run)
    assert fast.notes == slow.notes and fast.table.meta == slow.table.meta
    assert np.array_equal(fast.table.steps, slow.table.steps) and list(fast.table.columns) == list(slow.table.columns)
    for name, col in slow.table.columns.items():
        assert np.array_equal(fast.table[name], col, equal_nan=True), name


def test_cli_reads_a_wandb_run_folder(capsys):
    """`agentgrpo doctor wandb/` on the committed run written by wandb: read, diagnosed, exit status 0."""
    if importlib.util.find_spec("wandb") is None:
        pytest.skip("wandb not installed")
    from pathlib import Path

    from agentgrpo.cli import main

    folder = Path(__file__).parent / "data" / "trackers" / "wandb"
    assert main(["doctor", str(folder), "--no-report"]) == 0
    out = capsys.readouterr().out
    assert "read 40 logged steps (1–40) from wandb" in out
