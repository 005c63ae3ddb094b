"""Readers on record shapes custom loops and notebooks write (issue 36, "Bad input"): list-valued cells, the
reward under a name no alias lists, a notebook table without the reward beside printed step lines, and a
console log whose printed step lines outnumber the trainer's metric dicts.

Every input is generated (several sizes and seeds); the oracle is plain ``json`` / ``ast`` / ``re`` parsing.
"""

from __future__ import annotations

import ast
import json
import random
import re

import numpy as np
import pytest
from test_doctor_readers_formats import _notebook, _output, text_to_html_table

from agentgrpo.doctor import names
from agentgrpo.doctor.readers import read_run
from agentgrpo.errors import UserError

SEEDS = [0, 1, 2, 3]


def _rollout_records(seed: int) -> list[dict]:
    """Records of a custom GRPO loop: per-sample rewards as a list (one length per run, or empty), nested
    dicts, lists of strings, and two key sets (some steps also log an update)."""
    rng = random.Random(seed)
    n, group = rng.randint(25, 300), rng.choice([0, 2, 4, 16])
    records = []
    for step in range(1, n + 1):
        rewards = [round(rng.random(), 3) for _ in range(group)]
        record = {
            "step": step,
            "task": f"task_{rng.randint(0, 9)}",
            "rewards": rewards,
            "mean_reward": round(sum(rewards) / group, 4) if group else round(rng.random(), 4),
            "predicted_answers": [None, ""] if rng.random() < 0.5 else [],
            "meta": {"causal": rng.random() < 0.5, "depth": rng.randint(1, 3)},
            "signal": rng.random() < 0.5,
        }
        if seed % 2 and step % 3 == 0:  # an update step logs more keys
            record |= {"kl": round(rng.random() * 0.01, 5), "loss": round(rng.gauss(0, 1), 4), "advantages": rewards}
        records.append(record)
    return records


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("fmt", ["jsonl", "json_list", "json_object"])
def test_list_cells_are_not_numbers_and_the_rest_reads(tmp_path, seed, fmt):
    records = _rollout_records(seed)
    if fmt == "jsonl":
        path = tmp_path / "train_log.jsonl"
        path.write_text("\n".join(json.dumps(r) for r in records) + "\n", encoding="utf-8")
    else:
        path = tmp_path / "log.json"
        data = records if fmt == "json_list" else {"algorithm": "GRPO", "group_size": 4, "per_episode": records}
        path.write_text(json.dumps(data), encoding="utf-8")
    t = read_run(path).table
    oracle = json.loads(path.read_text()) if fmt != "jsonl" else [json.loads(x) for x in path.read_text().splitlines()]
    oracle = oracle["per_episode"] if fmt == "json_object" else oracle
    assert t.steps.tolist() == [r["step"] for r in oracle]
    assert np.allclose(t[names.REWARD], [r["mean_reward"] for r in oracle])
    assert np.allclose(t["signal"], [float(r["signal"]) for r in oracle])
    assert "rewards" not in t.columns and "predicted_answers" not in t.columns  # lists: no column
    logged_kl = {r["step"]: r["kl"] for r in oracle if "kl" in r}
    if logged_kl:
        kl = dict(zip(t.steps.tolist(), t[names.KL]))
        assert all(kl[s] == v for s, v in logged_kl.items())
        assert sum(np.isfinite(t[names.KL])) == len(logged_kl)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("key", ["rewards", "reward", "group_rewards"])
def test_a_reward_logged_only_as_sample_lists_is_their_mean(tmp_path, seed, key):
    rng = random.Random(seed)
    size = rng.choice([1, 2, 8, 16])
    rows = [{"step": s, key: [rng.choice([0.0, 0.5, 1.0]) for _ in range(size)], "loss": rng.random()}
            for s in range(1, rng.randint(20, 200))]  # fmt: skip
    if seed % 2:
        rows[3][key] = []  # a step without samples: no reward there
    path = tmp_path / "log.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows), "utf-8")
    run = read_run(path)
    oracle = [sum(r[key]) / len(r[key]) if r[key] else np.nan for r in rows]
    assert np.allclose(run.table[names.REWARD], oracle, equal_nan=True)
    assert any(f"per-sample rewards listed in {key!r}" in n for n in run.notes)


def test_a_scalar_reward_beside_sample_lists_is_the_reward(tmp_path):
    rows = [{"step": s, "rewards": [1.0, 1.0], "mean_reward": 0.1 * s} for s in range(1, 30)]
    path = tmp_path / "log.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows), "utf-8")
    assert read_run(path).table[names.REWARD].tolist() == [r["mean_reward"] for r in rows]


@pytest.mark.parametrize("cell", [[], ["a", "b"], [[0.5]]])
def test_a_reward_logged_only_as_unreadable_lists_is_a_clear_error(tmp_path, cell):
    path = tmp_path / "log.jsonl"
    path.write_text("\n".join(json.dumps({"step": s, "reward": cell}) for s in range(1, 40)), "utf-8")
    with pytest.raises(UserError, match=r"reward is logged, but not as a number.*reward=\["):
        read_run(path)


def test_steps_logged_as_lists_are_a_clear_error(tmp_path):
    path = tmp_path / "log.jsonl"
    path.write_text("\n".join(json.dumps({"step": [s, s], "reward": 0.1}) for s in range(1, 40)), "utf-8")
    with pytest.raises(UserError, match="none with a numeric step"):
        read_run(path)


@pytest.mark.parametrize(
    "key",
    ["total_reward", "episode_reward", "train/total_reward", "reward_total_mean", "avgEpisodeReward",
     "batch_reward", "env_reward"],
)  # fmt: skip
@pytest.mark.parametrize("seed", [0, 1])
def test_the_reward_under_another_name_is_found_by_its_words(tmp_path, key, seed):
    rng = random.Random(seed)
    rows = [
        {"step": s, key: round(rng.gauss(0.1 * s, 1), 3), "format": round(rng.random(), 2), "reward_coef": 0.5}
        for s in range(1, rng.randint(20, 200))
    ]
    path = tmp_path / "reward_log.json"
    path.write_text(json.dumps(rows, indent=1), encoding="utf-8")
    run = read_run(path)
    assert run.table[names.REWARD].tolist() == [r[key] for r in rows]
    column = key.removeprefix("train/")  # the trainer prefix is stripped from every key
    assert run.table.meta["sources"][names.REWARD] == column
    assert any(f"reward read from {column!r}" in n for n in run.notes)


def test_a_constant_reward_under_another_name_is_still_the_reward(tmp_path):
    path = tmp_path / "log.jsonl"
    path.write_text("\n".join(json.dumps({"step": s, "total_reward": 0.0, "kl": 0.01 * s}) for s in range(1, 30)))
    assert read_run(path).table[names.REWARD].tolist() == [0.0] * 29


@pytest.mark.parametrize("key", ["format_reward_weight", "reward_coef", "max_reward_seen", "reward_model_loss"])
def test_other_quantities_named_with_reward_are_not_the_reward(tmp_path, key):
    path = tmp_path / "log.jsonl"
    path.write_text("\n".join(json.dumps({"step": s, key: 0.1 * s, "loss": 1.0 / s}) for s in range(1, 30)))
    with pytest.raises(UserError, match="no reward metric.*total_reward"):
        read_run(path)


def _loss_table_notebook(tmp_path, seed: int):
    """The Trainer's table with the loss only, and a callback's printed ``Step N | reward: x`` lines (every
    ``every`` steps, split over several stream outputs as Jupyter does); returns (path, table rows, printed)."""
    rng = random.Random(seed)
    n, log_every, every = rng.randint(30, 600), rng.choice([1, 5, 10]), rng.choice([1, 10])
    rows = [["Step", "Training Loss"]] + [[s, round(rng.gauss(0, 0.1), 6)] for s in range(log_every, n + 1, log_every)]
    printed = {s: round(rng.random() * 2, 3) for s in range(every, n + 1, every)}
    lines = [f"Step {s} | reward: {v:.3f}" for s, v in printed.items()]
    chunks = [lines[i : i + 25] for i in range(0, len(lines), 25)]
    html = f"<div><progress value='{n}' max='{n}'></progress></div>" + text_to_html_table(rows)
    outputs = [_output("stream", text="Loading model...\nmodel.safetensors: 100% 1.14G/1.14G\n")]
    outputs += [_output("display_data", data={"text/html": html, "text/plain": "x"})]
    outputs += [_output("stream", text="\n".join(c) + "\n") for c in chunks]
    return _notebook(tmp_path, outputs), rows[1:], printed


@pytest.mark.parametrize("seed", SEEDS)
def test_a_loss_only_table_reads_the_printed_reward_beside_it(tmp_path, seed):
    path, rows, printed = _loss_table_notebook(tmp_path, seed)
    oracle = {}  # the printed lines, parsed by a plain regex from the notebook's JSON
    for cell in json.loads(path.read_text())["cells"]:
        for out in cell.get("outputs", []):
            for m in re.finditer(r"Step (\d+) \| reward: ([-\d.]+)", "".join(out.get("text", []))):
                oracle[int(m.group(1))] = float(m.group(2))
    assert oracle == printed
    run = read_run(path)
    t = run.table
    assert t.steps.tolist() == sorted({r[0] for r in rows} | set(printed))
    reward, loss = dict(zip(t.steps.tolist(), t[names.REWARD])), dict(zip(t.steps.tolist(), t[names.LOSS]))
    assert {s: v for s, v in reward.items() if np.isfinite(v)} == oracle
    assert {s: v for s, v in loss.items() if np.isfinite(v)} == {r[0]: r[1] for r in rows}
    assert run.fmt.startswith("notebook (training table + ") and any("has no reward" in n for n in run.notes)


def test_a_table_with_the_reward_ignores_printed_step_lines(tmp_path):
    rows = [["Step", "Training Loss", "reward"]] + [[s, 0.01, 0.1 * s] for s in range(1, 31)]
    html = text_to_html_table(rows)
    lines = "\n".join(f"Step {s} | reward: 9.0" for s in range(1, 31))
    path = _notebook(tmp_path, [_output("display_data", data={"text/html": html}), _output("stream", text=lines)])
    run = read_run(path)
    assert run.fmt == "notebook (training table)"
    assert np.allclose(run.table[names.REWARD], [0.1 * s for s in range(1, 31)])


def _trl_console(seed: int) -> str:
    """A TRL console log: tqdm bars on each step, a callback's ``Batch accuracy: k/8`` line on every step
    (more lines than dicts), and the trainer's metric dict every ``logging_steps``."""
    rng = random.Random(seed)
    n, every = rng.randint(60, 400), rng.choice([2, 5, 10])
    out = [f"logging_steps={every}"]
    for step in range(1, n + 1):
        k = rng.randint(0, 8)
        out.append(f"{step * 100 // n:3d}%|#| {step}/{n} [00:{step % 60:02d}<00:10, 1.5s/it]INFO:root:Batch accuracy: "
                   f"{k}/8 = {100 * k / 8:.1f}%")  # fmt: skip
        if step % every == 0:
            d = {
                "loss": round(rng.gauss(0, 0.1), 4),
                "grad_norm": rng.random(),
                "reward": round(rng.random(), 4),
                "reward_std": rng.random(),
                "kl": round(rng.random() * 0.1, 5),
                "entropy": rng.random(),
                "completions/mean_length": rng.uniform(100, 500),
                "completions/clipped_ratio": rng.random() * 0.2,
                "frac_reward_zero_std": rng.random(),
                "rewards/correct/mean": rng.random(),
                "epoch": step / n,
            }
            out.append(repr(d))
    return "\n".join(out) + "\n"


@pytest.mark.parametrize("seed", SEEDS)
def test_trl_metric_dicts_are_the_rows_of_a_console_log(tmp_path, seed):
    text = _trl_console(seed)
    path = tmp_path / "train.log"
    path.write_text(text, encoding="utf-8")
    dicts = [ast.literal_eval(line) for line in text.splitlines() if line.startswith("{")]
    assert len(re.findall("Batch accuracy", text)) > len(dicts)
    t = read_run(path).table
    assert len(t) == len(dicts)
    assert t[names.REWARD].tolist() == [d["reward"] for d in dicts]
    assert t[names.KL].tolist() == [d["kl"] for d in dicts]
    assert np.allclose(t[names.CLIPPED], [d["completions/clipped_ratio"] for d in dicts])
    assert t.components() == ["correct"]  # the printed accuracy is not a reward component


def test_step_lines_alone_still_read(tmp_path):
    text = "\n".join(f"{s}/50 [00:01<00:10] INFO Batch accuracy: {s % 8}/8" for s in range(1, 51))
    path = tmp_path / "acc.log"
    path.write_text(text, encoding="utf-8")
    t = read_run(path).table
    assert t.steps.tolist() == list(range(1, 51)) and t[names.REWARD].tolist() == [float(s % 8) for s in range(1, 51)]


TRL_COMPLETIONS = (
    names.LENGTH,
    names.MIN_LENGTH,
    names.MAX_LENGTH,
    names.STD_LENGTH,
    names.CLIPPED,
    names.TERM_LENGTH,
)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("stem", ["completions_", "completion_"])
def test_trl_completion_metrics_exported_without_slashes_read_as_trl_names(tmp_path, seed, stem):
    """A TRL log exported to CSV with ``completions/<x>`` flattened (``completions_<x>``, or ``completion_<x>``
    in the singular of TRL's own old ``completion_length``) reads to the table its slash spelling gives."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(20, 200))
    columns = {"reward": rng.random(n), "reward_std": rng.random(n) * 0.3}
    columns.update({name: rng.integers(1, 512, n).astype(float) for name in TRL_COMPLETIONS})

    def write(path, rename):
        keys = ["step", *(rename(k) for k in columns)]
        rows = [",".join([str(i + 1), *(repr(float(c[i])) for c in columns.values())]) for i in range(n)]
        lines = [",".join(keys)] + rows
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        return read_run(path).table

    slashed = write(tmp_path / "slashed.csv", lambda k: k)
    flat = write(
        tmp_path / "flat.csv", lambda k: k.replace("completions/", stem) if k.startswith("completions/") else k
    )
    assert sorted(flat.columns) == sorted(slashed.columns) and set(TRL_COMPLETIONS) <= set(flat.columns)
    for name in slashed.columns:
        assert np.array_equal(flat[name], slashed[name]), name


@pytest.mark.parametrize("seed", SEEDS)
def test_an_sft_warm_up_printed_before_grpo_in_one_console_log_is_set_aside(tmp_path, seed):
    """TRL prints each trainer's metric dicts and, at its end, a summary (``train_runtime``, ...). A console log
    of an SFT warm-up then GRPO reads to the GRPO run alone: its values equal those of a log of GRPO alone (the
    SFT trainer's ``entropy`` and ``loss`` do not join GRPO's), and a note says what was set aside."""
    rng = random.Random(seed)
    n_sft, n_grpo = rng.randint(3, 40), rng.randint(20, 150)

    def summary(loss):
        return {"train_runtime": 100.0, "train_samples_per_second": 1.0, "train_steps_per_second": 0.1,
                "train_loss": loss, "epoch": 1.0}

    sft = [{"loss": rng.random(), "grad_norm": rng.random(), "learning_rate": 1e-5, "entropy": rng.random(),
            "mean_token_accuracy": rng.random(), "epoch": i / n_sft} for i in range(n_sft)]
    grpo = [{"loss": rng.random() * 0.01, "reward": rng.random(), "reward_std": rng.random(), "kl": rng.random(),
             "entropy": rng.random(), "completions/mean_length": float(rng.randint(10, 500)), "epoch": i / n_grpo}
            for i in range(n_grpo)]
    both = tmp_path / "sft_then_grpo.log"
    both.write_text("\n".join(map(str, [*sft, summary(0.5), *grpo, summary(0.0)])) + "\n", encoding="utf-8")
    alone = tmp_path / "grpo.log"
    alone.write_text("\n".join(map(str, [*grpo, summary(0.0)])) + "\n", encoding="utf-8")
    run, oracle = read_run(both), read_run(alone).table
    table = run.table
    assert len(table) == n_grpo and sorted(table.columns) == sorted(oracle.columns)
    for name in oracle.columns:
        assert np.allclose(table[name], oracle[name], equal_nan=True), name
    assert "mean_token_accuracy" not in table.columns
    assert any("set aside" in note for note in run.notes + table.meta.get("notes", []))


@pytest.mark.parametrize("seed", SEEDS)
def test_verl_validation_keys_with_at_k_read_and_count_as_held_out(tmp_path, seed):
    """verl prints ``step:N - key:value - ...`` lines, its validation scores keyed ``val-core/<source>/acc/mean@1``
    (``@k``: over k samples). Every pair reads as the plain split of the line gives it (the oracle), and the
    validation accuracy is a held-out task score."""
    from agentgrpo.doctor.curves import Curves

    rng = random.Random(seed)
    source = rng.choice(["gsm8k", "finqa", "math_dapo", "openai/gsm8k"])
    k = rng.choice([1, 4, 16])
    lines, oracle = [], {}
    for step in range(1, rng.randint(30, 120)):
        pairs = {"critic/score/mean": rng.random(), "actor/entropy": rng.random(), "response_length/mean": 100.0}
        if step % 5 == 0:
            pairs[f"val-core/{source}/acc/mean@{k}"] = rng.random()
            pairs[f"val-aux/{source}/reward/best@{k}/mean"] = rng.random()
        oracle[step] = pairs
        lines.append(f"(TaskRunner pid=1) step:{step} - " + " - ".join(f"{key}:{v!r}" for key, v in pairs.items()))
    path = tmp_path / "verl.log"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    table = read_run(path).table
    val = f"val-core/{source}/acc/mean@{k}"
    x, y = table.series(val)
    assert x.tolist() == [s for s in oracle if val in oracle[s]]
    assert np.allclose(y, [oracle[s][val] for s in x])
    assert table.has(f"val-aux/{source}/reward/best@{k}/mean")
    assert Curves(table).heldout == [val]


@pytest.mark.parametrize("seed", SEEDS)
def test_step_reports_with_an_epoch_header_and_a_line_of_reward_statistics(tmp_path, seed):
    """``epoch 0, step 12`` heads a step's report (Search-R1/verl prints it); a line of the reward's statistics
    (``[DEBUG] Batch reward stats - mean: 1.18, min: -0.3, max: 5.0``) gives the reward and its batch's worst
    and best. Lines before the first header (a validation pass) belong to no step. Oracle: the values written."""
    rng = random.Random(seed)
    sep = rng.choice([",", ";", " |"])
    stat_names = rng.choice([("mean", "min", "max"), ("mean", "std", "min", "max"), ("avg", "max")])
    canon = {"mean": "reward", "avg": "reward", "std": "reward_std", "min": "reward_min", "max": "reward_max"}
    lines = [f"[DEBUG] Batch reward stats - mean: {rng.random():.4f}, min: -1.0, max: 9.0" for _ in range(5)]
    oracle = {}
    epochs = rng.randint(1, 3)
    steps = rng.randint(20, 80)
    for step in range(1, steps + 1):
        values = {s: round(rng.uniform(-1, 5), 4) for s in stat_names}
        oracle[step] = {canon[s]: v for s, v in values.items()}
        lines.append(f"epoch {step * epochs // (steps + 1)}{sep} step {step}")
        lines.append("[DEBUG] Batch reward stats - " + ", ".join(f"{s}: {v:.4f}" for s, v in values.items()))
        lines.append(f"env/number_of_valid_search\n{rng.random()}")
    path = tmp_path / "run.log"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    table = read_run(path).table
    assert table.steps.tolist() == list(oracle)
    for name in oracle[1]:
        assert np.allclose(table[name], [oracle[s][name] for s in oracle]), name


@pytest.mark.parametrize("seed", SEEDS)
def test_a_report_json_nests_its_grpo_curve_beside_others(tmp_path, seed):
    """A report JSON (``{"eval": {...}, "curves": {"dpo": [...], "grpo": [...]}}``) reads the nested list whose
    records carry the reward, even when another list is longer or first. Oracle: the records written."""
    rng = random.Random(seed)
    grpo = [{"epoch": i / 10, "reward": rng.random(), "kl": rng.random() / 10} for i in range(rng.randint(15, 80))]
    dpo = [
        {"step": 5 * (i + 1), "loss": rng.random(), "acc": rng.random()} for i in range(len(grpo) + rng.randint(1, 30))
    ]
    curves = {"dpo": dpo, "grpo": grpo} if seed % 2 else {"grpo": grpo, "dpo": dpo}
    path = tmp_path / "metrics.json"
    path.write_text(json.dumps({"eval": {"grpo": {"acc": 0.7}}, "curves": curves}), encoding="utf-8")
    table = read_run(path).table
    assert np.allclose(table["reward"], [r["reward"] for r in grpo]) and "acc" not in table.columns


@pytest.mark.parametrize("seed", SEEDS)
def test_a_debug_loop_with_step_banners_time_stamps_and_per_sample_lines(tmp_path, seed):
    """A custom debug loop prints, per step, many per-sample lines (``Gen 3: Train_LP= -440.0, Ref_LP= -45.0``,
    more of them than steps) and a banner ``==== PHASE 9: POST-UPDATE PERFORMANCE (step N) ====`` followed by
    ``Average reward: r``, each line maybe behind a time stamp. The reading that carries the reward wins over the
    one with more records. Oracle: the rewards written."""
    rng = random.Random(seed)
    stamp = rng.choice(["", "15:11:51 | ", "[2025-01-02 15:11:51,123] "])
    lines, oracle = [], {}
    for step in range(1, rng.randint(15, 60)):
        for gen in range(1, 9):
            train_lp, ref_lp = -rng.uniform(10, 600), -rng.uniform(10, 50)
            lines.append(f"{stamp}    Gen {gen}: Train_LP= {train_lp:.1f}, Ref_LP= {ref_lp:.1f}")
        lines.append("=" * 20 + f" PHASE 9: POST-UPDATE PERFORMANCE (step {step}) " + "=" * 20)
        oracle[step] = round(rng.random(), 4)
        lines += [
            f"{stamp}  Prompt 1: avg reward = {rng.random():.3f}",
            f"{stamp}📊 POST-UPDATE (step {step}) Performance:",
            f"{stamp}  Average reward: {oracle[step]:.4f}",
            f"{stamp}  Positive ratio: 87.5%",
        ]
    path = tmp_path / "debug.log"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    table = read_run(path).table
    assert table.steps.tolist() == list(oracle) and np.allclose(table["reward"], list(oracle.values()))


@pytest.mark.parametrize("seed", SEEDS)
def test_a_metric_printed_alone_before_each_step_line_joins_that_step(tmp_path, seed):
    """A loop prints the batch's reward on a line of its own, then the step's progress line, which names an
    outer iteration too (``Iteration 1/1, Step 7/500, GRPO iter 1/1, loss: 0.0``): the step is the word step's
    count, and each lone reward joins the step line after it. Oracle: the values written."""
    rng = random.Random(seed)
    total = rng.randint(20, 120)
    lines, oracle = [], {}
    for step in range(1, total + 1):
        oracle[step] = (rng.random(), rng.random())
        lines += ["Input batch size: 7, Device before model: cuda:0", f"Average Reward: {oracle[step][0]!r}",
                  f"Iteration 1/1, Step {step}/{total}, GRPO iter 1/1, loss: {oracle[step][1]:.4f}"]
    path = tmp_path / "loop.log"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    table = read_run(path).table
    assert table.steps.tolist() == list(oracle)
    assert np.allclose(table["reward"], [r for r, _ in oracle.values()])
    assert np.allclose(table["loss"], [round(v, 4) for _, v in oracle.values()])
