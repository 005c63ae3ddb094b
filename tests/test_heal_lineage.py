"""A healed run ends with the best model its lineage produced, says what each segment did and why it ended,
counts every segment's steps and tokens, and the doctor reads it even when its lineage logged nothing
(issue 35, item 2). Heal histories are generated: segments trained (rows and checkpoints written as the
recorder and the trainer write them), heals decided and carried out by the real `rollback` code."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from agentgrpo import rundir
from agentgrpo.heal import history, rollback
from agentgrpo.launch.cost import run_cost

PER_STEP = 8  # completions per step in the generated runs (per_device_train_batch_size)


def _setting(values):
    from agentgrpo.config import trl_default

    return lambda k: values[k] if k in values else trl_default(k)


class Sim:
    """A run directory trained segment by segment; the oracle counts every row it ever logged."""

    def __init__(self, root: Path, save_steps: int, seed: int, refill: bool = True):
        self.run = root / "run"
        self.run.mkdir(parents=True)
        self.save_steps, self.rng, self.refill = save_steps, random.Random(seed), refill
        self.config = {"learning_rate": 0.05, "temperature": 1.0, "beta": 0.0, "save_steps": save_steps,
                       "per_device_train_batch_size": PER_STEP, "max_steps": 200, "run_name": "run"}
        (self.run / "config.yaml").write_text(yaml.safe_dump(self.config))
        self.logged: list[dict] = []  # every row any segment logged
        self.quality: dict[int, float] = {}  # the held-out success of each checkpoint
        self._ckpt(0)

    def _ckpt(self, step: int) -> None:
        path = self.run / "checkpoints" / f"checkpoint-{step}"
        path.mkdir(parents=True, exist_ok=True)
        (path / "model.safetensors").write_text(f"weights {step}")
        (path / "trainer_state.json").write_text(json.dumps({"global_step": step}))
        self.quality[step] = round(self.rng.random(), 3)

    def start(self) -> int:
        """The step the next segment resumes from (the last heal's rollback, else 0)."""
        return history.final_segment_start(self.run) or 0

    def train(self, steps: int) -> list[dict]:
        """Log ``steps`` more steps from the current start (appending to metrics.jsonl, as the recorder does)."""
        start = self.start()
        lineage = [r for r in rundir.read_jsonl(self.run / "metrics.jsonl") if r["step"] <= start]
        tokens = lineage[-1]["num_tokens"] if lineage else 0.0
        rows = []
        for step in range(start + 1, start + steps + 1):
            length = self.rng.randint(40, 480) / PER_STEP  # a mean over the step's completions
            tokens += PER_STEP * (length + 30)
            row = {"step": step, "reward": self.rng.random(), "completions/mean_length": length,
                   "num_tokens": tokens, "time": 1000.0 + len(self.logged) + len(rows)}
            if self.refill:  # refill rounds: more generated than one batch's mean length shows
                row["dynamic_sampling/generated_tokens"] = float(self.rng.randint(1, 4) * PER_STEP * int(length))
            rows.append(row)
            if step % self.save_steps == 0:
                self._ckpt(step)
        with open(self.run / "metrics.jsonl", "a") as fh:
            fh.writelines(json.dumps(r) + "\n" for r in rows)
        (self.run / "final").mkdir(exist_ok=True)
        (self.run / "final" / "model.safetensors").write_text("end of segment")
        self.logged += rows
        return rows

    def heal(self, mode: str, onset: int, heal_max: int, score=None) -> dict:
        config = yaml.safe_load((self.run / "config.yaml").read_text())
        step = max(r["step"] for r in rundir.read_jsonl(self.run / "metrics.jsonl"))
        record = rollback.decide(self.run, {"detector": mode, "onset": onset, "verdict": "generated",
                                            "evidence": []}, step=step, config=config,
                                 setting=_setting(config), heal_rewards=None, heal_max=heal_max, score=score)
        rollback.plan(self.run, record)
        rollback.carry_out(self.run, record)
        return record


def _oracle_tokens(rows: list[dict]) -> int:
    return round(sum(r.get("dynamic_sampling/generated_tokens", r["completions/mean_length"] * PER_STEP)
                     for r in rows))


@given(seed=st.integers(0, 10_000), heal_max=st.integers(0, 3), save_steps=st.integers(1, 6),
       lengths=st.lists(st.integers(1, 25), min_size=1, max_size=5), refill=st.booleans(),
       last=st.sampled_from(["collapse", "stall", "finish"]))
@settings(max_examples=60, deadline=None)
def test_every_segment_is_counted_listed_and_a_stop_ends_at_the_best_checkpoint(tmp_path_factory, seed, heal_max,
                                                                                 save_steps, lengths, refill, last):
    sim = Sim(tmp_path_factory.mktemp("lineage"), save_steps, seed, refill)
    rng = random.Random(seed)
    stopped = None
    own = []  # the steps each segment logged itself
    for i, n in enumerate(lengths):
        rows = sim.train(n)
        own.append(n)
        mode = last if i == len(lengths) - 1 else "collapse"
        if mode == "finish":
            break
        onset = rng.choice(rows)["step"]
        record = sim.heal(mode, onset, heal_max, score=lambda path: sim.quality[int(path.name.split("-")[1])])
        if record["action"] != "resume":
            stopped = record
            break
    else:
        if record["action"] == "resume":
            own.append(0)  # the run resumed and has not logged a step yet

    segments = history.segments(sim.run)
    assert [len(s["rows"]) for s in segments] == own  # every segment, each with its own steps
    cost = run_cost(sim.run)
    assert cost["steps"] == len(sim.logged)
    assert cost["tokens_generated"] == _oracle_tokens(sim.logged)  # refill rounds included, every segment
    assert cost["tokens_trained"] == round(sum(PER_STEP * (r["completions/mean_length"] + 30) for r in sim.logged))
    lines = history.segment_lines(sim.run, PER_STEP)
    heals = history.heals(sim.run)
    assert len(lines) == (len(segments) if heals else 0)
    for line, h in zip(lines, heals, strict=False):
        assert f"heal {h['heal']}: {h['mode']}" in line  # why it ended: the heal that ended it, by its mode

    if stopped is not None:
        mode, onset = stopped["mode"], int(stopped["onset"])
        # the checkpoints there were when it stopped: those left in checkpoints/ and those it moved to its segment
        folders = [sim.run / "checkpoints", history.segment_dir(sim.run, stopped["heal"]) / "checkpoints"]
        lineage = sorted({int(p.name.split("-")[1]) for f in folders for p in f.glob("checkpoint-*")})
        allowed = lineage if mode == "stall" else [s for s in lineage
                                                   if s + 1 + rollback.ONSET_MARGIN < onset or s == 0]
        evaluated = rollback.spread(allowed, rollback.MAX_EVALUATED) if len(allowed) > 1 else allowed
        best = max(evaluated, key=lambda s: (sim.quality[s], s))
        assert stopped["checkpoint_step"] == best
        assert (sim.run / "final" / "model.safetensors").read_text() == f"weights {best}"
        if len(heals) > 1 and heal_max and len(heals) > heal_max:
            assert f"this segment ended on {mode}" in stopped["reason"]


def _the_reported_case(tmp_path: Path) -> Sim:
    """Issue 35: a collapse-inducing rate, healed once, relapsed, healed again, stalled, heal_max 2: the stall
    named on a segment whose lineage holds checkpoint-0 only before it."""
    sim = Sim(tmp_path, save_steps=5, seed=7)
    sim.quality.update({0: 0.30})
    sim.train(4)
    first = sim.heal("collapse", onset=3, heal_max=2)  # rolled back to checkpoint-0
    sim.train(6)
    second = sim.heal("collapse", onset=4, heal_max=2)  # relapse: checkpoint-0 again, the rate cut
    assert first["action"] == second["action"] == "resume" and second["checkpoint_step"] == 0
    sim.train(30)  # checkpoints 5..30 of the healed segment
    sim.quality.update({5: 0.31, 10: 0.42, 15: 0.55, 20: 0.51, 25: 0.40, 30: 0.38})
    return sim


def test_the_reported_case_ends_at_the_best_checkpoint_and_says_what_happened(tmp_path, capsys):
    from agentgrpo.cli import main

    sim = _the_reported_case(tmp_path)
    evaluated = []

    def score(path):
        evaluated.append(path.name)
        return sim.quality[int(path.name.split("-")[1])]

    stop = sim.heal("stall", onset=2, heal_max=2, score=score)  # the stall dated at the segment's start
    assert stop["action"] == "stop" and stop["checkpoint_step"] == 15  # not checkpoint-0: the best held-out
    assert "highest held-out success: 0.550 at checkpoint-15" in stop["chosen_by"]
    assert len(evaluated) <= rollback.MAX_EVALUATED and "checkpoint-30" in evaluated
    assert "heal 1: collapse at step 4, heal 2: collapse at step 6" in stop["reason"]
    assert "this segment ended on stall" in stop["reason"] and "came back after" not in stop["reason"]
    assert (sim.run / "final" / "model.safetensors").read_text() == "weights 15"

    cost = run_cost(sim.run)
    assert cost["steps"] == 4 + 6 + 30 and cost["segments"] == 3
    assert cost["tokens_generated"] == _oracle_tokens(sim.logged) > 0
    assert "40 steps in 3 segments" in cost["summary"]
    lines = history.segment_lines(sim.run, PER_STEP)
    assert lines[0].startswith("segment 1 (from the start): steps 1-4, 4 steps")
    assert "ended: heal 1: collapse (onset step 3)" in lines[0] and "resumed with learning_rate" in lines[0]
    assert lines[2].startswith("segment 3 (from the start): steps 1-30, 30 steps")
    assert "ended: heal 3: stall (onset step 2) named at step 30; stopped: the run ends at checkpoint-15" in lines[2]

    out_dir = tmp_path / "report"
    assert main(["doctor", str(sim.run), "--out", str(out_dir)]) in (0, 1)
    printed = capsys.readouterr().out
    assert "heal history (heal.jsonl):" in printed and "segment 3 (from the start)" in printed
    page = (out_dir / "report.html").read_text()
    assert "Heal history" in page and "<h3>Segments</h3>" in page and "stall" in page


@pytest.mark.parametrize("cut", ["to nothing", "to before the last segment"])
def test_the_doctor_reads_a_healed_run_whose_lineage_logged_nothing(tmp_path, capsys, cut):
    """The stop ends at a checkpoint before the step its segment resumed from (checkpoint-0: metrics.jsonl
    keeps no row; or an earlier one: no row of the last segment); the doctor judges the segment the stop
    abandoned and writes the report with the heal history."""
    from agentgrpo.cli import main

    if cut == "to nothing":
        sim = Sim(tmp_path, save_steps=50, seed=3)
        sim.train(24)
        stop = sim.heal("stall", onset=20, heal_max=0)  # only checkpoint-0 was saved
        assert stop["checkpoint_step"] == 0 and not rundir.read_jsonl(sim.run / "metrics.jsonl")
    else:
        sim = Sim(tmp_path, save_steps=5, seed=3)
        sim.train(30)
        assert sim.heal("collapse", onset=29, heal_max=1)["checkpoint_step"] == 25
        sim.train(24)  # steps 26-49
        stop = sim.heal("collapse", onset=27, heal_max=1)  # relapse: back before checkpoint-25
        assert stop["action"] == "stop" and stop["checkpoint_step"] == 20
        assert max(r["step"] for r in rundir.read_jsonl(sim.run / "metrics.jsonl")) == 20
    out_dir = tmp_path / "report"
    status = main(["doctor", str(sim.run), "--json", "--out", str(out_dir)])
    report = json.loads(capsys.readouterr().out)
    assert status in (0, 1) and report["steps"] == 24  # the abandoned last segment, judged on its own steps
    assert any("the doctor reads the segment heal" in n for n in report["notes"])
    assert report["heals"][-1]["action"] == "stop" and len(report["segments"]) == len(history.segments(sim.run))
    page = (out_dir / "report.html").read_text()
    assert "Heal history" in page and "<h3>Segments</h3>" in page


def test_the_train_summary_lists_every_segment_and_the_cost_line_counts_them(tmp_path):
    from agentgrpo.pipeline import RunResult, summary_lines

    sim = _the_reported_case(tmp_path)
    sim.heal("stall", onset=2, heal_max=2, score=lambda path: sim.quality[int(path.name.split("-")[1])])
    lines = summary_lines(RunResult(run_dir=sim.run, model_path="tiny"))
    segments = [line for line in lines if line.startswith("segment ")]
    assert len(segments) == 3 and all("ended: heal" in line for line in segments)
    tokens = [int(line.split(" tokens generated")[0].rsplit(", ", 1)[1].replace(",", "")) for line in segments]
    assert sum(tokens) == run_cost(sim.run)["tokens_generated"] == _oracle_tokens(sim.logged)


# --- a healed run that finishes normally ends with the best model of its lineage (issue 35) ---------------------

SHADOW = "rewards/correct_answer/mean"
REWARDS = [{"name": "m:proxy"}, {"name": "correct_answer", "weight": 0}]


class Lineage(Sim):
    """`Sim` whose models are told apart (each checkpoint and each segment's last model has its own content), with
    a random shadow curve when ``shadow``; the oracle tracks the lineage (rows, checkpoints) itself."""

    def __init__(self, root: Path, save_steps: int, seed: int, shadow: bool):
        self.made, self.shadow = 0, shadow
        self.lineage_rows: list[dict] = []
        self.lineage_ckpts: dict[int, str] = {}  # step -> the content of the lineage's checkpoint-step
        super().__init__(root, save_steps, seed)
        if shadow:
            self.config["rewards"] = REWARDS
            (self.run / "config.yaml").write_text(yaml.safe_dump(self.config))

    def _ckpt(self, step: int) -> None:
        super()._ckpt(step)
        self.made += 1
        content = f"model {self.made}"
        (self.run / "checkpoints" / f"checkpoint-{step}" / "model.safetensors").write_text(content)
        self.lineage_ckpts[step] = content
        self.quality[content] = round(self.rng.choice([0.2, 0.4, 0.6]), 3)  # coarse: ties happen

    def train(self, steps: int) -> list[dict]:
        rows = super().train(steps)
        if self.shadow:  # a random shadow curve, coarse so that windows tie
            for row in rows:
                row[SHADOW] = self.rng.choice([0.0, 0.5, 1.0])
            kept = [r for r in rundir.read_jsonl(self.run / "metrics.jsonl") if r["step"] <= rows[0]["step"] - 1]
            (self.run / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in [*kept, *rows]))
        self.made += 1
        (self.run / "final" / "model.safetensors").write_text(f"last model {self.made}")
        self.quality[f"last model {self.made}"] = round(self.rng.choice([0.2, 0.4, 0.6]), 3)
        self.lineage_rows += rows
        return rows

    def heal(self, mode: str, onset: int, heal_max: int, score=None) -> dict:
        record = super().heal(mode, onset, heal_max, score)
        cut = record["checkpoint_step"]
        self.lineage_rows = [r for r in self.lineage_rows if r["step"] <= cut]
        self.lineage_ckpts = {s: c for s, c in self.lineage_ckpts.items() if s <= cut}
        return record

    def content(self, path: Path) -> str:
        return (Path(path) / "model.safetensors").read_text()


def _shadow_oracle(rows: list[dict], step: int) -> float | None:
    window = [r[SHADOW] for r in rows if step - 1 <= r["step"] <= step + 1]
    return sum(window) / len(window) if window else None


def _healed_then_finished(tmp_path_factory, seed, save_steps, lengths, shadow) -> Lineage:
    sim = Lineage(tmp_path_factory.mktemp("final"), save_steps, seed, shadow)
    rng = random.Random(seed)
    for n in lengths[:-1]:
        rows = sim.train(n)
        record = sim.heal("collapse", rng.choice(rows)["step"], heal_max=10)
        assert record["action"] == "resume"  # the collapse remedy always cuts the rate: every heal resumes
    sim.train(lengths[-1])  # the last segment runs to its end
    return sim


@given(seed=st.integers(0, 10_000), save_steps=st.integers(1, 6),
       lengths=st.lists(st.integers(1, 20), min_size=2, max_size=4))
@settings(max_examples=60, deadline=None)
def test_a_healed_run_that_finishes_ends_at_the_best_of_its_lineage_by_the_shadow(tmp_path_factory, seed,
                                                                                  save_steps, lengths):
    from agentgrpo.heal import final

    sim = _healed_then_finished(tmp_path_factory, seed, save_steps, lengths, shadow=True)
    last_content = sim.content(sim.run / "final")
    last = max(r["step"] for r in sim.lineage_rows)
    heals_before = history.heals(sim.run)
    called = []
    record = final.finish(sim.run, sim.config, score=lambda p: called.append(p) or 0.0)
    assert not called  # the shadow decides: no evaluation spent
    # the oracle: the lineage's checkpoints (never an abandoned one) before the last step, and the last model
    candidates = [(v, s, sim.lineage_ckpts[s]) for s in sorted(sim.lineage_ckpts) if s < last
                  for v in [_shadow_oracle(sim.lineage_rows, s)] if v is not None]
    candidates.append((_shadow_oracle(sim.lineage_rows, last), last, last_content))
    value, step, content = max(candidates, key=lambda c: (c[0], c[1]))  # ties: the later; the last model last
    assert sim.content(sim.run / "final") == content
    assert record["checkpoint_step"] == (None if step == last else step) and record["finished"] == last
    assert record["chosen_by"] == "shadow correct_answer"
    assert record["scores"] == {("the last model" if s == last else f"checkpoint-{s}"): pytest.approx(v, abs=1e-6)
                                for v, s, _ in candidates}
    if step != last:
        assert sim.content(sim.run / "segments" / final.LAST / "final") == last_content
        assert (sim.run / "final" / "ROLLED_BACK_FROM").read_text().strip() == f"checkpoint-{step}"
        assert not (sim.run / "final" / "trainer_state.json").exists()
        assert f"checkpoint-{step} had the higher shadow correct_answer: {value:.3f} vs " in record["reason"]
    else:
        assert not (sim.run / "segments" / final.LAST).exists()
    assert history.heals(sim.run) == heals_before  # the record is no heal
    line = history.lines(sim.run)[-1]
    assert line.startswith(f"final model: the run finished at step {last}; ") and record["reason"] in line
    assert record["reason"] in history.segment_lines(sim.run)[-1]


def test_ties_keep_the_last_model(tmp_path_factory):
    from agentgrpo.heal import final

    sim = _healed_then_finished(tmp_path_factory, 5, 2, [9, 12], shadow=True)
    rows = rundir.read_jsonl(sim.run / "metrics.jsonl")
    (sim.run / "metrics.jsonl").write_text("".join(json.dumps({**r, SHADOW: 0.5}) + "\n" for r in rows))
    last_content = sim.content(sim.run / "final")
    (sim.run / "final" / "ROLLED_BACK_FROM").write_text("checkpoint-4\n")  # stale: left by an earlier choice
    record = final.finish(sim.run, sim.config)
    assert record["checkpoint_step"] is None and set(record["scores"].values()) == {0.5}
    assert not (sim.run / "final" / "ROLLED_BACK_FROM").exists()
    assert len(record["scores"]) > 2 and sim.content(sim.run / "final") == last_content
    assert "final/ is its last model: the highest shadow correct_answer, 0.500" in record["reason"]


@given(seed=st.integers(0, 10_000), save_steps=st.integers(1, 4),
       lengths=st.lists(st.integers(1, 25), min_size=2, max_size=3))
@settings(max_examples=40, deadline=None)
def test_without_a_shadow_the_held_out_scorer_chooses_among_at_most_max_evaluated(tmp_path_factory, seed,
                                                                                  save_steps, lengths):
    from agentgrpo.heal import final

    sim = _healed_then_finished(tmp_path_factory, seed, save_steps, lengths, shadow=False)
    last = max(r["step"] for r in sim.lineage_rows)
    last_content = sim.content(sim.run / "final")
    scored = []

    def score(path):
        scored.append((Path(path), sim.content(path)))
        return sim.quality[sim.content(path)]

    record = final.finish(sim.run, sim.config, score=score)
    lineage = [s for s in sorted(sim.lineage_ckpts) if s < last]
    if not lineage:
        assert not scored and record["checkpoint_step"] is None
        return
    assert 1 < len(scored) <= rollback.MAX_EVALUATED and len(scored) == min(len(lineage) + 1, rollback.MAX_EVALUATED)
    assert scored[-1] == (sim.run / "final", last_content)  # the last model always evaluated
    allowed = {sim.lineage_ckpts[s] for s in lineage}
    assert {c for _p, c in scored[:-1]} <= allowed  # never an abandoned checkpoint
    steps = [int(p.name.split("-")[1]) for p, _c in scored[:-1]] + [last]
    value, step = max(((sim.quality[c], s) for (_p, c), s in zip(scored, steps, strict=True)))
    assert record["checkpoint_step"] == (None if step == last else step)
    assert record["chosen_by"] == "held-out success"
    expected = last_content if step == last else sim.lineage_ckpts[step]
    assert sim.content(sim.run / "final") == expected


def test_a_run_that_never_healed_is_left_as_it_is(tmp_path):
    from agentgrpo.heal import final

    sim = Lineage(tmp_path, save_steps=3, seed=1, shadow=True)
    sim.train(20)
    before = sim.content(sim.run / "final")
    called = []
    assert final.finish(sim.run, sim.config, score=lambda p: called.append(p) or 1.0) is None
    assert not called and not (sim.run / "heal.jsonl").exists() and sim.content(sim.run / "final") == before
    assert history.lines(sim.run) == [] and history.segment_lines(sim.run) == []


def test_a_run_whose_last_heal_stopped_is_not_chosen_again(tmp_path):
    from agentgrpo.heal import final

    sim = Lineage(tmp_path, save_steps=5, seed=2, shadow=False)
    sim.train(12)
    assert sim.heal("stall", onset=10, heal_max=0)["action"] == "stop"
    called = []
    assert final.finish(sim.run, sim.config, score=lambda p: called.append(p) or 1.0) is None and not called


def _checkpoint_wins(tmp_path) -> Lineage:
    """Healed once, then finished at step 20; checkpoint-10 had the highest shadow."""
    sim = Lineage(tmp_path, save_steps=5, seed=4, shadow=True)
    sim.train(8)
    assert sim.heal("collapse", onset=6, heal_max=2)["checkpoint_step"] == 0
    sim.train(20)
    rows = rundir.read_jsonl(sim.run / "metrics.jsonl")
    curve = {s: (0.93 if 9 <= s <= 11 else 0.88 if s >= 19 else 0.5) for s in range(1, 21)}
    (sim.run / "metrics.jsonl").write_text("".join(json.dumps({**r, SHADOW: curve[r["step"]]}) + "\n" for r in rows))
    return sim


def test_the_choice_is_said_by_the_summary_the_doctor_and_the_report(tmp_path, capsys):
    from agentgrpo.cli import main
    from agentgrpo.heal import final
    from agentgrpo.pipeline import RunResult, summary_lines

    sim = _checkpoint_wins(tmp_path)
    record = final.finish(sim.run, sim.config)
    said = ("the run finished at step 20; checkpoint-10 had the higher shadow correct_answer: 0.930 vs 0.880 for "
            "the last model: final/ is checkpoint-10")
    assert record["checkpoint_step"] == 10 and said in history.lines(sim.run)[-1]
    assert said in "\n".join(summary_lines(RunResult(run_dir=sim.run, model_path="tiny")))
    assert "ran to its end (step 20); checkpoint-10 had the higher shadow" in history.segment_lines(sim.run)[-1]
    assert sim.content(sim.run / "final") == sim.lineage_ckpts[10]
    out_dir = tmp_path / "report"
    assert main(["doctor", str(sim.run), "--out", str(out_dir)]) in (0, 1)
    printed = capsys.readouterr().out
    assert said in printed and "final/ is checkpoint-10" in (out_dir / "report.html").read_text()
    # a heal after it (the run resumed for more steps) makes the choice history: no longer the last word
    config = yaml.safe_load((sim.run / "config.yaml").read_text())
    sim.heal("collapse", onset=18, heal_max=5)
    assert history.heals(sim.run)[-1]["heal"] == 2 and history.final_choice(sim.run) is None
    assert not any(line.startswith("final model:") for line in history.lines(sim.run)) and config


@pytest.mark.parametrize("merge", [True, False])
def test_final_merged_follows_the_chosen_model(tmp_path, merge):
    from agentgrpo.heal import final

    sim = _checkpoint_wins(tmp_path)
    (sim.run / "final-merged").mkdir()
    (sim.run / "final-merged" / "model.safetensors").write_text("merged last model")
    merged = []

    def merge_adapter(adapter_dir, out_dir):
        merged.append(sim.content(adapter_dir))
        Path(out_dir).mkdir()
        (Path(out_dir) / "model.safetensors").write_text(f"merged {sim.content(adapter_dir)}")

    record = final.finish(sim.run, sim.config, merge=merge_adapter if merge else None)
    assert record["checkpoint_step"] == 10
    kept = sim.run / "segments" / final.LAST
    if merge:
        assert merged == [sim.lineage_ckpts[10]]
        assert sim.content(sim.run / "final-merged") == f"merged {sim.lineage_ckpts[10]}"
        assert "final-merged/ merged again from it" in history.lines(sim.run)[-1]
    else:
        assert not (sim.run / "final-merged").exists()
        assert sim.content(kept / "final-merged") == "merged last model"
        assert "moved to segments/last/" in history.lines(sim.run)[-1]
    assert not list(sim.run.glob("*.tmp")) and not list(sim.run.glob("*.chosen"))
