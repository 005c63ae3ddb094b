"""Newline-delimited JSON over raw pipe file descriptors, with deadlines (no buffered file objects)."""

from __future__ import annotations

import json
import os
import select
import time


class ChannelClosed(Exception):
    """The other end closed the pipe (the process died)."""


class ChannelTimeout(Exception):
    """No complete message arrived before the deadline."""


def send(fd: int, message: dict) -> None:
    data = (json.dumps(message, ensure_ascii=True) + "\n").encode()
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


class Reader:
    """Reads one JSON line at a time from ``fd``, waiting at most until a deadline."""

    def __init__(self, fd: int):
        self.fd = fd
        self._buffer = bytearray()
        self._poll = select.poll()  # poll, not select: trainers can hold more than 1024 descriptors
        self._poll.register(fd, select.POLLIN)

    def recv(self, timeout: float | None) -> dict:
        deadline = None if timeout is None else time.monotonic() + timeout
        while b"\n" not in self._buffer:
            wait = None if deadline is None else max(0, int((deadline - time.monotonic()) * 1000))
            if not self._poll.poll(wait):
                raise ChannelTimeout(f"no reply within {timeout:.1f}s")
            chunk = os.read(self.fd, 1 << 16)
            if not chunk:
                raise ChannelClosed("the other end closed the channel")
            self._buffer += chunk
        line, _, rest = bytes(self._buffer).partition(b"\n")
        self._buffer = bytearray(rest)
        return json.loads(line)
