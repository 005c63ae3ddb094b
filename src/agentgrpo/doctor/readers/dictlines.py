"""A console log whose printed dicts each fill a line of their own, found without a regex over the text.

Nearly every long console log is a training bar and one printed dict per logged step, each dict on its own
line. Such a log is split on its newlines once; the lines that hold a ``{`` are the dicts, checked all at
once and decoded as one JSON array. Anything else (a dict after other text on its line, a wrapped or nested
dict, ``tensor(...)``) returns None, and the general readers in `console` read the log:
the result is the same either way (tested on generated logs against the line-by-line reader).
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import chain, compress, repeat
from operator import itemgetter

import numpy as np

from agentgrpo import fastjson

# line breaks `str.splitlines` knows besides "\n" and "\r": a log holding any of them is left to the general readers
_OTHER_BREAKS = "\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
# what stands for a dict line in a skeleton: a brace (no other line has one), then " [" so that reversed
# ("[ {") it starts with the literal a reversed progress bar starts with (`console._bar_around_dicts`)
DICT_MARK = "{ ["
# from this many dict lines on, two processes decode them (half each) when two CPUs are free to
# (`AGENTGRPO_DOCTOR_FORK=0` turns it off); below it, a fork costs more than it saves
PARALLEL_MIN_LINES = 20_000
# a bare nan/inf value of a printed dict (``'kl': nan``), quoted before JSON decoding
BARE_NUMBER = re.compile(r"(?<=[:\s])(-?(?:nan|inf))(?=\s*[,}])")


@dataclass
class DictLines:
    """The dicts of a log read line by line in one pass: ``values`` in order, ``is_dict`` per line of
    ``text.split("\\n")``, and ``numeric`` when every value is an int or a float."""

    lines: list[str]
    is_dict: list[bool]
    _values: list[dict] | None
    numeric: bool
    crlf: bool = False  # the text's carriage returns were read as line breaks: `offsets` are not the text's
    key_sets: set[tuple] = field(default_factory=set)  # the distinct key sequences (one when all share keys)
    block: np.ndarray | None = field(default=None, repr=False)  # the values, when all share keys (numbers)
    first: dict = field(default_factory=dict)  # the first dict
    count: int = 0  # how many dicts
    _decode_rest: Callable[[], list[dict]] | None = field(default=None, repr=False)

    @property
    def values(self) -> list[dict]:
        """Every dict, in order (after a two-process read, the half the other process decoded is decoded
        here the first time they are asked for: a column block needs only `first` and `count`)."""
        if self._values is None:
            self._values = self._decode_rest()
        return self._values

    def offsets(self) -> list[int]:
        """Each dict's offset in the text (its line's start: a dict begins its line)."""
        if self.crlf:
            raise ValueError("the text's line breaks were rewritten: use the skeleton's offsets")
        return _dict_starts(map(len, self.lines), self.is_dict)

    def line_count(self) -> int:
        """``len(text.splitlines())``: the text has no other line break than "\\n"."""
        return len(self.lines) - (self.lines[-1] == "")

    def skeleton(self) -> str:
        """The text with each dict line shortened to `DICT_MARK`: every other line is kept as it is, so what
        lies between two dicts (the progress bar's counters) reads the same, in a fraction of the text."""
        return "\n".join([(DICT_MARK if d else line) for line, d in zip(self.lines, self.is_dict)])

    def skeleton_offsets(self) -> list[int]:
        """Each dict's offset in the `skeleton`."""
        lengths = (len(DICT_MARK) if d else len(line) for line, d in zip(self.lines, self.is_dict))
        return _dict_starts(lengths, self.is_dict)

    def column_block(self) -> tuple[tuple, np.ndarray] | None:
        """(keys, values as a rows x keys float array) when every dict has the same keys (the first dict's
        order) and every value is a number; None otherwise."""
        if self.block is None:
            return None
        return tuple(self.first), self.block


def _dict_starts(lengths, is_dict: list[bool]) -> list[int]:
    """The offsets of the dict lines, from every line's length (each line ends with one "\\n")."""
    ends = np.cumsum(np.fromiter(lengths, np.int64, len(is_dict)) + 1)
    starts = np.concatenate([[0], ends[:-1]])
    return starts[np.fromiter(is_dict, bool, len(is_dict))].tolist()


def split_dict_lines(text: str, plain_numbers, carriage_returns: bool = False) -> DictLines | None:
    """`DictLines` of ``text`` when every ``{`` in it begins a line holding one flat dict of plain values that
    closes at the line's end (``{'loss': 0.1, 'reward': 0.5}``), else None. ``plain_numbers`` maps a decoded
    dict to the record the line reader makes of it (None: that reader must read it). With
    ``carriage_returns``, a text with carriage returns (a progress bar redrawn in place, Windows line ends)
    is read too, its lines those of ``str.splitlines`` ("\\r\\n" one break, a lone "\\r" another); the
    dicts' offsets in the text are then not kept (the skeleton's are)."""
    if fastjson.orjson is None or "{" not in text or any(c in text for c in _OTHER_BREAKS):
        return None
    crlf = "\r" in text
    if crlf:
        if not carriage_returns:
            return None
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    lines = text.split("\n")
    is_dict = ["{" in line for line in lines]
    dict_lines = list(compress(lines, is_dict))
    n = len(dict_lines)
    # each opens its line with a brace and a quoted key and closes it with a brace (the rest: `_decode`)
    if not all(map(str.startswith, dict_lines, repeat(("{'", '{"')))) or not all(
        map(str.endswith, dict_lines, repeat("}"))
    ):
        return None
    if n >= PARALLEL_MIN_LINES and _two_cpus():
        halves = _numbers_in_two_processes(dict_lines)
        if halves is not None:
            head, tail, keys, block = halves
            return DictLines(lines, is_dict, None, True, crlf, {keys}, block, head[0], n,
                             lambda: head + _numbers(list(tail))[0])
    decoded = _decode(dict_lines, quote_bare=True)
    if decoded is None:
        return None
    values, body, bare = decoded
    numeric = not bare and set(map(type, chain.from_iterable(map(dict.values, values)))) <= {int, float}
    block = _same_keys_block(values) if numeric else None
    key_sets = {tuple(values[0])} if block is not None else set(map(tuple, values))
    if not numeric or any("{" in k or "}" in k for keys in key_sets for k in keys):
        # a string may hold a brace: one brace pair per line, as the line reader requires of a flat dict
        if body.count("{") != n or body.count("}") != n:
            return None
    if not numeric:  # each dict as the line reader reads it
        values = list(map(plain_numbers, values))
        if None in values:
            return None
        key_sets = set(map(tuple, values))
    return DictLines(lines, is_dict, values, numeric, crlf, key_sets, block, values[0], n)


def _same_keys_block(values: list[dict]) -> np.ndarray | None:
    """The values as a rows x keys float array, columns in the first dict's key order, when every dict has
    the same keys (numbers only: the caller checked); else None."""
    keys = tuple(values[0])
    n, w = len(values), len(keys)
    if not keys or set(map(len, values)) != {w}:
        return None
    try:  # the same number of keys and each of the first's: the same keys
        if w == 1:
            return np.fromiter(map(itemgetter(keys[0]), values), float, n).reshape(n, 1)
        return np.fromiter(chain.from_iterable(map(itemgetter(*keys), values)), float, n * w).reshape(n, w)
    except KeyError:
        return None


def _decode(dict_lines: list[str], quote_bare: bool) -> tuple[list[dict], str, bool] | None:
    """The dict lines as one JSON array (single quotes made double; with ``quote_bare``, a bare nan/inf
    quoted when the array does not decode as it is): (one dict per line, the JSON text, whether nan/inf were
    quoted); None when a line holds what the line reader reads apart (parentheses: ``tensor(...)``,
    backslashes, brackets: a list, a progress bar's " [") or the lines are not one dict each."""
    dict_lines = list(dict_lines)
    dict_lines[0], dict_lines[-1] = "[" + dict_lines[0], dict_lines[-1] + "]"  # the array's brackets, no copy
    body = ",".join(dict_lines)
    if any(c in body for c in "()\\|") or body.find("[", 1) >= 0:
        return None
    body = body.replace("'", '"')
    bare = False
    try:
        values = fastjson.orjson.loads(body)
    except (ValueError, TypeError):
        if not quote_bare or ("nan" not in body and "inf" not in body):
            return None
        bare = True
        try:
            values = fastjson.orjson.loads(BARE_NUMBER.sub(r'"\1"', body))
        except (ValueError, TypeError):
            return None
    if not isinstance(values, list) or len(values) != len(dict_lines) or not all(map(isinstance, values, repeat(dict))):
        return None
    return values, body, bare


def _numbers(dict_lines: list[str]) -> tuple[list[dict], tuple, np.ndarray] | None:
    """(values, keys, float block) of dict lines that all hold numbers only, under the same keys (none with
    a brace), read exactly as `split_dict_lines` reads them; None for anything else."""
    decoded = _decode(dict_lines, quote_bare=False)
    if decoded is None:
        return None
    values = decoded[0]
    if not set(map(type, chain.from_iterable(map(dict.values, values)))) <= {int, float}:
        return None
    block = _same_keys_block(values)
    keys = tuple(values[0])
    if block is None or any("{" in k or "}" in k for k in keys):
        return None
    return values, keys, block


def _two_cpus() -> bool:
    """Two CPUs this process may use, one of them idle (a busy machine gains nothing from a second process):
    the 1-minute load average at most the CPU count less 1.2. Linux only (fork is safe there)."""
    if os.environ.get("AGENTGRPO_DOCTOR_FORK", "1") == "0" or not sys.platform.startswith("linux"):
        return False
    try:
        cpus = len(os.sched_getaffinity(0))
        load = os.getloadavg()[0]
    except (AttributeError, OSError):
        return False
    return cpus >= 2 and load <= cpus - 1.2


def _numbers_in_two_processes(dict_lines: list[str]):
    """`_numbers` of the first half here while a forked child reads the second half and sends back its keys
    and float block: (head values, tail lines, keys, block), or None when either half is anything else
    or the fork fails (the caller then reads everything in this process)."""
    half = len(dict_lines) // 2
    head, tail = dict_lines[:half], dict_lines[half:]
    read_end, write_end = os.pipe()
    try:
        pid = os.fork()
    except OSError:
        os.close(read_end)
        os.close(write_end)
        return None
    if pid == 0:  # the child: never returns, never runs the parent's exit handlers
        try:
            os.close(read_end)
            got = _numbers(tail)
            if got is not None:
                _, keys, block = got
                header = fastjson.orjson.dumps(list(keys))
                payload = len(header).to_bytes(8, "little") + header + np.ascontiguousarray(block).tobytes()
                view = memoryview(payload)
                while view:
                    view = view[os.write(write_end, view):]
        finally:
            os._exit(0)
    os.close(write_end)
    try:
        mine = _numbers(head)
        chunks = []
        while chunk := os.read(read_end, 1 << 22):
            chunks.append(chunk)
    finally:
        os.close(read_end)
        os.waitpid(pid, 0)
    data = b"".join(chunks)
    if mine is None or len(data) < 8:
        return None
    values, keys, block = mine
    size = int.from_bytes(data[:8], "little")
    if tuple(fastjson.orjson.loads(data[8 : 8 + size])) != keys:
        return None
    rest = np.frombuffer(data[8 + size :], dtype=float)
    if rest.size != len(tail) * len(keys):
        return None
    return values, tail, keys, np.concatenate([block, rest.reshape(len(tail), len(keys))])
