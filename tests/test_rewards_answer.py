"""Final-answer rewards: exact, numeric, math. Valid, malformed and adversarial cases, one comment each."""

import pytest

from agentgrpo.errors import UserError
from agentgrpo.rewards import get_reward
from agentgrpo.rewards.extract import answer_span, numbers


def convo(final, calls=(), outputs=()):
    """A conversational completion: optional tool calls and tool outputs, then the final assistant text."""
    msgs = []
    if calls:
        msgs.append(
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {"type": "function", "function": {"name": n, "arguments": a}} for n, a in calls
                ],
            }
        )
    msgs += [{"role": "tool", "name": n, "content": c} for n, c in outputs]
    msgs.append({"role": "assistant", "content": final})
    return msgs


EXACT = [
    # valid: a marked answer, case and trailing period do not matter
    ("The answer is Paris.", "Paris", 1.0),
    # valid: a bare one-line answer
    ("paris", "Paris", 1.0),
    # valid: boxed answer
    (r"It must be \boxed{Paris}", "Paris", 1.0),
    # valid: <answer> tags
    ("<think>capital</think><answer>Paris</answer>", "Paris", 1.0),
    # valid: conversational, the final message answers after a tool call
    (convo("The answer is Paris.", [("lookup", {"q": "capital"})], [("lookup", "Paris")]), "Paris", 1.0),
    # valid: fullwidth letters normalise (NFKC)
    ("Ｐａｒｉｓ", "Paris", 1.0),
    # malformed: empty completion
    ("", "Paris", 0.0),
    # malformed: assistant content None
    ([{"role": "assistant", "content": None}], "Paris", 0.0),
    # malformed: no gold answer in this row -> not applicable
    ("Paris", None, None),
    # adversarial: the answer is only in the tool output, not in what the agent said
    (convo("I looked it up.", [("lookup", {"q": "capital"})], [("lookup", "Paris")]), "Paris", 0.0),
    # adversarial: hedging between two answers
    ("The answer is Paris or Lyon", "Paris", 0.0),
    # adversarial: boxed spam with different candidates
    (r"\boxed{Lyon} \boxed{Paris}", "Paris", 0.0),
    # adversarial: the right word buried in a long multi-line text with no marked answer
    ("Lyon is big.\nParis is the capital.\nMarseille is south.", "Paris", 0.0),
    # adversarial: a superstring of the gold answer
    ("The answer is Paris, Texas", "Paris", 0.0),
]


@pytest.mark.parametrize("completion,gold,expected", EXACT)
def test_exact_answer(completion, gold, expected):
    assert get_reward("exact_answer")([completion], answer=[gold]) == [expected]


NUMERIC = [
    # valid: marked answer with a trailing period
    ("The answer is 84.", "84", 1.0),
    # valid: GSM8K marker
    ("12*7 = 84\n#### 84", "84", 1.0),
    # valid: boxed
    (r"\boxed{84}", 84, 1.0),
    # valid: thousands separators
    ("The answer is 1,234", "1234", 1.0),
    # valid: within relative tolerance
    ("The answer is 84.0000001", "84", 1.0),
    # valid: Arabic-Indic digits mean the same number
    ("٨٤", "84", 1.0),
    # valid: a fraction
    ("The answer is 3/4", "0.75", 1.0),
    # valid: conversational, answered after the calculator
    (convo("The answer is 84.", [("calculate", {"expression": "12*7"})], [("calculate", "84")]), "84", 1.0),
    # malformed: the gold is not a number -> not applicable
    ("The answer is 84", "n/a", None),
    # malformed: gold bool is not a number
    ("The answer is 1", True, None),
    # malformed: empty completion
    ("", "84", 0.0),
    # malformed: no number at all
    ("I do not know", "84", 0.0),
    # adversarial: hedging "12 or 13"
    ("The answer is 12 or 13", "12", 0.0),
    # adversarial: boxed spam
    (r"\boxed{83} \boxed{84} \boxed{85}", "84", 0.0),
    # adversarial: the number only appears in the tool message
    (convo("Done.", [("calculate", {"expression": "12*7"})], [("calculate", "84")]), "84", 0.0),
    # adversarial: the working shows several numbers and no marked answer
    ("12*7=84", "84", 0.0),
    # adversarial: huge number overflows to infinity
    ("The answer is 1e999", "84", 0.0),
    # adversarial: 5000 digits (beyond int() limits)
    ("The answer is " + "9" * 5000, "84", 0.0),
    # adversarial: superscript glued to the digits is not 84
    ("The answer is 84²", "84", 0.0),
    # adversarial: wrong sign
    ("The answer is -84", "84", 0.0),
]


@pytest.mark.parametrize("completion,gold,expected", NUMERIC)
def test_numeric_answer(completion, gold, expected):
    assert get_reward("numeric_answer")([completion], answer=[gold]) == [expected]


MATH = [
    # valid: boxed fraction equals the decimal gold
    (r"So the result is \boxed{\frac{1}{2}}", "0.5", 1.0),
    # valid: marked decimal answer for a fraction gold
    ("The answer is 0.5", r"\frac{1}{2}", 1.0),
    # valid: algebraic equivalence
    ("<answer>1+x^2</answer>", "x^2+1", 1.0),
    # valid: radicals simplify
    (r"\boxed{\sqrt{18}}", r"3\sqrt{2}", 1.0),
    # valid: Arabic-Indic digits
    ("٨٤", "84", 1.0),
    # malformed: gold that cannot be parsed -> not applicable
    ("The answer is 1", "", None),
    # malformed: gold missing
    ("The answer is 1", None, None),
    # malformed: unbalanced box
    (r"\boxed{84", "84", 0.0),
    # adversarial: two different boxed answers
    (r"\boxed{1} \boxed{2}", "2", 0.0),
    # adversarial: hedging ("12 or 13"), which math-verify alone would accept
    ("The answer is 12 or 13", "12", 0.0),
    # adversarial: only the tool output holds the answer
    (convo("Done.", [("calculate", {"expression": "1/2"})], [("calculate", "0.5")]), "0.5", 0.0),
    # adversarial: a power tower that would stall sympy
    (r"\boxed{10^{10^{10}}}", "84", 0.0),
]


@pytest.mark.parametrize("completion,gold,expected", MATH)
def test_math_answer(completion, gold, expected):
    assert get_reward("math_answer")([completion], answer=[gold]) == [expected]


def test_answer_rewards_read_another_column():
    # the gold column is a parameter
    reward = get_reward("numeric_answer", column="solution")
    assert reward(["#### 7"], solution=["7"]) == [1.0]
    with pytest.raises(UserError, match="needs the dataset column 'solution'"):
        reward(["#### 7"], answer=["7"])


@pytest.mark.parametrize(
    "text,expected",
    [
        ("Answer: 42", "42"),  # marker with a colon
        ("The answer is 1. Actually the answer is 2.", "2"),  # the last marker wins
        ("<answer>a</answer><answer>b</answer>", None),  # two different tagged answers
        ("<answer>a</answer><answer>a</answer>", "a"),  # the same one twice is still one answer
        ("line one\nline two", None),  # several lines without a marker
        ("x" * 300, None),  # a long line is not an answer
    ],
)
def test_answer_span(text, expected):
    assert answer_span(text) == expected


def test_numbers_handles_groups_fractions_and_exponents():
    assert numbers("1,234 and 1/4 and -2.5e1") == [1234.0, 0.25, -25.0]
