"""Checks of a run's rewards before training: each reward function is called once on sample input, as
TRL calls it, and must return one finite number (or None) per completion.

A reward that returns the wrong thing would stop training at its first step; here it is reported with its
name. A reward that raises on the sample is a warning (training counts such failures and scores None); one
that does not return within the time limit is a problem (training would hang on it).
"""

from __future__ import annotations

from agentgrpo.rewards.guard import RewardOutputError, check_output
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
