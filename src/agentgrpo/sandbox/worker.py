"""A sandbox worker: the trusted side of every job it runs.

Started by `agentgrpo.sandbox.pool` with an allowlisted environment. It isolates itself, forks its job
template (`agentgrpo.sandbox.template`) before reading any job, then per job: has the template fork a
fresh job and forks a comparison process for it (`agentgrpo.sandbox.evaluator`: limited, killed at the
deadline), which sends the job its program, supervises it (`agentgrpo.sandbox.supervise`) and evaluates
the tests against it (`agentgrpo.sandbox.trusted`; in the in-process mode, collects the job's own
reports), streaming each test's typed outcome back; the worker itself never decodes a job's data. It
answers the pool with a plain dict of `Verdict` fields.

Protocol with the pool (length-prefixed marshal, see `agentgrpo.sandbox.protocol`): first a config
``{"isolation", "hide", "bpf", "seccomp_problem"}``, answered by ``{"ready": true, "isolation": report}``;
then one job ``{"program", "steps", "limits", "comparison"}`` per message, each answered by one result.
"""

from __future__ import annotations

import gc
import os
import signal
import sys
import time

from agentgrpo.sandbox import cgroup, env, evaluator, isolation, protocol, trusted
from agentgrpo.sandbox.harness import describe as harness_describe
from agentgrpo.sandbox.status import SANDBOX_ERROR, TEST_FAILED, TEST_NOT_RUN, TEST_OUTCOMES, TEST_PASSED
from agentgrpo.sandbox.supervise import CHANNEL, SETUP, TIMEOUT, Session, classify
from agentgrpo.sandbox.template import Template, first_message


class Worker:
    def __init__(self, report: dict, bpf: bytes | None, group: cgroup.JobCgroup | None = None):
        self.report, self.count, self.group = report, 0, group
        self.evaluator: evaluator.Evaluator | None = None  # the comparison process, forked at the first job
        self.namespaces = report["pid_namespace"]
        self.base_fd, self.base = None, None
        if not self.namespaces:
            import tempfile  # only here: the namespace modes keep the worker small

            self.base = tempfile.mkdtemp(prefix="agentgrpo-sandbox-")
            os.chmod(self.base, 0o711)  # a job may enter its own dir, not list the others
            self.base_fd = os.open(self.base, os.O_RDONLY | os.O_DIRECTORY)
        self.template = Template(report, bpf, in_cgroup=group is not None)  # before any job data exists here
        if group is not None:
            try:  # the template, so that every job process is born in the cgroup (no migration per job)
                group.attach(self.template.pid)
            except OSError as exc:
                self.group = None
                report["memory"] = isolation.base_report("")["memory"]
                report["problems"].append(f"no memory cgroup (the job template could not join it: {exc})")

    def run(self, job: dict) -> dict:
        steps = [(bool(t), s) for t, s in job["steps"]]
        mode = job.get("comparison", "trusted")
        result = self._run(job["program"], steps, job["limits"], in_process=mode == "in_process")
        if mode == "auto" and result.pop("unsplittable"):
            result = self._run(job["program"], steps, job["limits"], in_process=True)
        result.pop("unsplittable", None)
        return result

    def _run(self, program: str, steps: list, limits: dict, in_process: bool, probe: bool = False) -> dict:
        self.count += 1
        uid = isolation.job_uid(os.getpid(), self.count) if self.report["sandbox_uid"] is not None else None
        name = f"job-{self.count}"
        workdir = isolation.WORKDIR if self.namespaces else os.path.join(self.base, name)
        ooms, ceiling_problem = self._ceiling(limits)
        # the tests never reach the job in the trusted mode: only the names they read and literal calls
        names = [] if in_process else trusted.free_names([source for _, source in steps])
        plan = [] if in_process else trusted.plan_calls(steps, names)
        forgeable = [] if in_process else trusted.forgeable_tests(steps, names)
        if not in_process:
            trusted.precompile(steps)  # cached here, so every job's comparison process has it
        mode = "in_process" if in_process else "trusted"
        request = ("program", program, mode, steps if in_process else None, names, plan)
        pid, pidfd, (out_r, err_r, req_w, rep_r) = self.template.spawn(limits["scratch_mb"])
        kill = lambda: self._kill(pidfd, pid, uid)  # noqa: E731
        session = Session(pidfd, [out_r, err_r, rep_r], req_w, limits, kill) if probe or ceiling_problem else None
        total = sum(1 for t, _ in steps if t)
        state = {"outcomes": [TEST_NOT_RUN] * total, "messages": [""] * total}
        summary = {"gone": "", "detail": "", "stdout": "", "stderr": "", "unsplittable": False}
        first = first_message(limits, uid, workdir, request)
        if ceiling_problem:  # never a job without the ceiling the report promises
            session.stop(SETUP, ceiling_problem)
            duration = session.finish()
        elif probe:  # a trusted program: a setup failure it reports is real
            try:
                session.send_frame(first)
                state["probe_failed"] = session.receive()[0] == "setup_failed"
            except trusted.JobGone:
                pass
            duration = session.finish()
        else:  # everything done with what the job sends: in the comparison process (`evaluator`)
            job = {"first": first, "steps": steps, "names": names, "plan": plan, "total": total,
                   "in_process": in_process, "limits": limits, "pid": pid, "uid": uid}
            duration = self._through_evaluator(job, pidfd, (out_r, err_r, req_w, rep_r), kill, state, summary)
        finished = bool(state.get("done")) and self.namespaces  # its exit status no longer matters
        if finished:
            wait_status, cpu_s = 0, 0.0
            self.template.forget(pid)
        else:
            wait_status, cpu_s = self.template.wait(pid)
        self._after(pid, uid, name)
        ended = (session.gone, session.detail) if probe or ceiling_problem else (summary["gone"], summary["detail"])
        gone, detail = self._why_gone(*ended, state, limits, probe)
        if not finished and ooms is not None and self.group.oom_kills() > ooms:
            state["oom_mb"] = self.group.limit_mb
        status, reason = classify(gone, detail, state, wait_status, cpu_s, limits)
        return self._verdict(status, reason, total, state, summary, forgeable, duration, in_process)

    def _why_gone(self, gone: str, detail: str, state: dict, limits: dict, probe: bool) -> tuple[str, str]:
        """How the job ended (gone, detail): as the `Session` of a probe or a refused job, else the comparison's
        summary, said (``gone``, ``detail``), unless the job claimed its setup failed (true only when a trusted
        job's setup fails too: `_setup_fails`) or a probe's setup failed."""
        if "claimed_setup" in state and self._setup_fails(limits):  # then it was no lie: our fault
            gone, detail = SETUP, state["claimed_setup"]
        elif "claimed_setup" in state:
            gone = CHANNEL
            detail = f"the job said its setup failed ({state['claimed_setup']}), a trusted job's did not"
        if probe and state.get("probe_failed"):
            gone, detail = SETUP, "probe"
        return gone, detail

    def _verdict(self, status: str, reason: str, total: int, state: dict, summary: dict, forgeable: list,
                 duration: float, in_process: bool) -> dict:
        """The answer to the pool: a plain dict of `Verdict` fields."""
        outcomes = state["outcomes"]
        return {
            "status": status,
            "passed": outcomes.count(TEST_PASSED),
            "total": total,
            "reason": reason,
            "stdout": summary["stdout"],
            "stderr": summary["stderr"],
            "tests": [_text(o, m) for o, m in zip(outcomes, state["messages"], strict=True)],
            "outcomes": outcomes,
            "forgeable_tests": forgeable,
            "duration_s": round(duration, 4),
            "comparison": "in_process" if in_process else "trusted",
            "lacks": self.report["lacks"],  # what this mode cannot guarantee, in every verdict
            "unsplittable": bool(summary["unsplittable"]),
        }

    def _through_evaluator(self, job: dict, pidfd: int, fds: tuple, kill, state: dict, summary: dict) -> float:
        """Hand the spawned job (``pidfd``, its pipes ``fds``) to the comparison process (`evaluator`), which
        sends it its program, supervises it and evaluates the tests; record the tests' outcomes and how it
        ended in ``state`` and ``summary``; kill the job. Returns the job's duration."""
        limits, total = job["limits"], job["total"]
        deadline = time.monotonic() + limits["wall_s"]
        if self.evaluator is None or not self.evaluator.alive:
            self.evaluator = evaluator.Evaluator(self._serve_job)
        ended = self.evaluator.run(job, [pidfd, *fds], deadline)
        if ended.unsent:  # the comparison process was gone before this job: a fresh one, once
            self.evaluator = evaluator.Evaluator(self._serve_job)
            ended = self.evaluator.run(job, [pidfd, *fds], deadline)
        for fd in fds:  # the comparison process had its own copies
            os.close(fd)
        kill()
        for index, (outcome, message) in ended.tests.items():
            if type(index) is int and 0 <= index < total and outcome in TEST_OUTCOMES:
                state["outcomes"][index], state["messages"][index] = outcome, _short(message)
        if ended.final is not None:
            summary.update(ended.final)
            state.update({k: summary[k] for k in ("done", "error", "claimed_setup") if summary.get(k)})
            if summary.get("memory"):
                state["memory"] = self._memory_reason(limits)
            evaluator.preload(summary.get("modules", ()))
        elif ended.killed:
            summary["gone"] = TIMEOUT
            state["timeout_reason"] = "the tests' work on the program's values was killed (trusted comparison)"
        elif ended.cpu:
            state["compare_cpu"] = True
        elif ended.memory:
            state["memory"] = self._memory_reason(limits)
        else:
            state["compare_crash"] = ended.crash
        try:
            os.close(pidfd)
        except OSError:
            pass
        return ended.duration

    def _memory_reason(self, limits: dict) -> str:
        return (f"the tests' work on the program's values went past the trusted comparison's memory bound "
                f"(compare_mb={limits['compare_mb']} MB)")

    def _serve_job(self, job: dict, fds: list[int], report) -> dict:
        """In the comparison process: one job, from the descriptors the worker handed over."""
        pidfd, out_r, err_r, req_w, rep_r = fds
        kill = lambda: self._kill(pidfd, job["pid"], job["uid"])  # noqa: E731
        session = Session(pidfd, [out_r, err_r, rep_r], req_w, job["limits"], kill)
        return self._compare(session, job["first"], job["steps"], job["names"], job["plan"], job["total"],
                             job["in_process"], report)

    def _compare(self, session, first, steps, names, plan, total, in_process, report) -> dict:
        """In the comparison process (`evaluator.run`): send the job its program, read its replies, run the
        tests, end the job; what the worker needs, as builtin values."""
        state: dict = {}
        try:
            session.send_frame(first)
            self._collect(session, steps, names, plan, state, in_process, total, report)
        except trusted.JobGone:
            pass
        finished = bool(state.get("done")) and self.namespaces
        duration = session.finish(wait=not finished)
        return {
            "done": bool(state.get("done")), "error": state.get("error", ""),
            "claimed_setup": state.get("claimed_setup", ""), "memory": bool(state.get("memory")),
            "gone": session.gone, "detail": session.detail,
            "stdout": session.text(0) + session.test_output, "stderr": session.text(1),
            "duration": duration, "unsplittable": bool(session.unsplittable),
        }

    def _ceiling(self, limits: dict) -> tuple[int | None, str]:
        """Set the memory cgroup's ceiling for this job: (the kernel's OOM-kill count so far, None without a
        cgroup; what went wrong, or "")."""
        if self.group is None:
            return None, ""
        ceiling = limits["memory_mb"] + limits["scratch_mb"] + cgroup.MARGIN_MB
        try:
            self.group.set_limit(ceiling)
        except OSError as exc:
            return None, f"could not set the memory cgroup's ceiling to {ceiling} MB ({exc})"
        return self.group.oom_kills(), ""

    def _collect(self, session, steps, names, plan, state, in_process, total, report) -> None:
        """Read the job's replies and evaluate the tests; whatever the job sends, only this job fails.

        The evaluation runs under the job's own deadline, enforced here (`_Deadline`; and by the worker's
        kill of this process, `evaluator.MARGIN_S` later): a test that the program's values keep busy ends
        as a timeout."""
        trusted.begin(session)
        with _Deadline(session):
            try:
                self._replies(session, steps, names, plan, state, in_process, total, report)
            except trusted.JobGone:
                raise
            except MemoryError:  # outside any test (decoding, rebuilding): past the comparison's bound
                state.pop("done", None)
                state["memory"] = True
                session.stop(CHANNEL, "the trusted comparison ran out of memory")
            except Exception as exc:  # a reply of the wrong shape, or one that breaks its handling here
                state.pop("done", None)
                session.stop(CHANNEL, f"a reply the worker could not use ({_short(harness_describe(exc))})")

    def _replies(self, session, steps, names, plan, state, in_process, total, report) -> None:
        first = session.receive()
        if first[0] == "setup_failed":  # believed only if a program we wrote fails the same way (`_run`)
            state["claimed_setup"] = _short(first[1] if len(first) > 1 and type(first[1]) is str else "no reason")
            session.stop(CHANNEL, "the job said its setup failed")
        elif first[0] == "error":
            state["error"] = _short(first[1] if len(first) > 1 and type(first[1]) is str else "an error")
        elif in_process:  # the job's own reports: forgeable by design (Verdict.forgeable)
            count, reply = 0, first
            while reply[0] == "test" and count < total:
                if len(reply) > 1 and reply[1] is True:
                    report(count, TEST_PASSED, "")
                else:
                    report(count, TEST_FAILED, _short(reply[2]) if len(reply) > 2 else "")
                count += 1
                reply = session.receive()
            state["done"] = reply[0] == "done" and count == total
        elif first[0] == "ready" and len(first) == 2 and type(first[1]) is list and len(first[1]) == len(names):
            session.expect(plan)
            results = trusted.evaluate(steps, session, names, trusted.localize(first[1], session), report)
            state["done"] = not session.gone and len(results) == total
        else:
            session.stop(CHANNEL, f"unexpected first reply {_short(str(first[0]), 40)!r}")

    def _setup_fails(self, limits: dict) -> bool:
        """Whether the job setup fails for a trusted program too (a sandbox fault, not the program's)."""
        probe = self._run("pass", [(True, "assert True")], limits, in_process=False, probe=True)
        return probe["status"] == SANDBOX_ERROR

    def _kill(self, pidfd: int, pid: int, uid: int | None) -> None:
        """Kill the job: PID 1 of its namespace takes everything with it (basic mode: its group, its uid)."""
        try:
            signal.pidfd_send_signal(pidfd, signal.SIGKILL)
        except (ProcessLookupError, OSError):
            pass
        if not self.namespaces:
            try:
                os.killpg(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass

    def _after(self, pid: int, uid: int | None, name: str) -> None:
        if self.namespaces:
            return  # the kernel freed the job's tmpfs with its mount namespace: nothing to remove
        helper = os.fork()
        if helper == 0:  # as the job's uid: processes that left the group die, its files go; never as root
            try:
                if uid is not None:
                    isolation.drop_to(uid)
                    os.kill(-1, signal.SIGKILL)  # every process of this uid but the caller
                isolation.remove_tree(self.base_fd, name)
            except BaseException:
                os._exit(1)
            os._exit(0)
        os.waitpid(helper, 0)
        if uid is not None:
            try:
                os.rmdir(name, dir_fd=self.base_fd)  # the job dir itself belongs to root's base dir
            except OSError:
                pass

    def close(self) -> None:
        if self.evaluator is not None:
            self.evaluator.close()
        self.template.close()  # kills the template: a job still dying goes with it (PDEATHSIG)
        if self.base:
            isolation.remove_tree(os.open("/", os.O_RDONLY | os.O_DIRECTORY), self.base)


def _text(outcome: str, message: str) -> str:
    """A test's line in `Verdict.tests`, made from its typed outcome: "passed", "not run", or "failed: ..."
    (so no failure's text can read as a pass)."""
    if outcome == TEST_PASSED:
        return TEST_PASSED
    if outcome == TEST_NOT_RUN:
        return TEST_NOT_RUN
    return f"failed: {message}" if message else "failed"


def _short(text, cap: int = 300) -> str:
    """Text from the job, one line, capped (it is never parsed for a status)."""
    text = text if type(text) is str else str(type(text).__name__)
    text = text.replace("\n", " ")
    return text if len(text) <= cap else text[:cap] + "..."


class _Deadline:
    """The job's wall-clock deadline, enforced in the worker while it evaluates the tests: a SIGALRM at the
    deadline (plus a second for the kill) stops the job and raises `trusted.JobGone` here, wherever the
    evaluation is (a test's loop over the program's values, a comparison)."""

    def __init__(self, session: Session):
        self.session = session

    def __enter__(self):
        remaining = max(0.001, self.session.deadline - time.monotonic() + 1.0)
        self.previous = signal.signal(signal.SIGALRM, self._expired)
        signal.setitimer(signal.ITIMER_REAL, remaining)
        return self

    def _expired(self, *_):
        self.session.stop(TIMEOUT)
        raise trusted.JobGone("timeout")

    def __exit__(self, *exc):
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, self.previous)
        return False


def main() -> int:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C in the trainer's terminal is for the trainer
    for name in env.LOADER_ONLY:  # read by the dynamic loader at start-up; not for programs to see
        os.environ.pop(name, None)
    # the protocol moves off 0/1: tests run in this process, and their input()/print() must not reach it
    proto_in, proto_out = os.dup(0), os.dup(1)
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(devnull, 1)
    reader = protocol.Reader(proto_in)
    config = reader.recv(timeout=None)
    group, group_problem = None, config.get("cgroup_problem", "")
    if config.get("cgroup"):
        try:  # before the worker's mount namespace covers /sys and makes /proc read-only
            group = cgroup.JobCgroup(*config["cgroup"])
        except OSError as exc:
            group_problem = f"no memory cgroup ({exc}); RLIMIT_AS per process is the memory limit"
    report = isolation.isolate_worker(config["isolation"], config["hide"], config.get("answer_keys", []))
    if group is not None:
        report["memory"] = group.description
    elif group_problem:
        report["problems"].append(group_problem)
    if config["bpf"]:
        report["seccomp"] = "libseccomp filter per job (an allow-list: agentgrpo.sandbox.seccomp.ALLOWED)"
    else:
        report["problems"].append(config["seccomp_problem"])
    report["lacks"] = isolation.lacking(report)
    worker = Worker(report, config["bpf"], group)
    gc.collect()
    gc.freeze()  # what the worker holds from here on is never scanned again by its collections
    protocol.send(proto_out, {"ready": True, "isolation": report})
    try:
        while True:
            try:
                job = reader.recv(timeout=None)
            except protocol.ChannelClosed:
                return 0
            try:
                result = worker.run(job)
            finally:
                sys.stdout, sys.stderr = sys.__stdout__, sys.__stderr__
            try:
                protocol.send(proto_out, result)
            except BrokenPipeError:  # the pool closed us, or the trainer is gone
                return 0
    finally:
        worker.close()


if __name__ == "__main__":
    sys.exit(main())
