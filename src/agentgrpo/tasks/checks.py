"""Checks of a run plan's task: SFT needs demonstrations, and every tool (plain functions and the
environment's methods) has a schema TRL can render and answers one sample call within the tool timeout (a
tool that never returns is reported, not waited for). Whether the model fits the task is a training check."""

from __future__ import annotations

from agentgrpo.tasks.base import environment_tools
from agentgrpo.timeouts import ToolTimeout, call_with_timeout


def check_plan(plan) -> list[str]:
    """What is wrong with the task for this run, without calling its code."""
    task, problems = plan.task, []
    if plan.run.sft and task.demonstration is None:
        problems.append(f"sft: task {task.name!r} has no demonstrations to SFT on; set sft: false.")
    return problems


def sample_rows(task, n: int = 2) -> list[dict]:
    """A few rows to call user code on: held-out rows, else training rows."""
    return task.eval_problems(n) or task.train_problems(n, 0)


def sample_completions(task, rows: list[dict]) -> list:
    """What a model might write for ``rows``: the gold completion when the task has one, else a short answer."""
    if task.gold_completion is not None:
        return [task.gold_completion(r) for r in rows]
    return [[{"role": "assistant", "content": "42"}] for _ in rows]


def sample_environments(task, rows: list[dict], timeout: float) -> tuple[list | None, list[str]]:
    """One reset environment per row (None without an environment factory); problems creating them."""
    if task.environment_factory is None:
        return None, []
    envs = []
    for row in rows:
        try:
            env = call_with_timeout(task.environment_factory, timeout or None, "environment")
            call_with_timeout(lambda e=env, r=row: e.reset(**r), timeout or None, "environment.reset")
        except ToolTimeout:
            return None, [f"environment: creating or resetting it did not return within {timeout:g} s "
                          "(tool_timeout); it would hang training."]
        except Exception as exc:
            return None, [f"environment: creating or resetting it raised {type(exc).__name__}: {exc}"]
        envs.append(env)
    return envs, []


def check_tools(task, timeout: float, warnings: list[str] | None = None) -> list[str]:
    """Each tool gets a JSON schema (TRL renders it into the prompt) and is called once on a sample input,
    within ``timeout`` seconds: the gold completion's tool calls when the task has them, else arguments made
    from the schema. Warnings (an input error on a made-up input) are appended to ``warnings``."""
    from transformers.utils import get_json_schema

    warnings = [] if warnings is None else warnings
    try:
        rows = sample_rows(task, 1)
    except Exception as exc:
        return [f"task: reading a sample problem raised {type(exc).__name__}: {exc}"]
    envs, problems = sample_environments(task, rows[:1], timeout)
    if problems:
        return problems
    env = envs[0] if envs else None
    tools = [*task.tool_functions, *(environment_tools(env) if env is not None else [])]
    samples = _gold_calls(task, rows[0])
    for tool in tools:
        name = getattr(tool, "__name__", repr(tool))
        try:
            schema = get_json_schema(tool)
        except Exception as exc:
            problems.append(
                f"tool {name!r}: TRL cannot describe it to the model ({type(exc).__name__}: {exc}); "
                "give it type hints and a Google-style docstring with an Args: section."
            )
            continue
        problems += _sample_call(tool, name, samples.get(name), schema, timeout, warnings)
    return problems


# Exceptions a tool may rightly raise for a made-up input (reported as warnings, not errors).
INPUT_ERRORS = (ValueError, LookupError, ArithmeticError)


def _sample_call(tool, name: str, gold_args: dict | None, schema: dict, timeout: float,
                 warnings: list[str]) -> list[str]:
    """Call the tool once: a failure on the gold completion's own call, a call past the timeout, or any crash
    that is not an input-validation error, is a problem; an input error on made-up arguments is a warning."""
    args = gold_args if gold_args is not None else _sample_args(schema)
    try:
        call_with_timeout(lambda: tool(**args), timeout or None, name)
    except ToolTimeout:
        return [f"tool {name!r}: did not return within {timeout:g} s when called with {args} (tool_timeout); "
                "training would end every such call with a timeout. Make it return sooner, or raise tool_timeout."]
    except Exception as exc:
        text = f"tool {name!r}: raised {type(exc).__name__}: {exc} when called with {args}"
        if gold_args is None and isinstance(exc, INPUT_ERRORS):
            warnings.append(f"{text} (a made-up sample input; fine if that input is invalid for it)")
            return []
        return [f"{text} (the model would only ever see an error from it)."]
    return []


def _gold_calls(task, row) -> dict[str, dict]:
    if task.gold_completion is None:
        return {}
    calls = {}
    for message in task.gold_completion(row):
        for call in message.get("tool_calls") or []:
            function = call.get("function", {})
            calls.setdefault(function.get("name"), dict(function.get("arguments") or {}))
    return calls


SAMPLE_VALUES = {"string": "1", "integer": 1, "number": 1.0, "boolean": True, "array": [], "object": {}}


def _sample_args(schema: dict) -> dict:
    """Arguments for a sample call, one plain value per required parameter's JSON type.

    >>> _sample_args({"parameters": {"properties": {"q": {"type": "string"}, "k": {"type": "integer"}},
    ...                              "required": ["q"]}})
    {'q': '1'}
    """
    params = (
        schema.get("parameters", {}) if "parameters" in schema else schema.get("function", {}).get("parameters", {})
    )
    props = params.get("properties", {})
    return {
        name: SAMPLE_VALUES.get(props[name].get("type"), "1") for name in params.get("required", []) if name in props
    }
