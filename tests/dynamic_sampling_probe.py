"""A calculator task whose reward decides from the prompt alone whether a group can teach, for the dynamic
sampling tests (and their two-process run, which launches this file).

Problems with an even answer earn 0.0 whatever the completion: their groups have equal rewards. Problems with
an odd answer earn 1.0 on every other completion of the group: mixed rewards. ``--constant`` makes every
reward 0.0. As a script: train a few steps (``--processes`` via accelerate) and write, from the main
process, every generation round's groups (answer, mixed), every row the loss saw and, under refill,
the rows each step carried into the next (their answers, one per completion), as JSON.
"""

from __future__ import annotations

import dataclasses
import json
import re
import sys

from agentgrpo.tasks.calculator import TASK

_QUESTION = re.compile(r"What is (\d+) \* (\d+) \+ (\d+)\?")


def teaches(answer: int) -> bool:
    """The oracle: a group for this answer has mixed rewards."""
    return answer % 2 == 1


def parity_reward(completions, answer, **kwargs) -> list[float]:
    """0.0 for an even answer; 1.0 on every other completion (positions within a group) for an odd one."""
    return [float(teaches(int(a)) and i % 2 == 0) for i, a in enumerate(answer)]


def kind(answer: int) -> str:
    """The oracle of `solved_or_failed_reward`: which kind of group an answer's prompt gives."""
    return ("solved", "teaches", "failed")[answer % 3]


def solved_or_failed_reward(completions, answer, **kwargs) -> list[float]:
    """1.0 on every completion (a solved prompt), alternating 1.0/0.0 (a group that teaches) or 0.0 on every
    completion (a failed prompt), by the answer modulo 3."""
    levels = {"solved": lambda i: 1.0, "teaches": lambda i: float(i % 2 == 0), "failed": lambda i: 0.0}
    return [levels[kind(int(a))](i) for i, a in enumerate(answer)]


def format_noise_reward(completions, **kwargs) -> list[float]:
    """1.0 on every third completion of the batch: a small format-like reward that varies in every group."""
    return [float(i % 3 == 0) for i in range(len(completions))]


def constant_reward(completions, **kwargs) -> list[float]:
    return [0.0] * len(completions)


PARITY_TASK = dataclasses.replace(TASK, name="calculator", reward_funcs={"parity": parity_reward},
                                  default_rewards=[{"name": "parity", "weight": 1.0}], success_reward="parity")
SOLVED_TASK = dataclasses.replace(TASK, name="calculator", reward_funcs={"levels": solved_or_failed_reward},
                                  default_rewards=[{"name": "levels", "weight": 1.0}], success_reward="levels")
# the calculator's reward names, so a config may name them (dynamic_sampling_reward: correct_answer): the
# "correctness" follows the parity oracle, the small "format" reward varies in every group
def _renamed(func, name: str):
    def reward(completions, **kwargs):
        return func(completions, **kwargs)

    reward.__name__ = name  # TRL names a reward function by its __name__
    return reward


PARITY_FORMAT_TASK = dataclasses.replace(TASK, name="calculator",
                                         reward_funcs={"correct_answer": _renamed(parity_reward, "correct_answer"),
                                                       "well_formed": _renamed(format_noise_reward, "well_formed")},
                                         default_rewards=[{"name": "correct_answer", "weight": 1.0},
                                                          {"name": "well_formed", "weight": 0.1}],
                                         success_reward="correct_answer")
CONSTANT_TASK = dataclasses.replace(TASK, name="calculator", reward_funcs={"constant": constant_reward},
                                    default_rewards=[{"name": "constant", "weight": 1.0}],
                                    success_reward="constant")


def task_spec(task) -> str:
    """The ``task`` option naming one of this module's tasks (``dynamic_sampling_probe:PARITY_TASK``)."""
    name = next(k for k, v in globals().items() if v is task and k.endswith("_TASK"))
    return f"dynamic_sampling_probe:{name}"  # importable by name: the tests put this folder on sys.path


def answers_in(tokenizer, prompt_ids) -> list[int]:
    """The gold answer of each row, read back from its prompt tokens."""
    out = []
    for ids in prompt_ids:
        a, b, c = map(int, _QUESTION.search(tokenizer.decode(ids, skip_special_tokens=True)).groups())
        out.append(a * b + c)
    return out


def spy(trainer) -> dict:
    """Record, on every process, each round's groups as TRL saw them and each row that reaches the loss."""
    from accelerate.utils import gather_object

    seen = {"rounds": [], "loss_rows": [], "carried": []}
    tok = trainer.processing_class
    calculate, compute = trainer._calculate_rewards, trainer._compute_loss
    generate = trainer._generate_and_score_completions

    def generate_and_score(inputs):
        batch = generate(inputs)
        if trainer.model.training and getattr(trainer, "_carry", None) is not None:  # groups kept for the next step
            answers = gather_object(answers_in(tok, trainer._carry["prompt_ids"]))
            seen["carried"].append({"step": trainer.state.global_step, "answers": sorted(answers)})
        return batch

    def calculate_rewards(inputs, prompts, completions, completion_ids_list):
        rewards = calculate(inputs, prompts, completions, completion_ids_list)
        if trainer.model.training:
            answers = gather_object([int(x["answer"]) for x in inputs])
            groups = answers[::trainer.num_generations]
            flags = trainer._mixed().tolist() if hasattr(trainer, "_mixed") else None
            seen["rounds"].append({"step": trainer.state.global_step, "answers": groups, "mixed": flags})
        return rewards

    def compute_loss(model, inputs):
        mask = inputs["completion_mask"]
        if "tool_mask" in inputs:
            mask = mask * inputs["tool_mask"]
        live = mask.sum(dim=1) > 0
        answers = answers_in(tok, inputs["prompt_ids"])
        seen["loss_rows"] += [{"step": trainer.state.global_step, "answer": a}
                              for a, flag in zip(answers, live.tolist(), strict=True) if flag]
        return compute(model, inputs)

    trainer._calculate_rewards = calculate_rewards
    trainer._compute_loss = compute_loss
    trainer._generate_and_score_completions = generate_and_score
    return seen


def main(argv: list[str]) -> None:
    """``dynamic_sampling_probe.py OUT.json MODEL_DIR RUN_DIR [config overrides]`` (run under accelerate)."""
    from pathlib import Path

    from accelerate.utils import gather_object

    from agentgrpo.plan import resolve_plan
    from agentgrpo.training.grpo import build_grpo_trainer

    out, model_dir, run_dir, overrides = argv[0], argv[1], Path(argv[2]), argv[3:]
    cfg = resolve_plan(None, ["--model", "tiny", *overrides, "--task", task_spec(PARITY_TASK),
                              "--output_dir", str(run_dir)], cuda_available=False)
    trainer = build_grpo_trainer(cfg, model_dir)
    seen = spy(trainer)
    trainer.train()
    rows = [r for part in gather_object([seen["loss_rows"]]) for r in part]
    if trainer.accelerator.is_main_process:
        Path(out).write_text(json.dumps({"rounds": seen["rounds"], "loss_rows": rows, "carried": seen["carried"]}))


if __name__ == "__main__":
    main(sys.argv[1:])
