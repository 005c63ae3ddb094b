"""The doctor's labelled validation suite: does it name each planted failure, near where it began, and
raise no failure on the healthy runs?

    python benchmarks/doctor_validation.py                      # synthetic suite (about a minute)
    python benchmarks/doctor_validation.py --runs runs/validation --no-synthetic   # real tiny-model runs

Synthetic part: `benchmarks/doctor_synthetic.py` (simulated GRPO groups, one planted failure each, several run
lengths, seeds and onset positions), each written as a run directory and read back through the readers.
Real part: run directories made by ``benchmarks/make_validation_runs.py``, labelled in ``<runs>/labels.json``
as ``{name: {"label": "healthy" | "<failure mode>", "onset": step}}``.

Scoring. A case is *detected* when the expected detector reports a failure (for the few signs that are only
ever warnings, e.g. a shortcut between reward components without a shadow, a warning). Precision and recall
count detector verdicts: every failure named on a case that was not planted there is a false positive
(including any failure on a healthy or converged run). The onset error is |found - planted| as a fraction
of the run's length; the acceptance bound is 0.2. ``--strict`` exits 1 on any miss, false positive or
onset error over 0.2.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from agentgrpo.doctor import detectors
from agentgrpo.doctor.diagnose import diagnose
from agentgrpo.doctor.finding import FAILURE, WARNING
from agentgrpo.doctor.readers import read_run

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from benchmarks import doctor_synthetic as synthetic  # noqa: E402

ONSET_BOUND = 0.2
HEALTHY_LABELS = {"healthy", "converged", "saturated", "none", ""}


@dataclass
class Outcome:
    name: str
    group: str
    expect: str | None
    found: list[str]
    hit: bool
    extra: list[str]
    onset_error: float | None
    headline: str

    @property
    def ok(self) -> bool:
        onset_ok = self.onset_error is None or self.onset_error <= ONSET_BOUND
        return (self.hit or self.expect is None) and not self.extra and onset_ok


def judge(name: str, group: str, run_path: Path, expect: str | None, onset: int | None, level: str) -> Outcome:
    report = diagnose(read_run(run_path).table)
    failures = {f.detector: f for f in report.failures}
    flagged = {f.detector: f for f in report.findings if f.status in (FAILURE, WARNING)}
    hit_finding = None
    if expect is not None:
        hit_finding = failures.get(expect) or (flagged.get(expect) if level == WARNING else None)
    error = None
    if hit_finding is not None and onset is not None and hit_finding.onset is not None:
        error = abs(hit_finding.onset - onset) / max(report.last_step - report.first_step, 1)
    extra = sorted(set(failures) - {expect})
    return Outcome(name, group, expect, sorted(failures), hit_finding is not None, extra, error, report.headline)


def synthetic_outcomes(out: Path, lengths, seeds, onsets) -> list[Outcome]:
    results = []
    for case in synthetic.cases(lengths=lengths, seeds=seeds, onsets=onsets):
        group = case.name.split("-n")[0]
        results.append(judge(case.name, group, case.write(out), case.expect, case.onset, case.level))
    return results


def real_outcomes(runs: Path) -> list[Outcome]:
    """Real tiny-model runs: run directories under ``runs`` labelled by ``runs/labels.json``."""
    labels_path = runs / "labels.json"
    if not labels_path.is_file():
        sys.exit(f"{labels_path} not found: make the runs with benchmarks/make_validation_runs.py --out {runs}")
    results = []
    for name, label in sorted(json.loads(labels_path.read_text()).items()):
        kind = str(label.get("label", "")).lower()
        expect = None if kind in HEALTHY_LABELS else detectors.resolve(kind)
        run_dir = runs / name
        if not run_dir.is_dir():
            print(f"  (skipping {name}: {run_dir} missing)")
            continue
        results.append(judge(name, f"real:{kind or 'healthy'}", run_dir, expect, label.get("onset"), FAILURE))
    return results


def score(results: list[Outcome]) -> dict:
    tp = sum(r.hit for r in results)
    fn = sum(r.expect is not None and not r.hit for r in results)
    fp = sum(len(r.extra) for r in results)
    errors = [r.onset_error for r in results if r.onset_error is not None]
    return {
        "cases": len(results),
        "precision": tp / (tp + fp) if tp + fp else 1.0,
        "recall": tp / (tp + fn) if tp + fn else 1.0,
        "tp": tp,
        "fp": fp,
        "fn": fn,
        "onset_error_mean": sum(errors) / len(errors) if errors else 0.0,
        "onset_error_max": max(errors) if errors else 0.0,
        "onset_within_bound": sum(e <= ONSET_BOUND for e in errors) / len(errors) if errors else 1.0,
        "healthy_with_failure": sum(r.expect is None and bool(r.extra) for r in results),
        "healthy_cases": sum(r.expect is None for r in results),
    }


def print_table(title: str, results: list[Outcome], verbose: bool) -> dict:
    print(f"\n== {title}")
    groups = defaultdict(list)
    for r in results:
        groups[r.group].append(r)
    print(f"{'scenario':<26} {'cases':>5} {'detected':>9} {'extra':>6} {'onset err mean/max':>19}")
    for group, rs in groups.items():
        errs = [r.onset_error for r in rs if r.onset_error is not None]
        det = "-" if rs[0].expect is None else f"{sum(r.hit for r in rs)}/{len(rs)}"
        err = f"{sum(errs) / len(errs):.3f}/{max(errs):.3f}" if errs else "-"
        print(f"{group:<26} {len(rs):>5} {det:>9} {sum(len(r.extra) for r in rs):>6} {err:>19}")
    for r in results:
        if verbose or not r.ok:
            flag = "ok  " if r.ok else "FAIL"
            err = f"{r.onset_error:.3f}" if r.onset_error is not None else "-"
            print(
                f"  [{flag}] {r.name}: expect {r.expect or 'no failure'}, failures {r.found or '-'}, "
                f"onset error {err} | {r.headline}"
            )
    s = score(results)
    print(
        f"precision {s['precision']:.3f}  recall {s['recall']:.3f}  "
        f"(tp {s['tp']}, fp {s['fp']}, fn {s['fn']}); "
        f"onset error mean {s['onset_error_mean']:.3f}, max {s['onset_error_max']:.3f}, "
        f"within {ONSET_BOUND:.0%}: {s['onset_within_bound']:.1%}; "
        f"healthy/converged runs with a failure: {s['healthy_with_failure']}/{s['healthy_cases']}"
    )
    return s


def main() -> int:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from benchmarks import provenance

    env = provenance.environment()  # recorded with the results: versions, CPU, threads, commit
    print(provenance.line(env), flush=True)
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=Path, help="folder of labelled real runs (labels.json inside)")
    parser.add_argument("--no-synthetic", action="store_true", help="skip the synthetic suite")
    parser.add_argument("--lengths", default="60,200,1000", help="synthetic run lengths (logged steps)")
    parser.add_argument("--seeds", default="0,1,2", help="synthetic seeds")
    parser.add_argument("--onsets", default="0.3,0.55", help="planted onsets, as fractions of the run")
    parser.add_argument("--verbose", action="store_true", help="one line per case, not only the misses")
    parser.add_argument("--json", type=Path, help="also write the scores and every case to this file")
    parser.add_argument("--strict", action="store_true", help="exit 1 on any miss, false positive or late onset")
    args = parser.parse_args()
    started = time.perf_counter()
    everything, scores = [], {}
    if not args.no_synthetic:
        with tempfile.TemporaryDirectory() as tmp:
            results = synthetic_outcomes(
                Path(tmp),
                tuple(int(v) for v in args.lengths.split(",")),
                tuple(int(v) for v in args.seeds.split(",")),
                tuple(float(v) for v in args.onsets.split(",")),
            )
        scores["synthetic"] = print_table("synthetic suite", results, args.verbose)
        everything += results
    # ---- the real tiny-model runs (made by benchmarks/make_validation_runs.py) ---------------------------
    if args.runs is not None:
        results = real_outcomes(args.runs)
        scores["real"] = print_table(f"real tiny-model runs in {args.runs}", results, True)
        everything += results
    if len(scores) > 1:
        scores["all"] = print_table("all cases", everything, False)
    print(f"\n{len(everything)} cases in {time.perf_counter() - started:.1f} s")
    if args.json:
        provenance.write_json(args.json, {"scores": scores, "cases": [vars(r) for r in everything]}, env)
    return 1 if args.strict and not all(r.ok for r in everything) else 0


if __name__ == "__main__":
    sys.exit(main())
