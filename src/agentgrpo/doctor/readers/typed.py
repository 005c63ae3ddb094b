"""Records of a custom loop's event log: a kind field that separates evaluations, and a step under its own name.

A hand-written GRPO loop often writes one JSON record per event (``{"type": "eval", "grpo_step": 5,
"reward": 0.24}``, ``{"type": "rollout", "grpo_step": 5, "reward": 0.31}``, ``{"type": "train", ...}``):

* **the kind**: when a field named like a kind (``type``, ``event``, ``kind``, ``split``, ``mode``,
  ``phase``) holds words in the records and one of them says evaluation (``eval``, ``validation``,
  ``test``, ...), those records' metrics are read as evaluation metrics (``eval/<name>``, TRL's convention),
  so an evaluation's ``reward`` never stands in for the training reward it is interleaved with; the other
  kinds' records of one step are merged, as TRL's rows are.
* **the step**: with no step key the reader knows, a key whose last word is ``step`` (``grpo_step``,
  ``train_step``, ``rl/step``) holding whole numbers in (nearly) every record, in (nearly) non-decreasing
  file order, is the step; the one present in the most records wins (``grpo_step`` over ``optimizer_step``
  that only training records carry).
"""

from __future__ import annotations

from agentgrpo.doctor import names
from agentgrpo.doctor.readers.discover import tokens
from agentgrpo.doctor.table import to_float

KIND_KEYS = ("type", "event", "kind", "split", "mode", "phase", "record_type", "event_type")
EVAL_KINDS = frozenset({"eval", "evaluation", "val", "valid", "validation", "test", "testing", "dev"})
_BATCH = ("batch_index", "batch_idx", "batch_num", "batch_number")  # a loop's count of batches, if no step is named
_SAMPLE = 2000  # records looked at to decide (a log's kinds show up early)


def eval_records_prefixed(records: list[dict], notes: list[str]) -> list[dict]:
    """The records with an evaluation kind's metrics renamed ``eval/<name>`` (see the module docstring).

    >>> rows = [{"type": "eval", "step": 0, "reward": 0.1}, {"type": "rollout", "step": 0, "reward": 0.3}]
    >>> eval_records_prefixed(rows, [])
    [{'type': 'eval', 'step': 0, 'eval/reward': 0.1}, {'type': 'rollout', 'step': 0, 'reward': 0.3}]
    >>> eval_records_prefixed([{"mode": "train", "reward": 1}, {"mode": "train", "reward": 2}], [])[0]
    {'mode': 'train', 'reward': 1}
    """
    key = _kind_key(records[:_SAMPLE])
    if key is None:
        return records
    out, count = [], 0
    for record in records:
        kind = record.get(key)
        if isinstance(kind, str) and kind.strip().lower() in EVAL_KINDS:
            count += 1
            record = {(k if k == key or _is_step_key(k) else f"eval/{k}"): v for k, v in record.items()}
        out.append(record)
    notes.append(f"{count} record(s) of kind {key}=eval/validation/test read as evaluation metrics (eval/<name>)")
    return out


def _kind_key(records: list[dict]) -> str | None:
    for key in KIND_KEYS:
        kinds = {r.get(key) for r in records if key in r}
        if len(kinds) >= 2 and all(isinstance(k, str) for k in kinds):
            if any(k.strip().lower() in EVAL_KINDS for k in kinds):
                return key
    return None


def _is_step_key(key) -> bool:
    words = tokens(str(key))
    return bool(words) and words[-1] == "step" or names.canonical(str(key)) == "step"


def named_step(records: list[dict]) -> str | None:
    """The key that holds the step under a name of its own (``grpo_step``), or None.

    >>> named_step([{"grpo_step": 0, "optimizer_step": 1}, {"grpo_step": 0}, {"grpo_step": 1, "optimizer_step": 2}])
    'grpo_step'
    >>> named_step([{"train_step": 3.5}, {"train_step": 4.5}]) is None  # not whole numbers
    True
    >>> named_step([{"rl_step": 9}, {"rl_step": 2}, {"rl_step": 1}]) is None  # not in file order
    True

    Without such a key, a custom loop's batch counter (``batch_index``: one update per batch) is the step.

    >>> named_step([{"batch_index": 1, "reward_mean": 0.1}, {"batch_index": 2, "reward_mean": 0.2}])
    'batch_index'
    """
    sample = records[:_SAMPLE]
    keys = [k for k in dict.fromkeys(k for r in sample for k in r) if isinstance(k, str)]
    return _counter(sample, [k for k in keys if _is_step_key(k)]) or _counter(sample, [k for k in keys if k in _BATCH])


def _counter(sample: list[dict], candidates: list[str]) -> str | None:
    """The candidate key with the most whole-number values that rarely fall in file order, or None."""
    best, best_count = None, 0
    for key in candidates:
        values = [to_float(r[key]) for r in sample if key in r]
        count = len(values)
        if count * 10 < len(sample) * 9 or count < 2 or any(v is None or not float(v).is_integer() for v in values):
            continue
        falls = sum(b < a for a, b in zip(values, values[1:]))
        if falls * 10 > count:
            continue
        if count > best_count:
            best, best_count = key, count
    return best
