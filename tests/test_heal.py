"""Healing (on_failure: heal): the remedy table, the choice of checkpoint, the rollback on the run directory,
a heal killed half-way, bad input, and the learning rate a heal sets. Synthetic run directories; the
end-to-end heals on the tiny model are in tests/test_heal_training.py."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from agentgrpo.doctor.modes import MODES, Mode
from agentgrpo.errors import ConfigError
from agentgrpo.heal import history, rollback
from agentgrpo.heal.remedies import COLLAPSE_LR, REMEDIES, Situation

SRC = Path(__file__).resolve().parent.parent / "src"


# --- the table --------------------------------------------------------------------------------------------


def test_the_remedy_table_covers_every_mode_the_doctor_reports():
    assert set(REMEDIES) == set(Mode) and {m.value for m in REMEDIES} == set(MODES)
    for mode, remedy in REMEDIES.items():
        assert remedy.fix, mode
        if remedy.change is None:  # an explicit stop says why
            assert remedy.stop_reason and remedy.changes(Situation(setting=lambda k: None)) is None, mode


def _setting(values):
    from agentgrpo.config import trl_default

    return lambda k: values[k] if k in values else trl_default(k)


@given(lr=st.floats(1e-7, 1.0), temperature=st.floats(0.1, 2.0), beta=st.floats(0.0, 1.0))
@settings(max_examples=60, deadline=None)
def test_remedies_change_what_the_fix_line_says_and_are_absolute(lr, temperature, beta):
    values = {"learning_rate": lr, "temperature": temperature, "beta": beta}
    setting = _setting(values)
    collapse = REMEDIES[Mode.COLLAPSE].changes(Situation(setting=setting))
    assert collapse["learning_rate"] == pytest.approx(lr * COLLAPSE_LR, rel=5e-3) and collapse["learning_rate"] < lr
    assert collapse.get("temperature", temperature) == max(temperature, 1.0)
    assert collapse.get("beta", beta) == (beta or 0.04)  # "keep beta > 0"
    kl = REMEDIES[Mode.KL].changes(Situation(setting=setting))
    assert kl["beta"] >= max(2 * beta, 0.04) * (1 - 5e-3) and kl["learning_rate"] < lr
    # applied once, the same remedy computed on the changed settings goes one step further, never back
    again = REMEDIES[Mode.COLLAPSE].changes(Situation(setting=_setting({**values, **collapse})))
    assert again["learning_rate"] < collapse["learning_rate"] and "temperature" not in again


@given(peak=st.floats(1e-6, 1.0), rates=st.lists(st.floats(0.0, 2.0), max_size=6))
@settings(max_examples=60, deadline=None)
def test_the_learning_rate_is_cut_from_the_rate_the_policy_broke_at(peak, rates):
    """A collapse that began while the schedule was below its peak (warm-up) cuts from the rate in effect then."""
    broke = [{"step": i + 2, "learning_rate": r * peak} for i, r in enumerate(rates)]
    new = REMEDIES[Mode.COLLAPSE].changes(Situation(setting=_setting({"learning_rate": peak}), broke=broke))
    oracle = COLLAPSE_LR * min([peak, *(r * peak for r in rates if r * peak > 0)])
    assert new["learning_rate"] == pytest.approx(oracle, rel=5e-3)
    assert new["learning_rate"] <= peak * COLLAPSE_LR * 1.005


@given(peak=st.floats(1e-6, 1.0), warmup=st.integers(0, 8), ckpt=st.sampled_from([0, 2, 4]),
       onset=st.integers(1, 14), decay=st.booleans(), relapse=st.booleans())
@settings(max_examples=60, deadline=None)
def test_the_rate_it_broke_at_is_read_from_the_updates_up_to_the_onset(tmp_path_factory, peak, warmup, ckpt,
                                                                      onset, decay, relapse):
    """Generated schedules (linear warm-up from 0, then flat or decaying; the logged rate of step s is the
    rate of update s). A first failure: the heal cuts from the lowest positive rate of the updates after the
    rollback checkpoint, up to the onset (the peak when none ran at a positive rate). A relapse (the rate now
    is one an earlier heal set): from that rate, the peak, whatever its warm-up logged. Never a rate above
    the peak's cut, never one below the cut of the lowest rate that ran."""
    def rate(s):  # the rate of update s (s = 1, 2, ...), as a Trainer logs it
        up = (s - 1) / warmup if warmup and s - 1 < warmup else 1.0
        return peak * up * (max(0.1, 1 - (s - 1 - warmup) / 40) if decay and s - 1 >= warmup else 1.0)

    run = _run(tmp_path_factory.mktemp("lr"), steps=16, ckpts=(ckpt,), lr=peak)
    rows = [{"step": s, "learning_rate": rate(s)} for s in range(1, 17)]
    (run / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    if relapse:
        history.append(run, {"heal": 1, "status": "done", "action": "resume", "mode": "collapse",
                             "checkpoint_step": 0, "changes": {"learning_rate": [peak * 30, peak]}})
    onset = max(onset, ckpt + 1)
    record = _decide(run, onset=onset)
    if record["action"] != "resume":
        return
    ran = [rate(s) for s in range(record["checkpoint_step"] + 1, onset + rollback.ONSET_MARGIN + 1) if rate(s) > 0]
    expected = COLLAPSE_LR * (peak if relapse else min([peak, *ran]))
    new = record["changes"]["learning_rate"][1]
    assert new == pytest.approx(expected, rel=5e-3) and new <= COLLAPSE_LR * peak * 1.005
    assert new >= COLLAPSE_LR * min(ran or [peak]) * (1 - 5e-3)


def test_a_relapse_dated_in_the_healed_warm_up_cuts_from_the_healed_rate(tmp_path):
    """The planted collapse, healed to 0.0015 from checkpoint-1, relapses; the doctor dates the relapse at
    step 2, in the healed segment's warm-up (rate 3e-4): the heal cuts from the healed rate (0.0015 ->
    4.5e-5), not from its warm-up's 3e-4 (-> 9e-6, two cuts for one relapse); a first failure dated there
    cuts from the warm-up's rate, the rate it broke at."""
    run = _run(tmp_path, steps=30, ckpts=(0, 1, 10, 20), lr=0.0015)
    rows = [{"step": 1, "learning_rate": 0.0}] + [{"step": s, "learning_rate": 0.0015 * min(1.0, (s - 1) / 5)}
                                                   for s in range(2, 31)]
    (run / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert _decide(run, onset=2)["changes"]["learning_rate"] == [0.0015, 9e-06]  # first failure: from 3e-4
    history.append(run, {"heal": 1, "status": "done", "action": "resume", "mode": "collapse", "checkpoint_step": 1,
                         "changes": {"learning_rate": [0.05, 0.0015]}})
    record = _decide(run, onset=2)
    assert record["checkpoint_step"] == 0 and record["changes"]["learning_rate"] == [0.0015, 4.5e-05]


def test_hacking_stops_unless_fallback_rewards_are_named_and_length_lowers_the_cap():
    setting = _setting({"max_completion_length": 96})
    assert REMEDIES[Mode.HACKING].changes(Situation(setting=setting)) is None
    assert REMEDIES[Mode.HACKING].changes(Situation(setting=setting, heal_rewards=["correct_answer"])) == {
        "rewards": ["correct_answer"]}
    rows = [{"step": s, "completions/max_length": m} for s, m in ((1, 18), (2, 27), (3, float("nan")))]
    length = REMEDIES[Mode.LENGTH].changes(Situation(setting=setting, rows=rows))
    assert length == {"mask_truncated_completions": True, "max_completion_length": 34}  # ceil(27 * 1.25)


# --- the checkpoint ---------------------------------------------------------------------------------------


def _ckpt(run: Path, step: int, complete: bool = True) -> Path:
    path = run / "checkpoints" / f"checkpoint-{step}"
    path.mkdir(parents=True, exist_ok=True)
    (path / "model.safetensors").write_text(f"weights {step}")
    (path / "optimizer.pt").write_text("optimizer")
    if complete:
        (path / "trainer_state.json").write_text(json.dumps({"global_step": step}))
    return path


def _run(tmp: Path, steps: int = 12, ckpts=(2, 4, 6, 8, 10), lr: float = 0.05) -> Path:
    run = tmp / "run"
    run.mkdir(parents=True, exist_ok=True)
    (run / "metrics.jsonl").write_text("".join(json.dumps({"step": s, "reward": s / 10, "completions/max_length": 20})
                                               + "\n" for s in range(1, steps + 1)))
    (run / "completions.jsonl").write_text("".join(json.dumps({"step": s, "completion": "x"}) + "\n"
                                                   for s in range(1, steps + 1, 5)))
    (run / "config.yaml").write_text(yaml.safe_dump({"learning_rate": lr, "run_name": "run", "save_steps": 2}))
    (run / "final").mkdir()
    (run / "final" / "model.safetensors").write_text("stopped model")
    for step in ckpts:
        _ckpt(run, step)
    return run


def _decide(run: Path, onset, mode: str = "collapse", heal_max: int = 2, heal_rewards=None) -> dict:
    config = yaml.safe_load((run / "config.yaml").read_text())
    return rollback.decide(run, {"detector": mode, "onset": onset, "verdict": "planted", "evidence": ["e"]},
                           step=12, config=config, setting=_setting(config), heal_rewards=heal_rewards,
                           heal_max=heal_max)


@given(saved=st.lists(st.tuples(st.integers(0, 60), st.booleans()), max_size=8), onset=st.integers(1, 70))
@settings(max_examples=80, deadline=None)
def test_a_heal_never_resumes_from_a_checkpoint_whose_weights_logged_the_onset(tmp_path_factory, saved, onset):
    run = _run(tmp_path_factory.mktemp("h"), ckpts=())
    for step, complete in saved:
        _ckpt(run, step, complete)
    complete = {s for s in {s for s, _ in saved} if (run / "checkpoints" / f"checkpoint-{s}" / "trainer_state.json")
                .is_file()}
    # step s+1 is the first sampled from checkpoint-s; the onset may come late by ONSET_MARGIN steps; the
    # starting model (checkpoint-0) precedes every update, so it comes before any onset
    oracle = max((s for s in complete if s + 1 + rollback.ONSET_MARGIN < onset or s == 0), default=None)
    record = _decide(run, onset)
    assert record["checkpoint_step"] == oracle
    if oracle is None:
        assert record["action"] == "stop" and f"no checkpoint before the onset (step {onset})" in record["reason"]
    else:
        assert record["action"] == "resume" and record["checkpoint"] == f"checkpoints/checkpoint-{oracle}"


# --- the rollback -----------------------------------------------------------------------------------------


def _state(run: Path) -> dict:
    """Every file under the run directory and its content (heal.jsonl without times)."""
    out = {}
    for path in sorted(run.rglob("*")):
        if path.is_file():
            text = path.read_text()
            if path.name == history.HEAL_LOG:
                text = [{k: v for k, v in json.loads(x).items() if not k.startswith("time")}
                        for x in text.splitlines()]
            out[str(path.relative_to(run))] = text
    return out


def test_a_heal_keeps_the_abandoned_segment_and_resumes_with_the_remedy(tmp_path):
    run = _run(tmp_path)
    before = (run / "metrics.jsonl").read_text()
    record = _decide(run, onset=8)
    assert (record["action"], record["checkpoint_step"]) == ("resume", 4)  # 4 + 1 + 2 < 8; 6 is too close
    assert record["changes"] == {"learning_rate": [0.05, 0.0015], "beta": [0.0, 0.04]}  # TRL's beta: 0.0
    rollback.plan(run, record)
    assert history.pending(run)["heal"] == 1  # on disk before anything moved
    rollback.carry_out(run, record)
    assert history.pending(run) is None and history.heals(run)[0]["status"] == "done"
    seg = run / "segments" / "1"
    assert (seg / "metrics.jsonl").read_text() == before  # the abandoned segment, whole
    assert sorted(p.name for p in (run / "checkpoints").iterdir()) == ["checkpoint-2", "checkpoint-4"]
    assert sorted(p.name for p in (seg / "checkpoints").iterdir()) == ["checkpoint-10", "checkpoint-6", "checkpoint-8"]
    assert [json.loads(x)["step"] for x in (run / "metrics.jsonl").read_text().splitlines()] == [1, 2, 3, 4]
    assert (seg / "final" / "model.safetensors").read_text() == "stopped model"
    assert yaml.safe_load((run / "config.yaml").read_text())["learning_rate"] == 0.0015
    assert [len(r["abandoned"]) for r in history.rollbacks(run)] == [8]  # steps 5-12 drawn as abandoned
    assert "rolled back to checkpoint-4; resumed with learning_rate 0.05 -> 0.0015" in history.lines(run)[0]


def test_a_stop_ends_at_the_checkpoint_before_the_onset(tmp_path):
    run = _run(tmp_path)
    record = _decide(run, onset=9, mode="hacking")
    assert record["action"] == "stop" and "no heal_rewards" in record["reason"]
    rollback.plan(run, record)
    rollback.carry_out(run, record)
    assert (run / "final" / "model.safetensors").read_text() == "weights 4"
    assert not (run / "final" / "optimizer.pt").exists() and (run / "final" / "ROLLED_BACK_FROM").is_file()
    assert (run / "segments" / "1" / "final" / "model.safetensors").read_text() == "stopped model"
    assert yaml.safe_load((run / "config.yaml").read_text())["learning_rate"] == 0.05  # unchanged


def test_hacking_with_fallback_rewards_switches_them(tmp_path):
    run = _run(tmp_path)
    record = _decide(run, onset=9, mode="hacking", heal_rewards=["correct_answer"])
    assert record["action"] == "resume" and record["config"]["rewards"] == ["correct_answer"]


@pytest.mark.parametrize("cut_at", ["logs kept", "checkpoints moved", "logs cut", "final kept", "settings written"])
def test_sigkill_during_a_heal_then_resume_loses_nothing(tmp_path, cut_at):
    """A process carrying out a heal is killed (SIGKILL) after each of its steps; finishing the pending heal
    (what --resume does first) leaves the run directory exactly as an uninterrupted heal does."""
    twin = _run(tmp_path / "twin")
    record = _decide(twin, onset=7)
    rollback.plan(twin, record)
    rollback.carry_out(twin, record)
    run = _run(tmp_path / "killed")
    rollback.plan(run, _decide(run, onset=7))
    script = textwrap.dedent(f"""
        import os, signal, sys
        from agentgrpo.heal import history, rollback
        def between(name):
            if name == {cut_at!r}:
                print("at", name, flush=True)
                os.kill(os.getpid(), signal.SIGKILL)
        rollback.carry_out({str(run)!r}, history.pending({str(run)!r}), between=between)
        """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(SRC)})
    assert done.returncode == -signal.SIGKILL and f"at {cut_at}" in done.stdout, done.stderr[-2000:]
    assert history.pending(run) is not None  # killed: unfinished
    assert rollback.finish_pending(run)["heal"] == 1
    assert _state(run) == _state(twin)


# --- bad input --------------------------------------------------------------------------------------------


def test_a_failure_before_the_first_checkpoint_stops_with_the_reason_and_leaves_the_run_intact(tmp_path):
    run = _run(tmp_path)
    before = _state(run)
    record = _decide(run, onset=2)
    assert record["action"] == "stop" and record["checkpoint_step"] is None
    assert "the first is checkpoint-2" in record["reason"] and "lower save_steps" in record["reason"]
    rollback.plan(run, record)
    rollback.carry_out(run, record)
    after = _state(run)
    assert after.pop(history.HEAL_LOG) and after == before  # only heal.jsonl was added


def test_no_checkpoint_at_all_says_none_was_saved(tmp_path):
    run = _run(tmp_path, ckpts=())
    record = _decide(run, onset=9)
    assert record["action"] == "stop" and "none was saved, not even the starting model" in record["reason"]
    assert "(save_steps 2" in record["reason"] and "StartCheckpoint" in record["reason"]


def test_heal_max_reached_stops_with_the_reason(tmp_path):
    run = _run(tmp_path)
    first = _decide(run, onset=9, heal_max=1)
    rollback.plan(run, first)
    rollback.carry_out(run, first)
    for step in (10, 12):
        _ckpt(run, step)
    second = _decide(run, onset=11, heal_max=1)
    assert second["heal"] == 2 and second["action"] == "stop" and second["checkpoint_step"] == 4
    assert "heal_max (1) reached" in second["reason"] and "collapse" in second["reason"]


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        ({"save_steps": 100}, "save_steps: 100 with max_steps 80: no checkpoint is saved before the run ends"),
        ({"save_strategy": "no"}, "save_strategy: 'no' with on_failure: heal"),
        ({"doctor_every": 0}, "on_failure: heal needs the live doctor"),
        ({"heal_max": -1}, "heal_max: -1 must be >= 0"),
        ({"on_failure": "retry"}, "on_failure: expected one of ['stop', 'heal'], got 'retry'"),
        ({"on_failure": "stop", "heal_rewards": ["correct_answer"]}, "heal_rewards: given, but on_failure is stop"),
        ({"heal_rewards": ["no_such_reward"]}, "heal_rewards: "),
    ],
)
def test_bad_heal_settings_are_refused_naming_the_field(overrides, expected):
    from agentgrpo.config import config_path
    from agentgrpo.plan import resolve_plan

    with pytest.raises(ConfigError) as err:
        resolve_plan(config_path("demo"), {"on_failure": "heal", **overrides}, cuda_available=False)
    assert any(expected in p for p in err.value.problems), err.value.problems


def test_good_heal_settings_pass():
    from agentgrpo.config import config_path
    from agentgrpo.plan import resolve_plan

    plan = resolve_plan(config_path("demo"), {"on_failure": "heal", "save_steps": 4,
                                              "heal_rewards": ["correct_answer"]}, cuda_available=False)
    assert (plan.run.on_failure, plan.run.heal_max) == ("heal", 2)


# --- the learning rate a heal sets ----------------------------------------------------------------------


@pytest.mark.parametrize("schedule", ["linear", "cosine", "constant_with_warmup"])
def test_a_resumed_schedule_runs_at_the_healed_learning_rate(schedule):
    """The rescaled optimizer follows the schedule a fresh run at the new rate would have, from the same step."""
    import torch
    from transformers import get_scheduler

    from agentgrpo.training.heal_callbacks import rescale_learning_rate

    def make(lr):
        opt = torch.optim.AdamW([torch.nn.Parameter(torch.zeros(2))], lr=lr)
        return opt, get_scheduler(schedule, opt, num_warmup_steps=3, num_training_steps=20)

    old, old_sched = make(0.05)
    for _ in range(6):
        old.step()
        old_sched.step()
    assert rescale_learning_rate(old, old_sched, 0.005) == pytest.approx(0.1)
    new, new_sched = make(0.005)
    for _ in range(6):
        new.step()
        new_sched.step()
    for _ in range(5):
        assert old.param_groups[0]["lr"] == pytest.approx(new.param_groups[0]["lr"], rel=1e-9, abs=1e-15)
        old.step(), old_sched.step(), new.step(), new_sched.step()
    assert rescale_learning_rate(old, old_sched, 0.005) == 1.0


# --- the doctor and the report on a healed run ------------------------------------------------------------


def test_the_doctor_judges_the_final_segment_and_lists_the_history(tmp_path, capsys):
    from agentgrpo.cli import main

    run = _run(tmp_path, steps=30, ckpts=(10, 20, 30))
    record = _decide(run, onset=25)
    rollback.plan(run, record)
    rollback.carry_out(run, record)
    with open(run / "metrics.jsonl", "a") as fh:  # the final segment: steps 21-40
        fh.writelines(json.dumps({"step": s, "reward": 0.5, "completions/max_length": 20}) + "\n"
                      for s in range(21, 41))
    main(["doctor", str(run), "--json", "--out", str(tmp_path / "dr")])
    report = json.loads(capsys.readouterr().out)
    assert report["first_step"] == 21 and report["steps"] == 20
    assert any("final segment is judged" in n for n in report["notes"])
    assert report["heals"][0]["checkpoint_step"] == 20 and report["heals"][0]["mode"] == "collapse"
    html = (tmp_path / "dr" / "report.html").read_text()
    assert "Heal history" in html and "rollback 1 (collapse)" in html and "abandoned segment 1" in html
    main(["doctor", str(run), "--no-report"])
    out = capsys.readouterr().out
    assert "heal history (heal.jsonl):" in out and "heal 1: step 12: collapse (onset step 25)" in out


def test_demo_heal_without_a_failure_is_refused(capsys):
    from agentgrpo.cli import main

    assert main(["demo", "--heal"]) == 2
    assert "--heal heals a planted failure: give --failure" in capsys.readouterr().err


def test_a_heal_rolls_back_before_the_earliest_sign_the_doctor_cites(tmp_path):
    """`agentgrpo demo --failure collapse --heal --seed 4` (tests/data/heal/, the first 25 logged steps, what
    the live doctor saw): update 2 (0.01) broke the policy, so step 3 logged reward 0 and identical groups,
    but entropy, the collapse's primary signal, fell only from step 7, the onset. The finding cites the
    groups going identical at step 2 (`first_sign`), and the heal rolls back before that: checkpoint-0, not
    checkpoint-3 (already broken: resumed from it, the run ended at 0% success)."""
    from agentgrpo.doctor import diagnose
    from agentgrpo.doctor.table import MetricTable

    data = Path(__file__).resolve().parent / "data" / "heal" / "collapse_seed4_metrics.jsonl"
    rows = [json.loads(line) for line in data.read_text().splitlines()]
    finding = diagnose(MetricTable.from_records(rows)).get("collapse")
    assert (finding.status, finding.onset, finding.first_sign) == ("failure", 7, 2)
    run = _run(tmp_path, steps=25, ckpts=(0, 1, 2, 3, 4, 5, 10, 20))
    (run / "metrics.jsonl").write_text(data.read_text())
    config = yaml.safe_load((run / "config.yaml").read_text())
    record = rollback.decide(run, finding.to_dict(), step=25, config=config, setting=_setting(config),
                             heal_rewards=None, heal_max=2)
    assert (record["checkpoint_step"], record["first_sign"], record["onset"]) == (0, 2, 7)
    assert record["changes"]["learning_rate"] == [0.05, 0.0003]  # update 2's 0.01, cut x0.03
    without = rollback.decide(run, {**finding.to_dict(), "first_sign": None}, step=25, config=config,
                              setting=_setting(config), heal_rewards=None, heal_max=2)
    assert without["checkpoint_step"] == 3  # the onset alone: 3 + 1 + ONSET_MARGIN < 7


# --- the model a stop ends with ---------------------------------------------------------------------------


def _shadow_run(tmp: Path, shadow: list[float], ckpts, weights=None) -> Path:
    """A run whose step s (1-based) logged shadow[s-1] for correct_answer (weight 0) and a rising proxy."""
    run = _run(tmp, steps=len(shadow), ckpts=ckpts)
    (run / "metrics.jsonl").write_text("".join(
        json.dumps({"step": s, "reward": s / 10, "rewards/proxy/mean": s / 10, "rewards/correct_answer/mean": v})
        + "\n" for s, v in enumerate(shadow, start=1)))
    rewards = weights or [{"name": "m:proxy", "alias": "proxy"}, {"name": "correct_answer", "weight": 0.0}]
    config = yaml.safe_load((run / "config.yaml").read_text())
    (run / "config.yaml").write_text(yaml.safe_dump({**config, "rewards": rewards}))
    return run


@given(shadow=st.lists(st.floats(0, 1), min_size=6, max_size=30),
       saved=st.sets(st.integers(0, 30), max_size=10), onset=st.integers(1, 32))
@settings(max_examples=60, deadline=None)
def test_a_stop_ends_at_the_checkpoint_before_the_onset_with_the_highest_shadow(tmp_path_factory, shadow, saved,
                                                                               onset):
    """Plain-Python oracle: among the checkpoints a rollback may use, the highest mean shadow over the logged
    steps s-1..s+1 (ties: the later one); with no logged step in any window, the last before the onset."""
    run = _shadow_run(tmp_path_factory.mktemp("s"), shadow, ckpts=sorted(saved))
    allowed = [s for s in sorted(saved) if s + 1 + rollback.ONSET_MARGIN < onset or (s == 0 and onset >= 1)]
    logged = dict(enumerate(shadow, start=1))
    scored = [(sum(w) / len(w), s) for s in allowed
              if (w := [logged[t] for t in (s - 1, s, s + 1) if t in logged])]
    oracle = max(scored)[1] if scored else (allowed[-1] if allowed else None)
    record = _decide(run, onset, mode="hacking")
    assert record["action"] == "stop" and record["checkpoint_step"] == oracle
    assert oracle is None or oracle + 1 + rollback.ONSET_MARGIN < onset or oracle == 0  # never after the onset


def test_hacking_that_eroded_the_shadow_before_its_onset_ends_at_the_best_checkpoint(tmp_path):
    # the shadow peaks at steps 8-10 and erodes from step 11; the proxy's exploit is dated at step 16
    shadow = [0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.9, 0.92, 0.9, 0.86, 0.82, 0.8, 0.7, 0.6, 0.5, 0.4]
    run = _shadow_run(tmp_path, shadow, ckpts=range(0, 17))
    record = _decide(run, onset=16, mode="hacking")
    assert record["checkpoint_step"] == 9 and "checkpoint-12" in record["chosen_by"]  # not the last, 12
    rollback.plan(run, record)
    rollback.carry_out(run, record)
    assert (run / "final" / "model.safetensors").read_text() == "weights 9"
    assert "chosen by the highest shadow correct_answer: 0.907 at checkpoint-9" in \
        history.lines(run)[0]


def test_without_a_shadow_reward_a_stop_ends_at_the_last_checkpoint_before_the_onset(tmp_path):
    shadow = [0.9, 0.5, 0.4, 0.3, 0.2, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1]
    run = _shadow_run(tmp_path, shadow, ckpts=(2, 4, 6, 8, 10), weights=[{"name": "m:proxy", "alias": "proxy"},
                                                                        {"name": "correct_answer", "weight": 1}])
    record = _decide(run, onset=9, mode="hacking")
    assert record["checkpoint_step"] == 4 and "chosen_by" not in record


def test_a_resumed_heal_is_not_moved_by_the_shadow(tmp_path):
    shadow = [0.9, 0.9, 0.9, 0.2, 0.2, 0.2, 0.2, 0.2, 0.2, 0.2, 0.2, 0.2]
    run = _shadow_run(tmp_path, shadow, ckpts=(2, 4, 6, 8, 10))
    record = _decide(run, onset=9, mode="collapse")  # the remedy resumes: from the last before the onset
    assert (record["action"], record["checkpoint_step"]) == ("resume", 4)
