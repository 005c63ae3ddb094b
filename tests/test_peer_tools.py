"""benchmarks/peer_tools.py: a run converted for a peer reads back to the doctor's columns and values, and
the peers' findings map onto the doctor's modes. The conversion checks need no peer; the read-back through
each peer's own loader runs when that peer is installed (``pip install 'agentgrpo[peers]'``)."""

from __future__ import annotations

import importlib.util
import json
import math

import numpy as np
import pytest

from agentgrpo.doctor.modes import MODES
from agentgrpo.doctor.readers import read_run
from agentgrpo.doctor.table import MetricTable
from benchmarks import peer_tools as pt

NAMES = [
    "reward",
    "reward_std",
    "kl",
    "entropy",
    "completions/mean_length",
    "grad_norm",
    "loss",
    "rewards/fmt/mean",
    "rewards/correct/mean",
    "frac_reward_zero_std",
    "learning_rate",
    "eval/reward",
]


def generated(seed: int) -> MetricTable:
    """A table with gaps (values not logged), NaN logged as a value and infinities, at random."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(12, 80))
    steps = np.sort(rng.choice(np.arange(1, 5 * n), size=n, replace=False))
    recs = []
    for s in steps:
        rec = {"step": int(s)}
        for name in NAMES:
            u = rng.random()
            if u < 0.15:
                continue  # not logged
            if u < 0.2:
                rec[name] = math.nan
            elif u < 0.22:
                rec[name] = math.inf if rng.random() < 0.5 else -math.inf
            else:
                rec[name] = float(rng.normal(0, 10) ** 3)
        recs.append(rec)
    return MetricTable.from_records(recs)


def same_table(a: MetricTable, b: MetricTable) -> None:
    assert a.steps.tolist() == b.steps.tolist()
    assert sorted(a.columns) == sorted(b.columns)
    for k in a.columns:
        np.testing.assert_array_equal(a.columns[k], b.columns[k], err_msg=k)
    assert a.meta.get("nan_steps", {}) == b.meta.get("nan_steps", {})


@pytest.mark.parametrize("seed", range(12))
def test_jsonl_conversion_round_trips_through_the_doctor_reader(tmp_path, seed):
    table = generated(seed)
    back = read_run(pt.write_jsonl(table, tmp_path / "run.jsonl")).table
    same_table(table, back)


@pytest.mark.parametrize("seed", range(6))
def test_rlprobe_rows_and_rlwatch_calls_carry_every_logged_value(seed):
    table = generated(seed)
    recs = pt.records(table)
    rows = {r["step"]: r for r in pt.rlprobe_rows(recs)}
    calls = dict(pt.rlwatch_calls(recs))
    for peer, got in (("rlprobe", rows), ("rlwatch", calls)):
        for field, (steps, values) in pt.expected(table, peer).items():
            read = [got[s][field] for s in steps]
            np.testing.assert_array_equal(np.array(read), np.array(values), err_msg=f"{peer} {field}")
            # a step where it was not logged does not carry it
            assert all(field not in got[s] for s in set(got) - set(steps))
    for step, row in rows.items():  # components as rlprobe's reward_components; NaN/Inf counted
        i = table.steps.tolist().index(step)
        for comp in ("fmt", "correct"):
            col = table.columns.get(f"rewards/{comp}/mean")
            if col is not None and not math.isnan(col[i]):
                assert row["reward_components"][comp] == col[i]
        bad = sum(1 for k, v in pt.records(table)[i].items() if k != "step" and not math.isfinite(v))
        assert row.get("nan_count", 0) == bad


def test_compare_reports_a_changed_value_and_a_dropped_step():
    want = {"kl": ([1, 2, 3], [0.1, 0.2, math.nan])}
    assert pt.compare(want, {"kl": ([1, 2, 3], [0.1, 0.2, math.nan])}) == []
    assert "step 2" in pt.compare(want, {"kl": ([1, 2, 3], [0.1, 0.25, math.nan])})[0]
    assert "steps differ" in pt.compare(want, {"kl": ([1, 3], [0.1, math.nan])})[0]
    assert pt.compare(want, {}) == ["kl: not read"]
    assert pt.compare(want, {"kl": ([1, 2], [0.1, 0.2])}, drop="nan") == []
    inf = {"kl": ([1, 2], [0.1, math.inf])}
    assert pt.compare(inf, {"kl": ([1], [0.1])}, drop="nan") != []
    assert pt.compare(inf, {"kl": ([1], [0.1])}, drop="nonfinite") == []


def test_every_peer_detector_maps_onto_the_doctor_modes():
    for peer, table in pt.MODES.items():
        for detector, modes in table.items():
            assert set(modes) <= set(MODES) - {"convergence"}, (peer, detector)


@pytest.mark.parametrize("peer", list(pt.MODES))
def test_levels_and_unknown_detectors(peer):
    low, top = pt.SEVERITIES[peer][-2], pt.SEVERITIES[peer][-1]
    det = next(d for d, m in pt.MODES[peer].items() if m)
    warn = [{"detector": det, "severity": low, "step": 5}]
    crit = [{"detector": det, "severity": top, "step": 7}]
    assert pt.modes_named(peer, warn, "critical") == []
    assert pt.modes_named(peer, warn, "warn") == list(pt.MODES[peer][det])
    assert pt.modes_named(peer, crit, "critical") == list(pt.MODES[peer][det])
    assert pt.onset_of(peer, warn + crit, pt.MODES[peer][det], "warn") == 5
    assert pt.onset_of(peer, warn + crit, pt.MODES[peer][det], "critical") == 7
    if len(pt.SEVERITIES[peer]) > 2:  # info never counts
        assert pt.modes_named(peer, [{"detector": det, "severity": pt.SEVERITIES[peer][0]}], "warn") == []
    with pytest.raises(KeyError, match="no mapping"):
        pt.modes_named(peer, [{"detector": "something_new", "severity": top}], "critical")


def _installed(peer):
    return importlib.util.find_spec(pt.MODULES[peer]) is not None


@pytest.mark.parametrize("peer", list(pt.VERSIONS))
@pytest.mark.parametrize("seed", range(3))
def test_each_peer_reads_back_what_was_written(tmp_path, peer, seed):
    if not _installed(peer):
        pytest.skip(f"{peer} not installed ({pt.PIP})")
    table = generated(seed)
    recs = pt.records(table)
    if peer == "rldoctor":
        out = pt.run_rldoctor(pt.write_jsonl(table, tmp_path / "run.jsonl"))
    elif peer == "rlprobe":
        out = pt.run_rlprobe(pt.convert_rlprobe(pt.rlprobe_rows(recs), tmp_path / "probe"))
    else:
        out = pt.run_rlwatch(pt.rlwatch_calls(recs), tmp_path / "watch")
    want = pt.expected(table, peer)
    assert pt.compare(want, {k: tuple(v) for k, v in out["read"].items()}, drop=pt.DROPS[peer]) == []
    for f in out["findings"]:  # every detector it raised has a mapping
        pt.modes_named(peer, [f], "warn")


def test_the_tables_without_the_peers_installed(tmp_path, monkeypatch):
    """A fresh clone without the peers: the doctor's row is scored, each peer's says 'not installed'."""
    from benchmarks import doctor_synthetic as synthetic
    from benchmarks import peers

    labels = {}
    for name, expect in (("stall", "stall"), ("healthy", None)):
        case = synthetic.make(name, 60, 1)
        run = case.write(tmp_path)
        labels[run.name] = {"label": name, "accept": [expect] if expect else [], "onset": None}
    (tmp_path / "labels.json").write_text(json.dumps(labels), encoding="utf-8")
    monkeypatch.setitem(peers.CORPORA, "tmp", tmp_path)
    monkeypatch.setattr(peers, "installed", lambda peer: False)
    rows = peers.corpus("tmp", 4.0, 60.0, peers.PEERS, log=lambda *a: None)
    doctor = rows[0]
    assert (doctor.named, doctor.failing, doctor.clean, doctor.healthy) == (1, 1, 1, 1)
    assert all(r.cells()[-1] == "not installed" for r in rows[1:])
    assert peers.verdict(rows) == []
    assert "not installed" in peers.render(rows, markdown=True)
