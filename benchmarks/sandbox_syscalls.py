"""The syscalls sandboxed jobs make after their seccomp filter is installed, found by tracing real jobs.

Runs a command (default: the honest kinds of `benchmarks/sandbox_honest_kinds.py` through a pool) under
``strace -f``, finds each job process (the one that installed the filter: ``seccomp(SECCOMP_SET_MODE_FILTER``)
and its descendants, and counts every syscall they made after the install, with the ``ioctl`` requests,
``prctl`` options, ``fcntl`` commands, ``socket``/``socketpair`` families and ``setsockopt`` options seen.
Prints which of them the allow-list (`agentgrpo.sandbox.seccomp.ALLOWED`) does not cover: what
docs/sandbox.md's allowed set was derived from (run it as root and as a non-root user).

    python benchmarks/sandbox_syscalls.py                          # the honest kinds
    python benchmarks/sandbox_syscalls.py -- python -m pytest -q tests/test_sandbox_differential.py
    python benchmarks/sandbox_syscalls.py --keep /tmp/trace -- python benchmarks/sandbox_throughput.py --pool-only
"""

from __future__ import annotations

import argparse
import collections
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = os.path.dirname(os.path.abspath(__file__))
_CALL = re.compile(r"^(?:\[pid\s+\d+\]\s+)?([a-z0-9_]+)\((.*)")
# with --pidns-translation strace adds the pid in its own namespace: "= 2 /* 12345 in strace's PID NS */"
_CHILD = re.compile(r"^(?:clone|clone3|fork|vfork)\(.*\)\s+=\s+(\d+)(?: /\* (\d+) in strace's PID NS \*/)?")
_ARGUMENTS = {
    "ioctl": 1,
    "prctl": 0,
    "fcntl": 1,
    "socket": 0,
    "socketpair": 0,
    "setsockopt": 2,
    "getsockopt": 2,
    "madvise": 2,
    "clone": 1,
}


def run_honest_kinds() -> int:
    """Run every honest kind through a pool; 1 if any verdict is not Python's (all pass)."""
    sys.path.insert(0, os.path.dirname(HERE))
    from agentgrpo.sandbox import Limits, Sandbox
    from benchmarks.sandbox_honest_kinds import KINDS, NEEDS_SOCKETPAIR

    bad = 0
    with Sandbox(workers=1, limits=Limits(wall_s=30, cpu_s=20)) as box:
        refused = box.isolation.get("socket_pairs", "").startswith("refused")
        for (name, _, _), verdict in zip(KINDS, box.run_many([(p, t) for _, p, t in KINDS]), strict=True):
            expected = "failed" if refused and name in NEEDS_SOCKETPAIR else "passed"
            if verdict.status != expected:
                bad += 1
                print(f"honest kind {name}: {verdict.status} ({verdict.reason}), expected {expected}", file=sys.stderr)
    return 1 if bad else 0


def analyse(trace_dir: str) -> tuple[collections.Counter, dict[str, collections.Counter]]:
    """Syscalls of job processes after their filter was installed, and the key argument of some of them."""
    files = {int(name.rsplit(".", 1)[1]): os.path.join(trace_dir, name) for name in os.listdir(trace_dir)}
    job_pids: set[int] = set()
    lines_of: dict[int, list[str]] = {}
    for pid, path in files.items():
        with open(path, errors="replace") as fh:
            lines = fh.read().splitlines()
        for i, line in enumerate(lines):
            installed = line.startswith(("seccomp(SECCOMP_SET_MODE_FILTER", "prctl(PR_SET_SECCOMP"))
            if installed and "filter=" in line and line.rstrip().endswith("= 0"):
                job_pids.add(pid)
                lines_of[pid] = lines[i + 1 :]
                break
        else:
            lines_of[pid] = lines
    frontier = list(job_pids)
    while frontier:  # descendants of jobs inherit the filter: all their syscalls count
        pid = frontier.pop()
        for line in lines_of.get(pid, ()):
            m = _CHILD.match(line)
            child = int(m.group(2) or m.group(1)) if m else None
            if child in files and child not in job_pids:
                job_pids.add(child)
                frontier.append(child)
    calls: collections.Counter = collections.Counter()
    details: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for pid in job_pids:
        for line in lines_of[pid]:
            m = _CALL.match(line)
            if not m:
                continue
            name, rest = m.group(1), m.group(2)
            calls[name] += 1
            if name in _ARGUMENTS:
                args = [a.strip() for a in re.split(r",(?![^{\[]*[}\]])", rest.split(") =")[0])]
                index = _ARGUMENTS[name]
                if index < len(args):
                    details[name][args[index][:60]] += 1
    return calls, details


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keep", help="keep the raw strace files in this directory")
    parser.add_argument("--honest-kinds", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("command", nargs="*", help="the command to trace (default: the honest kinds)")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from benchmarks import provenance

    print(provenance.line(provenance.environment()), flush=True)  # versions, CPU, threads, commit
    if args.honest_kinds:
        return run_honest_kinds()
    if shutil.which("strace") is None:
        print("strace is not installed (apt install strace)", file=sys.stderr)
        return 2
    command = args.command or [sys.executable, os.path.abspath(__file__), "--honest-kinds"]
    trace_dir = args.keep or tempfile.mkdtemp(prefix="agentgrpo-strace-")
    os.makedirs(trace_dir, exist_ok=True)
    try:
        done = subprocess.run(
            [
                "strace",
                "-f",
                "-ff",
                "-qq",
                "--pidns-translation",
                "-s",
                "0",
                "-o",
                os.path.join(trace_dir, "t"),
                *command,
            ]
        )
        calls, details = analyse(trace_dir)
    finally:
        if not args.keep:
            shutil.rmtree(trace_dir, ignore_errors=True)
    sys.path.insert(0, os.path.join(os.path.dirname(HERE), "src"))
    from agentgrpo.sandbox import seccomp

    allowed = set(seccomp.allowed_names())
    refused = set(seccomp.DENIED_WITH)  # refused on purpose, with the errno the library expects
    print(f"command exit status: {done.returncode}; uid {os.geteuid()}")
    print(f"syscalls made by jobs after their filter was installed: {len(calls)}")
    for name, count in sorted(calls.items()):
        mark = "" if name in allowed else "   (refused on purpose)"
        if name not in allowed | refused:
            mark = "   <- not in the allow-list"
        extra = ""
        if name in details:
            extra = "  [" + ", ".join(f"{k} x{v}" for k, v in details[name].most_common(12)) + "]"
        print(f"  {name:24} {count:8}{mark}{extra}")
    missing = sorted(set(calls) - allowed - refused)
    print(f"refused on purpose: {sorted(set(calls) & refused) or 'none'}")
    print(f"not in the allow-list: {missing if missing else 'none'}")
    return done.returncode


if __name__ == "__main__":
    sys.exit(main())
