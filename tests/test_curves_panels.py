"""curves.png draws the dynamic sampling panel where the run logged `dynamic_sampling/*` (issue 35, item 8:
they were only in report.html), and leaves it out where it did not."""

from __future__ import annotations

import json

import pytest

from agentgrpo.report import curves
from benchmarks import doctor_synthetic as synthetic

DS = ("dynamic_sampling/mixed_groups", "dynamic_sampling/groups_dropped", "dynamic_sampling/generation_rounds")


def _panels(tmp_path, monkeypatch, with_ds: bool, seed: int):
    case = synthetic.make("healthy", 60, seed, 0.5)
    rows = []
    for i, record in enumerate(case.records):
        extra = dict(zip(DS, (4 - i % 3, i % 3, 1 + i % 2))) if with_ds else {}
        rows.append({**record, **extra})
    run = tmp_path / f"run-{with_ds}-{seed}"
    run.mkdir()
    (run / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    drawn = {}
    monkeypatch.setattr(curves, "_grid", lambda panels, out, title: drawn.setdefault("panels", panels) and out)
    curves.plot_run_curves(run, run / "curves.png")
    return {p.key: p for p in drawn["panels"]}


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_curves_png_has_the_dynamic_sampling_panel_where_logged(tmp_path, monkeypatch, seed):
    panels = _panels(tmp_path, monkeypatch, True, seed)
    assert "dynamic_sampling" in panels and "reward" in panels
    labels = {s.label for s in panels["dynamic_sampling"].series}
    assert labels == set(DS)
    series = {s.label: s.y for s in panels["dynamic_sampling"].series}
    assert list(series[DS[1]][:3]) == [0, 1, 2]  # the logged values, not a summary
    assert "dynamic_sampling" not in _panels(tmp_path, monkeypatch, False, seed)
