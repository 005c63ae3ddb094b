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


def test_stall_is_explained_by_a_collapse_whenever_it_began():
    findings = [_fail("collapse", 80), _fail("stall", 1)]
    _explain(findings, span=100.0)
    assert findings[1].status == WARNING
