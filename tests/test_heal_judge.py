"""The doctor on a healed run's final segment: a plateau at the level its lineage reached before the rollback
is convergence, not a stall; a plateau below it, or a lineage that never learned, stays a stall. Synthetic
run directories (the heal itself is carried out by `rollback`, as in a real run)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import yaml

from agentgrpo.doctor import diagnose, read_run
from agentgrpo.heal import history, rollback
from agentgrpo.heal.judge import diagnose_healed, logged_weights

SHADOW = "rewards/correct_answer/mean"


def _healed(tmp: Path, lineage, segment, *, switch: bool = False, seed: int = 0, logged=None) -> Path:
    """A run whose metrics.jsonl logged ``lineage`` (the true objective per step, from step 1), healed at
    step 30 (onset 25) back to checkpoint-20, then the final segment ``segment`` (steps 21..). ``switch``:
    the trained reward before the heal was a padded proxy (2 + the objective) and the heal switched to
    ``correct_answer``; ``logged``: the final segment's logged reward, when it is not the objective."""
    rng = np.random.default_rng(seed)
    run = tmp / "run"
    (run / "checkpoints").mkdir(parents=True)
    for step in (10, 20, 30):
        ckpt = run / "checkpoints" / f"checkpoint-{step}"
        ckpt.mkdir()
        (ckpt / "trainer_state.json").write_text(json.dumps({"global_step": step}))

    def row(step, value, trained):
        value = float(np.clip(value + rng.normal(0, 0.04), 0, 1))
        return {"step": step, "reward": trained(value), SHADOW: value, "reward_std": 0.3,
                "frac_reward_zero_std": 0.3, "entropy": 0.2, "completions/clipped_ratio": 0.0}

    proxy = (lambda v: 2.0 + v) if switch else (lambda v: v)
    rows = [row(s, v, proxy) for s, v in enumerate(lineage, start=1)]
    (run / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (run / "config.yaml").write_text(yaml.safe_dump({"learning_rate": 3e-4, "save_steps": 10,
                                                     "rewards": [{"name": "proxy"}]}))
    config = yaml.safe_load((run / "config.yaml").read_text())
    record = rollback.decide(run, {"detector": "hacking" if switch else "collapse", "onset": 25},
                             step=30, config=config, setting=config.get, heal_max=2,
                             heal_rewards=["correct_answer"] if switch else None)
    assert record["action"] == "resume" and record["checkpoint_step"] == 20
    rollback.plan(run, record)
    rollback.carry_out(run, record)
    final = [row(s, v, logged or (lambda v: v)) for s, v in enumerate(segment, start=21)]
    with open(run / "metrics.jsonl", "a") as fh:
        fh.writelines(json.dumps(r) + "\n" for r in final)
    return run


RISE = list(np.linspace(0.3, 0.9, 20)) + [0.9] * 10  # learned by step 20, then the abandoned steps


def _alone(run: Path):
    return diagnose(history.judged_segment(read_run(run)).table)


@pytest.mark.parametrize("switch", [False, True])
def test_a_final_segment_holding_the_level_its_lineage_reached_is_converged(tmp_path, switch):
    run = _healed(tmp_path, RISE, [0.92] * 50, switch=switch)
    assert "stall" in [f.detector for f in _alone(run).failures]  # judged alone, the flat segment is a stall
    judged, report = diagnose_healed(read_run(run))
    assert not report.failures and report.verdict in ("converged", "saturated")
    assert report.get("stall").verdict.startswith("no stall: the final segment holds the level")
    assert report.first_step == 21  # still the final segment's report
    assert any("read with the lineage" in n for n in judged.notes)
    if switch:  # the lineage's reward is the new rewards' (correct_answer), not the proxy it trained then
        assert any("1 x correct_answer" in e for e in report.get("stall").evidence)


def test_a_plateau_below_the_lineages_level_stays_a_stall(tmp_path):
    run = _healed(tmp_path, RISE, [0.45] * 50)
    _, report = diagnose_healed(read_run(run))
    assert "stall" in [f.detector for f in report.failures]


def test_a_lineage_that_never_learned_stays_a_stall(tmp_path):
    run = _healed(tmp_path, [0.5] * 30, [0.5] * 50)
    _, report = diagnose_healed(read_run(run))
    assert "stall" in [f.detector for f in report.failures]


def test_a_recomputed_reward_that_does_not_match_the_logged_one_gives_no_context(tmp_path):
    """The heal switched rewards, but the segment's logged reward is not the named rewards' sum: the lineage's
    reward cannot be rebuilt, so the segment is judged alone (and the note says why)."""
    run = _healed(tmp_path, RISE, [0.92] * 50, switch=True, logged=lambda v: 0.5 * v)
    judged, report = diagnose_healed(read_run(run))
    assert "stall" in [f.detector for f in report.failures]
    assert any("does not match" in n for n in judged.notes)


def test_a_run_without_heals_is_judged_as_the_doctor_judges_it(tmp_path):
    run = tmp_path / "plain"
    run.mkdir()
    (run / "metrics.jsonl").write_text("".join(json.dumps({"step": s, "reward": 0.9}) + "\n" for s in range(1, 41)))
    source = read_run(run)
    judged, report = diagnose_healed(source)
    assert judged is source and [f.to_dict() for f in report.findings] == [
        f.to_dict() for f in diagnose(source.table).findings]


def test_logged_weights_name_rewards_as_trl_logs_them():
    assert logged_weights(["correct_answer"]) == {"correct_answer": 1.0}
    assert logged_weights([{"name": "m:length_bonus", "alias": "bonus", "weight": 2}, "x:y",
                           {"name": "shadow", "weight": 0}]) == {"bonus": 2.0, "y": 1.0}
    assert logged_weights("[a, b]") == {"a": 1.0, "b": 1.0} and logged_weights([3]) == {}


def test_the_live_doctor_of_a_healed_segment_reads_a_stall_with_the_lineage(tmp_path):
    """A healed segment's live doctor sees its own steps only (`heal.loop`); with `live_judge` it reads a
    stall as `agentgrpo doctor` does afterwards, so the segment that holds its lineage's level is not
    stopped as a stall; one below it still is."""
    from agentgrpo.doctor.live import LiveDoctorCallback as LiveDoctor
    from agentgrpo.heal.judge import live_judge

    for level, stalled in ((0.92, False), (0.45, True)):
        run = _healed(tmp_path / str(level), RISE, [level] * 50)
        segment = [r for r in map(json.loads, (run / "metrics.jsonl").read_text().splitlines()) if r["step"] > 20]
        plain, healed = (LiveDoctor(every=5, stop_on=["stall"], run_dir=run, print_fn=None) for _ in range(2))
        healed.judge = live_judge(run)
        for doctor in (plain, healed):
            doctor.feed(segment)
        assert "stall" in [f.detector for f in plain.check(70).failures]
        assert ("stall" in [f.detector for f in healed.check(70).failures]) is stalled
