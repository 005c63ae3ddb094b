"""Throughput of the sandbox pool against the common recipe: one fresh subprocess per assert, in sequence.

Generates N MBPP-style programs (a function plus 3 asserts; some buggy, some raising, one not compiling),
runs every assert as ``subprocess.run([sys.executable, "-c", program + "\\n" + assert])`` one after another
(the baseline), then runs the same programs through `agentgrpo.sandbox.Sandbox`, and compares the per-test
verdicts (they must be identical) and the throughput. Prints the ratio; exits 1 if any verdict differs.

    python benchmarks/sandbox_throughput.py                # 240 programs, 2 workers
    python benchmarks/sandbox_throughput.py --n 400 --workers 2
    python benchmarks/sandbox_throughput.py --breakdown    # also: where a job's time goes (needs root)
    perf record -a -g -- python benchmarks/sandbox_throughput.py --pool-only --repeat 3   # then perf report
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

from agentgrpo.sandbox import Sandbox

# (function source with {op} placeholders filled per variant, buggy variant, test maker)
TEMPLATES = [
    (
        "def add_n(xs, n):\n    return [x + n for x in xs]",
        "def add_n(xs, n):\n    return [x + n - 1 for x in xs]",
        lambda k: [
            f"assert add_n([1, 2, 3], {k}) == {[1 + k, 2 + k, 3 + k]}",
            f"assert add_n([], {k}) == []",
            f"assert add_n([{k}], 0) == [{k}]",
        ],
    ),
    (
        "def fact(n):\n    out = 1\n    for i in range(2, n + 1):\n        out *= i\n    return out",
        "def fact(n):\n    out = 1\n    for i in range(2, n):\n        out *= i\n    return out",
        lambda k: [
            f"assert fact({k % 10}) == {_fact(k % 10)}",
            "assert fact(0) == 1",
            "assert fact(5) == 120",
        ],
    ),
    (
        "def is_prime(n):\n    if n < 2:\n        return False\n    i = 2\n    while i * i <= n:\n"
        "        if n % i == 0:\n            return False\n        i += 1\n    return True",
        "def is_prime(n):\n    return n % 2 == 1",
        lambda k: [
            f"assert is_prime({k + 2}) == {_prime(k + 2)}",
            "assert is_prime(9) == False",
            "assert is_prime(13) == True",
        ],
    ),
    (
        "def reverse_words(s):\n    return ' '.join(s.split()[::-1])",
        "def reverse_words(s):\n    return s[::-1]",
        lambda k: [
            f"assert reverse_words('a b {k}') == '{k} b a'",
            "assert reverse_words('') == ''",
            "assert reverse_words('x') == 'x'",
        ],
    ),
    (
        "def count_vowels(s):\n    return sum(c in 'aeiou' for c in s.lower())",
        "def count_vowels(s):\n    return sum(c in 'aeio' for c in s)",
        lambda k: [
            f"assert count_vowels('{'a' * (k % 7)}bc') == {k % 7}",
            "assert count_vowels('Queue') == 4",
            "assert count_vowels('xyz') == 0",
        ],
    ),
    (
        "def gcd(a, b):\n    while b:\n        a, b = b, a % b\n    return a",
        "def gcd(a, b):\n    return min(a, b)",
        lambda k: [
            f"assert gcd({6 * k + 6}, {4 * k + 4}) == {2 * k + 2}",
            "assert gcd(17, 5) == 1",
            "assert gcd(10, 10) == 10",
        ],
    ),
    (
        "def fib(n):\n    a, b = 0, 1\n    for _ in range(n):\n        a, b = b, a + b\n    return a",
        "def fib(n):\n    a, b = 1, 1\n    for _ in range(n):\n        a, b = b, a + b\n    return a",
        lambda k: [f"assert fib({k % 20}) == {_fib(k % 20)}", "assert fib(1) == 1", "assert fib(10) == 55"],
    ),
    (
        "def second_largest(xs):\n    return sorted(set(xs))[-2]",
        "def second_largest(xs):\n    return sorted(xs)[-2]",
        lambda k: [
            f"assert second_largest([{k}, {k} + 5, {k} + 5, 1]) == {k if k > 1 else 1}",
            "assert second_largest([3, 1, 2]) == 2",
            "assert second_largest([9, 9, 8]) == 8",
        ],
    ),
    (
        "def is_palindrome(s):\n    t = ''.join(c.lower() for c in s if c.isalnum())\n    return t == t[::-1]",
        "def is_palindrome(s):\n    return s == s[::-1]",
        lambda k: [
            f"assert is_palindrome('A{'b' * (k % 4)}a') == True",
            "assert is_palindrome('No lemon, no melon')",
            "assert not is_palindrome('abc')",
        ],
    ),
    (
        "def chunk(xs, n):\n    return [xs[i:i + n] for i in range(0, len(xs), n)]",
        "def chunk(xs, n):\n    return [xs[i:i + n] for i in range(0, len(xs) - 1, n)]",
        lambda k: [
            f"assert chunk(list(range({k % 9 + 1})), 2) == {_chunk(k % 9 + 1)}",
            "assert chunk([], 3) == []",
            "assert chunk([1, 2, 3], 3) == [[1, 2, 3]]",
        ],
    ),
    (
        "def word_freq(s):\n    out = {}\n    for w in s.split():\n        out[w] = out.get(w, 0) + 1\n    return out",
        "def word_freq(s):\n    return {w: 1 for w in s.split()}",
        lambda k: [
            "assert word_freq('a b a') == {'a': 2, 'b': 1}",
            "assert word_freq('') == {}",
            f"assert word_freq('x ' * {k % 5 + 1})['x'] == {k % 5 + 1}",
        ],
    ),
    (
        "def digits_sum(n):\n    return sum(int(d) for d in str(abs(n)))",
        "def digits_sum(n):\n    return sum(int(d) for d in str(n))",
        lambda k: [
            f"assert digits_sum({k * 37}) == {sum(int(d) for d in str(k * 37))}",
            f"assert digits_sum(-{k + 10}) == {sum(int(d) for d in str(k + 10))}",
            "assert digits_sum(0) == 0",
        ],
    ),
]


def _fact(n):
    out = 1
    for i in range(2, n + 1):
        out *= i
    return out


def _prime(n):
    return n >= 2 and all(n % i for i in range(2, int(n**0.5) + 1))


def _fib(n):
    a, b = 0, 1
    for _ in range(n):
        a, b = b, a + b
    return a


def _chunk(n):
    xs = list(range(n))
    return [xs[i : i + 2] for i in range(0, n, 2)]


def programs(n: int) -> list[tuple[str, list[str]]]:
    """N deterministic (program, 3 asserts) pairs: ~1 in 5 buggy, ~1 in 17 raising, one that won't compile."""
    out = []
    for i in range(n):
        good, buggy, tests = TEMPLATES[i % len(TEMPLATES)]
        k = i // len(TEMPLATES) + 1
        program = buggy if i % 5 == 3 else good
        if i % 17 == 5:
            program += "\n_ = 1 / (len(__name__) - len(__name__))  # raises at import"
        if i == 7:
            program = program.replace("def ", "def def ", 1)
        out.append((program, tests(k)))
    return out


def baseline(jobs) -> list[list[bool]]:
    """One fresh interpreter per assert, sequentially: pass == exit code 0."""
    return [
        [
            subprocess.run([sys.executable, "-c", program + "\n" + test], capture_output=True, timeout=30).returncode
            == 0
            for test in tests
        ]
        for program, tests in jobs
    ]


def sandboxed(box: Sandbox, jobs) -> list[list[bool]]:
    return [[t == "passed" for t in v.tests] for v in box.run_many(jobs)]


def breakdown(jobs, repeat: int = 200) -> list[str]:
    """Per-job costs, measured one after another in a throwaway process set up like a worker (root only)."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        try:
            lines = _measure(jobs, repeat)
        except BaseException as exc:  # report, never hang the benchmark
            lines = [f"breakdown failed: {type(exc).__name__}: {exc}"]
        os.write(write, "\n".join(lines).encode())
        os._exit(0)
    os.close(write)
    chunks = []
    while chunk := os.read(read, 65536):
        chunks.append(chunk)
    os.waitpid(pid, 0)
    return b"".join(chunks).decode().splitlines()


def _measure(jobs, repeat: int) -> list[str]:
    from agentgrpo.sandbox import isolation, seccomp

    bpf, _ = seccomp.build()
    report = isolation.isolate_worker("auto", [])
    if not report["pid_namespace"]:
        return ["breakdown: needs the namespace modes (run as root)"]
    report.update(seccomp="libseccomp filter" if bpf else "none")
    report["lacks"] = isolation.lacking(report)
    # like the worker: the next child is PID 1 of the new PID namespace, and measures from there
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        try:
            lines = _measure_in_namespace(jobs, repeat, report, bpf)
        except BaseException as exc:
            lines = [f"breakdown failed: {type(exc).__name__}: {exc}"]
        os.write(write, "\n".join(lines).encode())
        os._exit(0)
    os.close(write)
    chunks = []
    while chunk := os.read(read, 65536):
        chunks.append(chunk)
    os.waitpid(pid, 0)
    return b"".join(chunks).decode().splitlines()


def _measure_in_namespace(jobs, repeat: int, report: dict, bpf) -> list[str]:
    from agentgrpo.sandbox import isolation, linux, wire
    from agentgrpo.sandbox import jobs as job_steps
    from agentgrpo.sandbox.limits import Limits
    from agentgrpo.sandbox.worker import Worker

    limits = Limits().to_dict()
    own = isolation.own_pid_namespace()

    def per_call_ms(fn, n=repeat):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        return (time.perf_counter() - t0) / n * 1000

    def child(body, fork=os.fork):
        def run():
            pid = fork()
            if pid == 0:
                code = 1
                try:
                    body()
                    code = 0
                finally:
                    os._exit(code)  # never back into the parent's code, even when the body raised
            _, status = os.waitpid(pid, 0)
            if status != 0:
                raise RuntimeError("a measured child process failed")

        return run

    def in_pid_ns(body):
        return child(body, fork=lambda: isolation.native().fork_in_pid_namespace(own))

    fork = per_call_ms(child(lambda: None))
    pidns = per_call_ms(in_pid_ns(lambda: None))
    ns = per_call_ms(in_pid_ns(lambda: isolation.enter_job(limits["scratch_mb"], (), True, False, None)))
    netns = per_call_ms(in_pid_ns(lambda: linux.unshare(linux.CLONE_NEWNET)))
    linux.prctl(linux.PR_SET_NO_NEW_PRIVS, 1)  # as the template does
    filt = per_call_ms(child(lambda: isolation.enter_job(limits["scratch_mb"], (), False, False, bpf)))
    request = ("call", 1, [[1, 2, 3], 4], {})
    reply = ("ok", [5, 6, 7], [None, None])
    ser = per_call_ms(lambda: wire.decode(wire.encode(request)) and wire.decode(wire.encode(reply)), 20000)
    sample = [
        {"program": p, "steps": job_steps.prepare(p, t), "limits": limits, "comparison": "trusted"}
        for p, t in jobs[:60]
    ]
    timings = {}
    for name, filter_ in (("with seccomp", bpf), ("without seccomp", None)):
        worker = Worker(report, filter_)
        for job in sample[:10]:
            worker.run(job)
        t0 = time.perf_counter()
        for job in sample:
            worker.run(job)
        timings[name] = (time.perf_counter() - t0) / len(sample) * 1000
        worker.close()
    return [
        "where a job's time goes (ms per job, one worker, sequential; the machine's load included):",
        f"  whole job, trusted comparison, 3 asserts:   {timings['with seccomp']:6.2f}  "
        f"(without the seccomp filter: {timings['without seccomp']:.2f})",
        f"  fork of a small process + exit + reap:      {fork:6.2f}",
        f"  ... in a new PID namespace:                 {pidns:6.2f}",
        f"  ... + mount/IPC/net/UTS namespaces, tmpfs, /proc: {ns:6.2f}",
        f"  ... + the network namespace alone:          {netns:6.2f}",
        f"  fork + session + installing the seccomp filter: {filt:6.2f}",
        f"  serialisation, one call round trip (both ends, both ways): {ser * 1000:6.1f} us",
    ]


def _cpu_times() -> list[float]:
    """Machine-wide user, system (incl. irq, softirq) and idle seconds from /proc/stat ([] elsewhere)."""
    try:
        with open("/proc/stat") as fh:
            ticks = [int(x) for x in fh.readline().split()[1:8]]
    except OSError:
        return []
    hz = os.sysconf("SC_CLK_TCK")
    user, nice, system, idle, iowait, irq, softirq = ticks
    return [(user + nice) / hz, (system + irq + softirq) / hz, (idle + iowait) / hz]


def main(argv: list[str] | None = None) -> int:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from benchmarks import provenance

    env = provenance.environment()  # recorded with the results: versions, CPU, threads, commit
    print(provenance.line(env), flush=True)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=240, help="number of programs (3 asserts each)")
    parser.add_argument("--workers", type=int, default=2, help="sandbox workers")
    parser.add_argument("--breakdown", action="store_true", help="also measure where a job's time goes (root)")
    parser.add_argument(
        "--pool-only", action="store_true", help="skip the baseline (to profile the pool, e.g. under perf record)"
    )
    parser.add_argument("--repeat", type=int, default=1, help="run the pool over the programs this many times")
    args = parser.parse_args(argv)
    jobs = programs(args.n)
    if args.pool_only:
        with Sandbox(workers=args.workers) as box:
            for _ in range(args.repeat):
                t0 = time.perf_counter()
                sandboxed(box, jobs)
                print(f"sandbox ({args.workers} workers): {time.perf_counter() - t0:.2f} s for {len(jobs)} programs")
        return 0

    t0 = time.perf_counter()
    base = baseline(jobs)
    t_base = time.perf_counter() - t0

    t0 = time.perf_counter()
    box = Sandbox(workers=args.workers)
    box.start()
    t_start = time.perf_counter() - t0
    with box:
        for _ in range(args.repeat - 1):  # warm-up passes; the last one is measured
            sandboxed(box, jobs)
        cpu0, t0 = _cpu_times(), time.perf_counter()
        ours = sandboxed(box, jobs)
        t_ours = time.perf_counter() - t0
        cpu = [b - a for a, b in zip(cpu0, _cpu_times(), strict=True)]
        mode = box.isolation["mode"]
        job_setup = box.isolation["job_setup"]

    differ = [i for i, (a, b) in enumerate(zip(base, ours, strict=True)) if a != b]
    n_tests = sum(len(t) for _, t in jobs)
    passed_programs = sum(all(v) for v in base)
    print(
        f"programs: {len(jobs)} ({n_tests} asserts; {passed_programs} pass all, "
        f"{len(jobs) - passed_programs} "
        f"fail some), tests passed: {sum(map(sum, base))}/{n_tests}"
    )
    print(f"baseline  (1 subprocess per assert, sequential): {t_base:8.2f} s  {len(jobs) / t_base:8.1f} programs/s")
    print(
        f"sandbox   ({args.workers} warm workers, isolation={mode}):     {t_ours:8.2f} s  "
        f"{len(jobs) / t_ours:8.1f} programs/s  (+{t_start:.2f} s to start the pool)"
    )
    print(f"job setup: {job_setup}")
    print(f"verdicts identical: {not differ} ({len(jobs) - len(differ)}/{len(jobs)} programs agree)")
    print(f"throughput ratio (warm pool): {t_base / t_ours:.1f}x")
    print(f"throughput ratio (pool start included): {t_base / (t_ours + t_start):.1f}x")
    if cpu:
        user, system, idle = cpu
        print(
            f"CPU of the whole machine during the pool run: user {user:.2f} s, system {system:.2f} s, "
            f"idle {idle:.2f} s ({user + system:.2f} CPU-s = {(user + system) / len(jobs) * 1000:.1f} ms per program "
            f"over {os.cpu_count()} cores)"
        )
    for i in differ[:5]:
        print(f"  differs: program {i}: baseline {base[i]} sandbox {ours[i]}")
    if args.breakdown:
        print("\n".join(breakdown(jobs)))
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
