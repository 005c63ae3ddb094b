"""`agentgrpo doctor` and `agentgrpo compare` through the CLI: exit codes, JSON, files written."""

from __future__ import annotations

import json

import pytest

from agentgrpo.cli import main
from benchmarks import doctor_synthetic as synthetic


@pytest.fixture
def runs(tmp_path):
    return {name: synthetic.make(name, 80, 0).write(tmp_path / "runs") for name in ("healthy", "collapse")}


def test_doctor_healthy_exit_0_and_report(runs, tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["doctor", str(runs["healthy"]), "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert ("HEALTHY" in text or "CONVERGED" in text) and "FAILURE" not in text and "report:" in text
    page = (out / "report.html").read_text(encoding="utf-8")
    assert page.count("<svg") >= 5


def test_doctor_failure_exit_1_json(runs, tmp_path, capsys):
    code = main(["doctor", str(runs["collapse"]), "--json", "--out", str(tmp_path / "o"), "--png"])
    payload = json.loads(capsys.readouterr().out)
    assert code == 1
    assert payload["verdict"] == "failure" and payload["failures"][0] == "collapse"
    collapse = next(f for f in payload["findings"] if f["detector"] == "collapse")
    assert collapse["onset"] and collapse["evidence"] and collapse["fix"]
    assert any(p.endswith("entropy.png") for p in payload["files"])


def test_doctor_default_out_is_inside_the_run_dir(runs):
    assert main(["doctor", str(runs["healthy"])]) == 0
    assert (runs["healthy"] / "doctor" / "report.html").is_file()


def test_doctor_bad_input_exit_2(tmp_path, capsys):
    assert main(["doctor", str(tmp_path / "nope")]) == 2
    assert "no such file or directory" in capsys.readouterr().err
    bad = tmp_path / "x.json"
    bad.write_text('{"model": 1}', encoding="utf-8")
    assert main(["doctor", str(bad), "--no-report"]) == 2
    assert "not a TRL trainer state" in capsys.readouterr().err


def test_doctor_three_step_run_is_too_short_exit_2(tmp_path, capsys):
    log = tmp_path / "metrics.jsonl"
    rows = [{"step": s, "reward": 0.1 * s, "kl": 0.01 * s} for s in (1, 2, 3)]
    log.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    assert main(["doctor", str(log), "--no-report"]) == 2
    out = capsys.readouterr().out
    assert "TOO SHORT TO JUDGE: reward has 3 logged steps, need 10" in out and "HEALTHY" not in out


def _eval(run_dir, successes):
    per = [{"id": str(i), "success": s, "tool_calls": 1} for i, s in enumerate(successes)]
    n, k = len(successes), sum(successes)
    data = {
        "after": {
            "greedy": {
                "n": n,
                "successes": k,
                "success_rate": k / n,
                "ci95": [0.0, 1.0],
                "tool_call_rate": 1.0,
                "mean_turns": 2.0,
                "per_problem": per,
            }
        }
    }
    (run_dir / "eval.json").write_text(json.dumps(data), encoding="utf-8")


def test_compare_runs_paired_test(runs, tmp_path, capsys):
    _eval(runs["healthy"], [True] * 30 + [False] * 10)
    _eval(runs["collapse"], [True] * 12 + [False] * 28)
    out = tmp_path / "cmp"
    assert main(["compare", str(runs["healthy"]), str(runs["collapse"]), "--out", str(out), "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    row = payload["eval"][0]
    assert row["stage"] == "after" and row["paired"]["only_a"] == 18 and row["paired"]["only_b"] == 0
    assert row["paired"]["p_value"] < 1e-4
    assert payload["b"]["verdict"] == "failure"
    page = (out / "compare.html").read_text(encoding="utf-8")
    assert "McNemar" in page and page.count("<svg") >= 5 and "B: collapse onset" in page


def test_compare_without_eval(runs, tmp_path, capsys):
    assert main(["compare", str(runs["healthy"]), str(runs["collapse"]), "--no-report"]) == 0
    assert "none shared" in capsys.readouterr().out


def test_doctor_cli_imports_only_what_its_path_needs(runs):
    """`agentgrpo doctor` loads its own command module only: no config/YAML of the training commands, no
    torch, TRL, transformers or matplotlib (each costs start-up time on every run; issue 20's speed). A log
    file is read (a run directory's config.yaml needs YAML)."""
    import subprocess
    import sys

    heavy = ["agentgrpo.config", "agentgrpo.commands.train", "yaml", "torch", "trl", "transformers", "matplotlib"]
    code = (
        "import sys; from agentgrpo.cli import main; "
        f"main(['doctor', {str(runs['healthy'] / 'metrics.jsonl')!r}, '--no-report']); "
        f"print(sorted(m for m in {heavy!r} if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.stdout.strip().splitlines()[-1] == "[]", done.stdout + done.stderr
