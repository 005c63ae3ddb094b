"""The doctor on the 50 labelled public GRPO runs of tests/data/real-runs/ (provenance in its README, labels in
its labels.json), scored per half of a fixed development / validation split.

    python benchmarks/real_runs.py                 # per-run table, development and validation halves
    python benchmarks/real_runs.py --markdown      # the same tables as markdown (docs/doctor.md)
    python benchmarks/real_runs.py --strict        # exit 1 when an acceptance bound is missed (either half)

Any other labelled corpus (same labels format) is scored with ``agentgrpo doctor --score DIR --labels FILE``;
this script adds the split.

The split was made before any detector changed for issue 20, by a rule that does not look at the doctor:
runs are grouped by their label's stratum (unclear, healthy, or the first accepted failure mode), each group
is sorted by file name and shuffled with ``random.Random(SEED)``, and the first ceil(n/2) of each group go to
development (curves looked at while designing detectors); the rest are the validation half (only scored).
Scoring rules: ``agentgrpo.doctor.score``.
"""

from __future__ import annotations

import argparse
import math
import random
import sys
from pathlib import Path

from agentgrpo.doctor.score import Label, load_labels, score_run, summary, table, totals

REAL_RUNS = Path(__file__).resolve().parent.parent / "tests" / "data" / "real-runs"
LABELS_FILE = REAL_RUNS / "labels.json"
SEED = 7
LABELS: dict[str, Label] = load_labels(LABELS_FILE)


def split(labels: dict[str, Label] = LABELS, seed: int = SEED) -> dict[str, str]:
    """``{file: "dev" | "val"}``: per stratum, a seeded shuffle of the sorted names; the first ceil(n/2) are
    development."""
    groups: dict[str, list[str]] = {}
    for name in sorted(labels):
        groups.setdefault(labels[name].stratum, []).append(name)
    rng = random.Random(seed)
    halves = {}
    for group in sorted(groups):
        members = groups[group]
        rng.shuffle(members)
        cut = math.ceil(len(members) / 2)
        halves.update({m: "dev" if i < cut else "val" for i, m in enumerate(members)})
    return halves


HALVES = split()


def judge(name: str):
    """The scored report on one run of the corpus."""
    return score_run(REAL_RUNS / name, LABELS[name])


def main(argv: list[str] | None = None) -> int:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from benchmarks import provenance

    env = provenance.environment()  # recorded with the results: versions, CPU, threads, commit
    print(provenance.line(env), flush=True)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--markdown", action="store_true", help="print markdown tables")
    parser.add_argument("--strict", action="store_true", help="exit 1 unless every bound holds in both halves")
    parser.add_argument("--headlines", action="store_true", help="print each run's headline")
    parser.add_argument("--half", choices=["dev", "val", "both"], default="both")
    args = parser.parse_args(argv)
    missed = []
    for half in ("dev", "val"):
        if args.half not in (half, "both"):
            continue
        names = sorted((n for n in LABELS if HALVES[n] == half), key=lambda n: (LABELS[n].stratum, n))
        rows = [judge(n) for n in names]
        print(f"\n## {'development' if half == 'dev' else 'validation'} half ({len(rows)} runs)\n")
        print(table(rows, markdown=args.markdown))
        if args.headlines:
            for r in rows:
                print(f"{r.label.file}: {r.headline}")
        t = totals(rows)
        print("\n" + summary(t))
        missed += [f"{half}: {m}" for m in t.missed_bounds()]
    if missed:
        print("\nmissed: " + "; ".join(missed))
    return 1 if missed and args.strict else 0


if __name__ == "__main__":
    sys.exit(main())
