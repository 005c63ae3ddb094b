"""Follow the Hugging Face Jobs that `agentgrpo launch --target hf-jobs` submitted.

    agentgrpo jobs status ID         # stage, flavor, URL
    agentgrpo jobs logs ID [--follow]
    agentgrpo jobs doctor ID         # the doctor on the job's logged metrics, while it runs or after
    agentgrpo jobs cancel ID
    agentgrpo jobs hardware          # valid flavors with their hourly price

`doctor` fetches the job's logs (the metric dicts TRL prints each step) and diagnoses them like any console
log; after the run, `agentgrpo doctor` on the pushed `metrics.jsonl` reads the full record.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

HELP = "follow Hugging Face Jobs: status, logs, doctor (diagnose while it runs), cancel, hardware"
ACTIONS = ("status", "logs", "doctor", "cancel", "hardware")


def add_arguments(parser) -> None:
    parser.add_argument("action", choices=ACTIONS, help="what to do with the job")
    parser.add_argument("job_id", nargs="?", help="the job id `agentgrpo launch` printed (not for hardware)")
    parser.add_argument("--namespace", help="the job's user or organisation (default: yours)")
    parser.add_argument("--follow", action="store_true", help="logs: stream until the job ends")


def run(args) -> int:
    from agentgrpo.errors import UserError
    from agentgrpo.launch import hub_io

    if args.action == "hardware":
        return _hardware(hub_io)
    if not args.job_id:
        raise UserError(f"jobs {args.action}: give the job id (as `agentgrpo launch` printed it)")
    if args.action == "status":
        job = hub_io.inspect(args.job_id, namespace=args.namespace)
        status = getattr(job, "status", None)
        print(f"{args.job_id}: {getattr(status, 'stage', status)}"
              f"{' - ' + status.message if getattr(status, 'message', None) else ''}")
        print(f"flavor: {getattr(job, 'flavor', '?')}  url: {getattr(job, 'url', '?')}")
        return 0
    if args.action == "cancel":
        hub_io.cancel(args.job_id, namespace=args.namespace)
        print(f"{args.job_id}: cancel requested")
        return 0
    lines = hub_io.logs(args.job_id, namespace=args.namespace, follow=args.follow and args.action == "logs")
    if args.action == "logs":
        for line in lines:
            print(line, flush=True)
        return 0
    return _doctor(args.job_id, list(lines))


def _doctor(job_id: str, lines: list[str]) -> int:
    """`agentgrpo doctor` on the job's log (the command itself: a command does not import the CLI above it)."""
    import argparse
    import sys

    from agentgrpo.commands import doctor
    from agentgrpo.errors import UserError

    folder = Path(tempfile.mkdtemp(prefix="agentgrpo-job-"))
    log = folder / f"{job_id}.log"
    log.write_text("\n".join(lines) + "\n")
    print(f"[agentgrpo] {len(lines)} log lines of job {job_id} -> {log}")
    parser = argparse.ArgumentParser(prog="agentgrpo doctor")
    doctor.add_arguments(parser)
    args = parser.parse_args([str(log), "--out", str(folder / "doctor")])
    try:
        return int(doctor.run(args) or 0)
    except UserError as exc:
        print(f"agentgrpo doctor: error: {exc}", file=sys.stderr)
        return 2


def _hardware(hub_io) -> int:
    from agentgrpo.launch.flavors import load_flavors

    try:
        hf = hub_io.api() if hub_io.require_token() else None
    except Exception:  # noqa: BLE001 - no token: the cached or built-in table
        hf = None
    table, source = load_flavors(hf)
    print(f"flavors from {source}:")
    for f in sorted(table.values(), key=lambda f: (f.gpus, f.usd_per_hour or 0, f.name)):
        price = f"${f.usd_per_hour:.2f}/h" if f.usd_per_hour is not None else "price unknown offline"
        print(f"  {f.name:<18} {f.gpus} GPU  {price}")
    return 0
