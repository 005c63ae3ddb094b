"""What the doctor's principle tests share: generated scenarios over lengths, seeds and onsets, the doctor's
failures on a file, and the one rule a generated case is held to."""

from __future__ import annotations

from pathlib import Path

from agentgrpo.doctor.diagnose import diagnose
from agentgrpo.doctor.readers import read_run
from benchmarks import doctor_synthetic as synthetic

HELDOUT = Path(__file__).resolve().parents[1] / "benchmarks" / "public-runs-heldout"
ONSET_ERROR = 0.12  # the largest onset error, as a share of the run, a generated failure may be named with


def generated_cases(kinds: list[str]) -> list:
    """Each scenario at 3 lengths x 2 seeds x 2 onsets (`benchmarks.doctor_synthetic.make`)."""
    return [synthetic.make(name, n, seed, onset)
            for name in kinds for n in (80, 300, 1000) for seed in (1, 2) for onset in (0.35, 0.6)]


def failures_of(path) -> tuple[dict, object]:
    """({detector name: failure}, report) of the doctor on ``path``."""
    report = diagnose(read_run(path).table)
    return {str(f.detector): f for f in report.failures}, report


def assert_case_holds(case, failures: dict, report) -> None:
    """A healthy case gets no failure; a failure case is named, with its onset within `ONSET_ERROR`."""
    if case.expect is None:
        assert not failures, report.headline
        return
    assert case.expect in failures, report.headline
    error = abs(failures[case.expect].onset - case.onset) / (report.last_step - report.first_step)
    assert error <= ONSET_ERROR, (failures[case.expect].onset, case.onset, report.headline)
