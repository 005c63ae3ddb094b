"""Issue 36's kinds of miss, each a principle on generated runs of several lengths, seeds and onsets: a
quantity logged under another name is found by its name pattern and values (and ``--metric`` overrides it),
a column never finite is not logged, entropy is judged as a fraction of its own start, KL's growth is judged
against the reward's movement (drift bought with nothing is a failure; steady drift bought with a rising
objective is not a blow-up), most groups without a reward spread is named beside a stall, a mean length
pinned at the top of its own distribution is truncation, a batch whose lengths do not vary is one output."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
from doctor_cases import assert_case_holds, failures_of, generated_cases

from agentgrpo.doctor.diagnose import diagnose
from agentgrpo.doctor.readers import read_run
from agentgrpo.doctor.readers.discover import candidates, tokens
from agentgrpo.doctor.table import MetricTable
from benchmarks import doctor_synthetic as synthetic

PRINCIPLES = [
    "kl_renamed",
    "never_finite_column",
    "entropy_frozen",
    "kl_drift_flat",
    "kl_steady_learning",
    "zero_variance_majority_stall",
    "length_at_cap_means_only",
    "length_plateau_means_only",
    "degenerate_repetition",
    "kl_creep_then_climb",
]
CASES = generated_cases(PRINCIPLES)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_principle_on_generated_runs(case, tmp_path):
    assert_case_holds(case, *failures_of(case.write(tmp_path)))


def _table(columns: dict[str, np.ndarray]) -> MetricTable:
    n = len(next(iter(columns.values())))
    return MetricTable.from_records([{"step": i + 1, **{k: float(v[i]) for k, v in columns.items()}} for i in range(n)])


@pytest.mark.parametrize("seed", range(5))
def test_discovery_takes_a_measurement_and_never_a_setting_or_a_bound(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(20, 200))
    kl = np.abs(rng.normal(0.1, 0.05, n))
    columns = {
        "reward": rng.random(n),
        "kl_coef": np.full(n, 0.04),  # a setting: constant
        "kl_max": kl * 3,  # a bound, not the mean
        "policy/KL_avg": kl,
        "prompt_length_mean": rng.normal(80, 5, n),  # the prompt, not the completion
        "gen_len_tokens_mean": rng.normal(300, 20, n),
        "ent_per_token": np.abs(rng.normal(0.6, 0.1, n)),
        "entropy_bonus": np.abs(rng.normal(0.6, 0.1, n)),
    }
    table = _table(columns)
    assert [c for _, c in candidates(table, "kl")] == ["policy/KL_avg"]
    assert [c for _, c in candidates(table, "completions/mean_length")] == ["gen_len_tokens_mean"]
    assert [c for _, c in candidates(table, "entropy")] == ["ent_per_token"]
    negative = _table({"reward": rng.random(n), "kl_avg": -np.abs(kl) - 1})  # not a KL's values
    assert candidates(negative, "kl") == []


def test_tokens_split_camel_case_and_separators():
    assert tokens("train/policy.klDivMean") == ["train", "policy", "kl", "div", "mean"]


def test_the_report_says_which_column_it_read_and_metric_overrides(tmp_path):
    case = synthetic.make("kl_renamed", 200, 1, 0.4)
    for r in case.records:
        r["kl_est"] = r["kl_avg"] * 0 + 0.01 + 0.001 * (r["step"] % 3)  # a second qualifying column
    run = case.write(tmp_path)
    found = read_run(run)
    assert found.table.meta["sources"]["kl"] == "kl_avg"
    assert any("kl read from 'kl_avg'" in n and "--metric" in n for n in found.notes)
    cli = [sys.executable, "-m", "agentgrpo.cli", "doctor", str(run), "--no-report"]
    text = subprocess.run(cli, capture_output=True, text=True).stdout
    assert "columns read: " in text and "kl <- kl_avg" in text
    out = subprocess.run([*cli, "--json", "--metric", "kl=kl_est"], capture_output=True, text=True)
    payload = json.loads(out.stdout)
    assert payload["meta"]["sources"]["kl"] == "kl_est"
    assert "kl" not in payload["failures"]  # the flat column chosen by the user is judged, not the discovered one


@pytest.mark.parametrize("name", ["grad_norm", "kl", "entropy", "loss"])
def test_a_column_never_finite_is_not_logged(name, tmp_path):
    case = synthetic.make("healthy", 150, 3)
    for r in case.records:
        r[name] = float("nan")
    run = read_run(case.write(tmp_path))
    assert name not in run.table.columns and any("never computed" in n for n in run.notes)
    report = diagnose(run.table)
    assert not report.failures, report.headline
    # NaN after finite values is still an instability
    for r in case.records[100:]:
        r[name] = float("nan")
    for r in case.records[:100]:
        r[name] = 0.5
    assert "instability" in [f.detector for f in diagnose(read_run(case.write(tmp_path)).table).failures]


@pytest.mark.parametrize("seed", range(3))
def test_zero_variance_is_named_beside_the_stall_not_instead(seed, tmp_path):
    report = diagnose(read_run(synthetic.make("zero_variance_majority_stall", 200, seed).write(tmp_path)).table)
    assert {"stall", "zero_variance"} <= {f.detector for f in report.failures}, report.headline
    assert report.get("zero_variance").state == "majority"


def test_a_steady_drift_bought_with_reward_is_a_warning_with_its_reason(tmp_path):
    report = diagnose(read_run(synthetic.make("kl_steady_learning", 300, 1).write(tmp_path)).table)
    kl = report.get("kl")
    assert kl.status == "warning" and kl.state == "drift" and "bought with reward" in " ".join(kl.evidence)


@pytest.mark.parametrize("seed", range(3))
def test_a_batch_whose_lengths_vary_is_no_fixed_output(seed, tmp_path):
    case = synthetic.make("healthy", 200, seed)
    rng = np.random.default_rng(seed)
    for r in case.records:  # a logged spread of lengths, small but never zero (and one step at 0 by chance)
        r["response_length/std"] = float(abs(rng.normal(0.02, 0.01)) * r["completions/mean_length"]) + 0.6
    case.records[50]["response_length/std"] = 0.0
    report = diagnose(read_run(case.write(tmp_path)).table)
    assert not report.failures, report.headline


def _with_samples(case, tmp_path, fixed_from: int | None, per_prompt_same: bool = False):
    """The case's run directory with completions.jsonl: 4 prompts x 4 samples per step; from ``fixed_from``
    every prompt gets one degenerate answer (or, with ``per_prompt_same``, each prompt its own fixed answer)."""
    for r in case.records:
        for key in ("entropy", "completions/min_length", "completions/max_length"):
            r.pop(key, None)
    run = case.write(tmp_path)
    rng = np.random.default_rng(0)
    lines = []
    for r in case.records:
        for p in range(4):
            for _ in range(4):
                if fixed_from is not None and r["step"] >= fixed_from:
                    text = f"answer for prompt {p}" if per_prompt_same else "7 7 7 7 7 7 7 7"
                else:
                    text = f"sample {rng.integers(1 << 30)}"
                lines.append(json.dumps({"step": r["step"], "prompt": f"puzzle {p}", "completion": text}))
    (run / "completions.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return run


@pytest.mark.parametrize("seed", range(2))
@pytest.mark.parametrize("n, onset", [(80, 0.4), (300, 0.6)])
def test_one_answer_for_every_prompt_in_the_samples_is_a_collapse(seed, n, onset, tmp_path):
    case = synthetic.make("stall", n, seed)
    start = int(onset * n) + 1
    report = diagnose(read_run(_with_samples(case, tmp_path, start)).table)
    collapse = {f.detector: f for f in report.failures}.get("collapse")
    assert collapse is not None, report.headline
    assert abs(collapse.onset - start) <= 0.12 * (report.last_step - report.first_step)


def test_each_prompt_its_own_answer_is_not_one_fixed_output(tmp_path):
    case = synthetic.make("stall", 200, 1)
    report = diagnose(read_run(_with_samples(case, tmp_path, 80, per_prompt_same=True)).table)
    assert "collapse" not in [f.detector for f in report.failures], report.headline
