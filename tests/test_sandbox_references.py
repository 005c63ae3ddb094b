"""Reference solutions get full marks through the sandbox: the `coding` task's (visible and hidden tests)
and HumanEval's canonical ones (their `check` scripts), through the task's own reward path; the same
programs with every function body replaced by ``pass`` get none (so the tests are not vacuous)."""

from __future__ import annotations

import sys
from pathlib import Path

from agentgrpo.tasks import coding

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.humaneval_canonical import gutted  # noqa: E402


def _scores(rows: list[dict], programs: list[str], tests: list) -> list:
    return coding.hidden_tests_passed([f"```python\n{p}\n```" for p in programs], tests)


def test_every_coding_reference_solution_passes_every_test():
    rows = list(coding.offline_rows())
    tests = [[r["visible_test"], *r["tests"]] for r in rows]
    scores = _scores(rows, [r["solution"] for r in rows], tests)
    assert [r["id"] for r, s in zip(rows, scores) if s != 1.0] == []
    wrong = _scores(rows, [gutted(r["solution"]) for r in rows], tests)
    assert max(wrong) < 1.0


def test_humaneval_canonical_solutions_all_pass():
    rows = list(coding.eval_problems(164))
    assert len(rows) == 164
    scores = _scores(rows, [r["solution"] for r in rows], [r["tests"] for r in rows])
    assert [r["id"] for r, s in zip(rows, scores) if s != 1.0] == []
    assert [r["id"] for r, s in zip(rows, _scores(rows, [gutted(r["solution"]) for r in rows],
                                                   [r["tests"] for r in rows])) if s != 0.0] == []
