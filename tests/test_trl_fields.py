"""The GRPOConfig / LoRA field table without importing TRL (`agentgrpo.trl_fields`), checked against TRL's
own dataclasses; and bad input to `agentgrpo train` refused before torch, transformers or TRL is imported
(issue 35, item 3)."""

from __future__ import annotations

import dataclasses
import enum
import json
import subprocess
import sys
import textwrap

import pytest

from agentgrpo import config, trl_fields

VALUES = [0, 1, -1, 8, 1.5, 1e-6, float("inf"), True, False, None, "", "x", "none", "steps", "linear", "adamw_torch",
          "no", "all", ["a"], ["a", "b"], [1, 2], [0.5], {"a": 1}, {"a": True}, ("a",), object()]


def _outcome(value, annotation):
    try:
        return "ok", config.coerce(value, annotation)
    except TypeError as exc:
        return "refused", str(exc)


@pytest.fixture(scope="module")
def real():
    return config._trl_tables()


def test_the_shipped_snapshot_is_trl_s_own_table_for_the_installed_versions(real):
    shipped = json.loads(trl_fields.SHIPPED.read_text(encoding="utf-8"))
    if shipped["versions"] != trl_fields.versions():
        pytest.skip(f"the shipped snapshot is for {shipped['versions']}; installed: {trl_fields.versions()}")
    assert shipped == json.loads(json.dumps(trl_fields.make(*real)))


@pytest.mark.parametrize("kind", ["grpo", "peft"])
def test_every_field_accepts_and_refuses_as_trl_s_annotation_does(real, kind):
    made = trl_fields.make(*real)
    table = real[0] if kind == "grpo" else real[1]
    snap = {n: trl_fields.from_schema(e["type"]) for n, e in made[kind].items()}
    assert set(snap) == set(table)
    for name, f in table.items():
        for value in VALUES:
            assert _outcome(value, snap[name]) == _outcome(value, f.type), (name, value, f.type)


def test_defaults_are_trl_s_own(real):
    made = trl_fields.make(*real)
    for name, f in real[0].items():
        default = f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default
        if isinstance(default, enum.Enum):
            default = default.value
        entry = made["grpo"][name]["default"]
        assert entry == default or entry == {"unknown_default": True}, name


def test_without_a_snapshot_trl_is_read_once_and_remembered(real, tmp_path, monkeypatch):
    monkeypatch.setattr(trl_fields, "SHIPPED", tmp_path / "none.json")
    monkeypatch.setenv("AGENTGRPO_CACHE", str(tmp_path / "cache"))
    trl_fields.snapshot.cache_clear()
    try:
        assert trl_fields.fields("grpo") is None
        grpo = config._grpo_fields()  # read from TRL, then written to the cache
        assert set(grpo) == set(real[0])
        assert list((tmp_path / "cache").glob("trl-fields-*.json"))
        assert set(trl_fields.fields("grpo")) == set(real[0])
        monkeypatch.setattr(trl_fields, "versions", lambda: {"python": "0.0", "trl": "other", "transformers": "x"})
        trl_fields.snapshot.cache_clear()
        assert trl_fields.fields("grpo") is None  # never used for other versions
    finally:
        trl_fields.snapshot.cache_clear()


@pytest.mark.parametrize("bad, said", [
    ("learning_rate: -1\nnum_generationz: 4\n", ["num_generationz: unknown option", "learning_rate: -1 must be"]),
    ("max_steps: two\n", ["max_steps: expected int, got str 'two'"]),
    ("loss_type: dapoo\n", ["loss_type: 'dapoo' is not a TRL GRPO loss"]),
    ("dynamic_sampling: refil\n", ["dynamic_sampling: expected one of ['off', 'filter', 'refill'], got 'refil'"]),
])
def test_train_refuses_bad_input_before_importing_torch_transformers_or_trl(tmp_path, bad, said):
    if trl_fields.snapshot() is None:
        pytest.skip("no field snapshot for the installed TRL yet (the first run writes it)")
    path = tmp_path / "bad.yaml"
    path.write_text("model: tiny\nmax_steps: 2\n" + bad if "max_steps" not in bad else "model: tiny\n" + bad)
    script = textwrap.dedent(f"""
        import sys
        from agentgrpo.cli import main
        status = main(["train", "--config", {str(path)!r}])
        heavy = sorted(m for m in ("torch", "transformers", "trl") if m in sys.modules)
        print("STATUS", status, "HEAVY", heavy)
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert "STATUS 2 HEAVY []" in done.stdout, (done.stdout, done.stderr[-2000:])
    for text in said:
        assert text in done.stderr, done.stderr
