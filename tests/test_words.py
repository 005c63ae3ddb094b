"""One word per concept (issue 37, item 6; README's "Words"): a retired synonym does not come back, and a run
logged under a metric's old name reads and charts as one logged under its new name."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from agentgrpo.doctor import names, read_run
from agentgrpo.report import charts, curves
from agentgrpo.training import dynamic_sampling as ds
from benchmarks import doctor_synthetic as synthetic

ROOT = Path(__file__).resolve().parents[1]
SCANNED = ("src", "docs", "README.md")
SUFFIXES = {".py", ".md", ".yaml", ".yml", ".json", ".toml", ".txt", ".html"}
# retired word -> the word that replaced it
RETIRED = {r"informative[ _-]?groups?\b": "mixed group (a group whose rewards differ)"}
# the only lines that may still name a retired word: the old metric name the doctor maps to the new one, and
# the glossary row that names the retired word
ALLOWED = {
    "src/agentgrpo/doctor/names.py": 'RENAMED = {"dynamic_sampling/informative_groups": DS_MIXED}',
    "README.md": "| **mixed group** |",
}
OLD, NEW = "dynamic_sampling/informative_groups", "dynamic_sampling/mixed_groups"


def retired_words(root: Path, allowed: dict[str, str] = ALLOWED) -> list[str]:
    """Every ``path:line: word`` under ``root``'s scanned trees that uses a retired word outside ``allowed``."""
    found = []
    for top in SCANNED:
        base = root / top
        files = [base] if base.is_file() else sorted(p for p in base.rglob("*") if p.suffix in SUFFIXES)
        for path in files:
            rel = path.relative_to(root).as_posix()
            for number, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
                for pattern in RETIRED:
                    if re.search(pattern, line, re.IGNORECASE) and not (
                        rel in allowed and line.strip().startswith(allowed[rel])
                    ):
                        found.append(f"{rel}:{number}: {line.strip()[:100]}")
    return found


def test_no_retired_synonym_in_code_or_docs():
    found = retired_words(ROOT)
    assert not found, "a retired word is back (use " + ", ".join(RETIRED.values()) + "):\n" + "\n".join(found)


@pytest.mark.parametrize("planted", ["Informative groups are kept", "def first_informative_group(x):",
                                     f'METRIC = "{OLD}"', "counts the INFORMATIVE-GROUP share"])
def test_the_scan_finds_a_planted_retired_word(tmp_path, planted):
    (tmp_path / "src" / "pkg").mkdir(parents=True)
    (tmp_path / "docs").mkdir()
    (tmp_path / "README.md").write_text("# a mixed group is one whose rewards differ\n", encoding="utf-8")
    (tmp_path / "src" / "pkg" / "ok.py").write_text('"""mixed groups only."""\n', encoding="utf-8")
    assert retired_words(tmp_path) == []
    (tmp_path / "docs" / "page.md").write_text(f"intro\n{planted}\n", encoding="utf-8")
    assert retired_words(tmp_path) == [f"docs/page.md:2: {planted}"]
    # the allowed line is allowed only where it is allowed
    (tmp_path / "src" / "pkg" / "names.py").write_text(ALLOWED["src/agentgrpo/doctor/names.py"] + "\n")
    assert len(retired_words(tmp_path)) == 2


def test_the_metric_has_one_name_in_the_trainer_and_the_doctor():
    assert ds.METRIC_MIXED == names.DS_MIXED == NEW
    assert names.canonical(OLD) == NEW and names.canonical("train/" + OLD) == NEW
    assert names.RENAMED == {OLD: NEW}


def _run(tmp_path: Path, key: str, seed: int) -> Path:
    """A run directory whose metrics.jsonl logs the mixed groups per step under ``key``."""
    rng = np.random.default_rng(seed)
    case = synthetic.make("healthy", 40, seed, 0.5)
    rows = [{**record, key: float(rng.integers(0, 9)), "dynamic_sampling/groups_dropped": float(rng.integers(0, 9)),
             "dynamic_sampling/generation_rounds": float(rng.integers(1, 4))} for record in case.records]
    run = tmp_path / f"{key.replace('/', '_')}-{seed}"
    run.mkdir()
    (run / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return run


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_run_logged_with_the_old_metric_name_reads_and_charts_the_same(tmp_path, monkeypatch, seed):
    old, new = read_run(_run(tmp_path, OLD, seed)), read_run(_run(tmp_path, NEW, seed))
    assert OLD not in old.table.columns and set(old.table.columns) == set(new.table.columns)
    for name in new.table.columns:
        np.testing.assert_array_equal(old.table[name], new.table[name])
    np.testing.assert_array_equal(old.table.steps, new.table.steps)

    def drawn(table):
        return {(c.key, s.label): (list(s.x), list(s.y)) for c in charts.build(table) for s in c.series}

    assert drawn(old.table) == drawn(new.table)
    assert (("dynamic_sampling", NEW)) in drawn(old.table)
    panels = {}
    monkeypatch.setattr(curves, "_grid", lambda p, out, title: panels.setdefault(str(out), p) and out)
    for run in (old, new):
        curves.plot_run_curves(run.source, run.source / "curves.png")
    first, second = ([(c.key, [(s.label, list(s.y)) for s in c.series]) for c in p] for p in panels.values())
    assert first == second
