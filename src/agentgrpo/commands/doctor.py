"""Diagnose a GRPO run from its logs: name failure modes, when they began, the evidence, and a fix.

PATH is a run directory (metrics.jsonl, or trainer_state.json / checkpoint-*/trainer_state.json, plus
config.yaml for shadow rewards; or a folder of TensorBoard event files), or one log file: our metrics.jsonl, a
TRL trainer_state.json of any TRL version, a JSON array of step records, a CSV export, a Jupyter notebook
(.ipynb: the training table or printed dicts in its outputs), console text with printed metric dicts or step
lines, a TensorBoard event file, or a trackio run (trackio://PROJECT/RUN, or PROJECT.db[#RUN]). A log cut
short (a run killed mid-write) is read up to its last complete record. Other trainers' names (Tinker, verl,
custom loops) are mapped to TRL's; a quantity under another name (kl_avg) is found by its name and values
and the summary says which column it read; --metric kl=KEY (or --map) names the log's key for a metric
(repeatable).

Detectors: kl (KL blow-up), collapse, hacking (needs a shadow reward for a failure verdict), length
(length gaming, truncation), tools (tool misuse), stall, convergence (converged / saturated). docs/doctor.md
lists each one's rule, thresholds and onset definition.

Prints a summary and writes report.html (self-contained: inline SVG charts with the onsets marked, opens
offline) into --out (default: <run dir>/doctor, or doctor-<file name> beside a log file, or in the current
directory when that is read-only). --png also writes one PNG per chart (slower: matplotlib).

Exit status: 0 healthy, converged, saturated or warnings only; 1 when a failure is diagnosed;
2 for bad input (missing path, no readable record, no reward metric).

  agentgrpo doctor runs/my-run
  agentgrpo doctor outputs/checkpoint-500/trainer_state.json --out /tmp/dr --png
  agentgrpo doctor wandb_export.csv --json
  agentgrpo doctor train.ipynb
  agentgrpo doctor trackio://my-project/run-1
  agentgrpo doctor my_loop.jsonl --map reward=score --map completions/mean_length=gen_tokens
  agentgrpo doctor my_loop.jsonl --metric kl=kl_avg
  agentgrpo doctor --score tests/data/real-runs --labels tests/data/real-runs/labels.json --strict
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

HELP = "diagnose a run's curves: hacking, collapse, length gaming, KL blow-up, stall, tool misuse"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "path",
        nargs="?",
        help="run directory, trainer_state.json, metrics.jsonl, CSV, .ipynb, console log, TensorBoard "
        "event file/folder, or trackio://PROJECT/RUN",
    )
    parser.add_argument(
        "--map",
        "--metric",
        dest="map",
        action="append",
        default=[],
        metavar="NAME=KEY",
        help="read the log's KEY as the metric NAME (reward, reward_std, kl, entropy, completions/mean_length, "
        "...), e.g. --metric kl=kl_avg; overrides the names the doctor finds by itself; repeatable",
    )
    parser.add_argument("--out", help="folder for report.html (and PNGs); default beside the run")
    parser.add_argument("--json", action="store_true", help="print the diagnosis as JSON instead of text")
    parser.add_argument("--png", action="store_true", help="also write one PNG per chart (matplotlib)")
    parser.add_argument("--no-report", action="store_true", help="print only; write no files")
    parser.add_argument(
        "--score",
        metavar="DIR",
        help="score the doctor on a labelled corpus: every file of DIR named in --labels (prints per run and "
        "totals: recall per mode, failures on healthy runs, onset errors, unreadable files)",
    )
    parser.add_argument("--labels", metavar="FILE", help="labels file for --score (default: DIR/labels.json)")
    parser.add_argument("--markdown", action="store_true", help="with --score: print the table as markdown")
    parser.add_argument(
        "--strict", action="store_true", help="with --score: exit 1 when an acceptance bound is missed"
    )


def default_out(path: Path) -> Path:
    """Where the report goes when --out is not given: ``<run dir>/doctor``, or ``doctor-<file name>`` beside a
    log file (the whole name: trunc.json and trunc.jsonl get distinct folders)."""
    target = path / "doctor" if path.is_dir() else path.parent / f"doctor-{path.name}"
    base = target.parent
    return target if os.access(base, os.W_OK) else Path.cwd() / target.name


def run(args) -> int:
    from agentgrpo.errors import UserError

    if getattr(args, "score", None):
        return score(args)
    if not args.path:
        raise UserError("agentgrpo doctor: give a PATH to diagnose (or --score DIR --labels FILE)")
    from agentgrpo.doctor.readers.read import parse_mapping
    from agentgrpo.doctor.summary import text
    from agentgrpo.heal import history
    from agentgrpo.heal.judge import diagnose_healed, read_healed
    from agentgrpo.report.heal import completions_per_step

    source = read_healed(args.path, parse_mapping(getattr(args, "map", None) or []))  # a healed run: its lineage
    judged, report = diagnose_healed(source)  # a healed run: its final segment; the curves show the lineage
    written = [] if args.no_report else write_report(source, report, args.out, args.png)
    heals = history.heals(source.source) if Path(source.source).is_dir() else []
    if args.json:
        payload = report.to_dict() | {
            "source": str(source.source),
            "format": source.fmt,
            "notes": judged.notes,
            "files": [str(p) for p in written],
        }
        if heals:
            payload["heals"] = [{k: v for k, v in h.items() if k != "config"} for h in heals]
            payload["segments"] = history.segment_lines(source.source, completions_per_step(source.source))
        emit(json.dumps(payload, indent=2, default=str))
    else:
        lines = [text(judged, report)]
        if heals:
            lines += ["", "heal history (heal.jsonl):", *(f"  {line}" for line in history.lines(source.source)),
                      "segments:", *(f"  {line}" for line in history.segment_lines(
                          source.source, completions_per_step(source.source)))]
        for path in written[:1]:
            lines.append(f"\nreport: {path}" + (f" (+ {len(written) - 1} PNGs)" if len(written) > 1 else ""))
        emit("\n".join(lines))
    return report.exit_code


def score(args) -> int:
    """``--score DIR``: the doctor on every labelled run of DIR, per run and in total."""
    from agentgrpo.doctor import score as scoring

    labels = scoring.load_labels(args.labels or Path(args.score) / "labels.json")
    rows = scoring.score_dir(args.score, labels)
    totals = scoring.totals(rows)
    missed = totals.missed_bounds()
    lines = [scoring.table(rows, markdown=args.markdown), "", scoring.summary(totals)]
    lines.append("bounds: " + ("all hold" if not missed else "MISSED: " + "; ".join(missed)))
    emit("\n".join(lines))
    return 1 if missed and args.strict else 0


def emit(output: str) -> None:
    """Print the command's output; a reader that closes the pipe early (``| head``) is not an error."""
    try:
        print(output, flush=True)
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def write_report(source, report, out: str | None, png: bool) -> list[Path]:
    """Write report.html (and PNGs); returns the paths written."""
    from agentgrpo.errors import UserError
    from agentgrpo.report import charts, html

    if out:
        out_dir = Path(out)
    elif source.fmt == "trackio":  # not inside trackio's own store
        out_dir = Path.cwd() / f"doctor-{source.source.stem}"
    else:
        out_dir = default_out(source.source)
    panels = charts.build(source.table, report.findings)
    from agentgrpo.report.heal import overlay

    overlay(panels, source.source)  # a healed run: rollbacks marked, abandoned segments drawn
    try:
        paths = [html.write(source, report, out_dir, panels)]
        if png:
            from agentgrpo.report import png as pngs

            paths += pngs.write(panels, out_dir / "png")
    except OSError as exc:
        raise UserError(f"cannot write the report to {out_dir}: {exc.strerror or exc}; pass --out DIR") from exc
    return paths
