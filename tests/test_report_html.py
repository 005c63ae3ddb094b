"""report.html is self-contained (no script, no external resource) and carries curves, onsets and verdicts."""

from __future__ import annotations

import re

import numpy as np

from agentgrpo.doctor.diagnose import diagnose
from agentgrpo.doctor.readers import read_run
from agentgrpo.report import charts, html, svg
from agentgrpo.report.curves import plot_run_curves
from benchmarks import doctor_synthetic as synthetic


def _report(tmp_path, scenario="hacking", n=120):
    run = read_run(synthetic.make(scenario, n, 0, 0.4).write(tmp_path))
    return run, diagnose(run.table)


def test_page_is_self_contained(tmp_path):
    run, report = _report(tmp_path)
    page = html.render(run, report)
    assert "<script" not in page and "<link" not in page and "@import" not in page
    urls = set(re.findall(r"(?:src|href)\s*=\s*[\"']([^\"']+)", page))
    assert not urls, urls
    assert set(re.findall(r"https?://[^\s\"'<>]+", page)) <= {"http://www.w3.org/2000/svg"}


def test_page_has_verdict_findings_and_marked_onsets(tmp_path):
    run, report = _report(tmp_path)
    page = html.render(run, report)
    hacking = report.get("hacking")
    assert report.verdict == "failure" and hacking.status == "failure"
    assert "reward hacking" in page and hacking.fix[:30] in page
    assert f"hacking onset @ {hacking.onset}" in page
    assert "correct (shadow)" in page  # shadow reward drawn beside the trained one
    for key in ("reward", "reward_std", "zero_std", "kl", "entropy", "length", "truncation"):
        assert f'aria-label="{_title(key)}"' in page


def _title(key):
    return next(title for k, title, _ in charts.PANELS if k == key)


def test_log_scale_for_kl_spanning_decades(tmp_path):
    run, report = _report(tmp_path, "kl_blowup")
    kl = next(c for c in charts.build(run.table, report.findings) if c.key == "kl")
    assert kl.log_y and kl.markers and "(log y)" in svg.render(kl)


def test_long_series_are_thinned_but_keep_spikes():
    x = np.arange(50_000)
    y = np.zeros(50_000)
    y[31_337] = 7.0
    tx, ty = charts.thin(x, y, 600)
    assert len(tx) <= 600 and ty.max() == 7.0 and 31_337 in tx


def test_pngs_and_curves_png(tmp_path):
    from agentgrpo.report import png

    run, report = _report(tmp_path, "length_gaming")
    panels = charts.build(run.table, report.findings)
    paths = png.write(panels, tmp_path / "png")
    assert {p.name for p in paths} >= {"reward.png", "length.png"}
    assert all(p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for p in paths)
    curves = plot_run_curves(run.source, tmp_path / "curves.png")
    assert curves is not None and curves.stat().st_size > 10_000
    assert plot_run_curves(tmp_path / "empty-dir-without-logs", tmp_path / "none.png") is None
