"""The signal check: will GRPO groups from the starting model carry a learning signal? And token fidelity.

    agentgrpo check demo                        # the demo config: 32 prompts x 16 samples from its model
    agentgrpo check calculator --model ./my_model --prompts 64 --k 8
    agentgrpo check my.yaml --json check.json
    agentgrpo check demo --temperature 0.7      # a config option, as `agentgrpo train` takes it

Samples K completions for each of N training prompts from the starting model, through the same rollout
path and sampling settings as training (temperature, max_completion_length, tool loop), scores them with
the trained rewards and reports: the mean reward; the share of groups with mixed rewards (non-zero std) for
group sizes 2, 4, 8, 16 (exact for sizes <= K, extrapolated above); the distribution of per-prompt pass
rates; a verdict (too hard / too easy / at the edge of ability) with a recommended group size and the
expected useful groups per step. Token fidelity: each sampled conversation, re-rendered with the chat
template, must give back the sampled token ids, and the template must be prefix-preserving across tool
turns; the first mismatch is shown. Without a loadable model the report is partial (template check only).
Exit status: 2 for a partial report (the model could not be loaded: nothing was sampled) or bad input; with
--strict, 1 unless the task is at the edge of ability and fidelity holds; else 0.
"""

from __future__ import annotations

HELP = "sample the starting model: learning signal per group size, verdict, token fidelity"


def add_arguments(parser) -> None:
    parser.add_argument("target", help="A task name (or package.module:TASK), a shipped config name or a YAML file.")
    parser.add_argument(
        "--model",
        help="Model to sample (directory, 'tiny', 'tiny-random', Hub id in the local "
        "cache); default: the config's model.",
    )
    parser.add_argument("--prompts", type=int, default=32, help="Training prompts to sample (N, default 32).")
    parser.add_argument(
        "--k",
        type=int,
        default=16,
        help="Completions per prompt (K >= 2, default 16); group sizes up to K are estimated exactly.",
    )
    parser.add_argument(
        "--reward",
        action="append",
        metavar="NAME[=WEIGHT]",
        help="Score with these rewards instead of the config's/task's (as in `agentgrpo audit`).",
    )
    parser.add_argument("--no-fidelity", action="store_true", help="Skip the token fidelity check.")
    parser.add_argument("--json", metavar="PATH", help="Also write the full report (per-prompt pass rates) as JSON.")
    parser.add_argument(
        "--strict",
        action="store_true",
        help="Exit with status 1 unless the verdict is 'at the edge of ability' and token fidelity holds.",
    )
    parser.add_argument(
        "--set",
        dest="overrides_",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="Older spelling of a config override: --set temperature=0.7 is --temperature 0.7.",
    )
    parser.set_defaults(_accepts_overrides=True)  # configs only: --option value, as `agentgrpo train` takes


def run(args) -> int:
    import json
    from pathlib import Path

    from agentgrpo.preflight.signal import format_signal, signal_check
    from agentgrpo.preflight.target import resolve

    overrides = [*(f"--{o.partition('=')[0]}={o.partition('=')[2]}" for o in args.overrides_),
                 *(getattr(args, "overrides", None) or [])]
    target = resolve(args.target, overrides, args.reward, model=args.model)
    report = signal_check(target, n_prompts=args.prompts, k=args.k, fidelity=not args.no_fidelity)
    print(format_signal(report))
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1, default=str))
        print(f"report: {args.json}")
    if report.get("ok") is None:  # partial: the model did not load, nothing was sampled
        return 2
    fidelity_ok = (report.get("fidelity") or {}).get("ok") is not False
    return 1 if args.strict and not (report.get("ok") and fidelity_ok) else 0
