"""A whole W&B run file's LevelDB framing walked with numpy, and its history records found without copying.

`wandbrun.scan` walks the chunks one by one (a 100,000-step run: 300,000 chunks). Here every 32 KiB block
is a lane: since no chunk crosses a block (checked), each block starts with a chunk header, and the lanes
step through their chunks together (as many numpy steps as the fullest block has chunks). Every chunk's
crc32 is checked as `scan` checks it; the records' first bytes (``num``, then the history field's tag and
length) are read for all records at once, and the history bodies are returned as (start, end) offsets in
the file, to be joined once. Anything `scan` would report or stop at (a file cut short, preallocated zeros,
a bad checksum or type, a record left open) and any record whose first bytes are not of that plain shape
gives None or is classified one by one by the caller's ``classify``, so the result is that of `scan` and
the caller's record-by-record split.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable

import numpy as np

from agentgrpo.doctor.readers import fasthistory

BLOCK = 32768
HEADER = 7
FULL, FIRST, MIDDLE, LAST = 1, 2, 3, 4
_TYPE_CRC = np.array([0] + [zlib.crc32(bytes([t])) & 0xFFFFFFFF for t in (FULL, FIRST, MIDDLE, LAST)], np.uint64)


def chunks(data: bytes) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """(start, end, type) of every chunk's data, in file order, all checksums verified; None when `scan`
    would stop early or note something (then it reads the file). Walked in C where the doctor's optional
    extension is built (`fasthistory`), else a block per numpy lane."""
    if fasthistory._wirehistory is not None:
        found = fasthistory._wirehistory.chunks(data)
        if found is None:
            return None
        table = np.frombuffer(found, dtype=np.int64).reshape(-1, 3)
        return table[:, 0], table[:, 1], table[:, 2]
    n = len(data)
    arr = np.frombuffer(data, dtype=np.uint8)
    block_end = np.arange(BLOCK, n + BLOCK, BLOCK, dtype=np.int64)
    pos = block_end - BLOCK
    pos[0] = HEADER
    found_pos, found_len, found_type, found_crc = [], [], [], []
    lane = np.arange(len(pos))
    while lane.size:
        at = pos[lane]
        lane = lane[(block_end[lane] - at >= HEADER) & (at < n)]  # the others: block trailer, or the file's end
        at = pos[lane]
        if not lane.size:
            break
        if (at + HEADER > n).any():
            return None  # cut short inside a chunk header
        head = arr[at[:, None] + np.arange(HEADER)].astype(np.int64)
        crc = head[:, 0] | head[:, 1] << 8 | head[:, 2] << 16 | head[:, 3] << 24
        length = head[:, 4] | head[:, 5] << 8
        kind = head[:, 6]
        end = at + HEADER + length
        if ((kind < FULL) | (kind > LAST)).any() or (end > n).any() or (end > block_end[lane]).any():
            return None  # preallocated zeros, a bad type, a chunk cut short or crossing its block
        found_pos.append(at + HEADER)
        found_len.append(length)
        found_type.append(kind)
        found_crc.append(crc)
        pos[lane] = end
    if not found_pos:
        return np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0, np.int64)
    start, length, kind, crc = (np.concatenate(x) for x in (found_pos, found_len, found_type, found_crc))
    order = np.argsort(start, kind="stable")
    start, length, kind, crc = start[order], length[order], kind[order], crc[order]
    end = start + length
    view = memoryview(data)
    crc32 = zlib.crc32
    seeds = _TYPE_CRC[kind].tolist()
    if not all(map(int.__eq__, map(crc32, map(view.__getitem__, map(slice, start.tolist(), end.tolist())), seeds),
                   crc.tolist())):
        return None
    return start, end, kind


def history_bodies(
    data: bytes, classify: Callable[[bytes], tuple[str, bytes | None]], skip: frozenset[int]
) -> tuple[list[tuple[int, int] | bytes], list[bytes], int] | None:
    """(the history bodies in file order, as (start, end) offsets in ``data`` or as bytes for a record over
    several chunks; the payloads of the other records ``classify`` keeps; the number it skips), or None
    when `chunks` is None or ``classify`` says to read record by record. ``classify(payload)`` gives
    ("history", body), ("keep", payload), ("skip", None) or ("fallback", None); a record whose first field
    after ``num`` has a one-byte tag of a field number in ``skip`` is skipped without it."""
    found = chunks(data)
    if found is None:
        return None
    start, end, kind = found
    arr = np.frombuffer(data, dtype=np.uint8)
    whole = kind == FULL
    pieces = np.flatnonzero(~whole)
    records: list[tuple[int, bytes]] = []  # (position, payload) of the records over several chunks
    if pieces.size:
        kinds = kind[pieces].tolist()
        i = 0
        while i < len(pieces):
            if kinds[i] != FIRST:
                return None  # a MIDDLE or LAST without its FIRST: `scan` reads such a file
            j = i + 1
            while j < len(pieces) and kinds[j] == MIDDLE and pieces[j] == pieces[j - 1] + 1:
                j += 1
            if j == len(pieces) or kinds[j] != LAST or pieces[j] != pieces[j - 1] + 1:
                return None
            parts = [data[start[k] : end[k]] for k in pieces[i : j + 1].tolist()]
            records.append((int(start[pieces[i]]), b"".join(parts)))
            i = j + 1
    s, e = start[whole], end[whole]
    plain, body_start, body_end = _plain_history(arr, s, e)
    other = np.flatnonzero(~plain)
    bodies: list[tuple[int, int | tuple[int, int] | bytes]] = [
        (a, (a, b)) for a, b in zip(body_start[plain].tolist(), body_end[plain].tolist())
    ]
    kept: list[tuple[int, bytes]] = []
    skipped = 0
    quick_skip = _quick_skip(arr, s[other], e[other], skip)
    for k, skip in zip(other.tolist(), quick_skip.tolist()):
        if skip:
            skipped += 1
        else:
            records.append((int(s[k]), data[s[k] : e[k]]))
    records.sort(key=lambda r: r[0])
    for position, payload in records:
        what, body = classify(payload)
        if what == "fallback":
            return None
        if what == "history":
            bodies.append((position, body))
        elif what == "keep":
            kept.append((position, payload))
        else:
            skipped += 1
    bodies.sort(key=lambda b: b[0])
    kept.sort(key=lambda b: b[0])
    return [b for _, b in bodies], [p for _, p in kept], skipped


def _first_fields(arr: np.ndarray, s: np.ndarray, e: np.ndarray):
    """Per payload: whether it starts with ``num`` (tag 0x08, a varint of at most 10 bytes) followed by a
    one-byte tag, and that tag's position."""
    ok = (s < e) & (arr[np.minimum(s, len(arr) - 1)] == 0x08)
    tag = np.full(len(s), -1, dtype=np.int64)
    todo = np.flatnonzero(ok)
    for size in range(1, 11):  # the varint's last byte: the first below 0x80 (most nums: 3 bytes)
        at = s[todo] + size
        todo, at = todo[at < e[todo]], at[at < e[todo]]
        last = arr[at] < 0x80
        tag[todo[last]] = at[last] + 1
        todo = todo[~last]
        if not todo.size:
            break
    ok &= (tag > 0) & (tag < e)
    ok &= arr[np.clip(tag, 0, len(arr) - 1)] < 0x80
    return ok, tag


def _plain_history(arr: np.ndarray, s: np.ndarray, e: np.ndarray):
    """(is a plain history record, its body's start, end): ``num``, then tag 0x12 and a body length of at
    most 3 varint bytes, the body inside the payload."""
    ok, tag = _first_fields(arr, s, e)
    top = len(arr) - 1
    ok &= arr[np.clip(tag, 0, top)] == 0x12
    length = np.zeros(len(s), dtype=np.int64)
    size = np.zeros(len(s), dtype=np.int64)
    for k in range(3):
        at = tag + 1 + k
        byte = arr[np.clip(at, 0, top)].astype(np.int64)
        step = ok & (size == 0) & (at < e)
        length[step] |= (byte[step] & 0x7F) << (7 * k)
        size[step & (byte < 0x80)] = k + 1
    ok &= size > 0
    start = tag + 1 + size
    end = start + length
    ok &= end <= e
    return ok, start, end


def _quick_skip(arr: np.ndarray, s: np.ndarray, e: np.ndarray, skip: frozenset[int]) -> np.ndarray:
    """Per payload: the one-byte tag after ``num`` has a field number in ``skip``."""
    if not len(s):
        return np.zeros(0, dtype=bool)
    ok, tag = _first_fields(arr, s, e)
    byte = arr[np.clip(tag, 0, len(arr) - 1)]
    table = np.array([t >> 3 in skip for t in range(256)], dtype=bool)
    return ok & table[byte]
