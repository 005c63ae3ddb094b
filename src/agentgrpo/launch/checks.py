"""Checks of a run plan's launch settings: the target, process count and job timeout (before anything
starts); the per-target checks that need the machine or the flavor are in `accelerate_cmd.check` and
`flavors.check_flavor` / `flavors.flavor_warnings`."""

from __future__ import annotations

from agentgrpo.errors import did_you_mean


def check_plan(plan) -> list[str]:
    from agentgrpo.launch import TARGETS
    from agentgrpo.launch.hf_jobs import timeout_seconds

    run, problems = plan.run, []
    if run.target not in TARGETS:
        problems.append(f"target: {run.target!r} is not a target. {did_you_mean(run.target, TARGETS)}")
    for name in ("tool_timeout", "step_timeout"):
        if getattr(run, name) < 0:
            problems.append(f"{name}: {getattr(run, name)} < 0; give seconds, or 0 to turn it off.")
    if run.num_processes < 1:
        problems.append(f"num_processes: {run.num_processes} < 1; use 1 or more.")
    if run.job_timeout is not None:
        try:
            timeout_seconds(run.job_timeout)
        except ValueError as exc:
            problems.append(str(exc))
    return problems
