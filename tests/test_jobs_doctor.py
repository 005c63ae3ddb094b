"""`agentgrpo jobs doctor ID` diagnoses the job's logs exactly as `agentgrpo doctor` does the same log file."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from agentgrpo.cli import main
from agentgrpo.launch import hub_io

LOGS = Path(__file__).resolve().parent / "data" / "real-runs"


def _verdicts(text: str) -> list[str]:
    """The printed diagnosis without the lines naming where files went."""
    return [line for line in text.splitlines() if "/" not in line and not line.startswith("[agentgrpo]")]


@pytest.mark.parametrize("name", ["finqa_qwen7b_2400_stall.log", "chaos_economy_vsr_collapse.txt"])
def test_jobs_doctor_says_what_doctor_says(name, tmp_path, monkeypatch, capsys):
    lines = (LOGS / name).read_text().splitlines()
    monkeypatch.setattr(hub_io, "logs", lambda job_id, namespace=None, follow=False: list(lines))
    code = main(["jobs", "doctor", "job-1"])
    jobs_out = capsys.readouterr().out
    log = tmp_path / "job-1.log"
    log.write_text("\n".join(lines) + "\n")
    expected = main(["doctor", str(log), "--out", str(tmp_path / "doctor")])
    doctor_out = capsys.readouterr().out
    assert code == expected
    assert re.search(rf"{len(lines)} log lines of job job-1", jobs_out)
    assert _verdicts(jobs_out) == _verdicts(doctor_out) and _verdicts(doctor_out)
