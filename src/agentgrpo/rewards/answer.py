"""Final-answer rewards: exact (normalised) string, number within a tolerance, math equivalence.

Each compares the answer in the *final assistant text* (see `agentgrpo.rewards.extract`) with the dataset's
gold column (``answer`` by default). An answer that only appears in a tool output earns nothing.
"""

from __future__ import annotations

import logging
import math
import re
import threading
import unicodedata

from agentgrpo.rewards._base import check_params, per_sample
from agentgrpo.rewards._text import completion_text
from agentgrpo.rewards.extract import answer_span, ascii_digits, boxed, hedged, numbers

_PUNCT = " \t\n.,;:!?\"'`*"
_TOWER = (
    re.compile(  # an exponent that holds or is followed by another exponent: 10^{10^{10}}, 2^3^4, 2**3**4
        r"\^\s*\{[^{}]*\^|\^\s*\([^()]*\^|\^\s*(?:\d+|[A-Za-z]|\{[^{}]*\})\s*\^|\*\*\s*[\w.]+\s*\*\*"
    )
)


def normalize(text: str) -> str:
    """Compare-friendly text: NFKC, ASCII digits, case-folded, single spaces, no edge punctuation or ``$``.

    >>> normalize("  Paris. ")
    'paris'
    >>> normalize("$\\\\text{New   York}$")
    'new york'
    """
    text = ascii_digits(unicodedata.normalize("NFKC", str(text))).strip().strip("$")
    if text.startswith("\\text{") and text.endswith("}"):
        text = text[6:-1]
    return " ".join(text.casefold().split()).strip(_PUNCT)


def exact_answer(column: str = "answer", normalized: bool = True):
    """1.0 when the final answer equals the gold answer (after `normalize`, unless ``normalized=False``).

    >>> reward = exact_answer()
    >>> reward(["The answer is Paris.", "paris", "Paris or Lyon", "London"], answer=["Paris"] * 4)
    [1.0, 1.0, 0.0, 0.0]
    """
    check_params("exact_answer", column=(isinstance(column, str), "must be a dataset column name"))

    def score(completion, gold):
        if gold is None:
            return None
        span = answer_span(completion_text(completion))
        if span is None:
            return 0.0
        same = normalize(span) == normalize(gold) if normalized else span.strip() == str(gold).strip()
        return 1.0 if same else 0.0

    return per_sample("exact_answer", score, {"gold": column}, doc=exact_answer.__doc__)


def numeric_answer(column: str = "answer", rel_tol: float = 1e-6, abs_tol: float = 1e-9):
    """1.0 when the final answer is one number within tolerance of the gold number; None if gold is not one.

    An answer holding several different numbers ("12 or 13") earns 0.

    >>> reward = numeric_answer()
    >>> reward(["The answer is 84.", "#### 84.0000001", "12 or 13", "٨٤"], answer=["84", 84, "12", "84"])
    [1.0, 1.0, 0.0, 1.0]
    """
    check_params(
        "numeric_answer",
        rel_tol=(_tolerance(rel_tol), "must be a number >= 0"),
        abs_tol=(_tolerance(abs_tol), "must be a number >= 0"),
    )

    def score(completion, gold):
        target = _gold_number(gold)
        if target is None:
            return None
        span = answer_span(completion_text(completion))
        found = set(numbers(span)) if span else set()
        if len(found) != 1:
            return 0.0
        value = found.pop()
        if not (math.isfinite(value) and math.isfinite(target)):
            return 0.0
        return 1.0 if math.isclose(value, target, rel_tol=rel_tol, abs_tol=abs_tol) else 0.0

    return per_sample("numeric_answer", score, {"gold": column}, doc=numeric_answer.__doc__)


def _tolerance(value) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and value >= 0


def _gold_number(gold) -> float | None:
    if isinstance(gold, bool) or gold is None:
        return None
    if isinstance(gold, int | float):
        return float(gold)
    found = set(numbers(str(gold)))
    return found.pop() if len(found) == 1 else None


def math_answer(column: str = "answer"):
    r"""1.0 when the final answer equals the gold one mathematically (``math-verify``, the Hub's verifier).

    None when the gold answer cannot be parsed. Hedged answers and several different boxed answers earn 0.

    >>> reward = math_answer()
    >>> reward([r"So \boxed{\frac{1}{2}}.", "The answer is 0.5", r"\boxed{1} \boxed{2}"], answer=["1/2"] * 3)
    [1.0, 1.0, 0.0]
    """
    from math_verify import parse, verify  # heavy (sympy): imported when the reward is built

    def score(completion, gold):
        if gold is None:
            return None
        parse_t, verify_t = _timeouts()
        gold_parsed = parse("\\boxed{" + str(gold) + "}", parsing_timeout=parse_t)
        if not gold_parsed:
            return None
        text = completion_text(completion)
        span = answer_span(text)
        if span is None or hedged(span) or len(set(boxed(text))) > 1:
            return 0.0
        if _TOWER.search(span) and not _TOWER.search(str(gold)):
            return 0.0  # a power tower sympy would spend the whole timeout on, and not the gold's form
        answer = parse("\\boxed{" + ascii_digits(span) + "}", parsing_timeout=parse_t)
        return 1.0 if answer and verify(gold_parsed, answer, timeout_seconds=verify_t) else 0.0

    return per_sample("math_answer", score, {"gold": column}, doc=math_answer.__doc__)


def _timeouts() -> tuple[int | None, int | None]:
    """math-verify's timeouts use SIGALRM, which only works on the main thread (as TRL does)."""
    if threading.current_thread() is threading.main_thread():
        return 5, 5
    for name in ("math_verify.parser", "math_verify.grader"):
        logging.getLogger(name).setLevel(logging.ERROR)
    return None, None
