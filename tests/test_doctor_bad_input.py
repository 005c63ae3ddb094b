"""Issue 20's bad input, through the CLI: a notebook with no training output, a reward constant from the
first step, every value a string, a 5-step run. Each gets a clear (partial) report or a clear error, never
a traceback, and never a verdict the numbers cannot back."""

from __future__ import annotations

import json

import numpy as np
import pytest

from agentgrpo.cli import main


def _jsonl(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def _doctor(path, capsys):
    code = main(["doctor", str(path), "--no-report"])
    out = capsys.readouterr()
    assert "Traceback" not in out.out + out.err
    return code, out.out + out.err


def test_notebook_without_training_output(tmp_path, capsys):
    nb = {"nbformat": 4, "nbformat_minor": 5, "metadata": {},
          "cells": [{"cell_type": "code", "metadata": {}, "source": ["import trl"], "outputs": []}]}
    path = tmp_path / "colab.ipynb"
    path.write_text(json.dumps(nb), encoding="utf-8")
    code, text = _doctor(path, capsys)
    assert code == 2 and "no training metrics in its outputs" in text and "trainer_state.json" in text


@pytest.mark.parametrize("value", [0.0, 1.0, -2.5])
@pytest.mark.parametrize("n", [12, 100, 1000])
def test_reward_constant_from_the_first_step_is_no_signal_not_a_stall_within_noise(tmp_path, capsys, value, n):
    """A batch mean that never changes by a bit means every sample scored the same: no learning signal
    (a zero-variance failure, backed by the constant), not 'flat within noise'."""
    path = _jsonl(tmp_path / "m.jsonl", [{"step": s, "reward": value, "loss": 0.0} for s in range(1, n + 1)])
    code, text = _doctor(path, capsys)
    assert code == 1 and "FAILURE: no learning signal" in text and f"exactly {value:.6g}" in text
    assert "[FAIL] stall" not in text  # the stall is the no-signal failure's consequence


def test_a_reward_that_varies_is_not_called_constant(tmp_path, capsys):
    rng = np.random.default_rng(0)
    records = [{"step": s, "reward": 0.5 + float(rng.normal(0, 0.05))} for s in range(1, 101)]
    code, text = _doctor(_jsonl(tmp_path / "m.jsonl", records), capsys)
    assert "no learning signal" not in text and "zero_variance not judged" in text.replace("  ", " ")


def test_numbers_logged_as_strings_are_read(tmp_path, capsys):
    records = [
        {"step": str(s), "reward": str(0.1 + 0.008 * s), "kl": "0.01", "completions/mean_length": "120"}
        for s in range(1, 101)
    ]
    code, text = _doctor(_jsonl(tmp_path / "m.jsonl", records), capsys)
    assert code == 0 and "read 100 logged steps (1–100)" in text and "learning" in text


@pytest.mark.parametrize(
    "record, message",
    [
        ({"step": "x", "reward": "high"}, "none with a numeric step (e.g. step='x')"),
        ({"reward": "high", "kl": "low"}, "the reward is logged, but not as a number"),
    ],
)
def test_every_value_a_word_is_a_clear_error(tmp_path, capsys, record, message):
    code, text = _doctor(_jsonl(tmp_path / "m.jsonl", [record] * 50), capsys)
    assert code == 2 and message in text


@pytest.mark.parametrize("n", [1, 5, 9])
def test_a_run_too_short_to_judge_says_so(tmp_path, capsys, n):
    records = [{"step": s, "reward": 0.1 * s, "kl": 0.01} for s in range(1, n + 1)]
    code, text = _doctor(_jsonl(tmp_path / "m.jsonl", records), capsys)
    assert code == 2 and f"TOO SHORT TO JUDGE: reward has {n} logged steps, need 10" in text
    assert "[FAIL]" not in text
