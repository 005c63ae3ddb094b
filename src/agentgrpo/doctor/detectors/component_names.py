"""Which reward components a run's names say are the task objective, and which its form (format, tags, length).

TRL recipes name the task reward ``correctness``/``accuracy``/``answer``/``pass``..., and format rewards
``format``/``xml``/``strict``/``soft``/``count``/``tag``; the hacking, stall and objective checks read the
objective from these names (by elimination when only the form is named).
"""

from __future__ import annotations

TASK_WORDS = ("correct", "accura", "answer", "pass", "solve", "success", "exact_match", "task")
FORMAT_WORDS = ("format", "xml", "strict", "soft", "count", "tag", "style", "length", "len_", "think")


def is_task(name: str) -> bool:
    """A component whose name says it scores the task (not the form).

    >>> is_task("correctness_reward_func"), is_task("match_format_exactly"), is_task("check_answer")
    (True, False, True)
    """
    low = name.lower()
    return any(w in low for w in TASK_WORDS) and not any(w in low for w in FORMAT_WORDS)


def is_form(name: str) -> bool:
    """A component whose name says it scores the form (format, tags, length, ...).

    >>> is_form("cleaning_json_format_reward"), is_form("cleaning_env_reward")
    (True, False)
    """
    return any(w in name.lower() for w in FORMAT_WORDS)


def objectives(comps: list[str]) -> tuple[list[str], str]:
    """The components taken as the objective, and how: named as the task, else (when some are named as
    form) the components not named as form; ([], "") when names say nothing.

    >>> objectives(["xmlcount", "correctness"]), objectives(["env_reward", "json_format"])
    ((['correctness'], 'its name'), (['env_reward'], 'elimination: the other components are named as form'))
    """
    tasks = [c for c in comps if is_task(c)]
    if tasks:
        return tasks, "its name"
    forms = [c for c in comps if is_form(c)]
    if forms and len(forms) < len(comps):
        return [c for c in comps if c not in forms], "elimination: the other components are named as form"
    return [], ""
