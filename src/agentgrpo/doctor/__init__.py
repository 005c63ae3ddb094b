"""The doctor: read GRPO training curves and name failure modes, after the fact or live.

    from agentgrpo.doctor import read_run, diagnose
    run = read_run("runs/my-run")          # or a trainer_state.json, metrics.jsonl, CSV, console log
    report = diagnose(run.table)           # Report: verdict, headline, findings (one per detector)

`agentgrpo.doctor.live.LiveDoctorCallback` runs the same detectors during training.
"""

from agentgrpo.doctor.diagnose import Report, diagnose
from agentgrpo.doctor.finding import Finding
from agentgrpo.doctor.readers import Run, read_run
from agentgrpo.doctor.table import MetricTable

__all__ = ["Finding", "MetricTable", "Report", "Run", "diagnose", "read_run"]
