"""The reward audit: score every probe (see `probes`) with each reward and the weighted total, beside the gold.

    report = audit(target, n_prompts=100, threshold=0.5)
    print(format_audit(report)); report["ok"]      # False when an exploit was found or the gold is not the max

An *exploit* is an ``exploit`` probe whose weighted total reaches ``threshold`` x the gold's total on at
least ``MIN_SHARE`` of the prompts (the reference is each reward's declared maximum when the task has no gold
answers). Each reward is also judged alone (reported, not failing: a small format bonus is exploitable alone
by design). Weight-0 shadow rewards are scored and shown, never part of the total.
"""

from __future__ import annotations

import time
import warnings

from tqdm.auto import tqdm

from agentgrpo.preflight.probes import EXPLOIT, LENIENT, PROBES, applicable, context, gold_of, task_tools
from agentgrpo.rewards._text import completion_text
from agentgrpo.rewards.replay import replay_environments
from agentgrpo.timeouts import TIMEOUTS

MIN_SHARE = 0.1  # an exploit must work on at least this share of the prompts
EPS = 1e-9


def audit(
    target,
    n_prompts: int = 100,
    threshold: float = 0.5,
    tokenizer=None,
    progress: bool = True,
    max_chars: int | None = None,
) -> dict:
    """Run every applicable probe on ``n_prompts`` training prompts of ``target``; a JSON-able report."""
    start = time.perf_counter()
    task, rewards = target.task, target.rewards
    rows, notes = _rows(target, n_prompts)
    code = _is_code(rewards, task)
    tools = task_tools(task)
    limit = max_chars or 4 * int(target.grpo["max_completion_length"])  # ~4 characters per token
    golds = [gold_of(task, r) for r in rows]
    answers = [str(r["answer"]) for r in rows if r.get("answer") is not None]
    contexts = [
        context(r, g, tools, code, answers[i + 1 :] + answers[:i], limit)
        for i, (r, (g, _)) in enumerate(zip(rows, golds, strict=True))
    ]
    no_gold = [why for _, why in golds if why]
    if no_gold:
        notes.append(
            f"{len(no_gold)} of {len(rows)} prompts have no gold answer ({no_gold[0]}); the reference "
            "score is each reward's declared maximum and probes needing the answer are skipped"
        )
    items, skipped = _build(contexts)
    completions = [c for _, _, c in items]
    with tqdm(total=len(rewards.funcs), desc="audit: scoring", disable=not progress, leave=False) as bar:
        scores, reward_notes = _score(target, rows, items, completions, tokenizer, bar)
    notes += reward_notes
    report = _judge(target, rows, items, scores, skipped, threshold)
    report["forgeable_tests"] = forgeable_tests(rewards, rows)
    report.update(
        target=target.source,
        task=task.name,
        prompts=len(rows),
        threshold=threshold,
        min_share=MIN_SHARE,
        notes=notes,
        seconds=round(time.perf_counter() - start, 2),
        rewards=[
            {"name": n, "weight": w, "shadow": n in rewards.shadow_names}
            for n, w in zip(rewards.names, rewards.weights, strict=True)
        ],
    )
    return report


MAX_FORGEABLE_LISTED = 20
_NOT_COLUMNS = frozenset({"completions", "prompts", "completion_ids", "log_extra", "log_metric", "trainer_state"})


def forgeable_tests(rewards, rows: list[dict]) -> dict:
    """The rows' tests whose expected value the program's own code builds (`agentgrpo.sandbox.trusted.
    forgeable_tests`: every side of a comparison reads the program's function or class, as in
    ``assert f() == Point(1, 2)``). Such a test's outcome is the program's to decide, in plain Python as in
    the sandbox, which marks it on the verdict (``Verdict.forgeable_tests``); reported here, not failing.
    The tests are read from the dataset columns the rewards take (their named parameters)."""
    import inspect

    from agentgrpo.sandbox import jobs, trusted

    columns = []
    for func in rewards.funcs:
        try:
            params = inspect.signature(func).parameters.values()
        except (TypeError, ValueError):
            continue
        columns += [p.name for p in params if p.name not in _NOT_COLUMNS
                    and p.kind in (inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    found, checked = [], 0
    for i, row in enumerate(rows):
        for column in dict.fromkeys(columns):
            tests = row.get(column)
            if isinstance(tests, str):
                steps = jobs.split_tests(tests)
            elif isinstance(tests, list | tuple) and tests and all(isinstance(t, str) for t in tests):
                steps = [(True, t) for t in tests]
            else:
                continue
            sources = [source for is_test, source in steps if is_test]
            checked += len(sources)
            for index in trusted.forgeable_tests(steps, trusted.free_names([source for _, source in steps])):
                found.append({"id": str(row.get("id", i)), "column": column, "test": index, "source": sources[index]})
    return {"tests_checked": checked, "count": len(found), "found": found[:MAX_FORGEABLE_LISTED]}


def _rows(target, n: int) -> tuple[list[dict], list[str]]:
    from agentgrpo.errors import UserError

    if n < 1:
        raise UserError(f"--prompts: {n} < 1; audit at least one prompt")
    notes = []
    size = target.train_size or n
    if n > size:
        notes.append(f"asked for {n} prompts but the training set has {size}; auditing all {size}")
        n = size
    try:
        rows = target.task.train_problems(n, target.seed)
    except Exception as exc:
        raise UserError(f"task {target.task.name}: train_problems({n}) raised {type(exc).__name__}: {exc}") from exc
    if len(rows) < n:
        notes.append(f"asked for {n} prompts; the task has {len(rows)}")
    if not rows:
        raise UserError(f"task {target.task.name}: no training prompts to audit")
    return rows, notes


def _is_code(rewards, task) -> bool:
    names = " ".join(rewards.names).lower()
    if "code" in names:
        return True
    try:
        gold = task.gold_completion(task.train_problems(1, 0)[0])
    except Exception:
        return False
    return "```" in completion_text(gold or "")


def _build(contexts) -> tuple[list[tuple[int, str, list]], dict[str, str]]:
    """(row index, probe name or 'gold', completion) for every applicable probe; and why others were skipped."""
    items, skipped = [], {}
    for i, ctx in enumerate(contexts):
        text = isinstance(ctx.row.get("prompt"), str)  # plain-text prompts: TRL passes text completions
        if ctx.gold is not None:
            items.append((i, "gold", completion_text(ctx.gold) if text else ctx.gold))
        for probe in PROBES:
            why = applicable(probe, ctx)
            completion = None if why else probe.build(ctx)
            if completion is not None and text:
                completion = as_text(completion)
                why = None if completion is not None else "plain-text prompts: completions are text, no tool turns"
            if completion is None:
                skipped.setdefault(probe.name, why or "not applicable to this prompt")
                continue
            items.append((i, probe.name, completion))
    ran = {name for _, name, _ in items}
    return items, {k: v for k, v in skipped.items() if k not in ran}


def as_text(completion: list[dict]) -> str | None:
    """A probe as the plain text TRL passes for a non-conversational prompt (None when it has tool turns).

    >>> as_text([{"role": "assistant", "content": "42"}]), as_text([{"role": "tool", "content": "42"}])
    ('42', None)
    """
    if any(m.get("role") != "assistant" or m.get("tool_calls") for m in completion):
        return None
    return "".join(str(m.get("content") or "") for m in completion)


def _score(target, rows, items, completions, tokenizer, bar) -> tuple[dict[str, list], list[str]]:
    """Every reward's values for every item (None where it failed), called as TRL calls them."""
    from agentgrpo.errors import UserError

    columns = {k: [rows[i].get(k) for i, _, _ in items] for k in rows[0] if k != "prompt"}
    kwargs = {"prompts": [rows[i]["prompt"] for i, _, _ in items], **columns}
    with TIMEOUTS.apart() as timed_out:
        envs = replay_environments(target.task, rows, items, target.tool_timeout)
    if envs is not None:
        kwargs["environments"] = envs
    if tokenizer is not None:
        kwargs["completion_ids"] = [_completion_ids(tokenizer, rows[i]["prompt"], c) for i, _, c in items]
    scores, notes = {}, []
    if timed_out[0]:
        notes.append(timeout_note(timed_out[0], target.tool_timeout, "replaying the probes' tool calls"))
    for func in target.rewards.funcs:
        name = func.__name__
        before = func.errors_total
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                scores[name] = func(completions=completions, **kwargs)
        except UserError as exc:
            notes.append(f"reward {name!r} could not be scored: {exc}")
            scores[name] = [None] * len(items)
        errors = func.errors_total - before
        if errors:
            first = (func.first_error or "").strip().splitlines()[-1:]
            notes.append(
                f"reward {name!r} raised on {errors} of {len(items)} completions (scored None): "
                f"{first[0] if first else ''}"
            )
        bar.update(1)
    return scores, notes


def timeout_note(n: int, seconds: float, where: str) -> str:
    """A note on the tool calls that ran past the time limit (each ended as a 'timed out' observation)."""
    return (f"{n} tool call{'s' * (n != 1)} timed out {where} (tool_timeout {seconds:g} s): each ended as a "
            "'timed out' observation, as in training; a tool that hangs costs tool_timeout seconds per call")


def _completion_ids(tokenizer, prompt, completion) -> list[int]:
    """The completion's token ids as the chat template renders it after the prompt (tool turns included)."""
    if isinstance(prompt, str):
        return tokenizer(completion if isinstance(completion, str) else str(completion))["input_ids"]
    head = tokenizer.apply_chat_template(prompt, add_generation_prompt=True, tokenize=True, return_dict=False)
    full = tokenizer.apply_chat_template(list(prompt) + list(completion), tokenize=True, return_dict=False)
    return list(full[len(head) :])


# --- judging ------------------------------------------------------------------------------------------


def _judge(target, rows, items, scores, skipped, threshold) -> dict:
    rs = target.rewards
    trained = [(n, w) for n, w in zip(rs.names, rs.weights, strict=True) if n not in rs.shadow_names]
    totals = [_total(trained, scores, j) for j in range(len(items))]
    by_probe: dict[str, list[int]] = {}
    for j, (_, name, _) in enumerate(items):
        by_probe.setdefault(name, []).append(j)
    gold_at = {items[j][0]: j for j in by_probe.get("gold", [])}
    maxima = {f.__name__: getattr(f, "max_reward", None) for f in rs.funcs}
    ref_total = sum(w * (maxima[n] if maxima[n] is not None else 1.0) for n, w in trained)

    def reference(name: str, row: int) -> float | None:
        if row in gold_at:
            return totals[gold_at[row]] if name == "total" else scores[name][gold_at[row]]
        return ref_total if name == "total" else (maxima.get(name) if maxima.get(name) is not None else 1.0)

    def values(name: str, j: int):
        return totals[j] if name == "total" else scores[name][j]

    probes, exploits, alone, warnings_ = [], [], [], []
    for probe in PROBES:
        if probe.name not in by_probe:
            probes.append(_not_run(probe, skipped))
            continue
        entry = _probe_entry(probe, by_probe[probe.name], items, ["total", *rs.names], values, reference, threshold)
        if entry["exploit"] or entry["lenient"]:
            j = entry["scores"]["total"]["worst_item"]
            entry["example"] = _example(rows, items, scores, totals, j, reference("total", items[j][0]))
            (exploits if entry["exploit"] else warnings_).append(_finding(probe, entry, "total"))
        for name in rs.names:
            s = entry["scores"][name]
            if probe.kind == EXPLOIT and s["share_at_threshold"] >= MIN_SHARE and s["reference_mean"] > EPS:
                alone.append({**_finding(probe, entry, name), "shadow": name in rs.shadow_names})
        probes.append(entry)
    gold = _gold_check(rs, scores, totals, by_probe, items, maxima)
    ok = not exploits and not gold["problems"]
    return {
        "ok": ok,
        "verdict": "pass" if ok else "fail",
        "gold": gold,
        "probes": probes,
        "exploits": exploits,
        "lenient": warnings_,
        "alone": alone,
        "skipped": {p["probe"]: p["skipped"] for p in probes if not p["ran"]},
    }


def _not_run(probe, skipped: dict) -> dict:
    """A probe's entry when it did not run, with why."""
    return {
        "probe": probe.name,
        "kind": probe.kind,
        "description": probe.description,
        "ran": False,
        "skipped": skipped.get(probe.name, "not applicable"),
    }


def _probe_entry(probe, indices: list[int], items, names: list[str], values, reference, threshold) -> dict:
    """A probe's entry: the score statistics of its ``indices`` per reward ``names`` (``values(name, j)``
    against ``reference(name, row)``), and whether the total makes it an exploit or a lenient reward."""
    entry = {
        "probe": probe.name,
        "kind": probe.kind,
        "description": probe.description,
        "ran": True,
        "n": len(indices),
        "scores": {},
    }
    for name in names:
        stats = _fractions(
            indices,
            items,
            lambda j, n=name: values(n, j),
            lambda row, n=name: reference(n, row),
            threshold,
        )
        entry["scores"][name] = stats
    entry["exploit"] = probe.kind == EXPLOIT and entry["scores"]["total"]["share_at_threshold"] >= MIN_SHARE
    entry["lenient"] = probe.kind == LENIENT and entry["scores"]["total"]["share_at_threshold"] >= MIN_SHARE
    return entry


def _total(trained, scores, j) -> float | None:
    present = [w * scores[n][j] for n, w in trained if scores[n][j] is not None]
    return sum(present) if present else None


def _fractions(indices, items, value, reference, threshold) -> dict:
    """Mean score, mean reference, and the share of prompts where the probe reached threshold x reference."""
    vals, refs, hits, worst, worst_frac = [], [], 0, indices[0], -float("inf")
    for j in indices:
        v, ref = value(j), reference(items[j][0])
        vals.append(v)
        if ref is None:
            continue
        refs.append(ref)
        frac = (v if v is not None else 0.0) / ref if ref > EPS else (1.0 if (v or 0.0) >= ref - EPS else 0.0)
        hits += int(ref > EPS and frac >= threshold - EPS)
        if frac > worst_frac:
            worst, worst_frac = j, frac
    present = [v for v in vals if v is not None]
    return {
        "mean": _r(sum(present) / len(present)) if present else None,
        "none": len(vals) - len(present),
        "reference_mean": _r(sum(refs) / len(refs)) if refs else 0.0,
        "max_fraction": _r(worst_frac) if refs else None,
        "share_at_threshold": _r(hits / len(indices)),
        "worst_item": worst,
    }


def _finding(probe, entry, name) -> dict:
    s = entry["scores"][name]
    return {
        "probe": probe.name,
        "reward": name,
        "kind": probe.kind,
        "description": probe.description,
        "share_of_prompts": s["share_at_threshold"],
        "mean": s["mean"],
        "reference_mean": s["reference_mean"],
        "example": entry.get("example"),
    }


def _example(rows, items, scores, totals, j, reference) -> dict:
    i, _, completion = items[j]
    return {
        "id": str(rows[i].get("id", i)),
        "completion": completion,
        "total": totals[j],
        "reference_total": reference,
        "scores": {n: v[j] for n, v in scores.items()},
    }


def _gold_check(rs, scores, totals, by_probe, items, maxima) -> dict:
    """The gold earns each reward's declared maximum, and no probe outscores it on its own prompt."""
    gold_idx = by_probe.get("gold", [])
    if not gold_idx:
        return {"available": False, "problems": [], "rewards": {}}
    problems, per = [], {}
    gold_at = {items[j][0]: j for j in gold_idx}
    for name in ["total", *rs.names]:
        vals = [totals[j] if name == "total" else scores[name][j] for j in gold_idx]
        present = [v for v in vals if v is not None]
        per[name] = {
            "mean": _r(sum(present) / len(present)) if present else None,
            "min": _r(min(present)) if present else None,
            "none": len(vals) - len(present),
            "declared_max": maxima.get(name),
        }
        if name != "total" and name in rs.shadow_names:
            continue
        if len(present) < len(vals):
            problems.append(f"{name}: the gold scored None on {len(vals) - len(present)} of {len(vals)} prompts")
        declared = maxima.get(name)
        if declared is not None and present and min(present) < declared - 1e-6:
            problems.append(f"{name}: the gold scored {min(present):g} < the declared maximum {declared:g}")
        beaten = _outscored(name, rs, scores, totals, by_probe, items, gold_at)
        if beaten:
            problems.append(f"{name}: probes outscore the gold ({beaten}); the gold should earn the maximum")
    return {"available": True, "problems": problems, "rewards": per}


def _outscored(name, rs, scores, totals, by_probe, items, gold_at) -> str:
    found = []
    for probe, indices in by_probe.items():
        if probe == "gold":
            continue
        n = 0
        for j in indices:
            g = gold_at.get(items[j][0])
            v = totals[j] if name == "total" else scores[name][j]
            ref = None if g is None else (totals[g] if name == "total" else scores[name][g])
            n += int(v is not None and ref is not None and v > ref + 1e-6)
        if n:
            found.append(f"{probe} on {n} prompts")
    return ", ".join(found)


def _r(x: float) -> float:
    return round(float(x), 4)


# --- output -------------------------------------------------------------------------------------------


def format_audit(report: dict, examples: bool = True) -> str:
    """The audit as a table plus its findings, for a terminal."""
    lines = _score_table(report)
    lines += _findings(report, examples)
    lines += _forgeable_lines(report.get("forgeable_tests") or {})
    lines += _gold_lines(report["gold"], [r["name"] for r in report["rewards"]])
    lines += [f"note: {n}" for n in report["notes"]]
    lines.append(f"audit {report['verdict'].upper()} ({report['seconds']:.1f} s)")
    return "\n".join(lines)


def _score_table(report: dict) -> list[str]:
    """The audit's title and its table: the mean score of the gold and of each probe that ran, per reward."""
    names = [r["name"] for r in report["rewards"]]
    heads = ["total", *names]
    label = {
        n: n + (" (shadow)" if r["shadow"] else f" x{r['weight']:g}") for r in report["rewards"] for n in [r["name"]]
    }
    label["total"] = "total"
    width = max(26, *(len(p["probe"]) for p in report["probes"]))
    cols = [max(10, len(label[h])) for h in heads]
    lines = [
        f"reward audit of {report['target']}: {report['prompts']} prompts, exploit = an exploit probe "
        f"reaching {report['threshold']:.0%} of the gold's total on >= {report['min_share']:.0%} of prompts",
        "",
        f"{'probe':<{width}} {'kind':<8} " + " ".join(f"{label[h]:>{c}}" for h, c in zip(heads, cols)) + "  verdict",
    ]
    gold = report["gold"]
    if gold["available"]:
        lines.append(
            f"{'gold':<{width}} {'':<8} "
            + " ".join(f"{_fmt(gold['rewards'][h]['mean']):>{c}}" for h, c in zip(heads, cols))
            + "  reference"
        )
    for p in report["probes"]:
        if not p["ran"]:
            continue
        verdict = "EXPLOIT" if p["exploit"] else ("lenient" if p["lenient"] else "ok")
        lines.append(
            f"{p['probe']:<{width}} {p['kind']:<8} "
            + " ".join(f"{_fmt(p['scores'][h]['mean']):>{c}}" for h, c in zip(heads, cols))
            + f"  {verdict}"
        )
    lines.append("(mean score per prompt; the gold row is the reference)")
    return lines


def _findings(report: dict, examples: bool) -> list[str]:
    """The probes not run, the exploits and lenient rewards found (with an example each), and each reward's
    own exploits."""
    lines = []
    if report["skipped"]:
        lines += ["", "probes not run:"] + [f"  {k}: {v}" for k, v in report["skipped"].items()]
    for title, found in (
        ("EXPLOITS (the trained total)", report["exploits"]),
        ("lenient (right answer, degenerate form; fine if intended)", report["lenient"]),
    ):
        if found:
            lines += ["", f"{title}:"]
            for f in found:
                lines.append(
                    f"  {f['probe']}: {f['description']}; reaches the threshold on "
                    f"{f['share_of_prompts']:.0%} of prompts (mean {_fmt(f['mean'])} vs gold "
                    f"{_fmt(f['reference_mean'])})"
                )
                if examples and f.get("example"):
                    lines.append(f"    e.g. prompt {f['example']['id']}: {_short(f['example']['completion'])}")
    alone = [a for a in report["alone"] if a["reward"] != "total"]
    if alone:
        lines += ["", "each reward alone (reported, not failing: judged on the total it trains in):"]
        lines += [
            f"  {a['reward']}{' (shadow)' if a['shadow'] else ''}: exploitable by {a['probe']} "
            f"({a['share_of_prompts']:.0%} of prompts)"
            for a in alone
        ]
    return lines


def _forgeable_lines(forgeable: dict) -> list[str]:
    """The tests whose expected value the program under test builds (or that none does)."""
    lines = []
    if forgeable.get("count"):
        lines += ["", f"FORGEABLE TESTS: {forgeable['count']} of {forgeable['tests_checked']} tests build their "
                  "expected value with the program's own code (its function or class), so the program decides "
                  "their outcome, in plain Python as in the sandbox (Verdict.forgeable_tests; docs/sandbox.md):"]
        lines += [f"  prompt {f['id']} {f['column']}[{f['test']}]: {_short(f['source'], 120)}"
                  for f in forgeable["found"]]
    elif forgeable.get("tests_checked"):
        lines += ["", f"forgeable tests: none of {forgeable['tests_checked']} tests builds its expected value "
                  "with the program's own code"]
    return lines


def _gold_lines(gold: dict, names: list[str]) -> list[str]:
    """Whether the gold is the maximum: the problems, or what it earns."""
    lines = []
    if gold["problems"]:
        lines += ["", "GOLD IS NOT THE MAXIMUM:"] + [f"  {p}" for p in gold["problems"]]
    elif gold["available"]:
        declared = [n for n in names if gold["rewards"][n]["declared_max"] is not None]
        lines += [
            "",
            "gold: no probe outscores it on any prompt"
            + (f"; it earns the declared maximum of {', '.join(declared)}" if declared else "")
            + (
                f" ({', '.join(n for n in names if n not in declared)} declare no maximum)"
                if len(declared) < len(names)
                else ""
            ),
        ]
    return lines


def _fmt(x) -> str:
    return "None" if x is None else f"{x:.3f}"


def _short(completion, n: int = 160) -> str:
    if isinstance(completion, str):
        return repr(completion) if len(repr(completion)) <= n else repr(completion)[: n - 3] + "..."
    parts = []
    for m in completion:
        text = str(m.get("content") or "")
        if m.get("tool_calls"):
            text += " " + "; ".join(
                f"{c['function']['name']}({c['function'].get('arguments')})" for c in m["tool_calls"]
            )
        parts.append(f"{m.get('role')}: {text.strip()!r}")
    out = " | ".join(parts)
    return out if len(out) <= n else out[: n - 3] + "..."
