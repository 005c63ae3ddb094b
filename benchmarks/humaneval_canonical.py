"""HumanEval through the `coding` task's reward path: canonical solutions score 100%, `pass` bodies 0%.

    python benchmarks/humaneval_canonical.py            # all 164 problems
    python benchmarks/humaneval_canonical.py --n 40     # a subset

Each completion is a chat reply with the program in a ```python block, scored by the task's
`hidden_tests_passed` reward (HumanEval's `check` script, run in `agentgrpo.sandbox`). The known-wrong set
replaces every function body of the canonical program by `pass`. Prints both figures and the time.
"""

from __future__ import annotations

import argparse
import ast
import sys
import time
from pathlib import Path


def gutted(program: str) -> str:
    """``program`` with the body of every function (nested ones included) replaced by ``pass``."""
    tree = ast.parse(program)
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            node.body = [ast.Pass()]
    return ast.unparse(tree)


def score(rows: list[dict]) -> dict:
    from agentgrpo.tasks.coding import hidden_tests_passed

    def run(programs):
        t = time.perf_counter()
        out = hidden_tests_passed([f"```python\n{p}\n```" for p in programs], [r["tests"] for r in rows])
        return out, time.perf_counter() - t

    good, t_good = run([r["solution"] for r in rows])
    bad, t_bad = run([gutted(r["solution"]) for r in rows])
    return {"n": len(rows), "canonical": good, "wrong": bad, "seconds": t_good + t_bad,
            "canonical_failures": [r["id"] for r, s in zip(rows, good) if s != 1.0],
            "wrong_passes": [r["id"] for r, s in zip(rows, bad) if s != 0.0]}


def main() -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from benchmarks import provenance

    env = provenance.environment()  # recorded with the results: versions, CPU, threads, commit
    print(provenance.line(env), flush=True)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=164)
    args = parser.parse_args()
    from agentgrpo.tasks.coding import eval_problems, sandbox

    t0 = time.perf_counter()
    box = sandbox()
    box.start()
    print(f"sandbox: {box.isolation['mode']} isolation, {box.workers} workers (start {time.perf_counter() - t0:.1f} s)")
    res = score(eval_problems(args.n))
    mean = lambda xs: sum(x or 0.0 for x in xs) / len(xs)  # noqa: E731
    print(f"HumanEval canonical solutions: {mean(res['canonical']):.1%} of {res['n']} pass "
          f"(failures: {res['canonical_failures'] or 'none'})")
    print(f"HumanEval bodies replaced by `pass`: {mean(res['wrong']):.1%} pass "
          f"(passes: {res['wrong_passes'] or 'none'})")
    print(f"time: {res['seconds']:.1f} s for {2 * res['n']} sandboxed programs (limit 60 s)")


if __name__ == "__main__":
    main()
