"""Format rewards: tags (soft and strict), JSON validity, JSON schema. One comment per case."""

import pytest

from agentgrpo.errors import ConfigError
from agentgrpo.rewards import get_reward

GOOD = "<think>12*7 is 84</think>\n<answer>84</answer>"

TAGS = [
    # valid: both tags, in order
    (GOOD, 1.0, 1.0),
    # valid: conversational final message
    ([{"role": "tool", "content": "84"}, {"role": "assistant", "content": GOOD}], 1.0, 1.0),
    # valid (soft only): order swapped still has both pairs
    ("<answer>84</answer><think>x</think>", 1.0, 0.0),
    # malformed: only the answer tag
    ("<answer>84</answer>", 0.5, 0.0),
    # malformed: closing tag missing
    ("<think>x</think><answer>84", 0.5, 0.0),
    # malformed: closing before opening
    ("</think>x<think><answer>84</answer>", 0.5, 0.0),
    # malformed: empty text
    ("", 0.0, 0.0),
    # adversarial: tags repeated to look busy
    ("<think>a</think><think>b</think><answer>84</answer>", 0.5, 0.0),
    # adversarial: text outside the tags
    (GOOD + " PS: or 85", 1.0, 0.0),
    # adversarial: nested tag of the same name
    ("<think><think>x</think></think><answer>84</answer>", 0.5, 0.0),
    # adversarial: the tags appear only in a tool output
    ([{"role": "tool", "content": GOOD}, {"role": "assistant", "content": "84"}], 0.0, 0.0),
]


@pytest.mark.parametrize("completion,soft,strict", TAGS)
def test_tags_format(completion, soft, strict):
    assert get_reward("tags_format")([completion]) == [soft]
    assert get_reward("tags_format_strict")([completion]) == [strict]


def test_tags_format_custom_tags_and_bad_params():
    # custom tags; a tag name with markup in it is a config error naming the reward
    assert get_reward("tags_format_strict", tags=["answer"])(["<answer>1</answer>"]) == [1.0]
    with pytest.raises(ConfigError, match="tags_format.*tags"):
        get_reward("tags_format", tags=["<b>"])


JSON = [
    # valid: an object
    ('{"city": "Paris", "population": 2100000}', 1.0),
    # valid: fenced JSON inside prose
    ('Here you go:\n```json\n{"city": "Paris"}\n```', 1.0),
    # valid: an array
    ("[1, 2, 3]", 1.0),
    # malformed: Python dict syntax
    ("{'city': 'Paris'}", 0.0),
    # malformed: trailing comma
    ('{"city": "Paris",}', 0.0),
    # malformed: empty
    ("", 0.0),
    # adversarial: NaN is not JSON
    ('{"x": NaN}', 0.0),
    # adversarial: duplicate keys, which parsers resolve differently
    ('{"ok": false, "ok": true}', 0.0),
    # adversarial: nesting deep enough to overflow the parser
    ("[" * 100_000 + "]" * 100_000, 0.0),
]


@pytest.mark.parametrize("completion,expected", JSON)
def test_json_valid(completion, expected):
    assert get_reward("json_valid")([completion]) == [expected]


SCHEMA = {
    "type": "object",
    "required": ["city"],
    "additionalProperties": False,
    "properties": {"city": {"type": "string"}, "population": {"type": "integer", "minimum": 0}},
}
SCHEMA_CASES = [
    # valid: required key only
    ('{"city": "Paris"}', 1.0),
    # valid: optional key too
    ('{"city": "Paris", "population": 2100000}', 1.0),
    # malformed: not JSON
    ("city = Paris", 0.0),
    # malformed: wrong type
    ('{"city": 75}', 0.0),
    # malformed: missing required key
    ('{"population": 1}', 0.0),
    # adversarial: extra keys where the schema forbids them
    ('{"city": "Paris", "is_admin": true}', 0.0),
    # adversarial: a float where an integer is required
    ('{"city": "Paris", "population": 1.5}', 0.0),
    # adversarial: a negative count
    ('{"city": "Paris", "population": -1}', 0.0),
]


@pytest.mark.parametrize("completion,expected", SCHEMA_CASES)
def test_json_schema_inline(completion, expected):
    assert get_reward("json_schema", schema=SCHEMA)([completion]) == [expected]


def test_json_schema_per_row_and_errors():
    # per-row schemas from a column; a row without one is not applicable
    reward = get_reward("json_schema", column="schema")
    out = reward(['{"a": 1}', '{"a": 1}', '{"a": 1}'], schema=[{"type": "object"}, '{"type": "array"}', None])
    assert out == [1.0, 0.0, None]
    # a broken schema is a config error, found when the reward is built
    with pytest.raises(ConfigError, match="not a valid JSON Schema"):
        get_reward("json_schema", schema={"type": "no-such-type"})
    # neither or both of schema/column
    with pytest.raises(ConfigError, match="exactly one of schema"):
        get_reward("json_schema")
