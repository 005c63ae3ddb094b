"""The watchdog: a run in which no training step completes for ``timeout`` seconds fails loudly.

Hung generation, hung tools and NCCL waits are the GRPO hangs users report most; they leave a process
that prints nothing. The watchdog thread checks the time since the last finished step; past the limit it
writes every thread's stack (``faulthandler``) to ``<run_dir>/watchdog-stacks.txt``, says so on stderr, and
ends the process with exit status 3 (the metrics already logged are on disk: the recorder flushes each
line). The clock starts when training begins, so model loading is not counted.

The thread lives exactly as long as ``trainer.train()``: `stop_with_training` stops it however ``train``
ends, a raised exception included (TRL calls ``on_train_end`` only on a normal end). A watchdog left running
after ``train`` raised would end the host process, a notebook kernel or a test session, ``timeout`` seconds
later with status 3, in the middle of unrelated work.
"""

from __future__ import annotations

import faulthandler
import functools
import os
import sys
import threading
import time
from pathlib import Path

from transformers import TrainerCallback

EXIT_STATUS = 3
STACKS = "watchdog-stacks.txt"
_RUNNING: set[Watchdog] = set()  # watchdogs whose thread is alive (`running`)
_LOCK = threading.Lock()


def running() -> list[Watchdog]:
    """The watchdogs whose thread is watching now (none outside ``trainer.train()``)."""
    with _LOCK:
        return list(_RUNNING)


class Watchdog(TrainerCallback):
    def __init__(self, run_dir: str | Path, timeout: float, poll: float | None = None, exit=os._exit):
        self.run_dir = Path(run_dir)
        self.timeout = float(timeout)
        self.poll = poll or min(5.0, max(self.timeout / 10, 0.05))
        self._exit = exit
        self._last = time.monotonic()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._step = 0

    def on_train_begin(self, args, state, control, **kwargs):
        self.stop()  # a second train() on the same trainer (a heal's resume) gets a fresh thread
        if self.timeout <= 0:
            return
        self._last, self._step = time.monotonic(), state.global_step
        self._stop = threading.Event()  # one per thread: a stopped watchdog's event stays set
        self._thread = threading.Thread(target=self._watch, args=(self._stop,), name="agentgrpo-watchdog",
                                        daemon=True)
        with _LOCK:
            _RUNNING.add(self)
        self._thread.start()

    def on_step_end(self, args, state, control, **kwargs):
        self._last, self._step = time.monotonic(), state.global_step

    def on_train_end(self, args, state, control, **kwargs):
        self.stop()

    def stop(self) -> None:
        """Stop watching (idempotent); returns once the thread has ended, so it can no longer fire."""
        self._stop.set()
        thread, self._thread = self._thread, None
        if thread is not None and thread is not threading.current_thread():
            thread.join()
        with _LOCK:
            _RUNNING.discard(self)

    def _watch(self, stop: threading.Event) -> None:
        while not stop.wait(self.poll):
            idle = time.monotonic() - self._last
            if idle > self.timeout and not stop.is_set():
                self._fire(idle)
                return

    def _fire(self, idle: float) -> None:
        path = self.run_dir / STACKS
        try:
            self.run_dir.mkdir(parents=True, exist_ok=True)
            with open(path, "w") as f:
                f.write(f"agentgrpo watchdog: no training step finished for {idle:.0f} s after step {self._step} "
                        f"(limit {self.timeout:g} s); stacks of every thread of pid {os.getpid()}:\n\n")
                f.flush()
                faulthandler.dump_traceback(file=f, all_threads=True)
        except OSError:
            path = None
        print(f"\n[agentgrpo] WATCHDOG: no training step finished for {idle:.0f} s after step {self._step} "
              f"(step_timeout {self.timeout:g} s). Every thread's stack: {path or 'stderr'}. A hung tool "
              "(set tool_timeout), generation or collective (NCCL) is the usual cause. Failing the run.",
              file=sys.stderr, flush=True)
        if path is None:
            faulthandler.dump_traceback(file=sys.stderr, all_threads=True)
        self._exit(EXIT_STATUS)


def stop_with_training(trainer, watchdog: Watchdog) -> None:
    """Make ``trainer.train`` stop ``watchdog`` when it returns or raises (TRL's ``on_train_end`` runs only
    when training ends normally)."""
    train = trainer.train

    @functools.wraps(train)
    def train_then_stop(*args, **kwargs):
        try:
            return train(*args, **kwargs)
        finally:
            watchdog.stop()

    trainer.train = train_then_stop
