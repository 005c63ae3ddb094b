"""The doctor against the GRPO diagnosis packages on the package index, on the same labelled runs.

    pip install 'agentgrpo[peers]'        # = pip install rldoctor==0.2.0 rlprobe==0.1.0 rlwatch==0.5.1
    python benchmarks/peers.py            # the three corpora, then wall time and peak memory at 10k and 100k steps
    python benchmarks/peers.py --corpus shared --markdown --scale ""    # one corpus, markdown, no scaling runs

Every run is read once by the doctor's reader; each peer gets it converted to the format it reads
(``benchmarks/peer_tools.py``), and the converted file is read back through the peer's own loader and
compared with the doctor's columns: a mismatch is reported in the table (and the run not scored for that
peer), never counted as the peer's miss. A peer that raises on a run is reported as *unreadable*. Each
peer runs in a child process under a hard address-space cap (``--mem-gb``, RLIMIT_AS) and a timeout
(``--timeout``): "over N GB" / "over T s" in the tables.

Scoring (one rule for every tool, as ``agentgrpo doctor --score``): a labelled failure is *named* when the
tool names one of its accepted modes (each peer detector mapped to the doctor's modes, generously:
``peer_tools.MODES``); a healthy run is *clean* when the tool raises nothing; *forbidden*: a mode the label
forbids was named. A peer is scored at two levels: its top severity (``critical``, what the doctor calls a
failure) and ``warn+`` (its warnings too). The doctor is scored on its failures only. A peer not installed
is listed as such. Corpora: the 50 shared runs (tests/data/real-runs, labels.json; validation and
development halves together), benchmarks/public-runs and benchmarks/public-runs-heldout.
"""

from __future__ import annotations

import argparse
import datetime
import importlib.util
import json
import math
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks import peer_tools as pt  # noqa: E402

CORPORA = {
    "shared": ROOT / "tests" / "data" / "real-runs",
    "public": ROOT / "benchmarks" / "public-runs",
    "heldout": ROOT / "benchmarks" / "public-runs-heldout",
}
PEERS = tuple(pt.VERSIONS)
LEVELS = ("critical", "warn")
ONSET_BOUND = 0.2


@dataclass
class Outcome:
    """One tool on one run: what it named, or why it could not say."""

    status: str = "ok"  # ok | unreadable | mismatch | over-memory | over-time | not installed
    findings: list[dict] = field(default_factory=list)
    detail: str = ""
    seconds: float = math.nan
    peak_mb: float = math.nan


def installed(peer: str) -> bool:
    return importlib.util.find_spec(pt.MODULES[peer]) is not None


# ---- the child: one peer on one converted run ---------------------------------------------------------


def child(peer: str, records_file: Path, work: Path, result_file: Path) -> None:
    """Run ``peer`` on the records of one run (converting them to its format first) and write its findings
    and what it read back as JSON. Timing covers the peer's own reading and diagnosis."""
    import contextlib
    import io

    recs = [json.loads(line) for line in records_file.read_text(encoding="utf-8").splitlines() if line]
    with contextlib.redirect_stdout(io.StringIO()):
        if peer == "rldoctor":
            out = pt.run_rldoctor(records_file)
        elif peer == "rlprobe":
            start = time.perf_counter()
            pt.convert_rlprobe(pt.rlprobe_rows(recs), work / "rlprobe-run")
            converted = time.perf_counter() - start
            out = pt.run_rlprobe(work / "rlprobe-run")
            out["conversion_seconds"] = converted
        else:
            out = pt.run_rlwatch(pt.rlwatch_calls(recs), work / "rlwatch-logs")
    result_file.write_text(json.dumps(out), encoding="utf-8")


def run_child(args: list[str], mem_gb: float, timeout: float) -> tuple[int, str, float, float, bool]:
    """(exit status, stderr tail, wall seconds, peak MB, timed out) of a child under the memory cap."""
    limit = int(mem_gb * 1024**3)

    def cap():
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=str(ROOT / "src"))
    with tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=err, preexec_fn=cap, env=env)
        timed_out = False
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() - start > timeout:
                proc.kill()
                pid, status, usage = os.wait4(proc.pid, 0)
                timed_out = True
                break
            time.sleep(0.02)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        tail = err.read().decode("utf-8", "replace")[-2000:]
    return proc.returncode, tail, wall, usage.ru_maxrss / 1024, timed_out


def peer_on(peer: str, table, tmp: Path, mem_gb: float, timeout: float) -> Outcome:
    """One peer on one run's table: converted, run in a capped child, its read-back checked."""
    if not installed(peer):
        return Outcome("not installed")
    records_file = tmp / "records.jsonl"
    if not records_file.exists():
        pt.write_jsonl(table, records_file)
    work = Path(tempfile.mkdtemp(dir=tmp, prefix=peer))
    result_file = work / "result.json"
    cmd = [sys.executable, __file__, "--child", peer, str(records_file), str(work), str(result_file)]
    code, err, wall, peak, timed_out = run_child(cmd, mem_gb, timeout)
    if timed_out:
        return Outcome("over-time", detail=f"over {timeout:g} s", seconds=wall, peak_mb=peak)
    if code != 0 or not result_file.exists():
        if "MemoryError" in err or "std::bad_alloc" in err or code in (-9, 137):
            return Outcome("over-memory", detail=f"over {mem_gb:g} GB", seconds=wall, peak_mb=peak)
        return Outcome("unreadable", detail=(err.strip().splitlines() or ["no output"])[-1][:160], seconds=wall)
    out = json.loads(result_file.read_text(encoding="utf-8"))
    want = pt.expected(table, peer)
    got = {k: tuple(v) for k, v in out["read"].items()}
    problems = pt.compare(want, got, drop=pt.DROPS[peer])
    if peer == "rldoctor":
        problems += _nonfinite_problems(table, out.get("nonfinite") or {})
    if problems:
        return Outcome("mismatch", out["findings"], "; ".join(problems)[:200], out["seconds"], peak)
    return Outcome("ok", out["findings"], "", out["seconds"], peak)


def _nonfinite_problems(table, nonfinite: dict) -> list[str]:
    """rldoctor's record of logged NaN/Inf steps against the table's."""
    problems = []
    for name, key in pt.FIELDS["rldoctor"].items():
        col = table.columns.get(name)
        if col is None:
            continue
        nan_at = set(table.meta.get("nan_steps", {}).get(name, ()))
        want = sorted(int(s) for s, v in zip(table.steps.tolist(), col.tolist()) if math.isinf(v) or s in nan_at)
        got = sorted(int(s) for s in nonfinite.get(key, ()))
        if want != got:
            problems.append(f"{key}: non-finite at {want[:3]} written, {got[:3]} read")
    return problems


# ---- scoring ------------------------------------------------------------------------------------------


@dataclass
class Row:
    tool: str
    named: int = 0
    failing: int = 0
    clean: int = 0
    healthy: int = 0
    forbidden: list[str] = field(default_factory=list)
    onset_errors: list[float] = field(default_factory=list)
    not_scored: list[str] = field(default_factory=list)  # unreadable / mismatch / over limits
    false_on: list[str] = field(default_factory=list)
    missed: list[str] = field(default_factory=list)

    def cells(self) -> list[str]:
        errs = self.onset_errors
        onset = f"{statistics.median(errs):.2f} ({sum(e <= ONSET_BOUND for e in errs)}/{len(errs)})" if errs else "—"
        return [
            self.tool,
            f"{self.named} of {self.failing}",
            f"{self.clean} of {self.healthy}",
            str(len(self.forbidden)),
            onset,
            _not_scored(self.not_scored),
        ]


def _not_scored(entries: list[str]) -> str:
    """``file: status detail`` entries grouped by status: ``unreadable 2 (a.json, b.log); ...``.

    >>> _not_scored(["a.json: unreadable KeyError", "b.log: unreadable x", "c.csv: over-memory over 4 GB"])
    'unreadable 2 (a.json, b.log); over-memory 1 (c.csv)'
    >>> _not_scored(["a.json: not installed", "b.log: not installed"]), _not_scored([])
    ('not installed', '—')
    """
    groups: dict[str, list[str]] = {}
    for entry in entries:
        file, _, rest = entry.partition(": ")
        status = "not installed" if rest.startswith("not installed") else rest.split(" ")[0]
        groups.setdefault(status, []).append(file)
    if list(groups) == ["not installed"]:
        return "not installed"
    return (
        "; ".join(f"{k} {len(v)} ({', '.join(v[:4])}{', ...' if len(v) > 4 else ''})" for k, v in groups.items()) or "—"
    )


def score_tool(row: Row, label, modes: list[str], onset: int | None, span: float) -> None:
    """Add one run's result to a tool's row (label: `agentgrpo.doctor.score.Label`)."""
    if label.kind == "failure":
        row.failing += 1
        if set(modes) & set(label.accept):
            row.named += 1
            if onset is not None and label.onset is not None:
                row.onset_errors.append(abs(onset - label.onset) / max(span, 1))
        else:
            row.missed.append(label.file)
    elif label.kind == "healthy":
        row.healthy += 1
        if modes:
            row.false_on.append(label.file)
        else:
            row.clean += 1
    if set(modes) & set(label.forbid):
        row.forbidden.append(label.file)


def corpus(name: str, mem_gb: float, timeout: float, peers: tuple[str, ...], log=print) -> list[Row]:
    from agentgrpo.doctor.readers import read_run
    from agentgrpo.doctor.score import load_labels, score_run
    from agentgrpo.errors import UserError

    root = CORPORA[name]
    labels = load_labels(root / "labels.json")
    rows = {"doctor": Row("agentgrpo doctor")}
    for p in peers:
        for level in LEVELS:
            rows[(p, level)] = Row(f"{p} {pt.VERSIONS[p]} ({'critical' if level == 'critical' else 'warn+'})")
    for file in sorted(labels):
        label = labels[file]
        if label.kind == "unclear":
            continue
        scored = score_run(root / file, label)
        span = 1.0
        try:
            table = read_run(root / file).table
            span = float(table.steps[-1] - table.steps[0])
        except UserError as exc:
            table = None
            log(f"  {file}: the doctor cannot read it: {exc}")
        _add(rows["doctor"], label, scored.failures, scored.onset if scored.hit else None, span)
        if table is None:
            for p in peers:
                for level in LEVELS:
                    rows[(p, level)].not_scored.append(f"{file}: unreadable-by-the-doctor")
            continue
        with tempfile.TemporaryDirectory() as tmp:
            for p in peers:
                out = peer_on(p, table, Path(tmp), mem_gb, timeout)
                for level in LEVELS:
                    row = rows[(p, level)]
                    if out.status != "ok":
                        row.not_scored.append(f"{file}: {out.status} {out.detail}".strip())
                        continue
                    modes = pt.modes_named(p, out.findings, level)
                    named = [m for m in modes if m in label.accept]
                    onset = pt.onset_of(p, out.findings, tuple(named), level) if named else None
                    # a healthy run is clean only when nothing fired, whatever the detector maps to
                    fired = pt.raised(p, out.findings, level)
                    _add(row, label, modes if label.kind != "healthy" else fired, onset, span)
        log(f"  {file}: doctor {[str(m) for m in scored.failures] or '-'}")
    return list(rows.values())


def _add(row: Row, label, modes, onset, span) -> None:
    score_tool(row, label, list(modes), onset, span)


def render(rows: list[Row], markdown: bool) -> str:
    head = [
        "tool",
        "failures named",
        "healthy left clean",
        "forbidden raised",
        "onset error median (≤0.2)",
        "not scored",
    ]
    if markdown:
        lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        lines += ["| " + " | ".join(r.cells()) + " |" for r in rows]
        return "\n".join(lines)
    widths = [28, 15, 19, 17, 26]
    lines = ["  ".join(h.ljust(w) for h, w in zip(head, widths)) + "  " + head[-1]]
    for r in rows:
        c = r.cells()
        lines.append("  ".join(x.ljust(w) for x, w in zip(c, widths)) + "  " + c[-1])
    return "\n".join(lines)


def verdict(rows: list[Row]) -> list[str]:
    """The acceptance on one corpus: the doctor names more failures than each peer (at either level) and
    raises no more false failures than the best peer."""
    doctor, peers = rows[0], [r for r in rows[1:]]
    problems = []
    for r in peers:
        if r.not_scored and _not_scored(r.not_scored) == "not installed":
            continue
        if r.failing and doctor.named <= r.named:
            problems.append(f"{r.tool} names {r.named} failures, the doctor {doctor.named}")
    scored = [r for r in peers if r.healthy]
    if scored:
        best = min(r.healthy - r.clean for r in scored)
        if doctor.healthy - doctor.clean > best:
            problems.append(f"the doctor raises {doctor.healthy - doctor.clean} false failures, the best peer {best}")
    return problems


# ---- scaling: wall time and peak memory at long synthetic runs ----------------------------------------------


def scaling(steps: int, mem_gb: float, timeout: float, peers: tuple[str, ...]) -> dict[str, str]:
    """{tool: "wall s, peak MB" or "over N GB" / "over T s"} on a synthetic healthy run of ``steps`` steps
    (benchmarks/doctor_speed.py's trainer records), the doctor as its CLI on metrics.jsonl."""
    from agentgrpo.doctor.readers import read_run
    from benchmarks import doctor_speed

    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        state = doctor_speed.build_state(tmp / "trainer_state.json", steps)
        jsonl = doctor_speed.build_jsonl(tmp / "metrics.jsonl", state)
        state.unlink()
        cmd = [sys.executable, "-m", "agentgrpo.cli", "doctor", str(jsonl), "--no-report", "--json"]
        code, err, wall, peak, timed_out = run_child(cmd, mem_gb, timeout)
        out["agentgrpo doctor"] = _cost(code if code in (0, 1) else code, err, wall, peak, timed_out, mem_gb, timeout)
        table = read_run(jsonl).table
        for p in peers:
            if not installed(p):
                out[p] = "not installed"
                continue
            o = peer_on(p, table, tmp, mem_gb, timeout)
            out[p] = (
                o.detail
                if o.status in ("over-time", "over-memory")
                else (f"{o.seconds:.2f} s, {o.peak_mb:.0f} MB" if o.status in ("ok", "mismatch") else o.status)
            )
    return out


def _cost(code, err, wall, peak, timed_out, mem_gb, timeout) -> str:
    if timed_out:
        return f"over {timeout:g} s"
    if code not in (0, 1):
        return f"over {mem_gb:g} GB" if "MemoryError" in err else f"failed: {err.strip()[-80:]}"
    return f"{wall:.2f} s, {peak:.0f} MB"


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--child"]:
        child(argv[1], Path(argv[2]), Path(argv[3]), Path(argv[4]))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", choices=[*CORPORA, "all"], default="all")
    parser.add_argument("--peers", default=",".join(PEERS), help="comma-separated subset of " + ", ".join(PEERS))
    parser.add_argument("--scale", default="10000,100000", help="step counts for the scaling table ('' for none)")
    parser.add_argument("--mem-gb", type=float, default=4.0, help="address-space cap of each child (GB)")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds per child")
    parser.add_argument("--markdown", action="store_true")
    parser.add_argument("--strict", action="store_true", help="exit 1 when the doctor is not ahead on a corpus")
    parser.add_argument("--quiet", action="store_true", help="no per-run progress lines")
    args = parser.parse_args(argv)
    peers = tuple(p for p in args.peers.split(",") if p)
    unknown = set(peers) - set(PEERS)
    if unknown:
        parser.error(f"--peers: unknown {', '.join(sorted(unknown))}; choose from {', '.join(PEERS)}")
    missing = [p for p in peers if not installed(p)]
    print(f"# The doctor against its peers, {datetime.date.today().isoformat()}, python {platform.python_version()}")
    versions = [f"{p} {pt.VERSIONS[p]}" + (" (NOT INSTALLED)" if p in missing else "") for p in peers]
    print("versions: " + ", ".join(versions))
    if missing:
        print(f"install the peers with: {pt.PIP}   (or pip install 'agentgrpo[peers]')")
    load = os.getloadavg()[0]
    print(f"load average at start: {load:.2f}; each peer capped at {args.mem_gb:g} GB, {args.timeout:g} s")
    failed = []
    for name in CORPORA if args.corpus == "all" else [args.corpus]:
        log = (lambda *a: None) if args.quiet else (lambda msg: print(msg, file=sys.stderr))
        rows = corpus(name, args.mem_gb, args.timeout, peers, log)
        print(f"\n## {name}: {CORPORA[name].relative_to(ROOT)}\n")
        print(render(rows, args.markdown))
        for r in rows:
            if r.missed or r.false_on:
                print(f"  {r.tool}: missed {', '.join(r.missed) or '—'}; false on {', '.join(r.false_on) or '—'}")
        problems = verdict(rows)
        print("\ndoctor ahead: " + ("yes" if not problems else "NO: " + "; ".join(problems)))
        failed += problems
    sizes = [int(s) for s in args.scale.split(",") if s.strip()]
    if sizes:
        print(f"\n## wall time and peak memory (synthetic healthy run; load {os.getloadavg()[0]:.2f})\n")
        results = {n: scaling(n, args.mem_gb, args.timeout, peers) for n in sizes}
        tools = list(next(iter(results.values())))
        head = ["tool"] + [f"{n:,} steps" for n in sizes]
        print("| " + " | ".join(head) + " |\n|" + "---|" * len(head))
        for t in tools:
            print("| " + " | ".join([t] + [results[n][t] for n in sizes]) + " |")
    return 1 if args.strict and failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
