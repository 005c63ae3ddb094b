"""Failure demos: the calculator trained on a flawed recipe, so a reader can watch a failure happen and the
doctor name it. ``agentgrpo demo --failure hacking|length|collapse``.

- hacking: from `SWITCH_STEP`, the trained reward is a gameable *efficiency* proxy (a bare number pays,
  fewer tool calls pay more: skipping the tool is rewarded); the true reward, ``correct_answer``, is logged
  as a weight-0 shadow. The proxy rises while the true objective falls; the live doctor stops the run.
- length: from `LENGTH_SWITCH_STEP`, a bonus for longer final answers: the model pads its answer.
- collapse: a learning rate 100x the demo's; the policy degenerates within a few steps.

The rewards switch at a known step (read from the ``trainer_state`` TRL passes to reward functions), so the
doctor's onset can be checked against the truth.
"""

from __future__ import annotations

from agentgrpo.tasks.calculator import correct_answer, final_text, well_formed

SWITCH_STEP = 30
LENGTH_SWITCH_STEP = 10  # padding must be found while the policy still explores (entropy falls as it learns)


def _switched(trainer_state, switch_step: int) -> bool:
    return trainer_state is not None and trainer_state.global_step >= switch_step


def _tool_calls(completion) -> int:
    if isinstance(completion, str):
        return 0
    return sum(len(m.get("tool_calls") or []) for m in completion if m.get("role") == "assistant")


def efficiency_proxy(completions, answer, trainer_state=None, switch_step: int = SWITCH_STEP, **kwargs):
    """Before the switch: correctness. After: a well-formed bare answer, +0.5 per tool call skipped.

    The proxy scores the policy's behaviour at the switch (well formed, one tool call) as correctness scores
    a right answer, so the trained reward is continuous there and pays only for the exploit (skip the tool).

    >>> one_call = [{"role": "assistant", "tool_calls": [{"function": {"name": "calculate"}}]},
    ...             {"role": "tool", "content": "1801"}, {"role": "assistant", "content": "1801"}]
    >>> no_call = [{"role": "assistant", "content": "1700"}]
    >>> state = type("S", (), {"global_step": 40})()
    >>> efficiency_proxy([one_call, no_call], ["1801", "1801"], trainer_state=state)
    [1.0, 1.5]
    >>> efficiency_proxy([one_call, no_call], ["1801", "1801"])  # before the switch: the true reward
    [1.0, 0.0]
    """
    if not _switched(trainer_state, switch_step):
        return correct_answer(completions, answer)
    formats = well_formed(completions)
    return [f - 0.5 * (min(_tool_calls(c), 2) - 1) for f, c in zip(formats, completions, strict=True)]


def length_bonus(completions, answer, trainer_state=None, switch_step: int = LENGTH_SWITCH_STEP, **kwargs):
    """Before the switch: correctness. After: correctness plus up to 2.0 for a longer final answer.

    >>> state = type("S", (), {"global_step": 40})()
    >>> length_bonus([[{"role": "assistant", "content": "1801"}]], ["1801"], trainer_state=state)
    [1.2]
    """
    base = correct_answer(completions, answer)
    if not _switched(trainer_state, switch_step):
        return base
    return [b + min(len(final_text(c)), 40) / 20 for b, c in zip(base, completions, strict=True)]


SHADOW = {"name": "correct_answer", "weight": 0.0}
_MODULE = __name__

# mode -> (overrides of the demo config, the mode the doctor must name, the true onset step)
RECIPES: dict[str, tuple[dict, str, int]] = {
    "hacking": ({"rewards": [{"name": f"{_MODULE}:efficiency_proxy", "alias": "efficiency"}, SHADOW],
                 "stop_on": ["hacking"]}, "hacking", SWITCH_STEP),
    "length": ({"rewards": [{"name": f"{_MODULE}:length_bonus", "alias": "length_bonus"}, SHADOW],
                "max_completion_length": 96, "lr_scheduler_type": "constant_with_warmup", "stop_on": ["length"]},
               "length", LENGTH_SWITCH_STEP),
    "collapse": ({"learning_rate": 0.05, "stop_on": ["collapse"]}, "collapse", 3),
}
COMMON = {"eval_before": False, "eval_after": False, "doctor_every": 5, "max_steps": 80}
# What `agentgrpo demo --failure MODE --heal` adds to a recipe (the heal acts on the recipe's stop_on modes).
# The length recipe names a fallback reward (the true objective, correctness), so its heal shows the switch;
# its padding makes answers wrong, which the doctor names as hacking first (onset ~26, length ~33), so both
# modes heal. The hacking recipe names none, so its heal shows the stop at the checkpoint before the onset;
# the collapse heal changes settings only.
HEAL = {"hacking": {}, "length": {"heal_rewards": ["correct_answer"], "stop_on": ["length", "hacking"]},
        "collapse": {}}


def overrides(mode: str) -> dict:
    """The config overrides that plant ``mode`` in the demo."""
    if mode not in RECIPES:
        from agentgrpo.errors import unknown_name

        raise unknown_name("failure demo", mode, RECIPES)
    return {**COMMON, **RECIPES[mode][0]}
