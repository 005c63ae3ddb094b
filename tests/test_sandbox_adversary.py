"""The adversary in CI (issue 34, item 6): generated hostile programs against the sandbox's invariants.

`benchmarks/sandbox_adversary.py` generates hostile programs from a seeded grammar (odd exception names,
bases and messages; lying dunders and ``__getattribute__``; huge, lazy, deep and hash-colliding values;
side effects in constructors; resource hogs) and tests whose expected values are drawn at test time.
Every example must: never pass, never be ``sandbox_error``, end within its wall limit plus the margin,
keep the trusted processes under their memory bound, and leave the pool giving honest jobs Python's
verdict. This runs ``AGENTGRPO_ADVERSARY_EXAMPLES`` (default 300) examples from ``AGENTGRPO_ADVERSARY_SEED``
(default: a new seed per day, printed), as root and, in CI, as a non-root user; the benchmark runs
thousands. Saved cases (``tests/data/sandbox_adversary_cases.json``: shrunk failures the generator found)
are replayed every run.
"""

from __future__ import annotations

import datetime
import json
import os
import random
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from benchmarks import sandbox_adversary as adversary  # noqa: E402

EXAMPLES = int(os.environ.get("AGENTGRPO_ADVERSARY_EXAMPLES", "300"))
SEED = int(os.environ.get("AGENTGRPO_ADVERSARY_SEED", datetime.date.today().strftime("%Y%m%d")))
CASES = json.loads((ROOT / "tests" / "data" / "sandbox_adversary_cases.json").read_text())
WALL_S, MARGIN_S = 1.0, 4.0

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="Linux sandbox")


def test_generated_hostile_programs_hold_every_invariant():
    result = adversary.run(
        EXAMPLES,
        SEED,
        workers=min(2, os.cpu_count() or 1),
        wall_s=WALL_S,
        margin=MARGIN_S,
        worker_growth_mb=96,
        shrink_failures=True,
        log=lambda *a: None,
    )
    report = [
        f"seed {SEED}: {json.dumps({k: f[k] for k in ('primitives', 'violations', 'status')})}\n"
        f"  shrunk: {json.dumps(f.get('shrunk'))}"
        for f in result["failures"]
    ]
    assert result["failures"] == [] and result["memory"] == [], "\n".join(report + result["memory"])
    assert result["held"] == {name: EXAMPLES for name in adversary.INVARIANTS}
    # the grammar reaches every outcome a hostile program can have (so the invariants were tried on each)
    assert {"failed", "crashed", "timeout"} <= set(result["statuses"]), result["statuses"]


@pytest.fixture(scope="module")
def box():
    from agentgrpo.sandbox import Limits, Sandbox

    with Sandbox(workers=1, limits=Limits(wall_s=WALL_S, cpu_s=1, memory_mb=256)) as sandbox:
        yield sandbox


@pytest.mark.parametrize("case", CASES, ids=[f"case{i}" for i in range(len(CASES))])
def test_saved_cases_hold_every_invariant(box, case):
    """Shrunk failures the generator found (each with the commit and command that found it)."""
    program, tests = case["program"], case["tests"]
    verdict = box.run(program, tests)
    assert verdict.status not in ("passed", "sandbox_error") and verdict.passed == 0, (case["primitives"], verdict)
    assert verdict.duration_s <= WALL_S + MARGIN_S, verdict
    jobs, expected = adversary.honest_pair(random.Random(len(program)))
    assert [(v.status, v.passed) for v in box.run_many(jobs)] == expected


def test_the_tests_cannot_be_known_by_the_program():
    """Expected values come from the test-time generator: two draws from one seed differ."""
    a = adversary.draw_tests(random.Random(1), random.SystemRandom(), 3)
    b = adversary.draw_tests(random.Random(1), random.SystemRandom(), 3)
    assert a != b and len(a) == 3


def test_the_grammar_covers_every_primitive_kind():
    rng = random.Random(SEED)
    names = {p.name.split(":")[0] for _ in range(2000) for p in adversary.generate(rng)}
    assert names == {"exception", "exit", "lying", "huge", "effect", "hog"}, names
    for index in range(200):  # every generated program compiles (a syntax error would test nothing)
        compile(adversary.program_of(adversary.generate(random.Random(f"{SEED}:{index}"))), "<adversary>", "exec")
