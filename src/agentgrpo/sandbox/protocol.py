"""Messages between the pool and its workers over raw pipes: length-prefixed `marshal`, with deadlines.

Both ends are trusted (a worker never runs untrusted code) and run the same interpreter, so `marshal` is
safe here and needs no import. Data from sandboxed programs never travels in this format.
"""

from __future__ import annotations

import marshal
import os
import select
import time

_HEADER = 8  # bytes of big-endian length


class ChannelClosed(Exception):
    """The other end closed the pipe (the process died)."""


class ChannelTimeout(Exception):
    """No complete message arrived before the deadline."""


def send(fd: int, message: dict) -> None:
    write_frame(fd, frame(message))


def frame(message: dict) -> bytes:
    """The message as it travels: its length, then its marshal bytes."""
    data = marshal.dumps(message)
    return len(data).to_bytes(_HEADER, "big") + data


def write_frame(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


class Reader:
    """Reads one message at a time from ``fd``, waiting at most until a deadline."""

    def __init__(self, fd: int):
        self.fd = fd
        self._buffer = bytearray()
        self._poll = select.poll()  # poll, not select: trainers can hold more than 1024 descriptors
        self._poll.register(fd, select.POLLIN)

    def recv(self, timeout: float | None) -> dict:
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self._complete():
            wait = None if deadline is None else max(0, int((deadline - time.monotonic()) * 1000))
            if not self._poll.poll(wait):
                raise ChannelTimeout(f"no reply within {timeout:.1f}s")
            chunk = os.read(self.fd, 1 << 20)
            if not chunk:
                raise ChannelClosed("the other end closed the channel")
            self._buffer += chunk
        size = int.from_bytes(self._buffer[:_HEADER], "big")
        message = marshal.loads(bytes(self._buffer[_HEADER : _HEADER + size]))
        del self._buffer[: _HEADER + size]
        return message

    def _complete(self) -> bool:
        if len(self._buffer) < _HEADER:
            return False
        return len(self._buffer) >= _HEADER + int.from_bytes(self._buffer[:_HEADER], "big")
