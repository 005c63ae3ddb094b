"""Rewards for procedurally generated problems (``reasoning-gym``): its own verifier on the tagged answer.

The answer is the text inside the ONE ``<answer>...</answer>`` block of the final assistant message (two or
more blocks, or none, score 0: no hedging with several answers). The row carries the generator's name
(``rg_dataset``) and its entry as JSON (``rg_entry``: question, answer, metadata), so the score is
reasoning-gym's ``score_answer`` for that generator, exactly as reasoning-gym defines it.

* ``reasoning_gym_score``: reasoning-gym's score in [0, 1]; some generators give partial credit (e.g. ``gcd``
  gives 0.2 to some wrong numbers), so it is a proxy;
* ``reasoning_gym_solved``: 1.0 only when that score is 1.0 (the true objective; the eval's success).

A verifier that raises on a malformed answer scores 0.0 (the answer's fault) and is counted in
``reasoning/unscorable_frac``; a missing or repeated answer block is counted in ``reasoning/no_answer_frac``.
"""

from __future__ import annotations

import functools
import json
import re

from agentgrpo.rewards._text import completion_text

_ANSWER = re.compile(r"<answer>(.*?)</answer>", re.DOTALL)


def tagged_answer(text: str) -> str | None:
    """The text of the only ``<answer>`` block, stripped; None with none or several.

    >>> tagged_answer("so <answer> 42 </answer>"), tagged_answer("42")
    ('42', None)
    >>> tagged_answer("<answer>1</answer><answer>2</answer>") is None
    True
    """
    blocks = _ANSWER.findall(text or "")
    if len(blocks) != 1 or (text or "").count("<answer>") != 1:
        return None
    return blocks[0].strip()


@functools.cache
def _scorer(dataset: str):
    try:
        import reasoning_gym
    except ImportError as exc:
        from agentgrpo.errors import UserError

        raise UserError("the reasoning rewards use reasoning-gym's verifiers; install it with "
                        "`pip install 'agentgrpo[reasoning]'` (or `pip install reasoning-gym`).") from exc
    return reasoning_gym.get_score_answer_fn(dataset)


def score_answer(dataset: str, entry: dict | str, answer: str | None) -> tuple[float, str]:
    """(reasoning-gym's score clamped to [0, 1], ``"ok"`` | ``"no_answer"`` | ``"unscorable"``).

    >>> entry = {"question": "4 - 1 - 7 =", "answer": "-4", "metadata": {"source_dataset": "chain_sum"}}
    >>> [score_answer("chain_sum", entry, answer) for answer in ("-4", "5", None)]
    [(1.0, 'ok'), (0.0, 'ok'), (0.0, 'no_answer')]
    """
    if answer is None:
        return 0.0, "no_answer"
    entry = json.loads(entry) if isinstance(entry, str) else entry
    try:
        value = float(_scorer(dataset)(answer, entry))
    except Exception:  # the generator's verifier choked on a malformed answer: the answer's fault
        return 0.0, "unscorable"
    return (min(1.0, max(0.0, value)) if value == value else 0.0), "ok"


def _scores(completions, rg_dataset, rg_entry) -> list[tuple[float, str]]:
    return [score_answer(d, e, tagged_answer(completion_text(c)))
            for c, d, e in zip(completions, rg_dataset, rg_entry, strict=True)]


def reasoning_gym_score(completions, rg_dataset, rg_entry, log_metric=None, **kwargs) -> list[float]:
    """reasoning-gym's score of the tagged answer (0.0 without exactly one ``<answer>`` block).

    >>> entry = json.dumps({"question": "2 + 2 =", "answer": "4", "metadata": {}})
    >>> reasoning_gym_score(["<answer>4</answer>", "4", "<answer>5</answer>"], rg_dataset=["chain_sum"] * 3,
    ...                     rg_entry=[entry] * 3)
    [1.0, 0.0, 0.0]
    """
    results = _scores(completions, rg_dataset, rg_entry)
    if callable(log_metric) and results:
        n = len(results)
        log_metric("reasoning/no_answer_frac", sum(r == "no_answer" for _, r in results) / n)
        log_metric("reasoning/unscorable_frac", sum(r == "unscorable" for _, r in results) / n)
    return [s for s, _ in results]


def reasoning_gym_solved(completions, rg_dataset, rg_entry, **kwargs) -> list[float]:
    """1.0 when reasoning-gym scores the tagged answer 1.0 (fully right), else 0.0.

    >>> entry = json.dumps({"question": "gcd(12, 18)?", "answer": "6", "metadata": {"result": 6}})
    >>> reasoning_gym_solved(["<answer>6</answer>", "<answer>3</answer>"], rg_dataset=["gcd"] * 2,
    ...                      rg_entry=[entry] * 2)
    [1.0, 0.0]
    """
    return [float(s >= 1.0) for s, _ in _scores(completions, rg_dataset, rg_entry)]


for _reward in (reasoning_gym_score, reasoning_gym_solved):
    _reward.max_reward = 1.0
