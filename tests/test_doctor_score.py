"""`agentgrpo doctor --score DIR --labels FILE` on a generated labelled corpus, and bad labels files."""

from __future__ import annotations

import json

import pytest

from agentgrpo.cli import main
from agentgrpo.doctor.score import load_labels, score_dir, totals
from agentgrpo.errors import UserError
from benchmarks import doctor_synthetic as synthetic


def _corpus(tmp_path, labels):
    for name, (scenario, seed) in {
        "healthy.jsonl": ("healthy", 0),
        "collapse.jsonl": ("collapse", 1),
        "kl.jsonl": ("kl_spike", 2),
    }.items():
        case = synthetic.make(scenario, 150, seed, 0.5)
        (tmp_path / name).write_text("".join(json.dumps(r) + "\n" for r in case.records), encoding="utf-8")
    path = tmp_path / "labels.json"
    path.write_text(json.dumps({"_rule": "test", **labels}), encoding="utf-8")
    return path


GOOD = {
    "healthy.jsonl": {"label": "healthy", "accept": [], "onset": None},
    "collapse.jsonl": {"label": "collapse", "accept": ["collapse"], "onset": 76},
    "kl.jsonl": {"label": "KL spike", "accept": ["kl_blowup"], "forbid": ["signal"], "onset": 76},
}


def test_score_prints_each_run_and_the_totals(tmp_path, capsys):
    _corpus(tmp_path, GOOD)
    code = main(["doctor", "--score", str(tmp_path), "--strict"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "recall 2/2 = 1.00 (per mode: collapse 1/1, kl 1/1)" in out
    assert "failures on healthy runs 0/1" in out and "unreadable 0/3" in out and "bounds: all hold" in out
    for name in GOOD:
        assert name in out


def test_strict_fails_on_a_missed_bound(tmp_path, capsys):
    labels = dict(GOOD, **{"healthy.jsonl": {"label": "stall", "accept": ["stall"], "onset": 1}})
    path = _corpus(tmp_path, labels)
    assert main(["doctor", "--score", str(tmp_path), "--labels", str(path)]) == 0  # reported, not enforced
    assert main(["doctor", "--score", str(tmp_path), "--labels", str(path), "--strict"]) == 1
    out = capsys.readouterr().out
    assert "MISS" in out and "MISSED: recall 0.67 < 0.9" in out


def test_unclear_runs_are_shown_not_scored(tmp_path):
    labels = dict(GOOD, **{"collapse.jsonl": {"label": "unclear: maybe", "accept": ["stall"], "onset": 1}})
    rows = score_dir(tmp_path, load_labels(_corpus(tmp_path, labels)))
    t = totals(rows)
    assert t.failing == 1 and t.hits == 1 and t.runs == 3


@pytest.mark.parametrize(
    "labels, message",
    [
        ({"a.jsonl": {"label": "x", "accept": ["explosion"]}}, "a.jsonl: 'accept': unknown failure mode 'explosion'"),
        ({"a.jsonl": {"label": "x", "accept": "kl"}}, "'accept' must be a list"),
        ({"a.jsonl": {"accept": []}}, "expected {'label': str"),
        ({"a.jsonl": {"label": "x", "onset": "early"}}, "'onset' must be a step number or null"),
    ],
)
def test_bad_labels_files_name_the_entry(tmp_path, labels, message):
    path = tmp_path / "labels.json"
    path.write_text(json.dumps(labels), encoding="utf-8")
    with pytest.raises(UserError, match=message.replace("(", r"\(").replace("{", r"\{")):
        load_labels(path)


def test_a_labelled_file_that_is_absent_is_an_error(tmp_path):
    labels = load_labels(_corpus(tmp_path, dict(GOOD, **{"gone.jsonl": {"label": "healthy", "accept": []}})))
    with pytest.raises(UserError, match="1 labelled file\\(s\\) not in"):
        score_dir(tmp_path, labels)


def test_a_run_unreadable_for_a_missing_extra_is_named_with_the_extra(tmp_path, monkeypatch, capsys):
    """`benchmarks/public-runs` scores 19 of 19 with the `tensorboard` extra; on the default install one run
    (a TensorBoard event file) cannot be read: the score says which run and which extra (issue 35, item 8)."""
    import shutil
    import sys
    from pathlib import Path

    public = Path(__file__).resolve().parents[1] / "benchmarks" / "public-runs"
    name = "cas_wordle4070_entropy_collapse.tfevents"
    shutil.copy(public / name, tmp_path / name)
    labels = {name: json.loads((public / "labels.json").read_text(encoding="utf-8"))[name]}
    (tmp_path / "labels.json").write_text(json.dumps({"_rule": "test", **labels}), encoding="utf-8")
    for module in [m for m in sys.modules if m == "tensorboard" or m.startswith("tensorboard.")] + ["tensorboard"]:
        monkeypatch.setitem(sys.modules, module, None)  # the default install: no tensorboard (an earlier test
        # may have imported its submodules, which an import finds in sys.modules before the package)
    main(["doctor", "--score", str(tmp_path), "--labels", str(tmp_path / "labels.json")])
    out = capsys.readouterr().out
    assert f"unreadable 1/1: {name} (reading TensorBoard event files needs tensorboard: pip install" in out, out
    assert "agentgrpo[tensorboard]" in out and "recall 0/1" in out
