"""Format rewards: required tags (strict or soft), JSON that parses, JSON that matches a schema."""

from __future__ import annotations

import json
import re

from agentgrpo.errors import ConfigError
from agentgrpo.rewards._base import check_params, per_sample
from agentgrpo.rewards._text import completion_text

_FENCE = re.compile(r"```(?:json)?[ \t]*\n(.*?)```", re.DOTALL | re.IGNORECASE)
MAX_JSON_CHARS = 200_000


def tags_format(tags: list[str] | tuple[str, ...] = ("think", "answer")):
    """Soft layout check: the share of ``tags`` that appear exactly once as an opening-then-closing pair
    in the final assistant text.

    >>> tags_format()(["<think>7*12</think>\\n<answer>84</answer>", "<answer>84</answer>", "84"])
    [1.0, 0.5, 0.0]
    """
    tags = _tag_names("tags_format", tags)

    def score(completion):
        text = completion_text(completion)
        return sum(_one_pair(text, t) for t in tags) / len(tags)

    return per_sample("tags_format", score, doc=tags_format.__doc__)


def tags_format_strict(tags: list[str] | tuple[str, ...] = ("think", "answer")):
    """Strict layout check: the final text is exactly ``<t1>...</t1> <t2>...</t2> ...`` in that order, each
    tag once, nothing but whitespace around (1.0 or 0.0).

    >>> tags_format_strict()(["<think>7*12</think>\\n<answer>84</answer>",
    ...                       "<answer>84</answer><think>x</think>",
    ...                       "<think>a</think><answer>84</answer> PS: 85"])
    [1.0, 0.0, 0.0]
    """
    tags = _tag_names("tags_format_strict", tags)
    blocks = "".join(rf"\s*<{t}>(?:(?!</?{t}>).)*</{t}>" for t in tags)
    pattern = re.compile(rf"{blocks}\s*", re.DOTALL)

    def score(completion):
        return 1.0 if pattern.fullmatch(completion_text(completion)) else 0.0

    return per_sample("tags_format_strict", score, doc=tags_format_strict.__doc__)


def _tag_names(name: str, tags) -> tuple[str, ...]:
    tags = (tags,) if isinstance(tags, str) else tuple(tags)
    ok = bool(tags) and all(isinstance(t, str) and re.fullmatch(r"[\w\-]+", t) for t in tags)
    check_params(name, tags=(ok, "must be a list of tag names like ['think', 'answer']"))
    return tags


def _one_pair(text: str, tag: str) -> bool:
    opens, closes = text.count(f"<{tag}>"), text.count(f"</{tag}>")
    return opens == 1 and closes == 1 and text.index(f"<{tag}>") < text.index(f"</{tag}>")


def parse_json(text: str):
    """The JSON value in ``text`` (the last fenced block if any, else the whole text), or raise ValueError.

    Strict JSON: no NaN/Infinity, no duplicate keys.

    >>> parse_json('Here: ```json\\n{"a": 1}\\n```')
    {'a': 1}
    >>> parse_json('{"a": 1, "a": 2}')
    Traceback (most recent call last):
    ...
    ValueError: duplicate key 'a'
    """
    fences = _FENCE.findall(text)
    body = (fences[-1] if fences else text).strip()
    if len(body) > MAX_JSON_CHARS:
        raise ValueError(f"JSON longer than {MAX_JSON_CHARS} characters")
    try:
        return json.loads(body, parse_constant=_no_constant, object_pairs_hook=_no_duplicates)
    except RecursionError:
        raise ValueError("JSON nested too deeply") from None


def _no_constant(name: str):
    raise ValueError(f"{name} is not valid JSON")


def _no_duplicates(pairs):
    out = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"duplicate key {key!r}")
        out[key] = value
    return out


def json_valid():
    """1.0 when the final assistant text is (or fences) strictly valid JSON.

    >>> json_valid()(['{"city": "Paris"}', "{'city': 'Paris'}", '[NaN]'])
    [1.0, 0.0, 0.0]
    """

    def score(completion):
        try:
            parse_json(completion_text(completion))
        except ValueError:
            return 0.0
        return 1.0

    return per_sample("json_valid", score, doc=json_valid.__doc__)


def json_schema(schema: dict | None = None, column: str | None = None):
    """1.0 when the final text is valid JSON matching a JSON Schema (given inline, or per row in ``column``).

    >>> reward = json_schema({"type": "object", "required": ["city"], "additionalProperties": False,
    ...                       "properties": {"city": {"type": "string"}}})
    >>> reward(['{"city": "Paris"}', '{"city": "Paris", "admin": true}', '{"city": 3}', 'Paris'])
    [1.0, 0.0, 0.0, 0.0]
    """
    from jsonschema import validators

    check_params(
        "json_schema",
        schema=(
            (schema is None) != (column is None),
            "give exactly one of schema (a dict) or column (a dataset column)",
        ),
    )
    if schema is not None:  # a broken schema is a config error, found now
        try:
            _validator(schema, validators)
        except Exception as exc:
            raise ConfigError(
                [
                    f"reward 'json_schema' param schema: not a valid JSON Schema "
                    f"({getattr(exc, 'message', exc)}); fix the schema"
                ]
            ) from exc

    def score(completion, row_schema=None):
        current = schema if schema is not None else row_schema
        if current is None:
            return None
        try:
            value = parse_json(completion_text(completion))
        except ValueError:
            return 0.0
        return 1.0 if _validator(current, validators).is_valid(value) else 0.0

    columns = {"row_schema": column} if column else {}
    return per_sample("json_schema", score, columns, doc=json_schema.__doc__)


def _validator(schema, validators):
    if isinstance(schema, str):
        schema = json.loads(schema)
    cls = validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)
