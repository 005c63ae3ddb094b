"""CPU per job of a sandbox worker and everything under it (its comparison process, template and jobs).

Runs ``--jobs`` sequential three-assert jobs on one warm worker and reads the CPU time (own and reaped
children) of the worker's whole process tree from /proc before and after. Unlike wall time, this does not
depend much on what else the machine runs: compare commits with it (``PYTHONPATH=<tree>/src``).

    python benchmarks/sandbox_job_cpu.py              # 150 jobs
    python benchmarks/sandbox_job_cpu.py --jobs 300
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from agentgrpo.sandbox import Sandbox

PROGRAM = "def add(a, b):\n    return a + b"
TESTS = ["assert add(1, 2) == 3", "assert add(0, 0) == 0", "assert add(2, 2) == 5"]


def tree_cpu(pids: list[int]) -> float:
    """CPU seconds (user + system, own + reaped children) of these processes and all their descendants."""
    total, seen, stack = 0.0, set(), list(pids)
    tick = os.sysconf("SC_CLK_TCK")
    while stack:
        pid = stack.pop()
        if pid in seen:
            continue
        seen.add(pid)
        try:
            with open(f"/proc/{pid}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
            total += sum(int(x) for x in fields[11:15]) / tick
            for task in os.listdir(f"/proc/{pid}/task"):
                with open(f"/proc/{pid}/task/{task}/children") as fh:
                    stack += [int(c) for c in fh.read().split()]
        except OSError:  # a process that just exited: its CPU is in its parent's children's time
            continue
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=150)
    args = parser.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from benchmarks import provenance

    print(provenance.line(provenance.environment()), flush=True)  # versions, CPU, threads, commit
    with Sandbox(workers=1) as box:
        for _ in range(20):  # warm: the comparison process is started, caches filled
            box.run(PROGRAM, TESTS)
        before, start = tree_cpu(box.pids()), time.perf_counter()
        for _ in range(args.jobs):
            box.run(PROGRAM, TESTS)
        wall, cpu = time.perf_counter() - start, tree_cpu(box.pids()) - before
    print(f"{args.jobs} jobs: worker tree CPU {cpu / args.jobs * 1e3:.2f} ms/job, "
          f"wall {wall / args.jobs * 1e3:.2f} ms/job (load average {os.getloadavg()[0]:.1f})")


if __name__ == "__main__":
    main()
