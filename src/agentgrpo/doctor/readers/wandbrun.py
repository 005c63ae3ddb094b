"""Weights & Biases run files (``wandb/run-*/run-*.wandb``, written online and offline): the ``wandb.log`` rows.

A ``.wandb`` file is W&B's transaction log: a 7-byte header (``:W&B``, magic 0xBEE1, version 0), then
protobuf ``Record`` messages in LevelDB log framing (32 KiB blocks; each chunk: crc32 of type+data,
length, type FULL/FIRST/MIDDLE/LAST). The records are decoded with the ``wandb`` package's own protobuf
schema (``wandb.proto.wandb_internal_pb2.Record``; ``pip install 'agentgrpo[wandb]'``); wandb < 0.24 also
ships the framing reader (``wandb.sdk.internal.datastore``), later versions read it in Go only, so the
framing is scanned here, checking each chunk's crc. A file cut mid-record (a run killed while writing) is
read up to its last whole record. ``history`` records are the logged rows (``_step`` is W&B's step; TRL's
``train/global_step`` is preferred by the step lookup); ``config`` records give the run's config
(TRL's ``max_completion_length``).

History records are read in bulk (`fasthistory`, with its optional C decoder where built): a 100,000-step
run in under a second rather than ten; record by record with wandb's schema when a run file is written in a
way the bulk read does not cover.
"""

from __future__ import annotations

import importlib.util
import json
import mmap
import re
import struct
import sys
import types
import zlib
from functools import partial
from pathlib import Path

import numpy as np

from agentgrpo.doctor.readers import fasthistory, wandbframes
from agentgrpo.doctor.table import ColumnBlock
from agentgrpo.errors import UserError

MAGIC = b":W&B\xe1\xbe\x00"  # ident ":W&B", magic 0xBEE1 (little-endian), version 0
INSTALL_HINT = "pip install wandb  (or: pip install 'agentgrpo[wandb]')"
BLOCK = 32768
HEADER = 7
FULL, FIRST, MIDDLE, LAST = 1, 2, 3, 4
_TYPE_CRC = {t: zlib.crc32(bytes([t])) & 0xFFFFFFFF for t in (FULL, FIRST, MIDDLE, LAST)}
_FRAME = struct.Struct("<IHB")  # a chunk's header: crc32, length, type


def run_files(folder: Path) -> list[Path]:
    """The ``run-*.wandb`` files of a run folder, a ``wandb/`` folder or a project holding ``wandb/``."""
    found = sorted(folder.glob("*.wandb"))
    if not found:
        found = sorted(folder.glob("*/*.wandb"))
    if not found:
        found = sorted(folder.glob("wandb/*/*.wandb"))
    unique = {p.resolve(): p for p in reversed(found) if p.is_file()}  # wandb/latest-run links to a run folder
    return sorted(unique.values())


def scan(data: bytes) -> tuple[list[bytes], str]:
    """The payloads of a LevelDB-framed log after its header, and a note when it ends early or is corrupt.

    >>> scan(b"")
    ([], '')
    """
    out: list[bytes] = []
    append, unpack, crc32, full_crc = out.append, _FRAME.unpack_from, zlib.crc32, _TYPE_CRC[FULL]
    i, n, pending = HEADER, len(data), None
    while i < n:
        left = BLOCK - i % BLOCK
        if left < HEADER:  # block trailer: zero padding
            i += left
            continue
        if i + HEADER > n:
            return out, f"cut short: {n - i} trailing byte(s) after the last whole record ignored"
        crc, length, kind = unpack(data, i)
        if kind == FULL:  # most records: one whole chunk, read here at once (the checks below otherwise)
            end = i + HEADER + length
            chunk = data[i + HEADER : end]
            if crc32(chunk, full_crc) == crc and end <= n:
                append(chunk)
                i = end
                continue
        if kind == 0 and length == 0 and crc == 0:  # preallocated zeros (a run still writing)
            break
        chunk = data[i + HEADER : i + HEADER + length]
        if len(chunk) < length:
            return out, f"cut short: the last record's {length}-byte chunk has {len(chunk)} bytes; read up to it"
        if kind not in _TYPE_CRC or zlib.crc32(chunk, _TYPE_CRC[kind]) & 0xFFFFFFFF != crc:
            return out, f"corrupt chunk at byte {i} (bad type or checksum): read the {len(out)} records before it"
        i += HEADER + length
        if kind == FULL:
            out.append(chunk)
        elif kind == FIRST:
            pending = chunk
        elif pending is not None:
            pending += chunk
            if kind == LAST:
                out.append(pending)
                pending = None
    if pending is not None:
        return out, "cut short inside a record split over blocks; read up to it"
    return out, ""


def read_wandb(path: Path, bulk: bool = True) -> tuple[list[dict] | ColumnBlock, list[str], str, dict]:
    """(records, notes, format, config) of one ``.wandb`` file; the records as a `ColumnBlock` when read in
    bulk (``bulk=False``: always record by record, with wandb's schema: the tests' oracle)."""
    try:
        pb = _schema()
    except ImportError:
        raise UserError(f"{path}: reading a W&B run file (.wandb) needs wandb: {INSTALL_HINT}") from None
    data = _mapped(path)
    if data[: len(MAGIC)] != MAGIC:
        raise UserError(f"{path}: not a W&B run file (starts with {data[:7]!r}, expected the ':W&B' header)")
    fields = pb.Record.DESCRIPTOR.fields_by_name
    oneof = frozenset(f.number for f in pb.Record.DESCRIPTOR.oneofs_by_name["record_type"].fields)
    wanted = {fields[name].number for name in ("history", "config", "run")}
    history = fields["history"].number
    block, payloads, why = None, None, ""
    if bulk and history == HISTORY:
        split = wandbframes.history_bodies(data, partial(_classify, oneof=oneof, wanted=wanted), oneof - wanted)
        if split is None:  # framing `scan` notes something about, or records of another shape
            payloads, why = scan(data)
            split = _split_history(payloads, oneof, wanted)
        bodies, rest, skipped = split
        if bodies and rest is not None:
            block = fasthistory.read(*_joined(data, bodies))
    if block is None:  # record by record: every payload through wandb's schema
        if payloads is None:
            payloads, why = scan(data)
        rest, skipped = payloads, 0
    notes = [f"{path.name}: {why}"] if why else []
    counts = {"history": len(block)} if block is not None else {}
    histories, config, other, bad = _decode(rest, pb.Record(), oneof, wanted, counts)
    skipped += other
    rows = block if block is not None else _rows(histories)
    if bad:
        notes.append(f"{path.name}: {bad} record(s) that wandb's schema could not decode skipped")
    if not (block.widest > 1 if block is not None else any(len(r) > 1 for r in rows)):
        shown = ", ".join(f"{k} {v}" for k, v in sorted(counts.items()) if k != "history") or "no records"
        raise UserError(
            f"{path}: a W&B run file without logged metrics: looked for history records (the rows of wandb.log) "
            f"with a metric and found none ({counts.get('history', 0)} history records; also {shown}, and "
            f"{skipped} records of other types). Was the run stopped before its first logging step? With TRL, "
            "report_to='wandb' and logging_steps decide what is logged."
        )
    notes.append(f"W&B run file {path.name}: {len(rows)} history rows")
    return rows, notes, "wandb", config


def _decode(payloads, record, oneof, wanted: set, counts: dict) -> tuple[list, dict, int, int]:
    """(history rows as (items, step), config, records of other types skipped, undecodable records) of the
    payloads read through wandb's schema; ``counts`` gains each record type's count."""
    histories, config, skipped, bad = [], {}, 0, 0
    for payload in payloads:
        kind_number = _record_kind(payload, oneof)
        if kind_number is not None and kind_number not in wanted:  # another type (summary, stats, output, ...)
            skipped += 1
            continue
        try:
            record.ParseFromString(payload)
        except Exception:  # protobuf's DecodeError; a record of a newer schema
            bad += 1
            continue
        kind = record.WhichOneof("record_type") or "unknown"
        counts[kind] = counts.get(kind, 0) + 1
        if kind == "history":
            step = record.history.step.num if record.history.HasField("step") else None
            histories.append(([(_key(item), item.value_json) for item in record.history.item], step))
        elif kind in ("config", "run"):
            items = record.config.update if kind == "config" else record.run.config.update
            for item in items:
                config[_key(item)] = _config_value(item.value_json)
    return histories, config, skipped, bad


# A Record's ``num`` (field 1, a varint), then its history field (field 2: tag 0x12, the body's length) or
# another field's one-byte tag
_HEAD = re.compile(rb"\x08[\x80-\xff]{0,9}[\x00-\x7f](?:\x12([\x80-\xff]{0,4}[\x00-\x7f])|([\x00-\x7f]))")
HISTORY = 2  # Record.history's field number


def _split_history(payloads: list[bytes], oneof: frozenset[int], wanted: set[int]):
    """(the ``HistoryRecord`` bodies of the history records, the payloads of the other wanted records, the
    number of records of other types), read from each payload's first fields (`_classify`); ``rest`` is None
    when some history record is not of that plain shape (then every record is decoded one by one)."""
    bodies, rest, skipped = [], [], 0
    for payload in payloads:
        what, body = _classify(payload, oneof, wanted)
        if what == "fallback":
            return [], None, 0
        if what == "history":
            bodies.append(body)
        elif what == "keep":
            rest.append(payload)
        else:
            skipped += 1
    return bodies, rest, skipped


def _classify(payload: bytes, oneof: frozenset[int], wanted: set[int]) -> tuple[str, bytes | None]:
    """("history", its HistoryRecord body) for a record that starts with its ``num`` and then its history
    field, ("keep", None) for another wanted record (or one of an unknown type), ("skip", None) for a record of
    another type, ("fallback", None) for a history record of another shape; read without decoding."""
    head = _HEAD.match(payload)
    if head is not None and head.lastindex == 1:
        size = head.group(1)
        length = size[0] if len(size) == 1 else sum((b & 0x7F) << (7 * k) for k, b in enumerate(size))
        end = head.end() + length
        if end > len(payload):
            return "fallback", None
        return "history", payload[head.end() : end]
    number = payload[head.end() - 1] >> 3 if head is not None else None
    kind = number if number in oneof else _record_kind(payload, oneof)
    if kind == HISTORY:
        return "fallback", None
    if kind is None or kind in wanted:
        return "keep", None
    return "skip", None


def _joined(data: bytes, bodies: list) -> tuple[bytes, np.ndarray]:
    """The bodies (bytes, or (start, end) in ``data``) joined, and the offsets where each starts (and the end)."""
    view = memoryview(data)
    parts = [view[b[0] : b[1]] if isinstance(b, tuple) else b for b in bodies]
    offsets = np.zeros(len(parts) + 1, dtype=np.int64)
    np.cumsum([len(p) for p in parts], out=offsets[1:])
    return b"".join(parts), offsets


def _mapped(path: Path) -> bytes | mmap.mmap:
    """The file's bytes, mapped rather than copied (a run file can be hundreds of MB); read when it cannot be
    mapped (an empty file)."""
    try:
        with path.open("rb") as handle:
            return mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
    except (ValueError, OSError):
        return path.read_bytes()


def _schema():
    """wandb's protobuf module for run files (``wandb.proto.wandb_internal_pb2``).

    Importing it the usual way first runs ``wandb/__init__.py`` (the whole SDK: about half a second, more
    than the doctor's whole diagnosis). When wandb is not imported yet, its ``proto`` subpackage is loaded
    under a bare stand-in for the ``wandb`` package that is removed again at once, so a later ``import
    wandb`` runs the real package and finds these same proto modules (registered once in protobuf's pool).
    """
    if "wandb" in sys.modules:
        from wandb.proto import wandb_internal_pb2

        return wandb_internal_pb2
    spec = importlib.util.find_spec("wandb")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("wandb")
    stand_in = types.ModuleType("wandb")
    stand_in.__path__ = list(spec.submodule_search_locations)
    sys.modules["wandb"] = stand_in
    try:
        from wandb.proto import wandb_internal_pb2
    finally:
        if sys.modules.get("wandb") is stand_in:
            del sys.modules["wandb"]
    return wandb_internal_pb2


def _rows(histories: list[tuple[list[tuple[str, str]], int | None]]) -> list[dict]:
    """The logged rows: every item's JSON value decoded at once (one parse for the whole run; item by item
    only when some value is not JSON), kept when it is a number (NaN/Infinity included); W&B's bookkeeping
    keys (``_runtime``, ``_timestamp``) dropped, ``_step`` kept."""
    texts = [value for items, _ in histories for _, value in items]
    try:
        values = json.loads("[" + ",".join(texts) + "]")
    except (json.JSONDecodeError, ValueError):
        values = [_value(text) for text in texts]
    rows, i = [], 0
    for items, step in histories:
        row = {}
        for key, _ in items:
            value = values[i]
            i += 1
            if type(value) in (int, float) and (key == "_step" or not key.startswith("_")):
                row[key] = value
        if step is not None and "_step" not in row:
            row["_step"] = step
        if row:
            rows.append(row)
    return rows


def _record_kind(payload: bytes, oneof: frozenset[int]) -> int | None:
    """The field number of the Record's ``record_type`` (one of ``oneof``), read from the wire without
    decoding: top-level fields are walked (varints, length-delimited, fixed) until one of the oneof's. None
    when the payload ends first or holds a wire type not walked here (then it is decoded).

    >>> _record_kind(bytes([0x08, 0x96, 0x01, 0x82, 0x01, 0x01, 0x00, 0x12, 0x00]), frozenset({2, 3}))
    2
    >>> _record_kind(bytes([0x1A, 0x00]), frozenset({2, 3})), _record_kind(b"", frozenset({2}))
    (3, None)
    """
    i, n = 0, len(payload)
    while i < n:
        tag = shift = 0
        while True:
            if i >= n:
                return None
            byte = payload[i]
            i += 1
            tag |= (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                break
        number, wire = tag >> 3, tag & 7
        if number in oneof:
            return number
        if wire == 0:
            while i < n and payload[i] & 0x80:
                i += 1
            i += 1
        elif wire == 2:
            length = shift = 0
            while True:
                if i >= n:
                    return None
                byte = payload[i]
                i += 1
                length |= (byte & 0x7F) << shift
                shift += 7
                if not byte & 0x80:
                    break
            i += length
        elif wire in (1, 5):
            i += 8 if wire == 1 else 4
        else:
            return None
    return None


def _key(item) -> str:
    key = item.key
    if key:
        return key
    nested = item.nested_key
    return nested[0] if len(nested) == 1 else "/".join(nested)


def _value(text: str):
    """A logged scalar (numbers, NaN/Infinity as JSON tokens); None for tables, media and other objects."""
    try:
        value = json.loads(text)
    except (json.JSONDecodeError, ValueError):
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return value


def _config_value(text: str):
    """A config value: W&B stores ``{"value": v, "desc": ...}`` per key."""
    try:
        value = json.loads(text)
    except (json.JSONDecodeError, ValueError):
        return text
    if isinstance(value, dict) and "value" in value:
        return value["value"]
    return value
