"""report.html opens in a headless browser with the network blocked, and its charts render (screenshots).

Needs Chromium (Debian: ``apt-get install chromium``); skipped cleanly when it is not installed.
"""

from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest

from agentgrpo.doctor.diagnose import diagnose
from agentgrpo.doctor.readers import read_run
from agentgrpo.report import charts, html, svg
from benchmarks import doctor_synthetic as synthetic

BROWSER = next(
    (shutil.which(b) for b in ("chromium", "chromium-browser", "google-chrome") if shutil.which(b)), None
)
pytestmark = pytest.mark.skipif(BROWSER is None, reason="no chromium / google-chrome on PATH")

BLUE = (31, 119, 180)  # the second series of a chart (charts.PALETTE[0])
RED = (214, 39, 40)  # a failure onset marker


def screenshot(page, out, tmp_path, height=4200):
    """Screenshot ``page`` (a file) with every network request sent to a dead proxy."""
    cmd = [
        BROWSER,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--hide-scrollbars",
        "--no-first-run",
        f"--user-data-dir={tmp_path / 'profile'}",
        "--proxy-server=http://127.0.0.1:9",
        "--proxy-bypass-list=<-loopback>",
        f"--window-size=1240,{height}",
        f"--screenshot={out}",
        page.as_uri(),
    ]
    subprocess.run(cmd, check=True, timeout=120, capture_output=True)
    from PIL import Image

    return np.asarray(Image.open(out).convert("RGB")).astype(int)


def near(img, rgb, tol=40):
    return int((np.abs(img - np.array(rgb)).sum(axis=2) <= tol).sum())


def test_report_renders_with_charts_and_onsets(tmp_path):
    run = read_run(synthetic.make("collapse", 150, 1, 0.4).write(tmp_path / "runs"))
    report = diagnose(run.table)
    assert report.get("collapse").status == "failure"
    out = tmp_path / "report"
    page = html.write(run, report, out)
    img = screenshot(page, out / "shot.png", tmp_path)
    assert img.shape[1] == 1240 and (img < 250).any(axis=2).mean() > 0.02  # not a blank page
    assert near(img, BLUE) > 300  # chart lines were drawn (min length, components)

    panels = charts.build(run.table, report.findings)
    only_charts = out / "charts.html"
    only_charts.write_text(html.page("charts", [svg.render(c) for c in panels]), encoding="utf-8")
    img = screenshot(only_charts, out / "charts.png", tmp_path, height=2400)
    assert near(img, RED) > 100  # the collapse onset is marked on the charts
    assert near(img, BLUE) > 300
