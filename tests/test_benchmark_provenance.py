"""benchmarks/provenance.py: every benchmark result records package versions, the CPU model and flags, the
thread counts and the git commit (issue 35, item 7); checked against plain sources (package metadata,
/proc/cpuinfo text, git) on generated inputs."""

from __future__ import annotations

import ast
import json
import random
import subprocess
from importlib import metadata
from pathlib import Path

import pytest

from benchmarks import provenance

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def test_packages_are_the_installed_versions():
    got = provenance.packages()
    for name in ("torch", "transformers", "trl", "numpy"):
        assert got[name] == metadata.version(name)
    assert set(provenance.PACKAGES) <= set(got)


@pytest.mark.parametrize("seed", range(5))
def test_cpu_model_and_flags_are_read_from_the_first_processor(seed):
    rng = random.Random(seed)
    flags = sorted({f"f{rng.randrange(1000)}" for _ in range(rng.randrange(1, 60))})
    model = f"Vendor(R) CPU {rng.randrange(10_000)} @ {rng.random() * 4:.2f}GHz"
    block = f"processor\t: 0\nvendor_id\t: V\nmodel name\t: {model}\nflags\t\t: {' '.join(reversed(flags))}\n"
    other = "processor\t: 1\nmodel name\t: another\nflags\t\t: zzz\n"
    got = provenance.cpu(block + "\n" + other)
    assert got["model"] == model and got["flags"] == flags and got["count"] >= 1 and got["usable"] >= 1


def test_threads_are_torch_s_and_the_variables_set(monkeypatch):
    import torch

    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    monkeypatch.delenv("MKL_NUM_THREADS", raising=False)
    got = provenance.threads()
    assert got["torch"] == torch.get_num_threads() and got["OMP_NUM_THREADS"] == "3" and got["MKL_NUM_THREADS"] is None


def test_git_commit_and_a_modified_tree(tmp_path):
    def git(*args):
        return subprocess.run(["git", "-C", str(tmp_path), *args], capture_output=True, text=True, check=True).stdout

    git("init", "-q")
    (tmp_path / "a.txt").write_text("1")
    git("add", "a.txt")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "one")
    head = git("rev-parse", "HEAD").strip()
    assert provenance.git(tmp_path) == {"commit": head, "dirty": False}
    (tmp_path / "a.txt").write_text("2")
    assert provenance.git(tmp_path) == {"commit": head, "dirty": True}
    assert provenance.git(tmp_path / "not-a-repo-but-inside") == {"commit": None, "dirty": None}


def test_results_written_are_stamped_and_read_back(tmp_path):
    results = [{"seed": s, "tokens": s * 7} for s in range(4)]
    path = provenance.write_json(tmp_path / "r.json", results)
    got, env = provenance.read_json(path)
    assert got == results
    assert set(env) >= {"python", "packages", "cpu", "threads", "git", "when"}
    assert env["packages"]["torch"] == metadata.version("torch") and env["cpu"]["flags"] == provenance.cpu()["flags"]
    (tmp_path / "bare.json").write_text(json.dumps(results))
    assert provenance.read_json(tmp_path / "bare.json") == (results, None)
    line = provenance.line(env)
    assert f"torch {metadata.version('torch')}" in line and f"trl {metadata.version('trl')}" in line


def test_every_committed_result_records_its_environment():
    files = sorted((BENCHMARKS / "results").glob("*.json"))
    assert files
    for path in files:
        _, env = provenance.read_json(path)
        assert env is not None, path
        assert {"packages", "cpu", "threads", "git"} <= set(env), path
        assert env.get("recorded", True) or "not recorded" in env["note"], path  # an old one says so


def test_every_benchmark_stamps_its_output():
    """Each benchmark's main() records the environment, and writes its result files through provenance."""
    for path in sorted(BENCHMARKS.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        mains = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "main"]
        if not mains:
            continue  # a library module (doctor_synthetic, planted_rewards, provenance)
        source = ast.unparse(mains[0])
        assert "provenance.environment()" in source, path.name
        assert "json.dumps(results" not in source and "json.dumps(rows" not in source, path.name
