"""Compare two GRPO runs: both diagnoses, overlaid curves, and paired evaluation tests.

A and B are anything `agentgrpo doctor` reads (run directories, trainer_state.json, metrics.jsonl, CSV,
console logs). Where both are run directories with an eval.json holding the same stage and mode (e.g.
after / greedy), the per-problem results on the problems both evaluated are compared with McNemar's exact
test and a paired-bootstrap 95% interval for the difference in success rate (B − A).

Prints the comparison and writes compare.html (self-contained, inline SVG: A solid, B dashed, onsets
marked) into --out (default: ./compare-<A>-vs-<B>). Exit status 0, or 2 for bad input.

  agentgrpo compare runs/baseline runs/lower-lr
  agentgrpo compare runs/a runs/b --json --no-report
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

HELP = "compare two runs: diagnoses, overlaid curves, paired test on shared eval problems"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("a", help="first run (A)")
    parser.add_argument("b", help="second run (B)")
    parser.add_argument("--out", help="folder for compare.html (default ./compare-<A>-vs-<B>)")
    parser.add_argument("--json", action="store_true", help="print the comparison as JSON")
    parser.add_argument("--no-report", action="store_true", help="print only; write no files")


def run(args) -> int:
    from agentgrpo.commands.doctor import emit
    from agentgrpo.doctor.diagnose import diagnose
    from agentgrpo.doctor.readers import read_run
    from agentgrpo.errors import UserError
    from agentgrpo.report import compare

    a, b = read_run(args.a), read_run(args.b)
    report_a, report_b = diagnose(a.table), diagnose(b.table)
    rows = compare.eval_rows(a, b)
    path = None
    if not args.no_report:
        out = Path(args.out) if args.out else Path.cwd() / f"compare-{a.name}-vs-{b.name}"
        try:
            path = compare.write(a, b, report_a, report_b, rows, out)
        except OSError as exc:
            raise UserError(
                f"cannot write the comparison to {out}: {exc.strerror or exc}; pass --out DIR"
            ) from exc
    if args.json:
        payload = {
            "a": {"source": str(a.source), **report_a.to_dict()},
            "b": {"source": str(b.source), **report_b.to_dict()},
            "eval": [
                {k: v for k, v in r.items() if k != "paired"}
                | {"paired": vars(r["paired"]) if r["paired"] else None}
                for r in rows
            ],
            "report": str(path) if path else None,
        }
        emit(json.dumps(payload, indent=2, default=str))
        return 0
    lines = [
        f"{tag}: {r.source} ({rep.steps} steps)\n   {rep.headline}"
        for tag, r, rep in (("A", a, report_a), ("B", b, report_b))
    ]
    lines.append(
        "\nevaluation:"
        if rows
        else "\nevaluation: none shared (needs eval.json with the same stage/mode in both)"
    )
    lines += [f"  {r['stage']}/{r['mode']}: {r['text']}" for r in rows]
    if path:
        lines.append(f"\nreport: {path}")
    emit("\n".join(lines))
    return 0
