"""A dataset run's `tools:` reach every sampler (issue 19, item 2): held-out eval, pass@k and the preflight
signal check render the same prompt as training (tools included), and token fidelity holds."""

from __future__ import annotations

import json
import textwrap

import pytest

from agentgrpo.plan import resolve_plan
from agentgrpo.timeouts import DEFAULT_TOOL_TIMEOUT

TOOLS = '''
def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: The first integer.
        b: The second integer.
    """
    return a + b
'''

REWARDS = '''
def contains_answer(completions, answer, **kwargs):
    """1.0 when the last message holds the gold answer."""
    return [1.0 if gold in (c[-1]["content"] or "") else 0.0 for c, gold in zip(completions, answer)]
'''


@pytest.fixture(scope="module")
def dataset_cfg(tmp_path_factory, calculator):
    root = tmp_path_factory.mktemp("tools-user")
    with open(root / "data.jsonl", "w") as f:
        for row in calculator.train_problems(40, seed=3):
            f.write(json.dumps({"prompt": row["prompt"][-1]["content"], "answer": row["answer"]}) + "\n")
    (root / "my_tools.py").write_text(textwrap.dedent(TOOLS))
    (root / "my_rewards.py").write_text(textwrap.dedent(REWARDS))
    return resolve_plan({"model": "tiny-random", "max_steps": 1, "dataset_name": str(root / "data.jsonl"),
                        "rewards": [f"{root}/my_rewards.py:contains_answer"], "tools": [f"{root}/my_tools.py:add"],
                        "max_completion_length": 6, "num_generations": 2, "per_device_train_batch_size": 2},
                       cuda_available=False)


def _expected_prompt_ids(tokenizer, task, row):
    """The prompt exactly as TRL renders it in training: the chat template with the run's tools."""
    return list(tokenizer.apply_chat_template(row["prompt"], tools=list(task.tool_functions),
                                              add_generation_prompt=True, tokenize=True, return_dict=False))


class _Spy:
    """Records the tools of every prompt the sampler renders."""

    def __init__(self, tokenizer):
        self.tokenizer, self.seen = tokenizer, []
        self.original = tokenizer.apply_chat_template

    def __enter__(self):
        def render(messages, *args, tools=None, **kwargs):
            if kwargs.get("add_generation_prompt"):
                self.seen.append(sorted(getattr(t, "__name__", str(t)) for t in tools or []))
            return self.original(messages, *args, tools=tools, **kwargs)

        self.tokenizer.apply_chat_template = render
        return self

    def __exit__(self, *exc):
        self.tokenizer.apply_chat_template = self.original


def test_eval_pass_at_k_and_signal_check_offer_the_datasets_tools(dataset_cfg, tiny_sft_dir):
    from agentgrpo.evaluation.evaluate import evaluate
    from agentgrpo.evaluation.passk import evaluate_pass_at_k
    from agentgrpo.evaluation.rollout import rollout
    from agentgrpo.preflight.signal import signal_check
    from agentgrpo.preflight.target import from_config
    from agentgrpo.training.models import load_model, load_tokenizer
    from agentgrpo.training.reward_specs import build_task_rewards

    task = dataset_cfg.task
    assert [t.__name__ for t in task.tool_functions] == ["add"]
    model, tokenizer = load_model(str(tiny_sft_dir)), load_tokenizer(str(tiny_sft_dir))
    rows = task.eval_problems(3)
    episodes = rollout(model, tokenizer, rows, task, max_completion_length=4)
    for row, ep in zip(rows, episodes):
        assert ep.prompt_ids == _expected_prompt_ids(tokenizer, task, row)

    with _Spy(tokenizer) as spy:
        settings = {"temperature": 1.0, "max_completion_length": 4, "max_tool_calling_iterations": None, "seed": 0,
                    "tool_timeout": DEFAULT_TOOL_TIMEOUT}
        evaluate(model, tokenizer, task, rows, modes=["greedy"], batch_size=100, **settings)
        evaluate_pass_at_k(model, tokenizer, task, rows, samples=2, ks=[1], **settings)
    assert len(spy.seen) == 3 + 6 and all(names == ["add"] for names in spy.seen), spy.seen

    rewards = build_task_rewards(dataset_cfg.run.rewards, task)
    target = from_config(dataset_cfg, task, rewards, "test")
    with _Spy(tokenizer) as spy:
        report = signal_check(target, n_prompts=3, k=2, model=model, tokenizer=tokenizer, fidelity=True)
    assert spy.seen and all(names == ["add"] for names in spy.seen), spy.seen
    assert report["fidelity"]["ok"] is True, report["fidelity"]
