"""Which failures are reported as consequences of another (warnings), and which stay failures."""

from __future__ import annotations

import pytest

from agentgrpo.doctor.diagnose import _explain, diagnose
from agentgrpo.doctor.finding import FAILURE, WARNING, Finding
from agentgrpo.doctor.readers import read_run
from benchmarks import doctor_synthetic as synthetic


def _fail(detector: str, onset: int) -> Finding:
    return Finding(detector=detector, status=FAILURE, verdict=detector, confidence=0.8, onset=onset)


@pytest.mark.parametrize("n", [60, 200])
def test_tool_calls_vanishing_with_a_collapse_are_its_consequence(n, tmp_path):
    """A degenerate policy stops calling its tool along with everything else: one failure, the collapse."""
    case = synthetic.make("collapse_with_tools", n, 0, 0.3)
    report = diagnose(read_run(case.write(tmp_path)).table)
    assert [f.detector for f in report.failures] == ["collapse"], report.headline
    tools = report.get("tools")
    assert tools.status == WARNING and "consequence of the collapse" in tools.verdict


def test_tool_misuse_long_before_a_collapse_stays_a_failure():
    findings = [_fail("collapse", 80), _fail("tools", 10)]
    _explain(findings, span=100.0)
    assert [f.status for f in findings] == [FAILURE, FAILURE]


def test_tool_misuse_at_the_collapse_is_explained():
    findings = [_fail("collapse", 12), _fail("tools", 10)]
    _explain(findings, span=100.0)
    assert findings[1].status == WARNING and "collapse" in findings[1].verdict


def test_a_cause_after_its_effect_explains_nothing():
    """Issue 20: a stall present from step 1 is not the consequence of a failure first seen much later."""
    findings = [_fail("instability", 60), _fail("stall", 1)]
    _explain(findings, span=100.0)
    assert [f.status for f in findings] == [FAILURE, FAILURE]


def _reward_table(rewards):
    from agentgrpo.doctor.table import MetricTable

    return MetricTable.from_records([{"step": i + 1, "reward": float(r)} for i, r in enumerate(rewards)])


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("n, cause_at", [(100, 60), (300, 120), (60, 40)])
def test_stall_before_a_later_failure_is_judged_on_the_steps_before_it(seed, n, cause_at):
    """Flat before the later failure: a stall of its own; rising until it: the failure's consequence."""
    import numpy as np

    rng = np.random.default_rng(seed)
    noise = rng.normal(0, 0.05, n)
    flat = _reward_table(0.3 + noise)
    x = np.arange(n)
    rose = _reward_table(np.where(x < cause_at, 0.1 + 0.5 * x / cause_at, 0.1) + noise)
    for table, expected in ((flat, FAILURE), (rose, WARNING)):
        findings = [_fail("collapse", cause_at), _fail("stall", 1)]
        _explain(findings, span=float(n - 1), table=table)
        assert findings[1].status == expected
