"""The fast whole-text paths of the text readers give what the line-by-line readers give, on generated
console logs that mix every kind of line (issue 20's speed work must not change a single record)."""

from __future__ import annotations

import random
import re

import pytest

from agentgrpo import fastjson
from agentgrpo.doctor.readers import console, textlog
from agentgrpo.doctor.readers.console import find_dicts, find_dicts_by_line, line_count
from agentgrpo.doctor.readers.steplines import read_step_lines
from agentgrpo.doctor.readers.texttable import read_text_tables
from agentgrpo.rundir import parse_jsonl


def _value(rng: random.Random) -> str:
    return rng.choice(
        [f"{rng.uniform(-2, 2):.4f}", str(rng.randint(0, 9)), "nan", "-inf", f"'{rng.random():.3f}'", "1e-05"]
    )


def _dict(rng: random.Random, odd: bool) -> str:
    keys = rng.sample(["loss", "reward", "reward_std", "kl", "grad_norm", "completions/mean_length", "epoch"], 4)
    body = ", ".join(f"'{k}': {_value(rng)}" for k in keys)
    if odd:
        body += rng.choice(
            [", 'mode': 'train'", ", 'kl': tensor(0.5, device='cuda:0')", ", 'ok': True", ", 'x': [1, 2]",
             ", 'q': \"a'"]
        )
    return "{" + body + "}"


def _line(rng: random.Random, step: int, odd_share: float) -> str:
    odd = rng.random() < odd_share
    kind = rng.random()
    if kind < 0.35:
        return f"{rng.randint(0, 99):3d}%|##  | {step}/500 [00:0{rng.randint(0, 9)}<00:10,  1.00it/s]"
    if kind < 0.75:
        return rng.choice(["", "INFO ", "  "]) + _dict(rng, odd) + rng.choice(["", " ", " done"])
    if kind < 0.8 and odd:
        d = _dict(rng, False)
        cut = rng.randint(2, len(d) - 2)
        return d[:cut] + "\n" + d[cut:]
    if kind < 0.85:
        return f"{step}/500 | loss={rng.random():.3f} | reward={rng.random():.3f}"
    if kind < 0.9:
        return "{'pad_token_id': 0}" if odd else "Processed prompts: 64/64 [00:01<00:00]"
    if kind < 0.95:
        return rng.choice(["step reward kl", f"{step} {rng.random():.2f} {rng.random():.2f}", "{x} {'loss': 1.0}"])
    return rng.choice(["", "   ", "warning: something\x0bodd", "a\u2028b", "line\r"])


def _log(seed: int, odd_share: float) -> str:
    rng = random.Random(seed)
    sep = rng.choice(["\n", "\r\n", "\n", "\r"])
    return sep.join(_line(rng, i, odd_share) for i in range(1, rng.randint(20, 300))) + rng.choice(["", sep])


def _reference_parse_text(text: str):
    """`parse_text` as it was: every reader run, the one that reads most kept (the first on a tie)."""
    candidates = [
        (*console.read_console(text), "console log"),
        (*read_step_lines(text), "text step lines"),
        (*read_text_tables(text), "text table"),
    ]
    return max(candidates, key=lambda c: len(c[0]))


@pytest.mark.parametrize("odd_share", [0.0, 0.02, 0.3])
def test_fast_paths_read_what_the_line_by_line_readers_read(odd_share):
    fast_used = 0
    for seed in range(60):
        text = _log(seed, odd_share)
        assert line_count(text) == len(text.splitlines())
        assert find_dicts(text) == find_dicts_by_line(text), seed
        fast_used += console._only_flat_dicts(text) is not None
        lines = text.splitlines()
        offsets = [sum(len(x) for x in text.splitlines(keepends=True)[:i]) for i in range(len(lines))]
        expected = [
            (off + m.start(), int(m.group(1)))
            for line, off in zip(lines, offsets)
            if " [" in line
            for m in console._TQDM.finditer(line)
        ]
        totals = {}
        for line in lines:
            for m in console._TQDM.finditer(line):
                totals.setdefault(int(m.group(2)), set()).add(int(m.group(1)))
        if expected:
            main = max(totals, key=lambda t: (len(totals[t]), t))
            expected = [(o, c) for (o, c), m in zip(expected, _all_totals(lines)) if m == main]
        assert console._progress_counters(text) == expected, seed
        if not text.lstrip().startswith("{"):
            assert textlog.parse_text(text) == _reference_parse_text(text), seed
    if odd_share == 0.0:
        assert fast_used >= 30  # the fast path is what long clean logs take


def _all_totals(lines):
    return [int(m.group(2)) for line in lines if " [" in line for m in console._TQDM.finditer(line)]


@pytest.mark.parametrize("seed", range(20))
def test_jsonl_in_one_decode_matches_line_by_line(seed):
    rng = random.Random(seed)
    lines = [f'{{"step": {i}, "reward": {rng.random():.3f}, "kl": {rng.choice(["NaN", "0.1", "1e-3"])}}}'
             for i in range(50)]
    text = rng.choice(["\n", "\r\n"]).join(lines) + rng.choice(["", "\n"])
    if rng.random() < 0.3:
        text = text.replace("\n", "\n\n", 1)  # a blank line: the fast path declines, the reader still reads
    fast = fastjson.loads_jsonl_text(text)
    records, _ = parse_jsonl(text)
    if fast is not None:
        assert fast == records
    assert textlog.parse_text(text)[0] == records


def _html_table(rng: random.Random, n: int) -> str:
    """A progress-callback-like table with random variations that the fast reading must notice."""
    header = ["Step", "Training Loss", "reward", "kl"]
    head_tr = rng.choice(["<tr>", '<tr style="text-align: left;">'])
    rows = []
    step = 0
    for _ in range(n):
        step = step + 1 if rng.random() > 0.03 else max(1, step - 3)  # now and then a restart
        cells = [str(step),
                 rng.choice([f"{rng.random():.6f}", "No log"] if rng.random() < 0.05 else [f"{rng.random():.6f}"]),
                 f"{rng.uniform(-1, 2):.6f}",
                 rng.choice([f"{rng.random():.6f}", "1e-05", "nan"] if rng.random() < 0.05 else ["0.001"])]
        tag = "<td>" if rng.random() > 0.02 else rng.choice(['<td class="x">', "<th>", "<TD>"])
        row = "".join(f"\n  {tag}{c}</td>".replace("<th>" + c + "</td>", "<th>" + c + "</th>") for c in cells)
        rows.append("<tr>" + row + "</tr>")
    body = "\n".join(rows)
    ths = "".join(f"<th>{h}</th>" for h in header)
    return f'<table border="1" class="dataframe"><thead>{head_tr}{ths}</tr></thead><tbody>\n{body}\n</tbody></table>'


@pytest.mark.parametrize("seed", range(40))
def test_a_notebook_table_read_as_numbers_gives_the_table_its_cells_give(seed):
    from agentgrpo.doctor.readers.notebook import html_tables, numeric_table
    from agentgrpo.doctor.readers.read import records_to_table
    from agentgrpo.doctor.table import TextBlock

    rng = random.Random(seed)
    table = _html_table(rng, rng.choice([12, 40, 200]))
    rows = html_tables(table)[0]
    cells = [c for row in rows[1:] for c in row]
    fast = numeric_table(table)
    if fast is not None:
        assert fast.header == rows[0] and fast.text_cells() == cells
        assert fast.numbers.ravel().tolist() == [float(c) for c in cells]
    block = fast if fast is not None else TextBlock(rows[0], cells)
    dicts = [dict(zip(rows[0], row)) for row in rows[1:]]
    a, b = records_to_table(block, "t", "nb"), records_to_table(dicts, "t", "nb")
    assert a.steps.tolist() == b.steps.tolist() and a.meta == b.meta
    assert a.columns.keys() == b.columns.keys()
    for key in a.columns:
        assert a.columns[key].tobytes() == b.columns[key].tobytes(), key


def test_the_plain_trainer_table_takes_the_numbers_path():
    from agentgrpo.doctor.readers.notebook import numeric_table

    rng = random.Random(0)
    table = _html_table(random.Random(1), 30)
    clean = table.replace("No log", "0.5").replace("nan", "0.5").replace('<td class="x">', "<td>")
    clean = clean.replace("<TD>", "<td>").replace("<th>0", "<td>0").replace("0</th>", "0</td>")
    assert numeric_table(clean) is not None, rng


# --- console logs of one dict per line (the shape of nearly every long log): `dictlines` ---------------

_KEYS = ["loss", "grad_norm", "learning_rate", "reward", "reward_std", "kl", "entropy", "completions/mean_length",
         "rewards/correct/mean", "frac_reward_zero_std", "epoch", "clip_ratio/region_mean"]


def _uniform_value(rng: random.Random, odd: bool) -> str:
    if odd:
        return rng.choice(["nan", "-inf", "'0.5'", "'train'", "True", "None", "[1]", "tensor(0.5)", '"x"'])
    return rng.choice([f"{rng.uniform(-3, 3):.6f}", str(rng.randint(0, 500)), "1e-05", f"{rng.random():.17g}", "-0.0"])


def _uniform_log(seed: int) -> str:
    """A Trainer-like console log: a bar, then one dict per logged step with the same keys, and now and
    then something a one-pass reader must notice (another bar, an eval or summary dict, a step key, a
    nested, wrapped, prefixed or odd dict, a table header, a stated logging_steps, a carriage return)."""
    rng = random.Random(seed)
    keys = rng.sample(_KEYS, rng.randint(1, 8)) + rng.choice([[], [], ["step"], ["global_step"]])
    quote = rng.choice(["'", "'", '"'])
    sep = rng.choice([": ", ": ", ":"])
    every = rng.choice([1, 1, 5])
    total = rng.randint(30, 200) * every
    odd_share = rng.choice([0.0, 0.0, 0.0, 0.01, 0.05])
    lines = []
    if rng.random() < 0.2:
        lines.append(f"logging_steps={every}")
    if rng.random() < 0.1:
        lines.append("  step   reward   kl")
    bar_after = rng.random() < 0.15
    evals = rng.random() < 0.3
    style = rng.choice(["plain", "plain", "redrawn", "crlf"])  # redrawn: tqdm in a terminal captured with 2>&1
    for step in range(every, total + 1, every):
        bar = f"{100 * step // total:3d}%|##  | {step}/{total} [00:0{rng.randint(0, 9)}<00:10,  1.00it/s]"
        if style == "redrawn" and not bar_after:
            # the bar redrawn in place with "\r", cleared before a dict is written (tqdm.write)
            lines.append("".join("\r" + bar for _ in range(rng.randint(1, 3))) + "\r" + " " * len(bar) + "\r")
        elif rng.random() < 0.97 and not bar_after:
            lines.append(bar)
        if rng.random() < 0.03:
            lines.append(f"Processed prompts: 64/64 [00:01<00:00, {rng.random():.2f}it/s]")
        odd = rng.random() < odd_share
        values = {k: (str(step) if k in ("step", "global_step") else _uniform_value(rng, odd and k == keys[0]))
                  for k in keys}
        body = ", ".join(f"{quote}{k}{quote}{sep}{v}" for k, v in values.items())
        line = "{" + body + "}"
        if odd and rng.random() < 0.3:
            line = rng.choice(["INFO " + line, line + " done", line[:10] + "\n" + line[10:], line + "\r",
                               "{ " + line[1:], "{'a': {'b': 1}}", "{'ab}c': 1, 'loss': 2}"])
        lines.append(line)
        if bar_after:
            lines.append(bar)
        if evals and rng.random() < 0.05:
            lines.append("{" + f"{quote}eval_loss{quote}{sep}{rng.random():.4f}, {quote}epoch{quote}{sep}1.0" + "}")
    if rng.random() < 0.2:
        lines.append("{'train_runtime': 12.5, 'train_loss': 0.1, 'epoch': 1.0}")
    if style == "redrawn":  # the cleared bar and the dict share a line: "...\r   \r{'loss': ...}\n"
        text = "\n".join(lines).replace("\r\n{", "\r{")
    else:
        text = ("\r\n" if style == "crlf" else "\n").join(lines)
    return text + rng.choice(["", "\n"])


def _without_dictlines(monkeypatch, fn, *args):
    """``fn(*args)`` with the one-pass reader switched off: the readers as they were before it."""
    with monkeypatch.context() as m:
        m.setattr(console, "split_dict_lines", lambda text, plain, **kwargs: None)
        return fn(*args)


@pytest.mark.parametrize("seed", range(120))
def test_a_log_of_one_dict_per_line_reads_as_the_line_by_line_reader_reads_it(seed, monkeypatch):
    from agentgrpo.doctor.readers.read import records_to_table
    from agentgrpo.doctor.table import TextBlock
    from agentgrpo.errors import UserError

    text = _uniform_log(seed)
    assert find_dicts(text) == find_dicts_by_line(text)
    records, notes, fmt = textlog.parse_text(text)
    old_records, old_notes, old_fmt = _without_dictlines(monkeypatch, textlog.parse_text, text)
    if isinstance(records, TextBlock):
        assert records.records() == old_records
    else:
        assert records == old_records
    assert (notes, fmt) == (old_notes, old_fmt)
    try:
        new = records_to_table(records, "log", fmt)
    except UserError as exc:
        with pytest.raises(UserError, match=re.escape(str(exc))):
            records_to_table(old_records, "log", fmt)
        return
    old = records_to_table(old_records, "log", fmt)
    assert new.steps.tolist() == old.steps.tolist() and new.meta == old.meta
    assert new.columns.keys() == old.columns.keys()
    for key in new.columns:
        assert new.columns[key].tobytes() == old.columns[key].tobytes(), key


def test_the_one_pass_reader_takes_the_common_logs():
    """The one-pass reader (and its column block) is what clean logs of one dict per line take."""
    from agentgrpo.doctor.readers.dictlines import split_dict_lines
    from agentgrpo.doctor.table import TextBlock

    taken = blocks = redrawn = 0
    for seed in range(120):
        text = _uniform_log(seed)
        taken += split_dict_lines(text, console._plain_numbers, carriage_returns=True) is not None
        blocks += isinstance(textlog.parse_text(text)[0], TextBlock)
        redrawn += "\r{" in text and isinstance(textlog.parse_text(text)[0], TextBlock)
    assert taken >= 60 and blocks >= 25 and redrawn >= 5, (taken, blocks, redrawn)


def test_bars_and_dicts_are_placed_as_the_counter_search_places_them():
    """`_bar_around_dicts` (one findall on the reversed skeleton) against `_progress_counters` and a search
    of the dicts' offsets, on generated skeletons with several bars, odd counts and no bar at all."""
    import numpy as np

    from agentgrpo.doctor.readers.dictlines import DICT_MARK

    for seed in range(300):
        rng = random.Random(seed)
        lines = []
        for _ in range(rng.randint(1, 60)):
            kind = rng.random()
            if kind < 0.4:
                lines.append(DICT_MARK)
            elif kind < 0.8:
                total = rng.choice([50, 50, 64, 7, 10**20])
                lines.append(f"{rng.randint(0, 99)}%| {rng.randint(0, 60)}/{total} [00:01" + rng.choice(["", " 3/4 ["]))
            else:
                lines.append(rng.choice(["x 12/ [", "/5 [", "a1/2[", "007/50 [", "9/9 ", ""]))
        skeleton = "\n".join(lines)
        starts, pos = [], 0
        for line in lines:
            if line == DICT_MARK:
                starts.append(pos)
            pos += len(line) + 1
        fast = console._bar_around_dicts(skeleton)
        counters = console._progress_counters(skeleton)
        if fast is None:
            continue
        counts, shown = fast
        assert counts == [c for _, c in counters], seed
        if counters:
            positions = np.array([p for p, _ in counters])
            assert shown == np.searchsorted(positions, np.array(starts, dtype=positions.dtype)).tolist(), seed


def test_real_console_logs_read_the_same_with_and_without_the_one_pass_reader(monkeypatch):
    """Every shared real text log gives the identical table (steps, columns, notes, format) either way; the
    one-pass reader takes the clean ones."""
    from pathlib import Path

    from agentgrpo.doctor.readers.dictlines import split_dict_lines
    from agentgrpo.doctor.readers.read import read_run

    logs = sorted(p for p in (Path(__file__).parent / "data" / "real-runs").iterdir() if p.suffix in (".txt", ".log"))
    taken = 0
    for path in logs:
        new = read_run(path)
        old = _without_dictlines(monkeypatch, read_run, path)
        assert (new.fmt, new.notes, new.table.steps.tolist()) == (old.fmt, old.notes, old.table.steps.tolist()), path
        assert new.table.columns.keys() == old.table.columns.keys(), path
        for key in new.table.columns:
            assert new.table.columns[key].tobytes() == old.table.columns[key].tobytes(), (path, key)
        text = path.read_text(encoding="utf-8", errors="replace")
        taken += split_dict_lines(text, console._plain_numbers) is not None
    assert len(logs) >= 5 and taken >= 2, (len(logs), taken)


@pytest.mark.parametrize("seed", range(0, 120, 3))
def test_two_processes_read_what_one_reads(seed, monkeypatch):
    """The two-process decode (a forked child reads the second half of the dict lines) gives the records,
    notes and table one process gives, also when it declines; the env switch turns it off."""
    from agentgrpo.doctor.readers import dictlines
    from agentgrpo.doctor.table import TextBlock

    text = _uniform_log(seed)
    monkeypatch.setenv("AGENTGRPO_DOCTOR_FORK", "0")
    one = textlog.parse_text(text)
    monkeypatch.setenv("AGENTGRPO_DOCTOR_FORK", "1")
    monkeypatch.setattr(dictlines, "PARALLEL_MIN_LINES", 2)
    monkeypatch.setattr(dictlines, "_two_cpus", lambda: True)
    two = textlog.parse_text(text)
    records = [r.records() if isinstance(r, TextBlock) else r for r in (one[0], two[0])]
    assert records[0] == records[1] and one[1:] == two[1:], seed
    if isinstance(two[0], TextBlock):
        assert two[0].numbers.tobytes() == one[0].numbers.tobytes()
