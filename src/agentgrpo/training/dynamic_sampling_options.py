"""Dynamic sampling's settings as one frozen object, apart from the tensor code (`dynamic_sampling`) so that a
config is checked without importing torch.

`DynamicSampling` holds the options of the same names (their defaults are `RunConfig`'s, typed there once). Its
values are checked when it is made (`ConfigError` naming each field and the fix); `problems_with` checks it
against what only a run knows (its reward names, the size of its training set). The plan makes it once
(`RunPlan.dynamic_sampling`) and `DynamicSamplingTrainer` takes it as it is.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from agentgrpo.config import DYNAMIC_SAMPLING_MODES as MODES
from agentgrpo.config import RunConfig
from agentgrpo.errors import ConfigError

ROUND_SIZES = ("expected", "missing")


@dataclass(frozen=True)
class DynamicSampling:
    """``dynamic_sampling`` (off | filter | refill), ``max_generation_rounds``, ``refill_carry``,
    ``refill_skip_solved``, ``refill_round_size`` and ``dynamic_sampling_reward``: see `RunConfig` (and
    docs/dynamic-sampling.md) for what each does."""

    dynamic_sampling: str = RunConfig.dynamic_sampling
    max_generation_rounds: int = RunConfig.max_generation_rounds
    refill_carry: bool = RunConfig.refill_carry
    refill_skip_solved: bool = RunConfig.refill_skip_solved
    refill_round_size: str = RunConfig.refill_round_size
    dynamic_sampling_reward: str | None = RunConfig.dynamic_sampling_reward

    def __post_init__(self):
        problems = self._value_problems()
        if problems:
            raise ConfigError(problems)

    @classmethod
    def of(cls, run) -> DynamicSampling:
        """The settings a `RunConfig` names (raises `ConfigError` listing every problem)."""
        return cls(**{f.name: getattr(run, f.name) for f in dataclasses.fields(cls)})

    @classmethod
    def names(cls) -> tuple[str, ...]:
        """The options this object holds (the `RunConfig` fields of the same names)."""
        return tuple(f.name for f in dataclasses.fields(cls))

    def problems_with(self, reward_names: list[str] | None = None, train_size: int | None = None,
                      prompts_per_batch: int = 0) -> list[str]:
        """Problems of these settings for a run with rewards ``reward_names`` (None: not known) and a training set
        of ``train_size`` prompts (None: not known) drawn ``prompts_per_batch`` per generation batch."""
        problems = []
        reward = self.dynamic_sampling_reward
        if reward is not None and reward_names is not None and reward not in reward_names:
            problems.append(f"dynamic_sampling_reward: {reward!r} is not one of this run's rewards "
                            f"{list(reward_names)}; name one of them (e.g. the task's correctness reward), or drop it "
                            "to judge groups by the weighted total.")
        if self.dynamic_sampling == "refill" and train_size is not None and train_size < prompts_per_batch:
            problems.append(f"dynamic_sampling: refill draws further prompts from the training set, but train_size "
                            f"{train_size} is smaller than one generation batch ({prompts_per_batch} prompts); give "
                            f"train_size >= {prompts_per_batch}, fewer prompts per step, or dynamic_sampling: filter.")
        return problems

    def _value_problems(self) -> list[str]:
        mode, reward, round_size = self.dynamic_sampling, self.dynamic_sampling_reward, self.refill_round_size
        problems = []
        if reward is not None and mode == "off":
            problems.append(f"dynamic_sampling_reward: {reward!r} decides which groups filter and refill keep; "
                            "dynamic_sampling is off, so it is never used; set dynamic_sampling: filter or refill, "
                            "or drop dynamic_sampling_reward.")
        if round_size not in ROUND_SIZES:
            problems.append(f"refill_round_size: {round_size!r} is not one of {list(ROUND_SIZES)}")
        elif round_size != RunConfig.refill_round_size and mode != "refill":
            problems.append(f"refill_round_size: {round_size!r} applies to dynamic_sampling: refill only (it sizes "
                            f"refill rounds), not {mode!r}; set dynamic_sampling: refill, or drop refill_round_size.")
        if self.refill_skip_solved and mode != "refill":
            problems.append(f"refill_skip_solved: true applies to dynamic_sampling: refill only (it decides which "
                            f"groups a refill round replaces), not {mode!r}; set dynamic_sampling: refill, or drop "
                            "refill_skip_solved.")
        if self.refill_carry and mode != "refill":
            problems.append(f"refill_carry: true applies to dynamic_sampling: refill only (it carries the groups a "
                            f"refill step generates beyond its target), not {mode!r}; set dynamic_sampling: refill, "
                            "or drop refill_carry.")
        if mode not in MODES:
            problems.append(f"dynamic_sampling: {mode!r} is not one of {list(MODES)}; off trains on every group, "
                            "filter drops groups whose rewards are all equal, refill also generates for more prompts.")
        rounds = self.max_generation_rounds
        if not isinstance(rounds, int) or isinstance(rounds, bool) or rounds < 1:
            problems.append(f"max_generation_rounds: {rounds} must be >= 1 (the step's own generation is round 1; "
                            "e.g. 4 lets refill generate up to 3 more batches per step).")
        return problems
