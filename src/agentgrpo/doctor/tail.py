"""`JsonlTail`: the records appended to a growing JSON Lines file since the last read.

The live doctor follows ``metrics.jsonl`` this way: each poll reads only the bytes written since the one
before (a line still being written waits for the next poll), so its cost does not grow with the run.
"""

from __future__ import annotations

from pathlib import Path

from agentgrpo.rundir import parse_jsonl


class JsonlTail:
    """Follow ``path``: ``poll()`` returns the complete JSON object lines added since the previous poll.

    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "m.jsonl")
    >>> tail = JsonlTail(path); tail.poll()
    []
    >>> open(path, "w").write('{"step": 1}\\n{"step": 2, "rew')
    28
    >>> tail.poll(), tail.bytes_read
    ([{'step': 1}], 28)
    >>> open(path, "a").write('ard": 0.5}\\n')
    11
    >>> tail.poll(), tail.bytes_read
    ([{'step': 2, 'reward': 0.5}], 39)
    """

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.offset = 0  # bytes consumed (up to the end of the last complete line)
        self.bytes_read = 0  # bytes read from the file in all polls (the cost measure)
        self.records_parsed = 0
        self._partial = b""

    def poll(self) -> list[dict]:
        """New complete records; a file that shrank (rewritten) is read again from its start."""
        try:
            size = self.path.stat().st_size
        except OSError:
            return []
        if size < self.offset + len(self._partial):
            self.offset, self._partial = 0, b""
        start = self.offset + len(self._partial)
        if size <= start:
            return []
        with open(self.path, "rb") as fh:
            fh.seek(start)
            data = fh.read(size - start)
        self.bytes_read += len(data)
        data = self._partial + data
        cut = data.rfind(b"\n") + 1
        complete, self._partial = data[:cut], data[cut:]
        self.offset += len(complete)
        records = parse_jsonl(complete.decode("utf-8", errors="replace"))[0]  # a corrupt line is skipped
        self.records_parsed += len(records)
        return records
