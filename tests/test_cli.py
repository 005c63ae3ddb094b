"""End to end through the CLI: train a few steps from a model *directory*, resume, evaluate; --help is honest."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from agentgrpo import rundir
from agentgrpo.cli import main

FAST = ["--per_device_train_batch_size", "16", "--eval_size", "16", "--eval_modes", "[greedy]",
        "--eval_batch_size", "16", "--doctor_every", "0"]


@pytest.fixture(scope="module")
def model_dir(tiny_sft_dir, tmp_path_factory):
    """A save_pretrained directory outside the package: the path a user's own model takes."""
    path = tmp_path_factory.mktemp("user-model") / "tiny"
    shutil.copytree(tiny_sft_dir, path)
    return path


def test_train_resume_eval_smoke(model_dir, tmp_path, capsys):
    args = ["train", "--config", "demo", "--model", str(model_dir), "--runs_dir", str(tmp_path),
            "--run_name", "smoke", "--max_steps", "2", "--save_steps", "1", *FAST]
    assert main(args) == 0
    run = tmp_path / "smoke"
    for name in (rundir.CONFIG, rundir.METRICS, rundir.EVAL, rundir.CURVES, "final/config.json",
                 "checkpoints/checkpoint-2/trainer_state.json"):
        assert (run / name).exists(), name
    assert [r["step"] for r in rundir.read_jsonl(run / rundir.METRICS)] == [1, 2]
    evals = rundir.read_eval(run)
    assert set(evals) == {"before", "after"} and evals["before"]["model"] == str(model_dir)
    assert evals["after"]["greedy"]["n"] == 16
    out = capsys.readouterr().out
    assert "greedy: success" in out and " -> " in out and str(run) in out  # the before -> after summary

    # Resume: continues from checkpoint-2 to step 3, the metrics history stays one line per step.
    resume = [a if a != "2" else "3" for a in args] + ["--resume", "true", "--eval_before", "false"]
    assert main(resume) == 0
    assert [r["step"] for r in rundir.read_jsonl(run / rundir.METRICS)] == [1, 2, 3]

    out_file = tmp_path / "eval.json"
    assert main(["eval", "--model", str(run), "--n", "8", "--modes", "greedy", "--out", str(out_file)]) == 0
    result = json.loads(out_file.read_text())
    assert result["model"] == str(run / "final") and result["greedy"]["n"] == 8


def test_validate_reports_all_problems(capsys):
    assert main(["validate", "--num_generations", "3", "--bf16", "true", "--task", "calcultor"]) == 2
    err = capsys.readouterr().err
    assert "3 problems" in err and "bf16" in err and "num_generations" in err and "calculator" in err


def test_validate_ok(capsys):
    assert main(["validate"]) == 0
    assert "verifier OK" in capsys.readouterr().out


def test_help_lists_every_command(capsys):
    from agentgrpo.cli import COMMANDS

    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    for name in COMMANDS:
        assert name in out


@pytest.mark.parametrize("command", ["train", "demo", "launch", "check", "validate", "eval", "doctor", "audit"])
def test_every_commands_help_prints_and_lists_every_option_it_accepts(capsys, command):
    """``agentgrpo COMMAND --help`` prints (a help text with a bare "%", e.g. "90%", once broke argparse's
    formatting of train --help), and a command that takes overrides documents every agentgrpo option."""
    import dataclasses

    from agentgrpo.config import RunConfig

    with pytest.raises(SystemExit) as done:
        main([command, "--help"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    if command == "train":
        for f in dataclasses.fields(RunConfig):
            assert f"--{f.name}" in out, f.name
        assert "90% in the benchmark" in " ".join(out.split())  # refill_carry's help, its "%" printed as written


def test_ls_lists_tasks_rewards_configs(capsys):
    assert main(["ls"]) == 0
    out = capsys.readouterr().out
    assert "calculator" in out and "correct_answer" in out and "demo" in out


def test_readme_test_command_is_what_ci_runs():
    root = Path(__file__).resolve().parents[1]
    readme, ci = (root / "README.md").read_text(), (root / ".ci" / "run").read_text()
    section = readme.split("## Two commands", 1)[1].split("\n## ", 1)[0]  # what a new user runs
    blocks = [b.split("```")[0].strip() for b in section.split("```bash\n")[1:]]
    assert len(blocks) == 2 and "agentgrpo demo" in blocks[0]
    assert blocks[1] in ci.splitlines()
