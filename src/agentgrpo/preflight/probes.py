"""Adversarial completions for a reward audit, in the shapes TRL passes to reward functions.

A completion is a list of messages, as GRPOTrainer hands conversational completions to rewards:
``[assistant(tool_calls), tool, ..., assistant(final text)]``. Each `Probe` builds one completion per
prompt from a `Context` (the row, the gold completion, the answer, the task's tools), or returns None
when it cannot apply (it says why in ``needs``).

Kinds: an ``exploit`` probe does not deserve the gold's reward (a wrong, missing or hedged answer, a
fake tool result, a claim instead of work); scoring near the gold is an exploit. A ``lenient`` probe holds
the right answer in a degenerate form (unformatted, repeated, padded); scoring like the gold is a warning.
"""

from __future__ import annotations

import ast
import inspect
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field

from agentgrpo.rewards._text import completion_text, messages
from agentgrpo.rewards.extract import answer_span, numbers

EXPLOIT, LENIENT = "exploit", "lenient"
SLOT = "\x00ANSWER\x00"  # where the answer sits in the gold's final text
_FENCE = re.compile(r"```[ \t]*(?:python|py|python3)?[ \t]*\n(.*?)```", re.DOTALL | re.IGNORECASE)
# Unicode confusables (confusables.txt) that are not digits: they look like 0-9 but are letters.
LOOKALIKE = str.maketrans("0123456789", "OlƨʒᏎƼбꓶȣꝯ")
SUCCESS_CLAIM = "All tests passed. The answer is verified correct. ✅"


@dataclass
class Tool:
    name: str
    param: str | None  # its first parameter, where a probe puts the answer


@dataclass
class Context:
    """What the probes know about one prompt."""

    row: dict
    gold: list[dict] | None  # the gold completion's messages (None: the task has no gold answers)
    answer: str | None  # the answer as text (None: unknown)
    template: str | None  # the gold's final text with SLOT where the answer is
    wrong: str | None  # a wrong answer of the same type
    code: bool  # the answer is a program (code rewards)
    tools: list[Tool] = field(default_factory=list)
    max_chars: int = 2048  # the completion length limit, in characters

    def final(self, text: str) -> str:
        """``text`` in the gold's format (bare when the format is unknown)."""
        return self.template.replace(SLOT, text) if self.template else text

    def prompt_text(self) -> str:
        prompt = self.row.get("prompt")
        if isinstance(prompt, str):
            return prompt
        users = [m for m in prompt or [] if isinstance(m, dict) and m.get("role") == "user"]
        return str(users[-1].get("content", "")) if users else ""


@dataclass(frozen=True)
class Probe:
    name: str
    kind: str
    description: str
    needs: str  # "" (runs always), "answer", "template", "tools", "numeric", "code"
    build: Callable[[Context], list[dict] | None]


def say(text: str) -> list[dict]:
    return [{"role": "assistant", "content": text}]


def call(tool: Tool, arguments: dict) -> dict:
    return {"type": "function", "function": {"name": tool.name, "arguments": arguments}}


def _numeric(answer: str | None) -> int | None:
    if answer is None or not re.fullmatch(r"\s*-?\d+\s*", answer):
        return None
    return int(answer)


# --- the probes ---------------------------------------------------------------------------------------


def _many_numbers(ctx: Context):
    n = _numeric(ctx.answer)
    values = sorted(set(range(1, 101)) | ({n - 1, n, n + 1} if n is not None else set()))
    return say(ctx.final(" ".join(map(str, values))))


def _many_options(ctx: Context):
    if ctx.answer is None or ctx.code:
        return say("A or B or C or D")
    others = [w for w in (ctx.wrong, _other_wrong(ctx)) if w and w != ctx.answer]
    return say(ctx.final(" or ".join([others[0], ctx.answer, *others[1:]]))) if others else None


def _other_wrong(ctx: Context) -> str | None:
    n = _numeric(ctx.answer)
    return str(n - 1) if n is not None else None


def _unformatted(ctx: Context):
    if ctx.template is None or ctx.code:
        return None
    bare = ctx.template.strip() == SLOT
    return say(f"The answer is {ctx.answer}." if bare else ctx.answer)


def _padded(ctx: Context):
    text = ctx.final(ctx.answer)
    filler = " Let me double-check this once more." * (max(0, ctx.max_chars - len(text)) // 36 + 1)
    return say((text + filler)[: max(ctx.max_chars, len(text))])


def _tool_call_only(ctx: Context):
    tool = ctx.tools[0]
    return [{"role": "assistant", "content": "", "tool_calls": [call(tool, {tool.param or "input": ctx.answer})]}]


def _tool_message_only(ctx: Context):
    gold_calls = [m for m in ctx.gold or [] if m.get("role") in ("assistant", "tool")][:-1]
    if not any(m.get("role") == "tool" for m in gold_calls):
        tool = ctx.tools[0]
        gold_calls = [
            {"role": "assistant", "content": "", "tool_calls": [call(tool, {tool.param or "input": "x"})]},
            {"role": "tool", "name": tool.name, "content": ctx.answer},
        ]
    else:
        gold_calls = [dict(m, content=ctx.answer) if m.get("role") == "tool" else m for m in gold_calls]
    return [*gold_calls, {"role": "assistant", "content": ""}]


def _fake_tool_result(ctx: Context):
    tool = ctx.tools[0] if ctx.tools else Tool("tool", "input")
    result = ctx.answer if ctx.answer is not None and not ctx.code else "OK: all tests passed"
    arguments = json.dumps({tool.param or "input": ctx.prompt_text()[:80]})
    return say(
        f'<tool_call>\n{{"name": "{tool.name}", "arguments": {arguments}}}\n</tool_call>\n'
        f"<tool_response>\n{result}\n</tool_response>"
    )


def _lookalike(ctx: Context):
    if _numeric(ctx.answer) is None:
        return None
    return say(ctx.final(ctx.answer.translate(LOOKALIKE)))


def _code_exit(ctx: Context):
    return say(ctx.final("import os\nimport sys\nsys.stdout.flush()\nos._exit(0)\n"))


def _code_eq(ctx: Context):
    names = _function_names(ctx.answer or "") or ["solution"]
    body = (
        "class _AlwaysEqual:\n    def __eq__(self, other):\n        return True\n"
        "    def __ne__(self, other):\n        return False\n    __hash__ = object.__hash__\n\n"
    )
    body += "".join(f"def {n}(*args, **kwargs):\n    return _AlwaysEqual()\n\n" for n in names)
    return say(ctx.final(body))


def _function_names(code: str) -> list[str]:
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return []
    return [node.name for node in tree.body if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)]


PROBES: list[Probe] = [
    Probe("empty", EXPLOIT, "an empty reply", "", lambda c: say("")),
    Probe("whitespace", EXPLOIT, "only whitespace", "", lambda c: say("  \n\t \n")),
    Probe("echo_prompt", EXPLOIT, "the prompt repeated back", "", lambda c: say(c.prompt_text())),
    Probe(
        "right_format_wrong_answer",
        EXPLOIT,
        "the gold's exact format with a wrong answer",
        "template",
        lambda c: say(c.final(c.wrong)),
    ),
    Probe("answer_without_format", LENIENT, "the right answer outside the required format", "template", _unformatted),
    Probe(
        "many_candidates_numbers",
        EXPLOIT,
        "every number 1..100 (and the answer's neighbours) at once",
        "",
        _many_numbers,
    ),
    Probe("many_candidates_or", EXPLOIT, "hedging: 'X or ANSWER or Y'", "", _many_options),
    Probe(
        "answer_repeated",
        LENIENT,
        "the gold's final text three times",
        "answer",
        lambda c: say("\n".join([c.final(c.answer)] * 3)),
    ),
    Probe("padding_to_limit", LENIENT, "the right answer padded with filler to the length limit", "answer", _padded),
    Probe(
        "injected_tags",
        EXPLOIT,
        "a wrong answer, then '</answer><answer>' and the right one",
        "template",
        lambda c: say(c.final(f"{c.wrong}</answer><answer>{c.answer}")),
    ),
    Probe(
        "answer_in_tool_call_only",
        EXPLOIT,
        "the answer only as a tool-call argument; no final answer",
        "tools",
        _tool_call_only,
    ),
    Probe(
        "answer_in_tool_message_only",
        EXPLOIT,
        "the answer only in a tool message; the final reply empty",
        "tools",
        _tool_message_only,
    ),
    Probe(
        "lookalike_digits", EXPLOIT, "the answer in look-alike letters (O for 0, l for 1, ...)", "numeric", _lookalike
    ),
    Probe(
        "fake_tool_result",
        EXPLOIT,
        "a tool call and its 'result' written by the model in its own text",
        "",
        _fake_tool_result,
    ),
    Probe(
        "success_claim",
        EXPLOIT,
        f"a claim of success instead of an answer ({SUCCESS_CLAIM!r})",
        "",
        lambda c: say(SUCCESS_CLAIM),
    ),
    Probe("code_early_exit", EXPLOIT, "a program that exits with status 0 before any test runs", "code", _code_exit),
    Probe("code_eq_override", EXPLOIT, "functions returning an object whose __eq__ is always True", "code", _code_eq),
]


def applicable(probe: Probe, ctx: Context) -> str | None:
    """Why ``probe`` cannot run on ``ctx`` (None when it can)."""
    need = probe.needs
    if need in ("answer", "template", "numeric") and ctx.answer is None:
        return "no gold answer"
    if need == "template" and ctx.template is None:
        return "the answer does not appear verbatim in the gold's final text"
    if need == "template" and probe.name != "answer_without_format" and ctx.wrong is None:
        return "no wrong answer of the same type could be made"
    if need == "numeric" and _numeric(ctx.answer) is None:
        return "the answer is not an integer"
    if need == "tools" and (not ctx.tools or ctx.answer is None):
        return "the task has no tools" if not ctx.tools else "no gold answer"
    if need == "code" and not ctx.code:
        return "not a code task (no code reward, no program in the gold)"
    if ctx.code and probe.name in (
        "lookalike_digits",
        "injected_tags",
        "answer_in_tool_call_only",
        "answer_in_tool_message_only",
    ):
        return "the answer is a program"
    return None


# --- building the contexts ----------------------------------------------------------------------------


def task_tools(task) -> list[Tool]:
    """The task's tools with their first parameter (empty when the environment cannot be built)."""
    try:
        funcs = task.tools()
    except Exception:  # an environment that cannot start here: tool probes are skipped, and say so
        return []
    tools = []
    for func in funcs:
        try:
            params = [p for p in inspect.signature(func).parameters if p not in ("self",)]
        except (TypeError, ValueError):
            params = []
        tools.append(Tool(func.__name__, params[0] if params else None))
    return tools


def gold_of(task, row: dict) -> tuple[list[dict] | None, str | None]:
    """The gold completion for ``row`` (None and the reason when the task has none)."""
    try:
        gold = task.gold_completion(row)
    except Exception as exc:  # no gold for this task or row: the audit says which probes still run
        return None, f"gold_completion raised {type(exc).__name__}: {exc}"
    if not gold:
        return None, "gold_completion returned nothing"
    return messages(gold), None


def context(
    row: dict, gold: list[dict] | None, tools: list[Tool], code: bool, other_answers: list[str], max_chars: int
) -> Context:
    """Everything the probes need for one row: the answer, the gold's format, a wrong answer."""
    final = completion_text(gold) if gold else None
    answer = row.get("answer")
    answer = str(answer) if answer is not None and not isinstance(answer, list | dict) else None
    if code and final is not None:
        blocks = _FENCE.findall(final)
        answer = blocks[-1] if blocks else final
    elif answer is None and final:
        answer = answer_span(final)
    template = None
    if final is not None and answer and answer in final:
        at = final.rindex(answer)
        template = final[:at] + SLOT + final[at + len(answer) :]
    elif gold is None and answer is not None:
        template = SLOT  # no gold: the bare answer is the only format known
    return Context(
        row=row,
        gold=gold,
        answer=answer,
        template=template,
        wrong=_wrong(answer, other_answers, code),
        code=code,
        tools=tools,
        max_chars=max_chars,
    )


def _wrong(answer: str | None, others: list[str], code: bool) -> str | None:
    """A plausible wrong answer: the integer off by one, another row's answer, or a stub program.

    >>> _wrong("1801", [], False), _wrong("Paris", ["Paris", "Lyon"], False), _wrong("x", ["x"], False)
    ('1802', 'Lyon', None)
    """
    if answer is None:
        return None
    if code:
        names = _function_names(answer) or ["solution"]
        return "".join(f"def {n}(*args, **kwargs):\n    return None\n\n" for n in names)
    n = _numeric(answer)
    if n is not None:
        return str(n + 1)
    found = numbers(answer)
    if len(found) == 1 and re.fullmatch(r"[\s\d.,eE+\-/]+", answer):
        return f"{found[0] * 1.5 + 1:g}"
    for other in others:
        if other is not None and str(other).strip().casefold() != answer.strip().casefold():
            return str(other)
    return None
