"""Does the doctor's verdict on a labelled run survive changes that do not change the run?

Each labelled run of the corpora is read once; its table is then rewritten in ways a different logger or
config would have written the same training:

- ``every k``: logged every k steps (TRL's ``logging_steps=k`` averages each window; the step is its last);
- ``steps x k``: the same rows numbered in optimizer steps of k (``global_step`` 10, 20, ...);
- ``scale a``: the reward, its components and their spreads in other units (a reward out of 10, not 1);
- ``no X`` (healthy runs only): one optional metric not logged. Knowing less must not create a failure;
- ``cut at 75%`` (failures labelled with an onset in the first half only): the run stopped early, the failure
  already manifest.

A labelled failure that was named must stay named (its onset scales with the steps); a healthy run that was
clean must stay clean. Runs the doctor already gets wrong are left out (this measures robustness, not
recall). Prints one line per perturbation: how many runs kept their result, and those that flipped.

    python benchmarks/doctor_invariance.py               # all corpora
    python benchmarks/doctor_invariance.py --corpus shared --only "every 2"
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT))

from agentgrpo.doctor import names  # noqa: E402
from agentgrpo.doctor.diagnose import diagnose  # noqa: E402
from agentgrpo.doctor.readers import read_run  # noqa: E402
from agentgrpo.doctor.score import load_labels  # noqa: E402
from agentgrpo.doctor.table import MetricTable  # noqa: E402
from agentgrpo.errors import UserError  # noqa: E402

CORPORA = {
    "shared": ROOT / "tests/data/real-runs",
    "public": ROOT / "benchmarks/public-runs",
    "heldout": ROOT / "benchmarks/public-runs-heldout",
}
# Optional metrics whose absence must not turn a healthy run into a failure.
DROPPABLE = (
    names.KL,
    names.ENTROPY,
    names.LENGTH,
    names.REWARD_STD,
    names.FRAC_ZERO_STD,
    names.CLIPPED,
    names.GRAD_NORM,
    names.LOSS,
)


def _is_reward_scaled(name: str) -> bool:
    """Columns in the reward's units: the reward, its statistics and its components."""
    if name in (names.REWARD, names.REWARD_STD, names.REWARD_MAX, names.REWARD_MIN):
        return True
    return names.component_of(name) is not None


def every(table: MetricTable, k: int) -> MetricTable:
    """Windows of k rows averaged (NaN-aware), numbered by their last step: ``logging_steps=k``."""
    n = len(table) // k * k
    if n < k:
        return table
    cols = {}
    for name, col in table.columns.items():
        win = col[:n].reshape(-1, k)
        ok = np.isfinite(win)
        with np.errstate(invalid="ignore", divide="ignore"):
            mean = np.where(ok, win, 0.0).sum(axis=1) / ok.sum(axis=1)
        cols[name] = np.where(ok.any(axis=1), mean, np.nan)
    ends = table.steps[:n].reshape(-1, k)[:, -1].copy()
    window = {int(s): int(ends[i // k]) for i, s in enumerate(table.steps[:n])}
    return MetricTable(ends, cols, _renumbered(table.meta, lambda s: window.get(s, s)))


def stretch(table: MetricTable, k: int) -> MetricTable:
    return MetricTable(table.steps * k, dict(table.columns), _renumbered(table.meta, lambda s: s * k))


def _renumbered(meta: dict, step_of) -> dict:
    """The table's meta with the steps where a non-finite value was logged renumbered like the rows."""
    meta = dict(meta)
    for key in ("nan_steps", "nonfinite"):
        if key in meta:
            meta[key] = {name: sorted({step_of(s) for s in at}) for name, at in meta[key].items()}
    return meta


def scale(table: MetricTable, a: float) -> MetricTable:
    cols = {n: (c * a if _is_reward_scaled(n) else c) for n, c in table.columns.items()}
    return MetricTable(table.steps.copy(), cols, dict(table.meta))


def cut(table: MetricTable, share: float) -> MetricTable:
    """The first ``share`` of the run's steps (a job that timed out)."""
    first, last = int(table.steps[0]), int(table.steps[-1])
    keep = table.steps <= first + share * (last - first)
    return MetricTable(table.steps[keep].copy(), {n: c[keep] for n, c in table.columns.items()}, dict(table.meta))


def drop(table: MetricTable, name: str) -> MetricTable:
    cols = {n: c for n, c in table.columns.items() if n != name}
    return MetricTable(table.steps.copy(), cols, dict(table.meta))


PERTURBATIONS = {
    "every 2": (lambda t: every(t, 2), 2),
    "every 5": (lambda t: every(t, 5), 5),
    "steps x 10": (lambda t: stretch(t, 10), 1),
    "scale 10": (lambda t: scale(t, 10.0), 1),
    "scale 0.1": (lambda t: scale(t, 0.1), 1),
}


def _result(table: MetricTable, label) -> tuple[bool, list[str]]:
    report = diagnose(table)
    failures = [f.detector for f in report.failures]
    if label.kind == "healthy":
        return not failures, failures
    return bool(set(failures) & set(label.accept)), failures


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", choices=[*CORPORA, "all"], default="all", help="which labelled corpus to perturb")
    ap.add_argument("--only", default=None, help="one perturbation by name (e.g. 'every 2', 'no kl')")
    ap.add_argument("--min-rows", type=int, default=40, help="skip 'every k' on runs with fewer than k x this rows")
    args = ap.parse_args(argv)
    from benchmarks import provenance

    env = provenance.environment()  # the versions, CPU and commit these figures came from
    print(provenance.line(env), flush=True)
    roots = CORPORA.values() if args.corpus == "all" else [CORPORA[args.corpus]]
    flips: dict[str, list[str]] = {}
    kept: dict[str, int] = {}
    for root in roots:
        labels = load_labels(root / "labels.json")
        for file, label in sorted(labels.items()):
            if label.kind == "unclear":
                continue
            try:
                table = read_run(root / file).table
            except UserError:
                continue
            ok, _ = _result(table, label)
            if not ok:
                continue  # already wrong: not a robustness question
            tried = dict(PERTURBATIONS)
            first, last = int(table.steps[0]), int(table.steps[-1])
            if label.kind == "failure" and label.onset is not None and label.onset <= first + 0.5 * (last - first):
                tried["cut at 75%"] = (lambda t: cut(t, 0.75), 1)
            if label.kind == "healthy":
                for name in DROPPABLE:
                    if table.has(name):
                        tried[f"no {name}"] = (lambda t, n=name: drop(t, n), 1)
            for pname, (fn, k) in tried.items():
                if args.only and pname != args.only:
                    continue
                if k > 1 and len(table) < k * args.min_rows:
                    continue
                ok2, failures = _result(fn(table), label)
                key = pname if not pname.startswith("no ") else "no <metric>"
                if ok2:
                    kept[key] = kept.get(key, 0) + 1
                else:
                    what = f"{root.name}/{file} [{label.kind}: {','.join(label.accept) or '-'}] -> {failures}"
                    flips.setdefault(key, []).append(what + (f" ({pname})" if key == "no <metric>" else ""))
    status = 0
    for key in sorted(set(kept) | set(flips)):
        bad = flips.get(key, [])
        print(f"{key:12s} kept {kept.get(key, 0)}/{kept.get(key, 0) + len(bad)}")
        for line in bad:
            print(f"    FLIP {line}")
        status |= bool(bad)
    return status


if __name__ == "__main__":
    raise SystemExit(main())
