"""Where a benchmark result came from: package versions, CPU model and flags, threads, git commit.

Every benchmark stamps what it writes with `environment()` (`write_json` wraps a result list as
``{"environment": ..., "results": [...]}``; `read_json` reads both that and a bare list) and prints
`line()` first, so a figure that does not reproduce elsewhere can be traced to what differed: a re-run on
another machine with the same package versions matched 1 of 7 seeds bit for bit (issue 35), so the CPU,
its flags (the vector instructions torch's kernels pick) and the thread counts are recorded too.
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import subprocess
import sys
from importlib import metadata
from pathlib import Path

PACKAGES = ("torch", "transformers", "trl", "numpy", "datasets", "accelerate", "tokenizers", "agentgrpo")
THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")
ROOT = Path(__file__).resolve().parents[1]


def packages() -> dict[str, str | None]:
    out = {}
    for name in PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def cpu(cpuinfo: str | None = None) -> dict:
    """The CPU model and flags (``/proc/cpuinfo``'s first processor; elsewhere ``platform``'s name) and the
    CPUs this process may use."""
    if cpuinfo is None:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
        except OSError:
            cpuinfo = ""
    fields = {}
    for line in cpuinfo.split("\n\n", 1)[0].splitlines():
        key, sep, value = line.partition(":")
        if sep:
            fields.setdefault(key.strip(), value.strip())
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:
        usable = os.cpu_count()
    return {
        "model": fields.get("model name") or platform.processor() or platform.machine(),
        "flags": sorted((fields.get("flags") or fields.get("Features") or "").split()),
        "count": os.cpu_count(),
        "usable": usable,
    }


def threads() -> dict:
    """torch's intra-op threads (when torch is importable) and the thread variables set."""
    out: dict = {name: os.environ.get(name) for name in THREAD_VARIABLES}
    try:
        import torch

        out["torch"] = torch.get_num_threads()
        out["torch_interop"] = torch.get_num_interop_threads()
    except ImportError:
        out["torch"] = None
    return out


def git(root: Path = ROOT) -> dict:
    """The commit checked out at ``root`` and whether the tree differs from it (None: not a git tree)."""
    def run(*args) -> str | None:
        try:
            done = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            return None
        return done.stdout.strip() if done.returncode == 0 else None

    commit = run("rev-parse", "HEAD")
    status = run("status", "--porcelain", "--untracked-files=no")
    return {"commit": commit, "dirty": None if status is None else bool(status)}


def environment() -> dict:
    """Everything above, with the Python version, the platform and the time (UTC)."""
    return {
        "python": platform.python_version(),
        "packages": packages(),
        "cpu": cpu(),
        "threads": threads(),
        "git": git(),
        "platform": platform.platform(),
        "argv": sys.argv,
        "when": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
    }


def line(env: dict | None = None) -> str:
    """One line for a benchmark's output (the full record goes into its result files); "?" = not recorded."""
    env = env or environment()
    p, t, g, c = env.get("packages") or {}, env.get("threads") or {}, env.get("git") or {}, env.get("cpu") or {}
    flags = c.get("flags")
    text = (f"environment: python {env.get('python') or '?'}, torch {p.get('torch') or '?'}, transformers "
            f"{p.get('transformers') or '?'}, trl {p.get('trl') or '?'}, numpy {p.get('numpy') or '?'}; CPU "
            f"{c.get('model') or '?'} ({c.get('usable') or '?'} usable of {c.get('count') or '?'}, "
            f"{len(flags) if flags is not None else '?'} flags); torch threads {t.get('torch') or '?'}, "
            f"OMP_NUM_THREADS {t.get('OMP_NUM_THREADS') or 'unset'}; commit {g.get('commit') or '?'}"
            f"{' (modified)' if g.get('dirty') else ''}")
    return text if env.get("recorded", True) else text + " (not recorded at run time)"


def stamp(results, env: dict | None = None) -> dict:
    return {"environment": env or environment(), "results": results}


def write_json(path: str | Path, results, env: dict | None = None) -> Path:
    """Write ``results`` stamped with the environment (computed now unless given)."""
    path = Path(path)
    path.write_text(json.dumps(stamp(results, env), indent=1), encoding="utf-8")
    return path


def read_json(path: str | Path) -> tuple[object, dict | None]:
    """(results, environment or None) of a file `write_json` wrote, or of a bare (unstamped) result."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    if isinstance(data, dict) and set(data) == {"environment", "results"}:
        return data["results"], data["environment"]
    return data, None
