"""Readers for the logs users keep: notebooks, TensorBoard, trackio, other trainers' names, wrapped console
dicts, step lines; and bad input (never a crash, never a silent drop).

TensorBoard and trackio files are written by the real libraries inside each test.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from agentgrpo.cli import main
from agentgrpo.doctor import names
from agentgrpo.doctor.readers import read_run
from agentgrpo.errors import UserError

STEPS = 24


def _trl_logs(step: int) -> dict:
    return {
        "loss": 0.01,
        "grad_norm": 0.5,
        "reward": 0.03 * step,
        "reward_std": 0.4,
        "kl": 0.001 * step,
        "entropy": 0.8,
        "completions/mean_length": 120.0,
        "completions/clipped_ratio": 0.05,
        "rewards/correct/mean": 0.02 * step,
        "rewards/format/mean": 0.01 * step,
        "frac_reward_zero_std": 0.1,
    }


def test_tensorboard_written_by_summary_writer(tmp_path):
    pytest.importorskip("tensorboard")
    from torch.utils.tensorboard import SummaryWriter

    folder = tmp_path / "out" / "runs" / "Dec02_host"
    writer = SummaryWriter(str(folder))
    for step in range(1, STEPS + 1):
        for key, value in _trl_logs(step).items():  # as TRL's TensorBoardCallback logs them
            writer.add_scalar(f"train/{key}", float("nan") if (key, step) == ("grad_norm", 9) else value, step)
    writer.add_text("args", "{}", 0)
    writer.close()
    for path in (tmp_path / "out", folder, next(folder.glob("*tfevents*"))):
        run = read_run(path)
        assert run.fmt == "tensorboard" and run.table.steps.tolist() == list(range(1, STEPS + 1))
        assert run.table.components() == ["correct", "format"]
        assert np.isclose(run.table["reward"][-1], 0.03 * STEPS)
        assert run.table.meta["nan_steps"] == {"grad_norm": [9]}


def test_tensorboard_folder_with_several_runs_asks_for_one(tmp_path):
    pytest.importorskip("tensorboard")
    from torch.utils.tensorboard import SummaryWriter

    for name in ("a", "b"):
        with SummaryWriter(str(tmp_path / "runs" / name)) as writer:
            writer.add_scalar("train/reward", 1.0, 1)
    with pytest.raises(UserError, match="2 runs.*pass one run's folder"):
        read_run(tmp_path)


def test_trackio_store_written_by_trackio(tmp_path):
    pytest.importorskip("trackio")
    script = textwrap.dedent(
        f"""
        import trackio
        for name in ("run-a", "run-b"):
            trackio.init(project="grpo proj", name=name)
            for step in range(1, {STEPS} + 1):
                logs = {{"train/" + k: v for k, v in {_trl_logs(1)!r}.items()}}
                logs["train/reward"] = 0.03 * step if name == "run-a" else 0.5
                logs["train/kl"] = float("inf") if step == 5 else 0.01
                trackio.log(logs, step=step)
            trackio.finish()
        """
    )
    env = dict(os.environ, TRACKIO_DIR=str(tmp_path / "trackio"))
    subprocess.run([sys.executable, "-c", script], env=env, check=True, capture_output=True, timeout=120)
    db = tmp_path / "trackio" / "grpoproj.db"
    assert db.is_file()
    run = read_run(f"{db}#run-a")
    assert run.fmt == "trackio" and run.table.steps.tolist() == list(range(1, STEPS + 1))
    assert np.isclose(run.table["reward"][-1], 0.03 * STEPS)
    assert np.isinf(run.table["kl"][4]) and any("kl infinite at step 5" in n for n in run.notes)
    with pytest.raises(UserError, match="holds 2 runs.*run-a, run-b"):
        read_run(db)
    with pytest.raises(UserError, match="no run 'run-c'"):
        read_run(f"{db}#run-c")


def test_trackio_spec_uses_trackio_dir(tmp_path, monkeypatch):
    pytest.importorskip("trackio")
    script = "import trackio\ntrackio.init(project='p', name='r')\n"
    script += "".join(f"trackio.log({{'reward': {0.1 * s}, 'kl': 0.01}}, step={s})\n" for s in range(1, 13))
    script += "trackio.finish()\n"
    env = dict(os.environ, TRACKIO_DIR=str(tmp_path))
    subprocess.run([sys.executable, "-c", script], env=env, check=True, capture_output=True, timeout=120)
    monkeypatch.setenv("TRACKIO_DIR", str(tmp_path))
    assert len(read_run("trackio://p/r").table) == 12
    assert len(read_run("trackio://p").table) == 12  # one run: no need to name it
    with pytest.raises(UserError, match="no trackio database"):
        read_run("trackio://other/r")


def text_to_html_table(items):
    """The table the Trainer's notebook callback displays (transformers.utils.notebook, which needs IPython)."""
    html = '<table border="1" class="dataframe">\n  <thead>\n <tr style="text-align: left;">\n'
    html += "".join(f"      <th>{h}</th>\n" for h in items[0]) + "    </tr>\n  </thead>\n  <tbody>\n"
    for line in items[1:]:
        cells = "".join(f"      <td>{x:.6f}</td>\n" if isinstance(x, float) else f"      <td>{x}</td>\n" for x in line)
        html += "    <tr>\n" + cells + "    </tr>\n"
    return html + "  </tbody>\n</table><p>"


def _output(kind, **fields):
    """One cell output as nbformat 4 writes it (multi-line text as a list of lines)."""
    if kind == "stream":
        return {"output_type": "stream", "name": fields.get("name", "stdout"), "text": fields["text"].splitlines(True)}
    if kind == "error":
        return {"output_type": "error", "ename": fields["ename"], "evalue": fields["evalue"], "traceback": []}
    return {"output_type": kind, "data": fields["data"], "metadata": {}}


def _notebook(tmp_path, outputs, name="train.ipynb"):
    """A format-4 notebook: a markdown cell and the training cell with ``outputs`` (plain JSON, no nbformat)."""
    nb = {
        "nbformat": 4,
        "nbformat_minor": 5,
        "metadata": {},
        "cells": [
            {"cell_type": "markdown", "id": "a", "metadata": {}, "source": ["# GRPO"]},
            {"cell_type": "code", "id": "b", "metadata": {}, "execution_count": 1, "source": ["trainer.train()"],
             "outputs": outputs},
        ],
    }
    path = tmp_path / name
    path.write_text(json.dumps(nb, indent=1), encoding="utf-8")
    return path


def _progress_table_notebook(tmp_path):
    header = ["Step", "Training Loss", "reward", "reward_std", "completion_length", "completions / mean_length"]
    header += ["kl", "rewards / correct / mean", "rewards / correct"]
    rows = [
        [s, "No log" if s == 1 else 0.01, 0.05 * s, 0.3, 100 + s, 100 + s, 0.001, 0.05 * s, 0.05 * s]
        for s in range(1, STEPS + 1)
    ]
    html = "<div><progress value='24' max='24'></progress></div>" + text_to_html_table([header] + rows)
    return _notebook(tmp_path, [_output("display_data", data={"text/html": html, "text/plain": "x"})])


def test_notebook_progress_table(tmp_path):
    run = read_run(_progress_table_notebook(tmp_path))
    t = run.table
    assert run.fmt == "notebook (training table)" and t.steps.tolist() == list(range(1, STEPS + 1))
    assert t.components() == ["correct"]  # old and new spellings of one component: one column
    assert np.allclose(t["reward"], t["rewards/correct/mean"])  # not doubled
    assert t[names.LENGTH][-1] == 100 + STEPS
    assert np.isnan(t["loss"][0]) and t["loss"][1] == 0.01


def test_notebook_printed_dicts_and_error(tmp_path):
    text = "".join(f"{{'loss': 0.1, 'reward': '{0.1 * s}', 'kl': 0.01, 'epoch': {s / 100}}}\n" for s in range(1, 13))
    outputs = [
        _output("stream", text="Updated tokens: {'pad_token_id': 0}\n" + text),
        _output("error", ename="OutOfMemoryError", evalue="CUDA out of memory"),
    ]
    run = read_run(_notebook(tmp_path, outputs))
    assert run.fmt == "notebook (console log)" and len(run.table) == 12
    assert not run.table.has("pad_token_id")
    assert any("OutOfMemoryError" in n for n in run.notes)


def test_notebook_without_metrics(tmp_path):
    path = _notebook(tmp_path, [_output("stream", text="hello\n")])
    with pytest.raises(UserError, match="no training metrics in its outputs"):
        read_run(path)


def test_notebook_reads_with_nbformat_unimportable(tmp_path, monkeypatch):
    """The default install has no nbformat: a notebook is JSON and reads without it (issue 20)."""
    monkeypatch.setitem(sys.modules, "nbformat", None)  # `import nbformat` now raises ImportError
    with pytest.raises(ImportError):
        import nbformat  # noqa: F401
    run = read_run(_progress_table_notebook(tmp_path))
    assert run.fmt == "notebook (training table)" and len(run.table) == STEPS
    assert np.allclose(run.table["reward"], 0.05 * np.arange(1, STEPS + 1))


def test_notebook_written_by_nbformat_reads_the_same(tmp_path):
    """Oracle: the same outputs written by nbformat itself (when installed) read to the same table."""
    nbformat = pytest.importorskip("nbformat")
    ours = _progress_table_notebook(tmp_path)
    nb = nbformat.reads(ours.read_text(encoding="utf-8"), as_version=4)
    theirs = tmp_path / "nbformat.ipynb"
    nbformat.write(nb, str(theirs))
    a, b = read_run(ours).table, read_run(theirs).table
    assert a.names() == b.names() and all(np.array_equal(a[k], b[k], equal_nan=True) for k in a.names())


def test_notebook_format_3_worksheets(tmp_path):
    text = "".join(f"{{'loss': 0.1, 'reward': {0.1 * s}, 'epoch': {s / 100}}}\n" for s in range(1, 13))
    nb = {"nbformat": 3, "worksheets": [{"cells": [{"cell_type": "code", "outputs": [
        {"output_type": "stream", "stream": "stdout", "text": text.splitlines(True)}]}]}]}
    path = tmp_path / "old.ipynb"
    path.write_text(json.dumps(nb), encoding="utf-8")
    assert len(read_run(path).table) == 12


@pytest.mark.parametrize(
    "content, message",
    [
        ('{"cells": [{"outputs": [', "not a readable Jupyter notebook"),  # cut short
        ('{"nbformat": 4, "metadata": {}}', "no 'cells' list"),
        ("[1, 2]", "not a Jupyter notebook"),
    ],
)
def test_broken_notebooks_say_what_is_wrong(tmp_path, content, message):
    path = tmp_path / "broken.ipynb"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(UserError, match=message):
        read_run(path)


def test_console_wrapped_dicts_bare_nan_and_traceback(tmp_path):
    lines = ["Loading checkpoint shards: 100%|##| 2/2 [00:01<00:00]", "Updated tokens: {'pad_token_id': 151643}."]
    for step in range(1, 13):
        record = "{" + ", ".join(f"'{k}': {v}" for k, v in _trl_logs(step).items())
        record += ", 'grad_norm_x': nan}" if step == 12 else "}"
        record = record.replace("'grad_norm': 0.5", "'grad_norm': nan") if step == 12 else record
        lines.append(f"  {step}/100 [00:{step:02d}<01:00, 1.0s/it]")
        lines += [record[i : i + 80] for i in range(0, len(record), 80)]  # hard-wrapped mid-key at 80 columns
    lines += ["Traceback (most recent call last):", "  File 'x.py', line 1", "RuntimeError: CUDA error"]
    path = tmp_path / "train.log"
    path.write_text("\n".join(lines), encoding="utf-8")
    run = read_run(path)
    assert run.fmt == "console log" and run.table.steps.tolist() == list(range(1, 13))
    assert np.isclose(run.table["reward"][-1], 0.36) and run.table.components() == ["correct", "format"]
    assert run.table.meta["nan_steps"]["grad_norm"] == [12]
    assert not run.table.has("pad_token_id")


def test_text_step_lines(tmp_path):
    lines = ["starting run", "model.safetensors: 100% 1.14G/1.14G [00:08<00:00, 133MB/s]"]
    lines += [
        f"[run]  {s}/40 | loss={-0.1 * s:.4f} | reward={0.02 * s:.3f} | kl={'nan' if s > 20 else 0.01} | ent=nan"
        for s in range(1, 41)
    ]
    path = tmp_path / "train.log"
    path.write_text("\n".join(lines), encoding="utf-8")
    run = read_run(path)
    assert run.fmt == "text step lines" and run.table.steps.tolist() == list(range(1, 41))
    assert np.isclose(run.table["reward"][-1], 0.8)
    assert run.table.meta["nan_steps"]["kl"][:2] == [21, 22]
    # NaN on every line: never computed (issue 36), not logged
    assert "ent" not in run.table.columns and any("never computed: ent" in n for n in run.notes)


def test_csv_with_blank_cells(tmp_path):
    rows = ["step,reward,kl,completion_length"]
    rows += [f"{s},{0.1 * s},{'' if s % 2 else 0.01},{'' if s % 3 else 80}" for s in range(1, 13)]
    path = tmp_path / "log.csv"
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    t = read_run(path).table
    assert len(t) == 12 and t.series("kl")[1].size == 6 and t.series(names.LENGTH)[1].size == 4


@pytest.mark.parametrize(
    "record, expected",
    [
        (  # Tinker
            {
                "progress/batch": 0,
                "env/all/reward/total": 0.5,
                "optim/entropy": 1.2,
                "env/all/frac_all_good": 0.1,
                "env/all/frac_all_bad": 0.2,
                "env/all/ac_tokens_per_turn": 300.0,
                "optim/lr": 1e-5,
            },
            {"reward": 0.5, "entropy": 1.2, "frac_reward_zero_std": 0.3, names.LENGTH: 300.0, "learning_rate": 1e-5},
        ),
        (  # verl
            {
                "step": 1,
                "critic/score/mean": 0.4,
                "actor/entropy": 0.9,
                "actor/kl_loss": 0.01,
                "actor/grad_norm": 2.0,
                "response_length/mean": 500.0,
                "response_length/clip_ratio": 0.2,
                "actor/pg_clipfrac": 0.01,
            },
            {
                "reward": 0.4,
                "entropy": 0.9,
                "kl": 0.01,
                "grad_norm": 2.0,
                names.LENGTH: 500.0,
                names.CLIPPED: 0.2,
                names.CLIP_REGION: 0.01,
            },
        ),
        (  # custom loops
            {
                "iteration": 3,
                "mean_reward": 0.7,
                "std_reward": 0.2,
                "avg_gen_tokens": 250.0,
                "accuracy": 0.6,
                "format_rate": 0.9,
                "truncated_count": 2,
                "rollout_count": 8,
            },
            {"reward": 0.7, "reward_std": 0.2, names.LENGTH: 250.0, "rewards/accuracy/mean": 0.6, names.CLIPPED: 0.25},
        ),
    ],
)
def test_other_trainers_vocabularies(tmp_path, record, expected):
    step_key = next(k for k in record if names.canonical(k) == "step")
    lines = [json.dumps({**record, step_key: record[step_key] + i}) for i in range(12)]
    path = tmp_path / "metrics.jsonl"
    path.write_text("\n".join(lines), encoding="utf-8")
    t = read_run(path).table
    for name, value in expected.items():
        assert np.isclose(t[name][0], value), name


def test_map_names_the_reward_and_checks_the_key(tmp_path, capsys):
    lines = [json.dumps({"step": s, "score_v2": 0.1 * s, "reward": 9.0, "tokens": 50}) for s in range(1, 13)]
    path = tmp_path / "loop.jsonl"
    path.write_text("\n".join(lines), encoding="utf-8")
    run = read_run(path, {"reward": "score_v2", names.LENGTH: "tokens"})
    assert np.isclose(run.table["reward"][-1], 1.2) and run.table[names.LENGTH][0] == 50
    with pytest.raises(UserError, match="--map reward=scor: no such key in the log; its keys: reward, score_v2"):
        read_run(path, {"reward": "scor"})
    assert main(["doctor", str(path), "--map", "rewad=score_v2", "--no-report"]) == 2
    assert "not a metric the doctor reads" in capsys.readouterr().err
    assert main(["doctor", str(path), "--map", "reward=score_v2", "--json", "--no-report"]) in (0, 1)
    assert json.loads(capsys.readouterr().out)["format"] == "metrics.jsonl"


def test_placeholder_columns_are_dropped_with_a_note(tmp_path):
    lines = [json.dumps({"step": s, "reward": 0.1 * s, "entropy": 0.0, "kl": 0.0, "loss": 0.0}) for s in range(1, 13)]
    path = tmp_path / "m.jsonl"
    path.write_text("\n".join(lines), encoding="utf-8")
    run = read_run(path)
    assert not run.table.has("entropy") and not run.table.has("kl") and run.table.has("loss")
    assert sum("placeholder" in n for n in run.notes) == 2


def test_resume_keeps_the_last_occurrence_in_order(tmp_path):
    steps = list(range(1, 11)) + list(range(6, 16))
    lines = [json.dumps({"step": s, "reward": (1.0 if i >= 10 else 0.0)}) for i, s in enumerate(steps)]
    path = tmp_path / "m.jsonl"
    path.write_text("\n".join(lines), encoding="utf-8")
    run = read_run(path)
    assert run.table.steps.tolist() == list(range(1, 16))
    assert run.table["reward"].tolist() == [0.0] * 5 + [1.0] * 10
    assert any("restart once" in n and "5 earlier record(s) superseded" in n for n in run.notes)


# --- bad input: a clear message, or a partial run whose notes say what could not be read ---


def test_binary_file_of_unknown_kind(tmp_path):
    path = tmp_path / "model.bin"
    path.write_bytes(b"\x89PK\x03\x04\x00\x00" + bytes(range(256)) * 10)
    with pytest.raises(UserError, match="binary file of an unknown kind"):
        read_run(path)


def test_sqlite_that_is_not_trackio(tmp_path):
    import sqlite3

    path = tmp_path / "other.db"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE t (x INTEGER)")
    with pytest.raises(UserError, match="not a readable trackio store"):
        read_run(path)


@pytest.mark.parametrize("name", ["train.log", "metrics.jsonl", "x.ipynb", "events.out.tfevents.1.host"])
def test_empty_files(tmp_path, name):
    path = tmp_path / name
    path.write_text("\n \n", encoding="utf-8")
    with pytest.raises(UserError, match="empty"):
        read_run(path)


def test_truncated_notebook(tmp_path):
    path = tmp_path / "t.ipynb"
    path.write_text('{"cells": [{"cell_type": "code", "outputs": [', encoding="utf-8")
    with pytest.raises(UserError, match="not a readable Jupyter notebook"):
        read_run(path)


def test_truncated_tensorboard_file(tmp_path):
    pytest.importorskip("tensorboard")
    from torch.utils.tensorboard import SummaryWriter

    with SummaryWriter(str(tmp_path / "r")) as writer:
        for step in range(1, 30):
            writer.add_scalar("train/reward", 0.1 * step, step)
    event = next((tmp_path / "r").glob("*tfevents*"))
    data = event.read_bytes()
    event.write_bytes(data[: len(data) - 7])  # cut mid-record, as a killed run leaves it
    run = read_run(event)
    assert 20 <= len(run.table) < 29


@pytest.mark.parametrize(
    "text",
    [
        '{"step": 1, "reward": NaN}\n{"step": 2, "reward": Infinity}\n{"step": 3, "reward": -Infinity}\n'
        '{"step": 4, "reward": "NaN"}\n{"step": 5, "reward": "inf"}\n{"step": 6, "reward": 0.5}\n',
        "{'reward': nan, 'step': 1}\n{'reward': inf, 'step': 2}\n{'reward': -inf, 'step': 3}\n"
        "{'reward': 'nan', 'step': 4}\n{'reward': 'Infinity', 'step': 5}\n{'reward': 0.5, 'step': 6}\n",
    ],
)
def test_nan_and_infinity_tokens_and_strings(tmp_path, text):
    path = tmp_path / "m.log"
    path.write_text(text, encoding="utf-8")
    run = read_run(path)
    reward = run.table["reward"]
    assert run.table.steps.tolist() == [1, 2, 3, 4, 5, 6]
    assert np.isnan(reward[0]) and reward[1] == np.inf and reward[2] == -np.inf and np.isnan(reward[3])
    assert reward[4] == np.inf and reward[5] == 0.5
    assert run.table.meta["nan_steps"]["reward"] == [1, 4]
    assert any("reward infinite at step 2" in n and "reward NaN at step 1" in n for n in run.notes)


def test_duplicated_and_shuffled_steps(tmp_path):
    rng = np.random.default_rng(0)
    steps = [int(s) for s in rng.permutation(np.arange(1, 31))] + [7, 7]
    lines = [json.dumps({"step": s, "reward": s / 10}) for s in steps]
    path = tmp_path / "m.jsonl"
    path.write_text("\n".join(lines), encoding="utf-8")
    run = read_run(path)
    assert run.table.steps.tolist() == list(range(1, 31))
    assert np.allclose(run.table["reward"], np.arange(1, 31) / 10)
    assert any("out of order" in n for n in run.notes)


def test_duplicated_steps_are_merged_with_a_note(tmp_path):
    lines = [json.dumps({"step": s, "reward": 0.1}) for s in (1, 2, 2, 3, 3, 3, 4)]
    path = tmp_path / "m.jsonl"
    path.write_text("\n".join(lines), encoding="utf-8")
    run = read_run(path)
    assert run.table.steps.tolist() == [1, 2, 3, 4]
    assert any("3 record(s) repeat a logged step" in n for n in run.notes)


@pytest.mark.parametrize(
    "name, text",
    [
        ("a.jsonl", "\n".join(json.dumps({"step": s, "loss": 0.1, "grad_norm": 1.0}) for s in range(1, 9))),
        ("a.log", "\n".join(f"{s}/8 | loss={0.1 * s} | grad_norm=0.5" for s in range(1, 9))),
    ],
)
def test_no_reward_at_all(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    with pytest.raises(UserError, match="no reward metric.*found: grad_norm, loss.*--map reward=KEY"):
        read_run(path)


def test_console_log_cut_mid_dict(tmp_path):
    lines = [f"{{'loss': 0.1, 'reward': {0.1 * s}, 'kl': 0.01}}" for s in range(1, 12)]
    lines.append("{'loss': 0.1, 'reward': 1.2, 'k")  # the run was killed while printing
    path = tmp_path / "train.log"
    path.write_text("\n".join(lines), encoding="utf-8")
    run = read_run(path)
    assert len(run.table) == 12 and np.isclose(run.table["reward"][-1], 1.2) and np.isnan(run.table["kl"][-1])
    assert any("1 printed dict(s) cut short" in n for n in run.notes)


@pytest.mark.parametrize(
    "module, name, hint",
    [
        ("tensorboard", "events.out.tfevents.1", "pip install tensorboard"),
    ],
)
def test_missing_optional_reader_gives_the_install_hint(tmp_path, monkeypatch, module, name, hint):
    monkeypatch.setitem(sys.modules, module, None)  # import fails as if not installed
    if module == "tensorboard":
        for sub in [m for m in sys.modules if m.startswith("tensorboard.")]:
            monkeypatch.setitem(sys.modules, sub, None)
    path = tmp_path / name
    path.write_bytes(
        b'{"cells": [], "nbformat": 4, "nbformat_minor": 5, "metadata": {}}'
        if module == "nbformat"
        else b"\x18\x00\x00\x00\x00\x00\x00\x00brain.Event:2"
    )
    with pytest.raises(UserError, match=hint):
        read_run(path)


def test_printed_dataframe_and_markdown_table(tmp_path):
    import pandas as pd

    frame = pd.DataFrame({"step": range(1, 13), "reward": [0.1 * s for s in range(1, 13)], "kl": 0.01})
    path = tmp_path / "log.txt"
    path.write_text("training done\n" + frame.to_string() + "\n\nbye\n", encoding="utf-8")
    run = read_run(path)
    assert run.fmt == "text table" and run.table.steps.tolist() == list(range(1, 13))
    assert np.isclose(run.table["reward"][-1], 1.2)
    md = "| Step | reward | completion_length |\n|---:|---:|---:|\n"
    md += "".join(f"| {s} | {0.05 * s} | {100 + s} |\n" for s in range(1, 13))
    path.write_text(md, encoding="utf-8")
    assert read_run(path).table[names.LENGTH][-1] == 112


def test_console_steps_from_the_training_bar_not_the_generation_bar(tmp_path):
    lines = []
    for step in range(2, 25, 2):  # logging_steps=2
        for _ in range(3):
            lines.append("Processed prompts: 100%|#####| 64/64 [00:02<00:00, 30.1it/s]")
        lines.append(f" {step}/24 [00:{step:02d}<00:30, 1.1s/it]")
        lines.append(f"{{'loss': 0.1, 'reward': {0.01 * step}, 'kl': 0.001}}")
    path = tmp_path / "vllm.log"
    path.write_text("\n".join(lines), encoding="utf-8")
    assert read_run(path).table.steps.tolist() == list(range(2, 25, 2))


def test_gzip_and_utf16_logs(tmp_path):
    import gzip

    text = "\n".join(f"{{'loss': 0.1, 'reward': {0.1 * s}, 'kl': 0.01}}" for s in range(1, 13))
    (tmp_path / "train.log.gz").write_bytes(gzip.compress(text.encode()))
    assert len(read_run(tmp_path / "train.log.gz").table) == 12
    jsonl = "\n".join(json.dumps({"step": s, "reward": 0.1 * s}) for s in range(1, 13))
    cut = gzip.compress(jsonl.encode())[:-30]
    (tmp_path / "metrics.jsonl.gz").write_bytes(cut)
    run = read_run(tmp_path / "metrics.jsonl.gz")
    assert 1 <= len(run.table) < 12 and any("gzip file cut short" in n for n in run.notes)
    (tmp_path / "ps.log").write_bytes(text.encode("utf-16"))  # PowerShell's `python train.py > ps.log`
    assert len(read_run(tmp_path / "ps.log").table) == 12
