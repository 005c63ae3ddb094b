"""Checks of a run's rewards before training: each reward function is called once on sample input, as
TRL calls it, and must return one finite number (or None) per completion.

A reward that returns the wrong thing would stop training at its first step; here it is reported with its
name. A reward that raises on the sample is a warning (training counts such failures and scores None); one
that does not return within the time limit is a problem (training would hang on it).
"""

from __future__ import annotations

from agentgrpo.rewards.guard import RewardOutputError, check_output
from agentgrpo.rewards.replay import replay_environments
from agentgrpo.timeouts import ToolTimeout, call_with_timeout


def check_reward_calls(rewards, rows: list[dict], completions: list, *, environments: list | None = None,
                       timeout: float = 60.0, warnings: list[str] | None = None) -> list[str]:
    """Call every function of ``rewards`` (a `RewardSet`) once on ``completions`` for ``rows``; problems.

    ``rows`` give the dataset columns (everything but ``prompt``) and the prompts, as TRL passes them.
    """
    warnings = [] if warnings is None else warnings
    kwargs = {"prompts": [r.get("prompt") for r in rows], "completion_ids": [[] for _ in rows],
              "trainer_state": None, "log_metric": lambda *a, **k: None, "log_extra": lambda *a, **k: None}
    columns = {k: [r.get(k) for r in rows] for k in rows[0] if k != "prompt"} if rows else {}
    if environments is not None:
        kwargs["environments"] = environments
    problems = []
    for guarded in rewards.funcs:
        name, func = guarded.__name__, guarded.func
        call = {"completions": completions, **columns, **kwargs}
        if not _binds(func, call):
            continue  # a signature TRL cannot call: reported by the signature check
        try:
            out = call_with_timeout(lambda f=func, c=call: f(**c), timeout or None, f"reward {name}")
            check_output(name, out, len(completions))
        except ToolTimeout:
            problems.append(f"rewards: {name!r} did not return within {timeout:g} s on a sample completion "
                            "(tool_timeout); it would hang training. Make it return, or raise tool_timeout.")
        except RewardOutputError as exc:
            problems.append(f"rewards: {exc} (called once on a sample completion by validate).")
        except Exception as exc:  # training counts it and scores None: doubtful, not fatal
            warnings.append(f"reward {name!r} raised {type(exc).__name__}: {exc} on a sample completion "
                            "(training scores such samples None and counts them in rewards/<name>/errors).")
    return problems


def _binds(func, call: dict) -> bool:
    import inspect

    try:
        inspect.signature(func).bind(**call)
    except TypeError:
        return False
    except ValueError:  # no signature to read (a builtin): let the call say
        return True
    return True


def sample_replies(task, row: dict) -> list:
    """Replies to ``row`` that any reward able to teach should not all score the same: the gold completion
    (when the task has one), an empty reply, a number, and each of the row's other columns as the reply."""
    replies = []
    if task.gold_completion is not None:
        try:
            replies.append(task.gold_completion(row))
        except Exception:  # noqa: BLE001 - no gold for this row: the other replies remain
            pass
    replies += [[{"role": "assistant", "content": text}] for text in ("", "42")]
    replies += [[{"role": "assistant", "content": str(v)}] for k, v in row.items()
                if k != "prompt" and isinstance(v, str | int | float) and not isinstance(v, bool)]
    return replies


def check_rewards_vary(rewards, task, rows: list[dict], mode: str, *, decider: str | None = None,
                       timeout: float = 60.0, warnings: list[str] | None = None) -> list[str]:
    """Under ``dynamic_sampling: filter | refill`` a group is kept only when its rewards differ: if no trained
    reward (or ``decider``, the dynamic_sampling_reward) gives two `sample_replies` of one prompt different
    values, on any sample row, every group will be dropped and the run stops at its first step. A problem when
    the replies include the task's gold completion (a correct reply scored like an empty one); a warning
    otherwise (the sample cannot show a correct reply)."""

    warnings = [] if warnings is None else warnings
    items = [(i, "", reply) for i, row in enumerate(rows) for reply in sample_replies(task, row)]
    if not items:
        return []
    repeated = [rows[i] for i, _, _ in items]
    kwargs = {"prompts": [r.get("prompt") for r in repeated], "completion_ids": [[] for _ in items],
              "trainer_state": None, "log_metric": lambda *a, **k: None, "log_extra": lambda *a, **k: None,
              **{k: [r.get(k) for r in repeated] for k in rows[0] if k != "prompt"}}
    if task.environment_factory is not None:
        envs = replay_environments(task, rows, items, timeout)
        if envs is None:
            return []  # an environment that cannot start here: the call checks reported it
        kwargs["environments"] = envs
    names = [decider] if decider else [n for n, w in zip(rewards.names, rewards.weights, strict=True) if w]
    completions = [reply for _, _, reply in items]
    for guarded in rewards.funcs:
        if guarded.__name__ not in names:
            continue
        call = {"completions": completions, **kwargs}
        if not _binds(guarded.func, call):
            return []
        try:
            out = call_with_timeout(lambda f=guarded.func, c=call: f(**c), timeout or None, guarded.__name__)
        except Exception:  # noqa: BLE001 - a reward that fails here was reported by the call checks
            return []
        values: dict[int, set] = {}
        for (i, _, _), v in zip(items, out or [], strict=False):
            if isinstance(v, int | float) and v == v:
                values.setdefault(i, set()).add(round(float(v), 9))
        if any(len(v) > 1 for v in values.values()):
            return []  # this reward tells replies apart: groups can differ
    shown = ", ".join(repr(n) for n in names)
    which = "dynamic_sampling_reward" if decider else "trained rewards"
    text = (f"dynamic_sampling: {mode} keeps only groups whose rewards differ, but the {which} ({shown}) gave "
            f"every sample reply of each of {len(rows)} prompts the same value (the gold completion, an empty "
            "reply, '42' and each column's value as the reply), so every group would be dropped and the run "
            "would stop at its first step with no learning signal. Use a reward that tells completions apart, "
            "or set dynamic_sampling: off.")
    if task.gold_completion is None:
        warnings.append(text + " (a warning: this task has no gold completion to show a correct reply)")
        return []
    return [text]
