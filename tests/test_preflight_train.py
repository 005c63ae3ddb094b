"""`agentgrpo train` runs the preflight first: preflight.json in the run dir, shown in the doctor's report;
a failed audit refuses to train unless strict_preflight: false."""

from __future__ import annotations

import json

import pytest

from agentgrpo.errors import UserError
from agentgrpo.plan import resolve_plan

PLANTED = """
def any_number(completions, answer, **kwargs):
    text = lambda c: " ".join(str(m.get("content") or "") for m in c)
    return [1.0 if str(a) in text(c) else 0.0 for c, a in zip(completions, answer)]
"""


def test_strict_preflight_refuses_an_exploitable_reward_before_training(tmp_path, monkeypatch):
    from agentgrpo import pipeline

    (tmp_path / "planted_rewards_mod.py").write_text(PLANTED)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(pipeline, "_grpo", lambda *a: pytest.fail("GRPO must not start"))
    cfg = resolve_plan(
        "src/agentgrpo/configs/demo.yaml",
        {
            "rewards": [{"name": "planted_rewards_mod:any_number", "weight": 1.0}],
            "strict_preflight": True,
            "runs_dir": str(tmp_path / "runs"),
            "run_name": "strict",
            "eval_before": False,
        },
    )
    with pytest.raises(UserError, match="reward audit failed"):
        pipeline.run(cfg)
    record = json.loads((tmp_path / "runs" / "strict" / "preflight.json").read_text())
    assert record["audit"]["verdict"] == "fail" and "signal" not in record


def test_preflight_record_and_report_section(tmp_path, tiny_sft_dir):
    from agentgrpo.doctor.diagnose import diagnose
    from agentgrpo.doctor.readers import read_run
    from agentgrpo.preflight.run import read_preflight, run_preflight
    from agentgrpo.report import html
    from agentgrpo.tasks import get_task
    from benchmarks import doctor_synthetic as synthetic

    run_dir = synthetic.make("hacking", 40, 0, 0.4).write(tmp_path / "run")
    cfg = resolve_plan("src/agentgrpo/configs/demo.yaml")
    assert cfg.run.preflight and cfg.run.strict_preflight  # on by default; a failed audit stops the run
    lines = []
    record = run_preflight(cfg, get_task("calculator"), str(tiny_sft_dir), run_dir, say=lines.append)
    assert record["audit"]["ok"] and record["signal"]["k"] == 8 and record["signal"]["prompts"] == 16
    assert read_preflight(run_dir)["signal"]["verdict"] == record["signal"]["verdict"]
    assert any("signal check" in line for line in lines) and any("audit PASS" in line for line in lines)
    run = read_run(run_dir)
    page = html.render(run, diagnose(run.table))
    assert "<h2>Preflight</h2>" in page and "audit pass" in page and "token fidelity: OK" in page


def test_preflight_false_skips_it(tmp_path, monkeypatch):
    from agentgrpo import pipeline

    monkeypatch.setattr(pipeline, "_grpo", lambda *a: (_ for _ in ()).throw(RuntimeError("stop here")))
    cfg = resolve_plan(
        "src/agentgrpo/configs/demo.yaml",
        {"preflight": False, "eval_before": False, "runs_dir": str(tmp_path), "run_name": "off"},
    )
    with pytest.raises(RuntimeError, match="stop here"):
        pipeline.run(cfg)
    assert not (tmp_path / "off" / "preflight.json").exists()
