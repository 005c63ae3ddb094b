"""Healing a run (``on_failure: heal``): when the live doctor names a failure with its onset, roll back to the
last checkpoint before the onset, apply that mode's remedy (`remedies.REMEDIES`), and go on.

- `remedies`: the one declared table, failure mode -> remedy (settings changed, or a stop with the reason);
- `history`: what a run directory records of its heals (``heal.jsonl``, ``segments/N/``), read by the doctor
  and the report as plain files;
- `judge`: the doctor on a healed run: the final segment, with a stall there read against the lineage;
- `rollback`: the choice of checkpoint and the file moves of one heal (atomic, idempotent: a heal killed
  half-way completes on ``--resume``);
- `final`: a healed run that finished ends with the best model of its lineage (checkpoints and its last model);
- `loop`: the training loop of `agentgrpo train` with heals; `agentgrpo.training.heal_callbacks` holds the
  callbacks (and the one-line resume) for a user's own TRL script.
"""
