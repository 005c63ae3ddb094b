"""Plain-text step lines that custom loops print: ``12/100 | loss=0.31 | reward=0.5``, ``step 12: reward 0.5``.

A line is a record when it names its step (``N/M``, ``step N``, ``iter N``, ``[N/M]``, or a ``step=N`` pair;
an ``Epoch e/E`` before a ``n/T`` counter makes the step ``(e - 1) * T + n``; a tqdm bar's ``n/total [...]`` counter
with its postfix's pairs, not its description's: tqdm prints the bar when the counter moves, still showing the
previous step's postfix, then again once the step's postfix is set, so each counter's last line is its step's)
and holds at least one ``key=value`` (or ``key: value``) pair whose key is a training metric. Lines from
anything else (download bars, environment prints) do not qualify and are ignored.
"""

from __future__ import annotations

import re

from agentgrpo.doctor import names

_NUMBER = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?%?|[-+]?(?i:nan|inf(?:inity)?)"
_PAIR = re.compile(
    r"(?<![\w/.])([A-Za-z_][\w/.\-@]*?)\s*(?:=|:\s|:(?=[-+\d.]|np\.|tensor))\s*(?:(?:np\.)?\w*\()?("
    + _NUMBER
    + r")(?![\w.])"
)
_FRACTION = re.compile(r"(?<![\w./])(\d+)\s*/\s*(\d+)(?![\w./])")
_DICT_LINE = re.compile(r"\{\s*['\"]")  # printed dicts are the console reader's
_SOURCE_FILE = re.compile(r"\.(?:py|pyx|c|cc|cpp|h|rs|go|js|ts)$")  # logging's ``%(filename)s:%(lineno)d`` prefix
_EPOCH_BEFORE = re.compile(r"\bepoch\W{0,3}$", re.IGNORECASE)  # an epoch word just before a fraction
_STEP_ONLY = re.compile(r"\b(?:global_)?step\s*[#:=]?\s*(\d+)\b", re.IGNORECASE)
_STEP_WORD = re.compile(r"\b(?:step|iter(?:ation)?|update|global_step)\s*[#:=]?\s*(\d+)\b", re.IGNORECASE)
# a tqdm bar, ``desc: pct%|<bar>| n/total [elapsed<remaining, rate, postfix]``: the postfix's pairs are the step's
_BAR = re.compile(r"\|\s*(\d+)/\d+\s*\[([^\]]*)\]")


def parse_line(line: str) -> dict | None:
    """The record of one step line, or None.

    >>> parse_line("[run]  12/100 | loss=-9.31 | reward=0.375")
    {'loss': '-9.31', 'reward': '0.375', 'step': 12}
    >>> parse_line("Step 7: reward: 0.5, kl=nan")
    {'reward': '0.5', 'kl': 'nan', 'step': 7}
    >>> parse_line("step:4 - critic/score/mean:np.float64(0.25) - actor/entropy:0.5")
    {'critic/score/mean': '0.25', 'actor/entropy': '0.5', 'step': 4}
    >>> parse_line("Epoch:[2/3](5/100), Reward: -2.3, KL_ref: 0.001")  # the epoch's count is not the step
    {'Reward': '-2.3', 'KL_ref': '0.001', 'step': 105}
    >>> parse_line("Iteration 1/1, Step 7/500, GRPO iter 1/1, loss: 0.0")
    {'loss': '0.0', 'step': 7}
    >>> parse_line("19:53:03-train_grpo.py:700-INFO >> Step: 3/200, Loss: 0.1, Avg Reward: 1.45")
    {'Loss': '0.1', 'Reward': '1.45', 'step': 3}
    >>> parse_line("Dr. CPPO:   3%|▎  | 1379/50000 [12:49:54<458:01:43, 33.91s/it, H=2.33, loss=0.298, reward=3.41]")
    {'H': '2.33', 'loss': '0.298', 'reward': '3.41', 'step': 1379}
    >>> parse_line("step 4 of 10") is None
    True
    >>> parse_line("model.safetensors: 100% 1.14G/1.14G [00:08<00:00, 133MB/s]") is None
    True
    """
    bar = _BAR.search(line)
    if bar is not None:  # a progress bar: its counter is the step, its postfix the metrics (not its description)
        pairs = dict(_PAIR.findall(bar.group(2)))
        if not any(names.is_metric(names.canonical(k)) for k in pairs):
            return None
        return {**{k: v for k, v in pairs.items() if names.canonical(k) != "step"}, "step": int(bar.group(1))}
    pairs = {}
    for key, value in _PAIR.findall(line):
        if _SOURCE_FILE.search(key):
            continue  # ``trainer.py:700``: where the line was logged
        pairs[key] = value[:-1] if value.endswith("%") else value
    if not any(names.is_metric(names.canonical(k)) or names.is_heldout(k) for k in pairs):  # a held-out line too
        return None
    step = _step_of(line, pairs)
    if step is None:
        return None
    record = {k: v for k, v in pairs.items() if names.canonical(k) != "step"}
    record["step"] = step
    return record


def _step_of(line: str, pairs: dict) -> int | None:
    for key, value in pairs.items():
        if names.canonical(key) == "step":
            try:
                return int(float(value))
            except ValueError:
                return None
    first_pair = _PAIR.search(line)
    head = line[: first_pair.start()] if first_pair else line
    # ``Iteration 1/1, Step 7/500``: the word step names the step where a line names an iteration too
    match = _STEP_ONLY.search(head) or _STEP_WORD.search(head) or _STEP_WORD.search(line)
    if match:
        return int(match.group(1))
    epoch = None
    for match in _FRACTION.finditer(head):
        count, total = int(match.group(1)), int(match.group(2))
        if count > total:
            continue
        if _EPOCH_BEFORE.search(head, 0, match.start()):  # ``Epoch 2/3``: the epoch, not the step
            epoch = epoch or count
            continue
        return (epoch - 1) * total + count if epoch else count
    return None


def read_step_lines(text: str) -> tuple[list[dict], list[str]]:
    """Records from every step line of ``text``, and a note on what was read. A line of one metric alone
    (``Average Reward: 0.71``, no step) joins a step line (`_lone_metrics`)."""
    records, lone = [], []
    redrawn, after_bar = 0, False
    for line in text.splitlines():
        if ("=" in line or ":" in line) and not _DICT_LINE.search(line):
            record = parse_line(line)
            if record:
                bar = _BAR.search(line) is not None
                if bar and after_bar and records[-1]["step"] == record["step"]:
                    records[-1] = record  # the bar redrawn at its counter: the last drawing is the step's (a NaN too)
                    redrawn += 1
                else:
                    records.append(record)
                after_bar = bar
            elif (pair := _lone_metric(line)) is not None:
                lone.append((len(records), pair))
    if not records:
        return [], []
    notes = [f"text log: read {len(records)} step lines (`step ... key=value ...`)"]
    if redrawn:
        notes.append(f"{redrawn} progress-bar lines redrew a step's counter: each counter's last line kept")
    joined = _join_lone_metrics(records, lone)
    if joined:
        where = "after" if lone[0][0] == 0 else "before"
        notes.append(f"{joined} lines of one metric alone joined the step line {where} each")
    return records, notes


def _lone_metric(line: str) -> tuple[str, str] | None:
    """The one ``name: value`` pair of a line that holds nothing else a reader counts, when its name is a
    training metric; None otherwise.

    >>> _lone_metric("Average Reward: 0.714285671710968"), _lone_metric("Input batch size: 7")
    (('Reward', '0.714285671710968'), None)
    """
    pairs = _PAIR.findall(line)
    if len(pairs) != 1 or not names.is_metric(names.canonical(pairs[0][0])):
        return None
    key, value = pairs[0]
    return key, value[:-1] if value.endswith("%") else value


def _join_lone_metrics(records: list[dict], lone: list[tuple[int, tuple[str, str]]]) -> int:
    """Join each lone metric line to a step line, in place; how many were joined. A loop that prints a batch's
    metric and then the step's progress prints the first such line before any step line: each then belongs
    to the step line after it; otherwise to the one before it. A name the step lines log themselves is left
    to them; a step that would get the same name twice gets none (the lines are not one a step)."""
    if not lone:
        return 0
    after = lone[0][0] == 0
    targets: dict[int, dict] = {}
    for position, (key, value) in lone:
        index = position if after else position - 1
        if not 0 <= index < len(records) or key in records[index]:
            continue
        if key in targets.setdefault(index, {}):
            return 0
        targets[index][key] = value
    for index, pairs in targets.items():
        records[index].update(pairs)
    return sum(map(len, targets.values()))
