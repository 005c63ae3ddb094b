"""The whole loop on the embedded tiny model, on a CPU, in a few minutes.

    agentgrpo demo                 # shipped SFT checkpoint -> eval -> 80 GRPO steps -> eval -> curves
    agentgrpo demo --sft           # redo the SFT warm start from a random init (10-14 min more, 2 cores)
    agentgrpo demo --seed 7        # any option of `agentgrpo train` works here too

The tiny model answers arithmetic questions; after SFT it uses its calculator tool only about half the
time. GRPO, trained on the outcome alone (was the final answer right?), teaches it that the tool pays.
The summary shows held-out success before and after with 95% confidence intervals.
"""

from __future__ import annotations

from agentgrpo.commands._common import add_override_help, collect_overrides, config_path

HELP = "run the embedded demo: tiny agent learns to use its calculator through GRPO (CPU, minutes)"


def add_arguments(parser) -> None:
    parser.add_argument("--config", default="demo", help="Config to start from (default: the shipped demo).")
    add_override_help(parser)


def run(args) -> int:
    from agentgrpo.config import load_config
    from agentgrpo.pipeline import run as run_pipeline
    from agentgrpo.pipeline import say, summary_lines

    overrides = collect_overrides(args)
    cfg = load_config(config_path(args.config), overrides, deep=True)
    if cfg.run.sft and cfg.run.model == "tiny":
        cfg.run.model = "tiny-random"  # redo SFT from scratch rather than on top of the shipped SFT
    result = run_pipeline(cfg)
    say("done.")
    for line in summary_lines(result):
        say(line)
    return 0
