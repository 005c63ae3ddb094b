"""Counts and checks a new user found wrong (issue 35, item 5): the cost line under refill, a constant reward
with dynamic sampling, a failed preflight audit, heal_rewards that can never be used, the doctor on a short
run, and report folders of log files that share a stem."""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from agentgrpo import rundir
from agentgrpo.cli import main
from agentgrpo.errors import ConfigError
from agentgrpo.plan import resolve_plan

HERE = Path(__file__).parent
CONSTANT = '''
def constant(completions, **kwargs):
    """The same score for every completion."""
    return [1.0 for _ in completions]
'''


# --- the cost line counts refill rounds -----------------------------------------------------------------


def test_the_cost_line_counts_every_refill_round(tiny_sft_dir, tmp_path):
    from agentgrpo.launch.cost import completions_per_step, run_cost, setting_of
    from agentgrpo.training.grpo import build_grpo_trainer

    sys.path.insert(0, str(HERE))
    import dynamic_sampling_probe as probe

    cfg = resolve_plan(None, ["--model", "tiny", "--per_device_train_batch_size", "16", "--num_generations", "8",
                             "--max_completion_length", "24", "--save_strategy", "no", "--disable_tqdm", "true",
                             "--doctor_every", "0", "--learning_rate", "1e-4", "--seed", "5", "--max_steps", "3",
                             "--dynamic_sampling", "refill", "--max_generation_rounds", "10",
                             "--task", probe.task_spec(probe.PARITY_TASK), "--output_dir", str(tmp_path)],
                       cuda_available=False)
    build_grpo_trainer(cfg, str(tiny_sft_dir)).train()
    rundir.write_config(tmp_path, cfg.to_dict())
    records = rundir.read_jsonl(tmp_path / rundir.METRICS)
    assert any(r["dynamic_sampling/generation_rounds"] > 1 for r in records), "seed 5 should need a refill round"
    metric = sum(r["dynamic_sampling/generated_tokens"] for r in records)
    cost = run_cost(tmp_path)
    assert cost["tokens_generated"] == round(metric) and cost["steps"] == 3
    one_round = sum(r["completions/mean_length"] for r in records) * completions_per_step(setting_of(cfg.to_dict()))
    assert cost["tokens_generated"] > one_round  # what the line said before: refill rounds left out
    assert f"{round(metric):,} tokens generated" in cost["summary"]


# --- a constant reward under dynamic sampling is refused at validate ------------------------------------


@pytest.fixture()
def constant_reward(tmp_path):
    path = tmp_path / "const.py"
    path.write_text(CONSTANT)
    return f"{path}:constant"


@pytest.mark.parametrize("mode", ["refill", "filter"])
def test_validate_refuses_a_constant_reward_under_dynamic_sampling(constant_reward, mode, capsys):
    assert main(["validate", "--config", "demo", "--rewards", f"[{constant_reward}]", "--dynamic_sampling", mode]) == 2
    err = capsys.readouterr().err
    assert f"dynamic_sampling: {mode} keeps only groups whose rewards differ" in err
    assert "'constant'" in err and "set dynamic_sampling: off" in err


def test_validate_accepts_rewards_that_vary_and_a_constant_one_without_dynamic_sampling(constant_reward, capsys):
    assert main(["validate", "--config", "demo", "--dynamic_sampling", "refill"]) == 0
    assert main(["validate", "--config", "demo", "--rewards", f"[{constant_reward}]"]) == 0


@given(values=st.lists(st.lists(st.sampled_from([0.0, 0.5, 1.0]), min_size=4, max_size=4), min_size=1,
                       max_size=3))
@settings(max_examples=40, deadline=None)
def test_the_vary_check_refuses_exactly_the_rewards_that_never_differ_within_a_prompt(calculator, values):
    """Oracle: a reward scoring the k-th sample reply of prompt i with values[i][k] is refused iff no prompt
    has two different values."""
    from agentgrpo.rewards.checks import check_rewards_vary, sample_replies
    from agentgrpo.training.reward_specs import build_task_rewards

    rows = calculator.train_problems(len(values), seed=1)
    replies = {i: sample_replies(calculator, r) for i, r in enumerate(rows)}
    table = {json.dumps([r["prompt"], reply]): values[i][k % 4] for i, r in enumerate(rows)
             for k, reply in enumerate(replies[i])}

    def scripted(completions, prompts, **kwargs):
        return [table[json.dumps([p, c])] for p, c in zip(prompts, completions, strict=True)]

    rewards = build_task_rewards([{"name": "correct_answer"}], calculator)
    rewards.funcs[0].func = scripted
    problems = check_rewards_vary(rewards, calculator, rows, "refill")
    varies = any(len({values[i][k % 4] for k in range(len(replies[i]))}) > 1 for i in replies)
    assert bool(problems) == (not varies)


# --- a failed preflight audit stops the run unless strict_preflight: false ------------------------------

PLANTED = """
def any_number(completions, answer, **kwargs):
    text = lambda c: " ".join(str(m.get("content") or "") for m in c)
    return [1.0 if str(a) in text(c) else 0.0 for c, a in zip(completions, answer)]
"""


@pytest.mark.parametrize("strict", [None, False])
def test_a_failed_audit_stops_the_run_by_default(tmp_path, monkeypatch, strict):
    from agentgrpo import pipeline
    from agentgrpo.errors import UserError

    (tmp_path / "planted_default_mod.py").write_text(PLANTED)
    monkeypatch.syspath_prepend(str(tmp_path))
    trained = []
    monkeypatch.setattr(pipeline, "_grpo", lambda *a: trained.append(1) or tmp_path)
    monkeypatch.setattr(pipeline, "_draw", lambda *a: None)
    monkeypatch.setattr("agentgrpo.preflight.signal.signal_check", _no_sampling)  # no model is sampled here
    options = {"rewards": [{"name": "planted_default_mod:any_number", "weight": 1.0}],
               "runs_dir": str(tmp_path / "runs"), "run_name": f"audit-{strict}", "eval_before": False,
               "eval_after": False, **({} if strict is None else {"strict_preflight": strict})}
    cfg = resolve_plan("src/agentgrpo/configs/demo.yaml", options)
    if strict is None:
        with pytest.raises(UserError, match="reward audit failed.*strict_preflight: false to train anyway"):
            pipeline.run(cfg)
        assert not trained
    else:
        pipeline.run(cfg)
        assert trained == [1]


def _no_sampling(*args, **kwargs) -> dict:
    return {"error": "not sampled in this test", "target": "", "prompts": 0, "k": 0, "notes": [], "seconds": 0.0,
            "sampling": {"temperature": 1.0, "max_completion_length": 1}}


# --- heal_rewards that can never be used -----------------------------------------------------------------

HEAL = {"on_failure": "heal", "save_steps": 5, "heal_rewards": ["correct_answer"]}


@pytest.mark.parametrize(("stop_on", "refused"), [(["collapse"], True), (["collapse", "kl"], True),
                                                  (["hacking"], False), (["length_gaming"], False), ([], False)])
def test_heal_rewards_are_refused_when_stop_on_names_no_mode_that_uses_them(stop_on, refused):
    if refused:
        with pytest.raises(ConfigError, match=r"heal_rewards: given, but stop_on .* names none of the failures "
                                              r"whose heal switches to them \(hacking or length\)"):
            resolve_plan("src/agentgrpo/configs/demo.yaml", {**HEAL, "stop_on": stop_on})
    else:
        resolve_plan("src/agentgrpo/configs/demo.yaml", {**HEAL, "stop_on": stop_on})


# --- the doctor on a short run ----------------------------------------------------------------------------


def _short_wordle_run(root: Path, steps: int, seed: int) -> Path:
    """A run as agentgrpo records a short Wordle run: every metric logged on every step, rewards all 0."""
    rng = random.Random(seed)
    root.mkdir(parents=True)
    rows = []
    for step in range(1, steps + 1):
        length = rng.choice([32.0, 28.8, 30.5])
        rows.append({"step": step, "loss": 0.0, "grad_norm": 0.0, "learning_rate": 1e-6, "num_tokens": 260.0 * step,
                     "completions/mean_length": length, "completions/max_length": 32.0,
                     "completions/clipped_ratio": 1.0, "tools/call_frequency": 0.0, "tools/failure_frequency": 0.0,
                     "rewards/wordle_reward/mean": 0.0, "rewards/wordle_valid_moves/mean": 0.0,
                     "rewards/wordle_solved/mean": 0.0, "reward": 0.0, "reward_std": 0.0,
                     "frac_reward_zero_std": 1.0, "entropy": 6.9})
    (root / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (root / "config.yaml").write_text(yaml.safe_dump({"task": "wordle", "max_completion_length": 32, "rewards": [
        {"name": "wordle_reward", "weight": 1.0}, {"name": "wordle_valid_moves", "weight": 0.1},
        {"name": "wordle_solved", "weight": 0.0}]}))
    return root


@given(steps=st.integers(2, 9), seed=st.integers(0, 100))
@settings(max_examples=15, deadline=None)
def test_a_short_run_is_too_short_never_missing_a_logged_metric(tmp_path_factory, steps, seed):
    from agentgrpo.doctor import read_run
    from agentgrpo.doctor.diagnose import diagnose
    from agentgrpo.doctor.finding import MISSING

    run = read_run(_short_wordle_run(tmp_path_factory.mktemp("w") / "run", steps, seed))
    assert not [n for n in run.notes if "has no rewards/wordle_reward/mean column" in n or "is the total" in n]
    assert run.table.meta["reward_weights"] == {"wordle_reward": 1.0, "wordle_valid_moves": 0.1,
                                                "wordle_solved": 0.0}
    report = diagnose(run.table)
    for finding in report.findings:
        if finding.state == MISSING:  # only metrics this run never logged may be called missing
            logged = [m for m in run.table.columns if m in finding.verdict and run.table.has(m)]
            assert not logged, finding.verdict
    length = report.get("length")
    assert length.verdict == f"too short to judge: completions/mean_length has {steps} logged steps, need 10"


def test_a_logged_total_is_still_recognised_when_it_varies(tmp_path):
    from agentgrpo.doctor import read_run

    rows = [{"step": s, "reward": 0.1 * s + 0.05, "rewards/a/mean": 0.1 * s, "rewards/b/mean": 0.05,
             "rewards/total_of_all/mean": 0.1 * s + 0.05} for s in range(1, 13)]
    (tmp_path / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    run = read_run(tmp_path)
    assert "rewards/total_of_all/mean" not in run.table.columns and any("is the total" in n for n in run.notes)


# --- report folders of log files that share a stem -------------------------------------------------------


def test_logs_that_share_a_stem_get_their_own_report_folders(tmp_path, capsys):
    rows = [{"step": s, "reward": 0.1 * s, "loss": 0.01} for s in range(1, 31)]
    (tmp_path / "trunc.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "trunc.json").write_text(json.dumps({"log_history": rows}))
    for name in ("trunc.json", "trunc.jsonl"):
        main(["doctor", str(tmp_path / name)])
    capsys.readouterr()
    reports = sorted(p.parent.name for p in tmp_path.glob("doctor-*/report.html"))
    assert reports == ["doctor-trunc.json", "doctor-trunc.jsonl"]
