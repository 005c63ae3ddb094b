"""The checks of the dynamic sampling options, apart from the tensor code (`dynamic_sampling`) so that a
config is checked without importing torch."""

from __future__ import annotations

from agentgrpo.config import DYNAMIC_SAMPLING_MODES as MODES


def check_options(mode: str, max_rounds: int, train_size: int | None, prompts_per_batch: int,
                  carry: bool = False, skip_solved: bool = False, reward: str | None = None,
                  reward_names: list[str] | None = None, round_size: str = "expected") -> list[str]:
    """Problems with ``dynamic_sampling`` / ``max_generation_rounds`` / ``refill_carry`` /
    ``refill_skip_solved`` / ``dynamic_sampling_reward`` (checked against ``reward_names`` when known), each
    naming the field and the fix."""
    problems = []
    if reward is not None and mode == "off":
        problems.append(f"dynamic_sampling_reward: {reward!r} decides which groups filter and refill keep; "
                        "dynamic_sampling is off, so it is never used; set dynamic_sampling: filter or refill, or "
                        "drop dynamic_sampling_reward.")
    if reward is not None and reward_names is not None and reward not in reward_names:
        problems.append(f"dynamic_sampling_reward: {reward!r} is not one of this run's rewards {list(reward_names)}; "
                        "name one of them (e.g. the task's correctness reward), or drop it to judge groups by "
                        "the weighted total.")
    if round_size != "expected" and mode != "refill":
        problems.append(f"refill_round_size: {round_size!r} applies to dynamic_sampling: refill only (it sizes "
                        f"refill rounds), not {mode!r}; set dynamic_sampling: refill, or drop refill_round_size.")
    if skip_solved and mode != "refill":
        problems.append(f"refill_skip_solved: true applies to dynamic_sampling: refill only (it decides which "
                        f"groups a refill round replaces), not {mode!r}; set dynamic_sampling: refill, or drop "
                        "refill_skip_solved.")
    if carry and mode != "refill":
        problems.append(f"refill_carry: true applies to dynamic_sampling: refill only (it carries the groups a "
                        f"refill step generates beyond its target), not {mode!r}; set dynamic_sampling: refill, "
                        "or drop refill_carry.")
    if mode not in MODES:
        problems.append(f"dynamic_sampling: {mode!r} is not one of {list(MODES)}; off trains on every group, "
                        "filter drops groups whose rewards are all equal, refill also generates for more prompts.")
    if isinstance(max_rounds, int) and max_rounds < 1:
        problems.append(f"max_generation_rounds: {max_rounds} must be >= 1 (the step's own generation is round 1; "
                        "e.g. 4 lets refill generate up to 3 more batches per step).")
    if mode == "refill" and train_size is not None and train_size < prompts_per_batch:
        problems.append(f"dynamic_sampling: refill draws further prompts from the training set, but train_size "
                        f"{train_size} is smaller than one generation batch ({prompts_per_batch} prompts); give "
                        f"train_size >= {prompts_per_batch}, fewer prompts per step, or dynamic_sampling: filter.")
    return problems
