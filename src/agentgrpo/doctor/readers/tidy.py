"""What every reader does after parsing: restarted steps, placeholder columns, metrics derived from counts.

* A run resumed from a checkpoint logs its steps again from the checkpoint on: the last occurrence of each
  step is kept, in order. A run started over from its first step (attempts stopped at different points) is
  its last attempt, however many came before. Steps out of order everywhere are sorted instead.
* A column that is exactly 0 on every step for a quantity that cannot be 0 while sampling (``entropy``,
  ``kl``, the mean completion length) is a placeholder, not a measurement: it is dropped, so the
  detectors see it as missing; NaN on its other rows measured nothing either (no numerical instability).
* A column that is NaN on every row that has it (never one finite or infinite value) was never computed:
  it is "not logged" (dropped with a note), not a numerical instability from its first step.
* Other trainers' counts give TRL's ratios: ``truncated_count / rollout_count`` is the clipped ratio,
  Tinker's ``frac_all_good + frac_all_bad`` the share of zero-variance groups.
"""

from __future__ import annotations

import numpy as np

from agentgrpo.doctor import names
from agentgrpo.doctor.table import MetricTable, to_float
from agentgrpo.errors import UserError

PLACEHOLDER_CANDIDATES = (names.ENTROPY, names.KL, names.LENGTH)
_MAX_RESTARTS = 3  # more restarts than this is disorder, not resumes

_TRUNCATED = ("truncated_count", "num_truncated", "n_truncated", "clipped_count", "num_clipped")
_TOTAL = ("rollout_count", "num_rollouts", "n_rollouts", "num_samples", "n_samples", "num_completions")


def step_of(record: dict) -> float | None:
    """The step a record carries, by the trusted order of step keys."""
    for key in names.STEP_KEYS:
        if key in record:
            value = to_float(record[key])
            if value is not None and np.isfinite(value):
                return value
    for key, value in record.items():
        if names.canonical(str(key)) == "step":
            number = to_float(value)
            if number is not None and np.isfinite(number):
                return number
    return None


def steps_of(records: list[dict]) -> list[float | None]:
    """``step_of`` of every record; one key lookup per record when they all carry the same numeric step key
    (nearly every log), the full search otherwise."""
    first = next((k for k in names.STEP_KEYS if records and k in records[0]), None)
    if first is not None:
        try:
            values = [r[first] for r in records]
            steps = np.asarray(values, dtype=float)
        except (KeyError, TypeError, ValueError):
            steps = None
        if steps is not None and steps.ndim == 1 and np.isfinite(steps).all():
            if not any(k in records[0] for k in names.STEP_KEYS[: names.STEP_KEYS.index(first)]):
                return steps.tolist()
    return [step_of(r) for r in records]


def drop_superseded(records: list[dict]) -> tuple[list[dict], list[str]]:
    """Records with restarted steps resolved: each step's last run kept, in file order.

    >>> recs, notes = drop_superseded([{"step": s} for s in (1, 2, 3, 2, 3, 4)])
    >>> [r["step"] for r in recs], notes[0][:47]
    ([1, 2, 3, 4], 'steps restart once (at record 4: step 3 then 2)')
    """
    steps = steps_of(records)
    if set(map(type, steps)) <= {float} and np.all(np.diff(np.asarray(steps, dtype=float)) >= 0):
        return records, []  # steps never go back: nothing superseded
    restarts = [i for i in range(1, len(steps)) if _lt(steps[i], _prev(steps, i))]
    if not restarts:
        return records, []
    epochs = [_epoch_of(r) for r in records]
    if all(_lt(epochs[i - 1], epochs[i]) for i in restarts):
        return _number_across_epochs(records, steps, set(restarts))
    start = next(s for s in steps if s is not None)
    anew = [i for i in restarts if steps[i] == start]  # back to the first step: the run started over
    if len(restarts) - len(anew) > _MAX_RESTARTS:
        return records, [f"steps out of order at {len(restarts)} places: sorted by step"]
    kept: list[int] = []
    dropped = 0
    for i, step in enumerate(steps):
        if step is not None:
            while kept and steps[kept[-1]] is not None and steps[kept[-1]] >= step and i in restarts:
                kept.pop()
                dropped += 1
        kept.append(i)
    first = restarts[0]
    where = f"at record {first + 1}: step {_fmt(_prev(steps, first))} then {_fmt(steps[first])}"
    times = "once" if len(restarts) == 1 else f"{len(restarts)} times"
    how = (
        "the run started over from its first step: kept its last attempt"
        if len(anew) == len(restarts)
        else "as a resumed run logs them: kept the last occurrence of each step"
    )
    note = f"steps restart {times} ({where}), {how}, {dropped} earlier record(s) superseded"
    return [records[i] for i in kept], [note]


_EPOCH_KEYS = ("epoch", "Epoch", "progress/epoch", "train/epoch")


def _epoch_of(record: dict) -> float | None:
    for key in _EPOCH_KEYS:
        if key in record:
            value = to_float(record[key])
            if value is not None and np.isfinite(value):
                return value
    return None


def _number_across_epochs(records: list[dict], steps: list, restarts: set[int]) -> tuple[list[dict], list[str]]:
    """Steps counted within each epoch (they restart as the epoch grows) as one count across epochs.

    >>> recs, notes = drop_superseded([{"epoch": e, "step": s} for e in (0, 1) for s in (0, 1, 2)])
    >>> [r["step"] for r in recs], notes[0][:35]
    ([0, 1, 2, 3, 4, 5], 'steps restart at each new epoch (1 ')
    """
    out, offset, last = [], 0.0, None
    for i, (record, step) in enumerate(zip(records, steps)):
        if step is None:
            out.append(record)
            continue
        if i in restarts and last is not None:
            offset = last + 1 - step
        last = step + offset
        out.append(dict(record, step=int(last) if float(last).is_integer() else last))
    note = f"steps restart at each new epoch ({len(restarts)} time(s)): numbered on across epochs"
    return out, [note]


def _prev(steps: list, i: int):
    for j in range(i - 1, -1, -1):
        if steps[j] is not None:
            return steps[j]
    return None


def _lt(a, b) -> bool:
    return a is not None and b is not None and a < b


def _fmt(step) -> str:
    return str(int(step)) if step is not None and float(step).is_integer() else str(step)


def drop_never_finite(table: MetricTable, notes: list[str]) -> None:
    """Remove columns logged only as NaN (no finite or infinite value anywhere): a metric never computed.

    A NaN after finite values is a measurement that broke (the instability detector's evidence); NaN on
    every row says nothing about the run, only that the logger wrote a slot it never filled.
    """
    nan_steps = table.meta.get("nan_steps", {})
    never = [k for k in nan_steps if k in table.columns and np.isnan(table.columns[k]).all()]
    for name in never:
        del table.columns[name]
        del nan_steps[name]
    if never:
        shown = ", ".join(never[:6]) + (f" (+{len(never) - 6} more)" if len(never) > 6 else "")
        notes.append(f"NaN on every row, never computed: {shown}; treated as not logged (not a numerical instability)")
    if not nan_steps:
        table.meta.pop("nan_steps", None)


def drop_placeholders(table: MetricTable, notes: list[str]) -> None:
    """Remove columns that are exactly 0 on every logged step for a quantity that cannot be 0. The NaN rows of
    such a column measured nothing either (a KL never computed at ``beta=0``, NaN where a rank had no
    samples): they are no numerical instability, and go with it."""
    nan_steps = table.meta.get("nan_steps", {})
    for name in PLACEHOLDER_CANDIDATES:
        _, values = table.series(name)
        if len(values) >= 2 and np.all(values == 0):
            del table.columns[name]
            nan = nan_steps.pop(name, [])
            also = f" (and NaN on {len(nan)} more: not an instability)" if nan else ""
            notes.append(
                f"{name} is exactly 0 on all {len(values)} logged steps{also}: a placeholder, not a measurement; "
                "treated as not logged"
            )
    if not nan_steps:
        table.meta.pop("nan_steps", None)


def derive(table: MetricTable, notes: list[str]) -> None:
    """Ratios TRL logs that another trainer logged as counts or complements."""
    if not table.has(names.CLIPPED):
        num = next((k for k in _TRUNCATED if table.has(k)), None)
        den = next((k for k in _TOTAL if table.has(k)), None)
        if num and den:
            with np.errstate(divide="ignore", invalid="ignore"):
                ratio = np.where(table[den] > 0, table[num] / table[den], np.nan)
            table.columns[names.CLIPPED] = ratio
            notes.append(f"{names.CLIPPED} = {num} / {den}")
    good, bad = "env/all/frac_all_good", "env/all/frac_all_bad"
    if not table.has(names.FRAC_ZERO_STD) and table.has(good) and table.has(bad):
        table.columns[names.FRAC_ZERO_STD] = table[good] + table[bad]
        notes.append(f"{names.FRAC_ZERO_STD} = frac_all_good + frac_all_bad (groups with one reward)")
    elif not table.has(names.FRAC_ZERO_STD) and table.has("env/all/frac_mixed"):
        table.columns[names.FRAC_ZERO_STD] = 1.0 - table["env/all/frac_mixed"]
        notes.append(f"{names.FRAC_ZERO_STD} = 1 - frac_mixed")
    _no_signal_steps(table, notes)


ADVANTAGE_MAX = ("critic/advantages/max", "advantages/max", "advantage/max", "adv_max", "advantages_max")


def _no_signal_steps(table: MetricTable, notes: list[str]) -> None:
    """Where no share of identical groups is logged but the batch's largest advantage is (verl's
    ``critic/advantages/max``): a group whose rewards differ has a sample above its mean, so a positive
    advantage; a step whose largest advantage is 0 had every group identical. ``frac_reward_zero_std`` is
    then 1 on such steps and 0 on the others, a lower bound (a step with one group that differs reads 0).

    >>> t = MetricTable(np.arange(1, 4), {"critic/advantages/max": np.array([2.5, 0.0, np.nan])}, {})
    >>> _no_signal_steps(t, []); t.columns["frac_reward_zero_std"].tolist()
    [0.0, 1.0, nan]
    """
    if table.has(names.FRAC_ZERO_STD):
        return
    key = next((k for k in ADVANTAGE_MAX if table.has(k)), None)
    if key is None:
        return
    top = table[key]
    table.columns[names.FRAC_ZERO_STD] = np.where(np.isfinite(top), (top <= 1e-9).astype(float), np.nan)
    notes.append(
        f"{names.FRAC_ZERO_STD} from {key}: 1 on a step whose largest advantage is 0 (every group identical), "
        "else 0 (a lower bound)"
    )


# A long ("tidy") table: one row per (step, metric) with the metric's name in one column and its value in another
# (W&B's ``run_name,metric,step,value`` history dump, tbparse's ``step,tag,value``, MLflow-style key/value rows).
LONG_NAME_KEYS = ("metric", "metric_name", "metric_key", "key", "tag", "name", "series")
LONG_VALUE_KEYS = ("value", "metric_value", "val", "scalar")
LONG_RUN_KEYS = ("run", "run_name", "run_id", "experiment", "experiment_name")
LONG_TIME_KEYS = ("wall_time", "walltime", "timestamp", "time", "_timestamp", "_runtime", "relative_time")


def long_to_wide(records: list[dict], source, run: str | None) -> tuple[list[dict], list[str]]:
    """One record per step from a long table (`LONG_NAME_KEYS`, `LONG_VALUE_KEYS` and a step key on every row,
    besides at most a run and a time column): ``{step: s, <name>: <value>, ...}``, a later row winning for a
    repeated (step, name). Several runs and no ``run`` chosen is an error naming them, as for a wide export.
    Any other table is returned as it is.

    >>> long_to_wide([{"step": "1", "metric": "reward", "value": "0.5"}, {"step": "1", "metric": "kl",
    ...     "value": "0.01"}, {"step": "2", "metric": "reward", "value": "0.7"}], "x.csv", None)[0]
    [{'step': '1', 'reward': '0.5', 'kl': '0.01'}, {'step': '2', 'reward': '0.7'}]
    """
    if not records or not isinstance(records[0], dict):
        return records, []
    keys = set(records[0])
    lower = {str(k).strip().lower(): k for k in keys}
    name_key = next((lower[k] for k in LONG_NAME_KEYS if k in lower), None)
    value_key = next((lower[k] for k in LONG_VALUE_KEYS if k in lower), None)
    step_key = next((k for k in keys if names.canonical(str(k)) == "step"), None)
    run_key = next((lower[k] for k in LONG_RUN_KEYS if k in lower), None)
    known = {name_key, value_key, step_key, run_key} | {lower[k] for k in LONG_TIME_KEYS if k in lower}
    if name_key is None or value_key is None or step_key is None or not keys <= known:
        return records, []
    if any(not isinstance(r, dict) or set(r) - known or name_key not in r for r in records):
        return records, []
    if any(to_float(r[name_key]) is not None for r in records[:200]):
        return records, []  # a numeric "name" column: not a long table
    runs = sorted({str(r.get(run_key, "")) for r in records}) if run_key else []
    notes = []
    if len(runs) > 1:
        if run is None:
            raise UserError(
                f"{source}: a long table (one row per step and metric) of {len(runs)} runs ({', '.join(runs[:12])}); "
                f"the doctor reads one run: pass {source}#RUN (e.g. {source}#{runs[0]})"
            )
        if run not in runs:
            raise UserError(f"{source}: no run {run!r} in this table (runs: {', '.join(runs[:12])})")
        records = [r for r in records if str(r.get(run_key, "")) == run]
        notes.append(f"long table of {len(runs)} runs: read run {run!r}")
    wide: dict[str, dict] = {}  # by the step as written
    for r in records:
        step = str(r.get(step_key, "")).strip()
        if step:
            wide.setdefault(step, {step_key: r[step_key]})[str(r[name_key])] = r[value_key]
    metrics = sorted({str(r[name_key]) for r in records})
    notes.append(
        f"a long table (one row per step and metric: {name_key!r}, {value_key!r}): {len(metrics)} metric(s) "
        f"({', '.join(metrics[:8])}) over {len(wide)} steps"
    )
    rows = sorted(wide.values(), key=lambda r: (to_float(r[step_key]) is None, to_float(r[step_key]) or 0.0))
    return rows, notes  # in step order: a long table groups its rows by metric, not by step


def drop_zeroed_repeats(records: list[dict]) -> tuple[list[dict], list[str]]:
    """Records that repeat a logged step with a completion length of 0 (no completion sampled) and every other
    metric the doctor knows exactly 0 (a loop's closing record written with zeros) measured nothing: dropped, so
    they do not replace the step's measured values (a repeated step's later values win). A reward of 0 beside a
    sampled length is a measurement (kept), and so is a record of zeros at a new step.

    >>> drop_zeroed_repeats([{"step": 1, "reward": -9.5, "completion_length": 90}, {"step": 1, "reward": 0,
    ...     "completion_length": 0, "elapsed": 3.2}])[0]
    [{'step': 1, 'reward': -9.5, 'completion_length': 90}]
    """
    if not records or not all(isinstance(r, dict) for r in records):
        return records, []
    steps = steps_of(records)
    if set(map(type, steps)) <= {float} and np.all(np.diff(np.asarray(steps, dtype=float)) > 0):
        return records, []  # no step repeats (nearly every log): one pass of numpy, nothing to drop
    seen: set[float] = set()
    kept = []
    for r, step in zip(records, steps):
        if step is not None and step in seen and _all_zero(r):
            continue
        if step is not None:
            seen.add(step)
        kept.append(r)
    dropped = len(records) - len(kept)
    note = f"{dropped} record(s) repeating a logged step with every metric 0 (nothing measured): dropped"
    return kept, [note] if dropped else []


def _all_zero(record: dict) -> bool:
    known = {names.canonical(str(k)): v for k, v in record.items() if names.is_metric(names.canonical(str(k)))}
    return names.LENGTH in known and all(to_float(v) == 0.0 for v in known.values())


def one_export_run(records: list[dict], source, run: str | None) -> tuple[list[dict], list[str]]:
    """The columns of one run of a tracker's CSV export (W&B: ``"<run> - train/reward"``, one set per run
    shown when it was exported). Several runs and no ``run`` chosen is an error naming them (their metrics
    would otherwise be read as one run's); ``run`` keeps its columns and those without a run prefix (the step).

    >>> one_export_run([{"Step": 1, "a - reward": 0.1, "b - reward": 0.2}], "x.csv", "b")[0]
    [{'Step': 1, 'b - reward': 0.2}]
    >>> one_export_run([{"step": 1, "train - loss": 0.1, "eval - acc": 0.2}], "x.csv", None)[1]
    []
    """
    if not records:
        return records, []
    pairs = [tuple(p.strip() for p in str(k).rsplit(" - ", 1)) for k in records[0] if " - " in str(k)]
    runs = sorted({prefix for prefix, _ in pairs})
    by_metric: dict[str, set[str]] = {}
    for prefix, metric in pairs:
        by_metric.setdefault(metric.removesuffix("__MIN").removesuffix("__MAX"), set()).add(prefix)
    if run is None:
        if len(runs) <= 1 or max(map(len, by_metric.values())) < 2:  # one run, or " - " inside metric names
            return records, []
        raise UserError(
            f"{source}: a tracker export with the metrics of {len(runs)} runs ({', '.join(runs[:12])}); the doctor "
            f"reads one run: pass {source}#RUN (e.g. {source}#{runs[0]}), or export one run's columns"
        )
    if run not in runs:
        raise UserError(f"{source}: no run {run!r} in this export (runs: {', '.join(runs[:12]) or 'none'})")

    def keep(key) -> bool:
        key = str(key)
        return " - " not in key or key.rsplit(" - ", 1)[0].strip() == run

    kept = [{k: v for k, v in r.items() if keep(k)} for r in records]
    logged = [r for r in kept if any(" - " in str(k) and v not in ("", None) for k, v in r.items())]
    return logged, [
        f"CSV export of {len(runs)} runs ({', '.join(runs[:12])}): read run {run!r} "
        f"({len(kept) - len(logged)} rows where it logged nothing dropped)"
    ]
