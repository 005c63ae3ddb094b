"""Read any GRPO training log into a `Run` (a `MetricTable` plus what else the run left behind).

Entry point: :func:`read_run` takes a run directory, our ``metrics.jsonl``, a TRL ``trainer_state.json``
(any version), a JSON array of step logs, a tracker's CSV export, or console text with metric dicts.
"""

from __future__ import annotations

from agentgrpo.doctor.readers.read import Run, read_run, records_to_table

__all__ = ["Run", "read_run", "records_to_table"]
