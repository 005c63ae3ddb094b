"""Healing's settings as one frozen object (`RunPlan.heal`): what a failure the live doctor names does."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class HealSettings:
    """``on_failure`` (stop | heal), ``heal_max``, ``heal_rewards`` (see `RunConfig`), and ``stop_on``: the
    failure modes the live doctor stops on, as the run decides them (the config's ``stop_on``; with
    ``on_failure: heal`` and none named, every mode). The plan checks them (`agentgrpo.heal.checks`)."""

    on_failure: str
    heal_max: int
    heal_rewards: list | None
    stop_on: frozenset

    @classmethod
    def of(cls, run) -> HealSettings:
        from agentgrpo.doctor.modes import MODES

        heals = run.on_failure == "heal"
        stop_on = frozenset(run.stop_on) or (frozenset(MODES) if heals else frozenset())
        return cls(on_failure=run.on_failure, heal_max=run.heal_max, heal_rewards=run.heal_rewards, stop_on=stop_on)

    @property
    def heals(self) -> bool:
        """A failure rolls back and the run goes on (``on_failure: heal``)."""
        return self.on_failure == "heal"
