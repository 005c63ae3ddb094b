"""The `function-calling` agent task: choose the right functions and arguments from a set of tool schemas.

Each prompt lists the available functions (JSON schemas) and a user request; the agent answers with a JSON
list of calls ``[{"name": ..., "arguments": {...}}]``. Scoring compares the calls with the expected ones as
structures (`agentgrpo.rewards.calls`: names, required and unexpected arguments, acceptable values, any
order); an answer that is not valid JSON scores 0 with its reason counted (``function_calling/*_frac``).

* ``function_calls`` (weight 1): the share of the expected calls made right (extra calls count against it);
* ``function_calls_format`` (weight 0.1): the answer parses as a JSON list of calls;
* ``function_calls_exact`` (weight 0, the shadow and the eval's success): every call right, nothing extra
  (BFCL's AST accuracy). For one-call rows it equals the trained reward; for parallel rows the trained
  reward gives partial credit.

Data: the Berkeley Function Calling Leaderboard (BFCL v4, Apache-2.0; Patil et al.), its four single-turn
"AST" categories for Python: simple_python (400), multiple (200), parallel (200), parallel_multiple (200).
``function-calling`` uses the copy shipped in ``agentgrpo/tasks/data/bfcl_v4_ast.jsonl.gz`` (built from
the ``bfcl-eval`` 2026.3.23 wheel's data by `build_offline_file`; the package itself is not a dependency: it
pins numpy 1.26 and pulls vLLM-era SDKs); ``function-calling-hub`` downloads the same categories from
the Hub dataset ``gorilla-llm/Berkeley-Function-Calling-Leaderboard``. BFCL is an evaluation benchmark:
a fixed 20% (by a hash of the request's text, so a request BFCL asks in two categories stays on one
side) is held out for eval and never trained on, so scores on it are not comparable with the leaderboard's.

Version history (bump ``VERSION`` when scoring changes):
  1: first release.
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import json
import random
from importlib import resources
from pathlib import Path

from agentgrpo.errors import UserError
from agentgrpo.rewards.calls import (
    function_call_stats,
    function_calls,
    function_calls_exact,
    function_calls_format,
    gold_value,
)
from agentgrpo.tasks.base import Task

VERSION = 1
CATEGORIES = ("simple_python", "multiple", "parallel", "parallel_multiple")
HUB_DATASET = "gorilla-llm/Berkeley-Function-Calling-Leaderboard"
HUB_VERSION = "v4"
OFFLINE_FILE = "bfcl_v4_ast.jsonl.gz"
EVAL_PERCENT = 20
SYSTEM_PROMPT = (
    "You can call these functions (JSON schemas):\n{functions}\n\nAnswer the user's request with the function "
    'calls to make, as a JSON list and nothing else: [{{"name": "<function>", "arguments": {{...}}}}, ...]. '
    "Use only the functions and parameters listed."
)


# --- data -----------------------------------------------------------------------------------------------


def _row(entry: dict) -> dict:
    functions = json.dumps(entry["functions"], indent=None)
    messages = [{"role": "system", "content": SYSTEM_PROMPT.format(functions=functions)}]
    messages += [{"role": m["role"], "content": m["content"]} for m in entry["question"]]
    return {
        "id": f"bfcl/{entry['id']}",
        "prompt": messages,
        "category": entry["category"],
        "functions": functions,
        "ground_truth": json.dumps(entry["ground_truth"]),  # a JSON string: one column type for every row
    }


def _with_answer(row: dict) -> dict:
    """The row with ``answer``: the gold answer's text (what the reward audit's probes vary)."""
    return {**row, "answer": json.dumps(gold_calls(row))}


@functools.cache
def offline_rows() -> tuple[dict, ...]:
    """BFCL's four single-turn Python categories, shipped with agentgrpo (1,000 rows)."""
    path = resources.files("agentgrpo.tasks") / "data" / OFFLINE_FILE
    with path.open("rb") as raw, gzip.open(raw, "rt", encoding="utf-8") as fh:
        return tuple(_row(json.loads(line)) for line in fh if line.strip())


def hub_rows() -> tuple[dict, ...]:
    """The same categories from the Hub (needs network); a clear error naming the offline task otherwise."""
    from agentgrpo.tasks.hub import unreachable

    reason = unreachable()
    if reason:
        raise UserError(f"task function-calling-hub: unavailable offline ({reason}): {HUB_DATASET} cannot be "
                        "downloaded; use task 'function-calling' (the same BFCL categories, shipped with "
                        "agentgrpo), or run where the Hugging Face Hub is reachable (HF_HUB_OFFLINE unset).")
    return _load_hub()


@functools.cache
def _load_hub() -> tuple[dict, ...]:
    from huggingface_hub import hf_hub_download

    entries = []
    try:
        for category in CATEGORIES:
            name = f"BFCL_{HUB_VERSION}_{category}.json"
            questions = hf_hub_download(HUB_DATASET, name, repo_type="dataset")
            answers = hf_hub_download(HUB_DATASET, f"possible_answer/{name}", repo_type="dataset")
            entries += merge(_jsonl(questions), _jsonl(answers), category)
    except Exception as exc:  # no network, a renamed file, a Hub error: all the same to the user
        raise UserError(f"task function-calling-hub: cannot load {HUB_DATASET} ({type(exc).__name__}: "
                        f"{str(exc)[:200]}); use task 'function-calling' (shipped with agentgrpo) when the Hub "
                        "is unreachable.") from exc
    return tuple(_row(e) for e in entries)


def _jsonl(path) -> list[dict]:
    return [json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines() if line.strip()]


def merge(questions: list[dict], answers: list[dict], category: str) -> list[dict]:
    """BFCL's question file and possible-answer file as one entry per id."""
    truth = {a["id"]: a["ground_truth"] for a in answers}
    return [{"id": q["id"], "category": category, "question": q["question"][0], "functions": q["function"],
             "ground_truth": truth[q["id"]]} for q in questions if q["id"] in truth]


def build_offline_file(data_dir: str | Path, out: str | Path) -> int:
    """Write the shipped file from a BFCL data directory (``bfcl_eval/data`` of the bfcl-eval wheel)."""
    data_dir, lines = Path(data_dir), []
    for category in CATEGORIES:
        name = f"BFCL_{HUB_VERSION}_{category}.json"
        for entry in merge(_jsonl(data_dir / name), _jsonl(data_dir / "possible_answer" / name), category):
            lines.append(json.dumps(entry, separators=(",", ":")))
    with gzip.open(out, "wt", encoding="utf-8", compresslevel=9) as fh:
        fh.write("\n".join(lines) + "\n")
    return len(lines)


def held_out(question: str) -> bool:
    """Whether a request is in the fixed eval split (``EVAL_PERCENT`` percent, by a hash of its text: BFCL asks
    some requests in several categories, and all of them land on the same side)."""
    return int(hashlib.sha256(question.encode()).hexdigest(), 16) % 100 < EVAL_PERCENT


def _pool(source: str, held: bool) -> list[dict]:
    rows = offline_rows() if source == "offline" else hub_rows()
    return [_with_answer(r) for r in rows if held_out(r["prompt"][-1]["content"]) == held]


def _train_problems(source: str, n: int, seed: int) -> list[dict]:
    pool, rng, rows = _pool(source, held=False), random.Random(seed), []
    while len(rows) < n:
        batch = list(pool)
        rng.shuffle(batch)
        rows += batch
    return rows[:n]


def _eval_problems(source: str, n: int = 200) -> list[dict]:
    return _pool(source, held=True)[:n]


# --- gold -----------------------------------------------------------------------------------------------


def gold_calls(row: dict) -> list[dict]:
    """The expected calls with, for each parameter, its first acceptable value (optional ones left out)."""
    calls = []
    for expected in json.loads(row["ground_truth"]):
        (name, params), = expected.items()
        arguments = {k: gold_value(v) for k, v in params.items() if any(o != "" for o in v)}
        calls.append({"name": name, "arguments": arguments})
    return calls


def gold_completion(row: dict) -> list[dict]:
    return [{"role": "assistant", "content": json.dumps(gold_calls(row))}]


def demonstration(row: dict, use_tool: bool) -> dict:
    """An SFT example: the prompt and the gold calls (the task has no tool to use)."""
    return {"messages": list(row["prompt"]) + gold_completion(row)}


def make_task(source: str) -> Task:
    name = "function-calling" if source == "offline" else "function-calling-hub"
    data = "BFCL v4, shipped" if source == "offline" else f"BFCL v4 from the Hub ({HUB_DATASET})"
    return Task(
        name=name,
        version=VERSION,
        description=f"Pick functions and arguments from JSON schemas; answer = JSON list of calls, compared as "
                    f"structures; shadow = all calls exact. Data: {data}.",
        environment_factory=None,
        reward_funcs={"function_calls": function_calls(), "function_calls_format": function_calls_format,
                      "function_calls_exact": function_calls_exact()},
        default_rewards=[{"name": "function_calls", "weight": 1.0}, {"name": "function_calls_format", "weight": 0.1},
                         {"name": "function_calls_exact", "weight": 0.0}],
        train_problems=functools.partial(_train_problems, source),
        eval_problems=functools.partial(_eval_problems, source),
        demonstration=demonstration,
        gold_completion=gold_completion,
        success_reward="function_calls_exact",
        columns=("id", "prompt", "category", "functions", "ground_truth", "answer"),
        episode_stats=function_call_stats,
    )


TASK = make_task("offline")
HUB_TASK = make_task("hub")
