"""The doctor on the 23 labelled public GRPO runs (tests/data/real-runs/, provenance in its README).

    python benchmarks/real_runs.py                 # per-run table, development and validation halves
    python benchmarks/real_runs.py --markdown      # the same table as markdown (docs/doctor.md)
    python benchmarks/real_runs.py --strict        # exit 1 when an acceptance bound is missed

Labels are the README's reading of the curves, written here as data: the failure modes that name the
labelled failure (any one of them counts as a hit), the step where it began, or ``healthy`` / ``unclear``.

The split into a development half (curves looked at while designing detectors) and a validation half (only
scored) was made before any detector changed, by a rule that does not look at the doctor: runs are grouped
by label, each group is sorted by file name and shuffled with ``random.Random(SEED)``, and the first
ceil(n/2) of each group go to development.

Scoring. A labelled failure is *hit* when the report is a failure and one of the accepted modes is among its
failures; its onset error is |onset - labelled onset| / (last step - first step) for the earliest accepted
failure (bound 0.2). A run labelled healthy must have no failure. Unclear runs are not scored: the table
shows what the doctor said.
"""

from __future__ import annotations

import argparse
import math
import random
import sys
from dataclasses import dataclass
from pathlib import Path

REAL_RUNS = Path(__file__).resolve().parent.parent / "tests" / "data" / "real-runs"
SEED = 7
ONSET_BOUND = 0.2


@dataclass(frozen=True)
class Label:
    group: str  # what the README labels the run (the stratum of the split)
    modes: tuple[str, ...] = ()  # failure modes that name the labelled failure (empty: healthy / unclear)
    onset: int | None = None  # step where the labelled failure began


HEALTHY, UNCLEAR, UNREADABLE = "healthy", "unclear", "unreadable"

LABELS = {
    "nips_rho100_s44_saturated.json": Label("zero-variance", ("signal", "length", "stall"), 5),
    "nips_dapo_rho10_s42.json": Label(HEALTHY),
    "redteam_finance_zero_std.json": Label("stall", ("signal", "stall"), 1),
    "unsloth_llama31_gsm8k_healthy.json": Label(HEALTHY),
    "trl_dapo_vl3b_length_entropy_collapse.txt": Label("collapse", ("collapse",), 10),
    "cas_wordle4090_stall.json": Label("stall", ("stall",), 1),
    "unsloth_grammar_grpo_kl_blowup.txt": Label("kl", ("kl", "instability"), 10),
    "tonywang_gsm8k_baseline_healthy.json": Label(HEALTHY),
    "unsloth_llama32_3b_adv_healthy.ipynb": Label(HEALTHY),
    "countdown_custom_grpo_healthy.jsonl": Label(HEALTHY),
    "tinker_synth_tools_qwen3_8b_healthy.log": Label(HEALTHY),
    "tonywang_gsm8k_lr1e-6_stall.json": Label("stall", ("stall",), 1),
    "unsloth_phi4_14b_stall.ipynb": Label("stall", ("stall",), 1),
    "finqa_qwen7b_2400_stall.log": Label("stall", ("stall",), 1),
    "tinker_leetcode_llama1b_compile_hack.jsonl": Label("hacking", ("hacking",), 9),
    "unsloth_mistral7b_xmlcount_proxy.ipynb": Label("hacking", ("hacking",), 30),
    "gemma4_billing_kl_blowup.ipynb": Label("kl", ("kl", "instability"), 8),
    "unlearning_qwen15b_kl_nan_crash.log": Label("kl", ("kl", "instability"), 258),
    "govworkflow_len9_collapse.ipynb": Label("collapse", ("collapse", "signal"), 10),
    "panacea_tooluse_truncation.log": Label("length", ("length",), 1),
    "f1sim_zero_variance.json": Label("zero-variance", ("signal", "stall"), 10),
    "watchdog_qwen3_8b_truncated.txt": Label(UNCLEAR),
    "basile_llama31_8b_unclear_proxy_drift.ipynb": Label(UNCLEAR),
}


def split(labels: dict[str, Label] = LABELS, seed: int = SEED) -> dict[str, str]:
    """``{file: "dev" | "val"}``: per label group, a seeded shuffle of the sorted names; the first
    ceil(n/2) are development.

    >>> halves = split(); sorted(set(halves.values())), sum(v == "dev" for v in halves.values())
    (['dev', 'val'], 13)
    """
    groups: dict[str, list[str]] = {}
    for name in sorted(labels):
        groups.setdefault(labels[name].group, []).append(name)
    rng = random.Random(seed)
    halves = {}
    for group in sorted(groups):
        members = groups[group]
        rng.shuffle(members)
        cut = math.ceil(len(members) / 2)
        halves.update({m: "dev" if i < cut else "val" for i, m in enumerate(members)})
    return halves


HALVES = split()


@dataclass
class Row:
    name: str
    half: str
    label: Label
    verdict: str
    modes: list[str]
    warnings: list[str]
    onset: int | None
    onset_error: float | None
    headline: str

    @property
    def scored(self) -> bool:
        return self.label.group != UNCLEAR

    @property
    def hit(self) -> bool:
        return bool(set(self.modes) & set(self.label.modes))

    @property
    def right(self) -> bool | None:
        if self.verdict == UNREADABLE:
            return False
        if self.label.group == UNCLEAR:
            return None
        if self.label.group == HEALTHY:
            return not self.modes
        return self.hit and (self.onset_error is None or self.onset_error <= ONSET_BOUND)


def judge(name: str, root: Path = REAL_RUNS) -> Row:
    from agentgrpo.doctor.diagnose import diagnose
    from agentgrpo.doctor.readers import read_run
    from agentgrpo.errors import UserError

    label = LABELS[name]
    try:
        table = read_run(root / name).table
    except UserError as exc:  # an unreadable run is scored like any other: no failure named
        return Row(name, HALVES[name], label, UNREADABLE, [], [], None, None, str(exc).splitlines()[0][-160:])
    report = diagnose(table)
    modes = [f.detector for f in report.failures]
    hits = [f for f in report.failures if f.detector in label.modes]
    onset = hits[0].onset if hits else (report.failures[0].onset if report.failures else None)
    error = None
    if hits and label.onset is not None and onset is not None:
        error = abs(onset - label.onset) / max(report.last_step - report.first_step, 1)
    return Row(
        name,
        HALVES[name],
        label,
        report.verdict,
        modes,
        [f.detector for f in report.warnings],
        onset,
        error,
        report.headline,
    )


def summary(rows: list[Row]) -> str:
    failing = [r for r in rows if r.label.modes]
    healthy = [r for r in rows if r.label.group == HEALTHY]
    hits = sum(r.hit for r in failing)
    errors = [r.onset_error for r in failing if r.onset_error is not None]
    late = sum(e > ONSET_BOUND for e in errors)
    false = sum(bool(r.modes) for r in healthy)
    unread = sum(r.verdict == UNREADABLE for r in rows)
    recall = hits / len(failing) if failing else float("nan")
    worst = max(errors) if errors else float("nan")
    return (
        f"recall {hits}/{len(failing)} = {recall:.2f}; false failures on healthy {false}/{len(healthy)}; "
        f"onset error max {worst:.2f} (over {ONSET_BOUND}: {late}); unreadable {unread}/{len(rows)}"
    )


def _mark(row: Row) -> str:
    return {True: "right", False: "WRONG", None: "(unclear)"}[row.right]


def markdown(rows: list[Row]) -> str:
    lines = [
        "| file | half | label | verdict | failure modes (warnings) | onset (label) | onset error | right? |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        modes = ", ".join(r.modes) or "—"
        if r.warnings:
            modes += f" ({', '.join(r.warnings)})"
        onset = f"{r.onset if r.onset is not None else '—'} ({r.label.onset if r.label.onset is not None else '—'})"
        err = f"{r.onset_error:.2f}" if r.onset_error is not None else "—"
        lines.append(
            f"| {r.name} | {r.half} | {r.label.group} | {r.verdict} | {modes} | {onset} | {err} | {_mark(r)} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--markdown", action="store_true", help="print markdown tables")
    parser.add_argument("--strict", action="store_true", help="exit 1 unless every bound holds")
    parser.add_argument("--headlines", action="store_true", help="print each run's headline")
    args = parser.parse_args(argv)
    ok = True
    for half in ("dev", "val"):
        rows = [judge(n) for n in sorted(LABELS, key=lambda n: (LABELS[n].group, n)) if HALVES[n] == half]
        print(f"\n## {'development' if half == 'dev' else 'validation'} half\n")
        if args.markdown:
            print(markdown(rows))
        else:
            for r in rows:
                err = f"{r.onset_error:.2f}" if r.onset_error is not None else "-"
                print(
                    f"{_mark(r):9} {r.name:45} {r.label.group:13} {r.verdict:9} "
                    f"{','.join(r.modes) or '-':22} onset {r.onset} (label {r.label.onset}, err {err}) "
                    f"warn {','.join(r.warnings) or '-'}"
                )
                if args.headlines:
                    print(f"          {r.headline}")
        print("\n" + summary(rows))
        ok &= all(r.right is not False for r in rows)
    return 0 if ok or not args.strict else 1


if __name__ == "__main__":
    sys.exit(main())
