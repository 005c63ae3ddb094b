"""`agentgrpo validate TASK` / `--all`: a task's own checks, with no config and no model.

For each task: the gold completion earns the maximum of every reward on ``--eval_size`` held-out rows
(`Task.validate`), the reward audit passes (`agentgrpo audit TASK`), and the task's report lines. A task whose
data needs the Hub is reported as unavailable offline (its message names the offline task) and, with
``--all``, does not fail the run.
"""

from __future__ import annotations

import time


def check_task(name: str, n: int) -> dict:
    """{"task", "status": ok | fail | unavailable, "lines": [...]} for one task."""
    from agentgrpo.errors import UserError
    from agentgrpo.preflight.audit import audit
    from agentgrpo.preflight.target import resolve
    from agentgrpo.tasks import get_task

    start = time.perf_counter()
    try:
        task = get_task(name)
        problems = task.validate(n)
        report = audit(resolve(name), n_prompts=min(n, 100), progress=False)
        extra = task.report() if task.report else []
    except UserError as exc:
        return {"task": name, "status": "unavailable", "lines": [str(exc)]}
    lines = [f"verifier: {'OK' if not problems else 'FAIL'} (the gold completion on {n} held-out rows)"]
    lines += [f"  - {p}" for p in problems]
    ran = sum(p["ran"] for p in report["probes"])
    lines.append(f"reward audit: {report['verdict'].upper()} ({ran} probes on {report['prompts']} prompts"
                 + (f"; exploits: {', '.join(e['probe'] for e in report['exploits'])}" if report["exploits"] else "")
                 + (f"; gold: {'; '.join(report['gold']['problems'])}" if report["gold"]["problems"] else "") + ")")
    lines += extra
    ok = not problems and report["ok"]
    lines.append(f"({time.perf_counter() - start:.1f} s)")
    return {"task": f"{task.name} v{task.version}", "status": "ok" if ok else "fail", "lines": lines}


def validate_tasks(args) -> int:
    from agentgrpo.errors import UserError
    from agentgrpo.tasks import task_names

    if args.task is not None and args.all:
        raise UserError("validate: give a TASK or --all, not both")
    if args.n < 1:
        raise UserError(f"eval_size: {args.n} < 1; score the gold on at least one row")
    names = task_names() if args.all else [args.task]
    results = []
    for name in names:
        result = check_task(name, args.n)
        if not args.all and result["status"] == "unavailable":
            raise UserError(result["lines"][0])
        results.append(result)
        print(f"{result['task']}: {result['status'].upper()}")
        for line in result["lines"]:
            print(f"  {line}")
    failed = [r["task"] for r in results if r["status"] == "fail"]
    skipped = [r["task"] for r in results if r["status"] == "unavailable"]
    if args.all:
        print(f"{len(results) - len(failed) - len(skipped)} tasks OK, {len(failed)} failed"
              + (f" ({', '.join(failed)})" if failed else "")
              + (f", {len(skipped)} unavailable here ({', '.join(skipped)})" if skipped else ""))
    return 2 if failed else 0
