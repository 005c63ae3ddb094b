"""The slowest messages a job can send the worker: decode time at the caps (issue 21 B: no decode over 100 ms).

    python benchmarks/wire_decode.py              # crafted worst cases + 3000 fuzzed frames
    python benchmarks/wire_decode.py --fuzz 20000

Each crafted message sits at a cap (`wire.MAX_ITEMS` elements, `Limits.value_bytes`, `wire.MAX_DEPTH`,
`wire.MAX_COLLISIONS`) in the shape that costs the decoder most per byte; the fuzzed ones come from the
grammar of ``tests/test_sandbox_fuzz.py``. Prints the CPU time (this thread) of the best of 3 decodes of
each crafted message and the worst over the fuzzed ones, and exits 1 if any is over 100 ms.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from agentgrpo.sandbox import Limits, wire

LIMIT_S = 0.1
M = 2**61 - 1  # ints that differ by multiples of it share a hash


def crafted() -> dict[str, bytes]:
    n = wire.MAX_ITEMS - 1
    cap = Limits().value_bytes
    deep_wide = ()
    for _ in range(wire.MAX_DEPTH - 2):  # a chain of tuples, each with ints: every level hashed for the guard
        deep_wide = (*range(n // wire.MAX_DEPTH), deep_wide)
    return {
        f"{n} empty lists": wire.encode([[] for _ in range(n)]),
        f"dict of {n // 2} int keys": wire.encode({i: None for i in range(n // 2)}),
        f"{n} small tuples": wire.encode([(i,) for i in range(n // 2)]),
        f"{n} mixed scalars": wire.encode([None, 1, 1.5, "s", b"b", True] * (n // 6)),
        f"{n} equal ints (generic)": wire.encode([0] * (n - 1) + [None]),
        f"{n} distinct big ints": wire.encode([2**200 + i for i in range(n)], max_bytes=cap),
        f"{wire.MAX_ITEMS * 8 - 8} packed ints": wire.encode(list(range(wire.MAX_ITEMS * 8 - 8)), max_bytes=cap),
        f"{wire.MAX_ITEMS * 8 - 8} packed empty strs": wire.encode([""] * (wire.MAX_ITEMS * 8 - 8), max_bytes=cap),
        f"str of {cap >> 20} MB": wire.encode("\u00e9" * (cap // 2 - 16), max_bytes=cap),
        f"int of {cap >> 20} MB": wire.encode(1 << (8 * cap - 64), max_bytes=cap),
        f"{n} ints with one hash (refused)": b"l" + n.to_bytes(4, "big") + b"".join(
            wire.encode(M * i) for i in range(n)),
        f"set of {n} ints with one hash (refused)": b"S" + n.to_bytes(4, "big") + b"".join(
            wire.encode(M * i) for i in range(n)),
        f"{wire.MAX_COLLISIONS} colliding + repeats": wire.encode([M * i for i in range(wire.MAX_COLLISIONS)] * 900),
        f"tuples {wire.MAX_DEPTH} deep, ints at each level": wire.encode(deep_wide, max_bytes=cap),
        f"lists {wire.MAX_DEPTH} deep": wire.encode(eval("[" * wire.MAX_DEPTH + "]" * wire.MAX_DEPTH)),
    }


def cpu_of(data: bytes) -> float:
    started = time.thread_time()
    try:
        wire.decode(data, max_bytes=Limits().value_bytes + 4096)
    except wire.WireError:
        pass
    return time.thread_time() - started


def fuzzed(count: int) -> tuple[float, int]:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    import warnings

    from test_sandbox_fuzz import frames

    worst = 0.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # .example() outside a test is what we want here
        for _ in range(count):
            worst = max(worst, cpu_of(frames.example()))
    return worst, count


def main() -> int:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from benchmarks import provenance

    env = provenance.environment()  # recorded with the results: versions, CPU, threads, commit
    print(provenance.line(env), flush=True)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fuzz", type=int, default=3000)
    args = parser.parse_args()
    worst = 0.0
    for name, data in crafted().items():
        cpu = min(cpu_of(data) for _ in range(3))
        worst = max(worst, cpu)
        print(f"{name:45s} {len(data) / 1e6:7.2f} MB  {cpu * 1000:7.1f} ms")
    fuzz_worst, n = fuzzed(args.fuzz)
    print(f"{'fuzzed frames: worst of ' + str(n):45s} {'':10s}  {fuzz_worst * 1000:7.1f} ms")
    worst = max(worst, fuzz_worst)
    print(f"max decode CPU time: {worst * 1000:.1f} ms (limit {LIMIT_S * 1000:.0f} ms)")
    return 0 if worst <= LIMIT_S else 1


if __name__ == "__main__":
    sys.exit(main())
