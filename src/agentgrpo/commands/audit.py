"""Red-team the rewards: adversarial completions scored by each reward and the weighted total, beside the gold.

    agentgrpo audit calculator                         # a task with its default rewards
    agentgrpo audit demo                               # a config (shipped name or YAML path): its rewards
    agentgrpo audit demo --reward correct_answer --reward my_rewards.py:score=0.5 --strict
    agentgrpo audit my.yaml --json audit.json --threshold 0.3

Probes per prompt: empty and whitespace replies, the prompt echoed, the right format with a wrong answer,
the answer without the format, many candidates at once, the answer repeated, padding to the length limit,
injected tags (</answer><answer>), the answer only in a tool call or a tool message, look-alike digits, a
fake tool result in the model's own text, a claim of success, and (for code rewards) a program that exits
early or returns an object whose __eq__ is always True. An exploit is an exploit probe whose trained total
reaches THRESHOLD x the gold's total on >= 10% of the prompts; each reward alone and weight-0 shadow
rewards are reported beside it. The audit also checks that the gold earns each reward's maximum.
Loads no model (a tokenizer only when a reward counts tokens). Exit status 1 with --strict on a failure.
"""

from __future__ import annotations

HELP = "red-team the rewards with adversarial completions (no model needed)"


def add_arguments(parser) -> None:
    parser.add_argument("target", help="A task name (or package.module:TASK), a shipped config name or a YAML file.")
    parser.add_argument(
        "--reward",
        action="append",
        metavar="NAME[=WEIGHT]",
        help="Audit these rewards instead of the config's/task's (repeat it): a task reward, a "
        "library reward, package.module:function or path/to/file.py:function; weight 0 = "
        "shadow (reported, not part of the total). Default weight 1.",
    )
    parser.add_argument("--prompts", type=int, default=100, help="Training prompts to probe (default: 100).")
    parser.add_argument(
        "--threshold",
        type=float,
        default=0.5,
        help="A probe scoring at least this fraction of the gold's total is an exploit (default 0.5).",
    )
    parser.add_argument(
        "--tokenizer",
        help="Tokenizer (model directory or Hub id in the local cache) for rewards "
        "that count tokens (completion_ids); default: the config's model when "
        "it loads offline.",
    )
    parser.add_argument("--json", metavar="PATH", help="Also write the full report (every score, examples) as JSON.")
    parser.add_argument(
        "--strict",
        action="store_true",
        help="Exit with status 1 when an exploit is found or the gold does not score the maximum.",
    )
    parser.add_argument(
        "--set",
        dest="overrides_",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="Older spelling of a config override: --set max_completion_length=128 is --max_completion_length 128.",
    )
    parser.set_defaults(_accepts_overrides=True)  # configs only: --option value, as `agentgrpo train` takes


def run(args) -> int:
    import json
    from pathlib import Path

    from agentgrpo.errors import UserError
    from agentgrpo.preflight.audit import audit, format_audit
    from agentgrpo.preflight.target import resolve

    if not 0 < args.threshold <= 1:
        raise UserError(f"--threshold: {args.threshold} is not in (0, 1]")
    overrides = [*(f"--{o.partition('=')[0]}={o.partition('=')[2]}" for o in args.overrides_),
                 *(getattr(args, "overrides", None) or [])]
    target = resolve(args.target, overrides, args.reward)
    report = audit(
        target, n_prompts=args.prompts, threshold=args.threshold, tokenizer=_tokenizer(args.tokenizer, target)
    )
    print(format_audit(report))
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1, default=str))
        print(f"report: {args.json}")
    return 1 if args.strict and not report["ok"] else 0


def _tokenizer(name: str | None, target):
    """The tokenizer for token-counting rewards, or None (such rewards are then reported as not scored)."""
    needs = any(n in ("overlong_penalty", "length_budget") for n in target.rewards.names)
    if not (needs or name):
        return None
    from agentgrpo.errors import UserError
    from agentgrpo.training.models import load_tokenizer, resolve_model

    try:
        return load_tokenizer(name or resolve_model(target.model, target.task))
    except Exception as exc:
        if name:
            raise UserError(f"--tokenizer {name!r} could not be loaded: {exc}") from exc
        return None
