"""`Sandbox`: a pool of warm worker processes that run untrusted programs and return `Verdict`s.

    with Sandbox(workers=2, limits=Limits(wall_s=5)) as box:
        verdict = box.run("def f(x): return x * 2", ["assert f(2) == 4", "assert f(0) == 0"])
        verdicts = box.run_many([(program, tests), ...])  # in order, spread over the workers

A worker that dies or stops answering is killed and replaced, and the job is retried once on the new one.
"""

from __future__ import annotations

import itertools
import os
import queue
import signal
import subprocess
import sys
import threading
import warnings
import weakref
from collections import deque
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor

from agentgrpo.errors import ConfigError, UserError
from agentgrpo.sandbox import cgroup, isolation, jobs, protocol, seccomp
from agentgrpo.sandbox.env import answer_key_paths, clean_env, secret_paths
from agentgrpo.sandbox.limits import Limits
from agentgrpo.sandbox.verdict import CRASHED, INVALID, SANDBOX_ERROR, Verdict

ISOLATION_MODES = ("auto", "namespaces", "userns", "basic")
COMPARISONS = ("trusted", "auto", "in_process")
_BOOT = "import sys; sys.path.insert(0, sys.argv[1]); from agentgrpo.sandbox.worker import main; sys.exit(main())"
_WORKER_SERIAL = itertools.count(1)
_SRC = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class SandboxUnavailable(UserError):
    """The isolation that was asked for cannot be had on this machine."""


class SandboxWarning(UserWarning):
    """The sandbox runs with less isolation than it could on a better-equipped machine."""


class _WorkerProcess:
    """One worker: a clean interpreter started with the allowlisted environment."""

    def __init__(self, config: dict, env: dict, timeout: float, name: str):
        problems: list[str] = []
        self.cgroup = cgroup.create(name, problems)  # before the worker exists: it opens it, the pool removes it
        config = {**config, "cgroup": self.cgroup, "cgroup_problem": "; ".join(problems)}
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-s", "-P", "-c", _BOOT, _SRC],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                env=env,
                cwd="/",
                start_new_session=True,
            )
        except BaseException:
            if self.cgroup is not None:
                cgroup.remove(self.cgroup[0])
            raise
        self.reader = protocol.Reader(self.proc.stdout.fileno())
        try:
            protocol.send(self.proc.stdin.fileno(), config)
            self.report = self.reader.recv(timeout)["isolation"]
            self.report["socket_pairs"] = seccomp.socket_pairs(self.report)
        except (OSError, protocol.ChannelClosed, protocol.ChannelTimeout) as exc:
            self.kill()
            raise SandboxUnavailable(
                f"a sandbox worker did not start ({type(exc).__name__}: {exc}); its error "
                f"output, if any, is above. Check that {sys.executable} can import "
                f"agentgrpo from {_SRC}."
            ) from exc

    def call(self, job: dict, timeout: float) -> dict:
        protocol.send(self.proc.stdin.fileno(), job)
        return self.reader.recv(timeout)

    def send(self, frame: bytes) -> None:
        protocol.write_frame(self.proc.stdin.fileno(), frame)

    def kill(self) -> None:
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        self.proc.wait()
        self.proc.stdin.close()
        self.proc.stdout.close()
        if self.cgroup is not None:  # its jobs die with it (PDEATHSIG); then the cgroup is empty
            cgroup.remove(self.cgroup[0])
            self.cgroup = None

    def stop(self) -> None:
        """Ask politely (close its input), then kill."""
        try:
            self.proc.stdin.close()
            self.proc.wait(timeout=2)
        except (OSError, subprocess.TimeoutExpired):
            pass
        self.kill()


class Sandbox:
    """A pool of ``workers`` sandbox processes. Use as a context manager, or call `close()`.

    ``isolation``: "auto" (the strongest the kernel allows), "namespaces" (fail unless namespaces work),
    "userns" (unprivileged user namespaces), "basic" (process limits only). ``comparison``: "trusted"
    (asserts evaluated outside the job; a test that cannot be split fails), "auto" (such a test's job is run
    again in-process, reported as forgeable), "in_process" (every job in-process, forgeable).
    ``hide_paths`` adds paths to the hidden ones (homes, HF/XDG dirs, the cwd). ``env`` adds variables to
    the allowlisted environment. ``workers`` may not exceed the CPU cores this process may use.
    """

    def __init__(
        self,
        workers: int = 2,
        limits: Limits | None = None,
        isolation: str = "auto",
        hide_paths: Sequence[str] = (),
        env: dict[str, str] | None = None,
        worker_timeout_s: float | None = None,
        start_timeout_s: float = 60.0,
        comparison: str = "trusted",
    ):
        problems = []
        cores = _cores()
        if not isinstance(workers, int) or isinstance(workers, bool) or workers < 1:
            problems.append(f"sandbox workers: must be an int >= 1, got {workers!r}; e.g. workers=2")
        elif workers > cores:
            problems.append(
                f"sandbox workers: {workers} is more than the {cores} CPU cores this process may use; "
                f"pass workers={cores} or fewer (more workers only make every job slower and time out)"
            )
        if comparison not in COMPARISONS:
            problems.append(f"sandbox comparison: {comparison!r} is not one of {', '.join(COMPARISONS)}")
        if isolation not in ISOLATION_MODES:
            problems.append(f"sandbox isolation: {isolation!r} is not one of {', '.join(ISOLATION_MODES)}")
        if limits is not None and not isinstance(limits, Limits):
            problems.append(f"sandbox limits: must be a Limits, got {type(limits).__name__}")
        if problems:
            raise ConfigError(problems)
        self.workers, self.limits, self.requested = workers, limits or Limits(), isolation
        self.comparison = comparison
        bpf, why = seccomp.build(with_socketpair=True)
        if bpf is not None:  # the template takes the second where no memory cgroup holds socket buffers
            bpf = (bpf, seccomp.build(with_socketpair=False)[0])
        self._config = {
            "isolation": isolation,
            "hide": secret_paths(cwd=os.getcwd(), extra=tuple(hide_paths)),
            "bpf": bpf,
            "seccomp_problem": why,
            "answer_keys": answer_key_paths(),
        }
        self._env = clean_env(extra=env)
        self._worker_timeout, self._start_timeout = worker_timeout_s, start_timeout_s
        self._live: list[_WorkerProcess] = []
        self._idle: queue.Queue[_WorkerProcess] = queue.Queue()
        self._lock = threading.Lock()
        self._executor: ThreadPoolExecutor | None = None
        self._report: dict | None = None
        if os.geteuid() == 0:
            cgroup.remove_stale()
        self._finalizer = weakref.finalize(self, _shutdown, self._live)

    # lifecycle ----------------------------------------------------------------------------------------
    def __enter__(self) -> Sandbox:
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def start(self) -> None:
        with self._lock:
            if self._executor is not None:
                return
            if not self._finalizer.alive:
                raise RuntimeError("this Sandbox was closed; create a new one")
            missing = isolation.native_problem()
            if missing:  # the one implementation of the job's setup is not there: never run jobs another way
                raise SandboxUnavailable(missing)
            try:
                for _ in range(self.workers):
                    self._idle.put(self._spawn())
            except BaseException:  # all or nothing: no half-started pool
                _shutdown(self._live)
                self._idle = queue.Queue()
                raise
            self._executor = ThreadPoolExecutor(self.workers, thread_name_prefix="agentgrpo-sandbox")

    def close(self) -> None:
        with self._lock:
            if self._executor is not None:
                self._executor.shutdown(wait=True)
                self._executor = None
            self._finalizer()

    @property
    def isolation(self) -> dict:
        """What is enforced on this machine (see docs/sandbox.md): mode, network, namespaces, hidden paths."""
        self.start()
        return dict(self._report)

    def _lacks(self) -> tuple:
        return tuple((self._report or {}).get("lacks", ()))

    def pids(self) -> list[int]:
        """Process ids of the live workers (for diagnostics and tests)."""
        return [w.proc.pid for w in list(self._live)]

    # running ------------------------------------------------------------------------------------------
    def run(self, program, tests, limits: Limits | None = None) -> Verdict:
        """Run ``program`` then ``tests`` (a list of test sources, or one test script) in a fresh child."""
        job = self._job(program, tests, limits)
        if isinstance(job, Verdict):
            return job
        job, timeout = job
        for _attempt in range(2):
            worker = self._checkout(timeout)
            try:
                result = worker.call(job, timeout)
            except _LOST as exc:
                self._replace(worker)
                lost = _lost(exc)
                continue
            self._idle.put(worker)
            return _verdict(result)
        return _lost_verdict(job, lost, self._lacks())

    def run_many(self, items: Iterable, limits: Limits | None = None) -> list[Verdict]:
        """Verdicts for ``(program, tests)`` pairs (or ``{"program", "tests"}`` dicts), in input order.

        Each worker is kept one job ahead: while it runs a job, the next one already waits in its input
        pipe (if small), so it never waits for this process between jobs.
        """
        self.start()
        verdicts: list = []
        todo: deque = deque()  # (index, job, timeout, frame, attempts)
        for index, item in enumerate(items):
            job = self._item_job(item, limits)
            verdicts.append(job if isinstance(job, Verdict) else None)
            if not isinstance(job, Verdict):
                todo.append((index, *job, protocol.frame(job[0]), 0))
        lock = threading.Lock()
        drivers = min(self.workers, len(todo))
        drivers = [self._executor.submit(self._drive, todo, lock, verdicts) for _ in range(drivers)]
        for driver in drivers:
            driver.result()
        return verdicts

    def _drive(self, todo: deque, lock: threading.Lock, verdicts: list) -> None:
        """Feed one worker from ``todo`` until it is empty, at most two jobs in flight (see `run_many`)."""
        inflight: deque = deque()  # (index, job, timeout, frame, attempts), oldest (running) first
        sent, worker = 0, None
        try:
            while True:
                with lock:
                    while todo and len(inflight) < 2 and (not inflight or len(todo[0][3]) <= _AHEAD_BYTES):
                        inflight.append(todo.popleft())
                if not inflight:
                    return
                try:
                    if worker is None:
                        worker = self._checkout(inflight[0][2])
                    for entry in list(inflight)[sent:]:
                        worker.send(entry[3])
                        sent += 1
                    result = worker.reader.recv(inflight[0][2])
                except _LOST as exc:  # the oldest was running: it has used an attempt, the others not
                    self._replace(worker)
                    worker, sent = None, 0
                    index, job, timeout, frame, attempts = inflight.popleft()
                    if attempts == 0:
                        inflight.appendleft((index, job, timeout, frame, 1))
                    else:
                        verdicts[index] = _lost_verdict(job, _lost(exc), self._lacks())
                    with lock:
                        todo.extendleft(reversed(inflight))
                    inflight.clear()
                    continue
                verdicts[inflight.popleft()[0]] = _verdict(result)
                sent -= 1
        finally:
            if worker is not None:
                if inflight:  # an unexpected error with jobs still in its pipe: it cannot be reused
                    self._replace(worker)
                else:
                    self._idle.put(worker)

    def _item_job(self, item, limits: Limits | None):
        if isinstance(item, dict) and {"program", "tests"} <= set(item):
            return self._job(item["program"], item["tests"], limits)
        if isinstance(item, tuple | list) and len(item) == 2:
            return self._job(item[0], item[1], limits)
        return Verdict(
            status=INVALID,
            passed=0,
            total=0,
            reason=f"a job must be (program, tests) or {{'program', 'tests'}}, got {type(item).__name__}",
        )

    def _job(self, program, tests, limits: Limits | None):
        """(the worker's job message, its timeout), or the Verdict for input that is not a job."""
        steps = jobs.prepare(program, tests)
        if isinstance(steps, Verdict):
            return steps
        if limits is not None and not isinstance(limits, Limits):
            raise ConfigError([f"sandbox limits: must be a Limits, got {type(limits).__name__}"])
        self.start()
        limits = limits or self.limits
        job = {"program": program, "steps": steps, "limits": limits.to_dict(), "comparison": self.comparison}
        return job, self._worker_timeout or limits.wall_s + 15.0

    # workers ------------------------------------------------------------------------------------------
    def _checkout(self, timeout: float) -> _WorkerProcess:
        try:
            return self._idle.get(timeout=timeout * (self.workers + 1) + self._start_timeout)
        except queue.Empty:
            raise SandboxUnavailable("no sandbox worker became free; workers could not be restarted") from None

    def _spawn(self) -> _WorkerProcess:
        name = f"agentgrpo-{os.getpid()}-{next(_WORKER_SERIAL)}"  # unique among this process's pools
        worker = _WorkerProcess(self._config, self._env, self._start_timeout, name)
        problem = _refusal(self.requested, worker.report)
        if problem:
            worker.stop()
            raise SandboxUnavailable(problem)
        if self._report is None and worker.report["lacks"]:
            warnings.warn(SandboxWarning(insecure_summary(worker.report)), stacklevel=3)
        self._report = self._report or worker.report
        self._live.append(worker)
        return worker

    def _replace(self, worker: _WorkerProcess) -> None:
        worker.kill()
        with self._lock:
            if worker in self._live:
                self._live.remove(worker)
            self._idle.put(self._spawn())


# A job this small may wait in a worker's input pipe (64 KiB) while it runs the one before: the write never
# blocks, so this process is always free to read the worker's (possibly large) result.
_AHEAD_BYTES = 16 << 10
_LOST = (OSError, ValueError, EOFError, TypeError, protocol.ChannelClosed, protocol.ChannelTimeout)


def _lost(exc: BaseException) -> str:
    return f"worker lost ({type(exc).__name__}: {exc})"


def _verdict(result: dict) -> Verdict:
    tuples = {key: tuple(result.get(key, ())) for key in ("tests", "lacks", "outcomes", "forgeable_tests")}
    return Verdict(**{**result, **tuples})


def _lost_verdict(job: dict, lost: str, lacks: tuple = ()) -> Verdict:
    total = sum(bool(t) for t, _ in job["steps"])
    if "signals" in lacks:  # a mode where the program can kill its own worker: not the sandbox's fault
        reason = f"{lost} twice; in this mode the program can signal its worker (lacks 'signals')"
        return Verdict(status=CRASHED, passed=0, total=total, reason=reason, lacks=tuple(lacks))
    return Verdict(status=SANDBOX_ERROR, passed=0, total=total, reason=lost + " twice", lacks=tuple(lacks))


def insecure_summary(report: dict) -> str:
    """What the isolation in force cannot guarantee, each risk spelled out, and why (for warnings and the
    trainer's refusal)."""
    risks = "; ".join(f"{name}: {isolation.GUARANTEES[name]}" for name in report["lacks"])
    why = "; ".join(report["problems"]) or "the kernel offers nothing stronger"
    return (
        f"sandbox isolation '{report['mode']}' cannot guarantee {', '.join(report['lacks'])} ({risks}). "
        f"Why: {why}. Every verdict names these in Verdict.lacks (docs/sandbox.md)."
    )


def _refusal(requested: str, report: dict) -> str | None:
    """Why a worker's isolation is not acceptable for what was asked, or None."""
    if requested == "namespaces" and not report["pid_namespace"]:
        return (
            "isolation='namespaces' was asked for but the kernel refused: "
            + "; ".join(report["problems"])
            + ". Run as root, allow user namespaces, or pass isolation='auto'."
        )
    if requested == "auto" and report["mode"] == "basic" and report["sandbox_uid"] is None and os.geteuid() == 0:
        return (
            "the sandbox would run untrusted programs as root (no namespaces, and no other uid can read "
            "the interpreter: " + "; ".join(report["problems"]) + "). Grant CAP_SYS_ADMIN or allow user "
            "namespaces, install Python where other users can read it, or pass isolation='basic' to "
            "accept running programs as root."
        )
    return None


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _shutdown(live: list[_WorkerProcess]) -> None:
    while live:
        live.pop().stop()
