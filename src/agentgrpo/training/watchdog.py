"""The watchdog: a run in which no training step completes for ``timeout`` seconds fails loudly.

Hung generation, hung tools and NCCL waits are the GRPO hangs users report most; they leave a process
that prints nothing. The watchdog thread checks the time since the last finished step; past the limit it
writes every thread's stack (``faulthandler``) to ``<run_dir>/watchdog-stacks.txt``, says so on stderr, and
ends the process with exit status 3 (the metrics already logged are on disk: the recorder flushes each
line). The clock starts when training begins, so model loading is not counted.
"""

from __future__ import annotations

import faulthandler
import os
import sys
import threading
import time
from pathlib import Path

from transformers import TrainerCallback

EXIT_STATUS = 3
STACKS = "watchdog-stacks.txt"


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
        if self.timeout <= 0:
            return
        self._last, self._step = time.monotonic(), state.global_step
        self._thread = threading.Thread(target=self._watch, name="agentgrpo-watchdog", daemon=True)
        self._thread.start()

    def on_step_end(self, args, state, control, **kwargs):
        self._last, self._step = time.monotonic(), state.global_step

    def on_train_end(self, args, state, control, **kwargs):
        self._stop.set()

    def _watch(self) -> None:
        while not self._stop.wait(self.poll):
            idle = time.monotonic() - self._last
            if idle > self.timeout:
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
