"""The reward set inside TRL 1.16's own reward loop (``GRPOTrainer._calculate_rewards``), not a copy of it.

A stand-in trainer object carries only the attributes that method reads, so TRL's code decides how our
functions are called, how None is read, and where ``log_metric`` / ``log_extra`` values land.
"""

from collections import defaultdict
from types import SimpleNamespace

import pytest

torch = pytest.importorskip("torch")
trl = pytest.importorskip("trl")
from trl import GRPOTrainer  # noqa: E402

from agentgrpo.rewards import build_rewards  # noqa: E402


def crashes_on_empty(completions, answer, **kwargs):
    """A user reward with a bug: it cannot handle an empty final message. Rows without an answer: None."""
    return [
        None if a is None else 1.0 / len(c[-1]["content"]) for c, a in zip(completions, answer, strict=True)
    ]


def fake_trainer(rs):
    from accelerate import Accelerator

    trainer = SimpleNamespace(
        accelerator=Accelerator(cpu=True),
        args=SimpleNamespace(report_to=[]),
        state=SimpleNamespace(global_step=0),
        reward_funcs=rs.funcs,
        reward_func_names=rs.names,
        reward_processing_classes=[None] * len(rs.funcs),
        environments=None,
        _pending_extra_logs=defaultdict(list),
        _pending_metrics=defaultdict(list),
    )
    trainer._log_completion_extra = GRPOTrainer._log_completion_extra.__get__(trainer)
    trainer._log_metric = GRPOTrainer._log_metric.__get__(trainer)
    return trainer


def msg(content, **extra):
    return [{"role": "assistant", "content": content, **extra}]


def test_reward_set_inside_trl_calculate_rewards():
    rs = build_rewards(
        [
            {"name": "numeric_answer", "weight": 1.0},
            {"name": f"{__name__}:crashes_on_empty", "weight": 0.5},
            {"name": "code_tests_passed", "weight": 0.0, "params": {"workers": 1}},
        ]
    )
    trainer = fake_trainer(rs)
    completions = [msg("The answer is 84."), msg(""), msg("```python\ndef f(): return 84\n```")]
    inputs = [
        {"prompt": [{"role": "user", "content": "q"}], "answer": a, "tests": t}
        for a, t in [("84", None), ("84", None), (None, ["assert f() == 84"])]
    ]
    prompts = [x["prompt"] for x in inputs]
    with pytest.warns(UserWarning, match="crashes_on_empty"):
        per_func = GRPOTrainer._calculate_rewards(trainer, inputs, prompts, completions, [[1, 2]] * 3)

    # column order follows rs.names; None becomes NaN in TRL, never 0
    assert rs.names == ["numeric_answer", "crashes_on_empty", "code_tests_passed"]
    assert per_func[0, :2].tolist() == [1.0, pytest.approx(1 / 17)]
    assert torch.isnan(per_func[0, 2])  # shadow: row 0 has no tests
    assert per_func[1, 0].item() == 0.0 and torch.isnan(per_func[1, 1])  # the crashing sample: None -> NaN
    # row 2: no trained reward applies, so the shadow stays None and TRL keeps the row unscorable
    assert torch.isnan(per_func[2]).all()
    # the error count reached TRL's metric buffer under our name; the sandbox status reached the table
    assert trainer._pending_metrics["rewards/crashes_on_empty/errors"] == [1.0]
    assert trainer._pending_metrics["rewards/numeric_answer/errors"] == [0.0]
    assert trainer._pending_extra_logs["sandbox_status"] == [None, None, "passed"]
    # TRL's weighted sum: the shadow reward has weight 0
    weights = torch.tensor(rs.weights)
    total = (per_func * weights).nansum(dim=1)
    assert total[0].item() == pytest.approx(1.0 + 0.5 / 17)
