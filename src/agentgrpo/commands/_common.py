"""Helpers shared by the training commands: config lookup and the TRL-style override flags."""

from __future__ import annotations

import argparse

from agentgrpo.config import config_path, shipped_configs  # noqa: F401 - re-exported for the commands


def add_override_help(parser: argparse.ArgumentParser, declared: tuple[str, ...] = ()) -> None:
    """Document the free-form overrides and the agentgrpo options (TRL's fields are documented by TRL).
    ``declared``: options the command declares itself (it documents them and passes them on as overrides)."""
    import dataclasses

    from agentgrpo.config import RunConfig

    group = parser.add_argument_group(
        "options (YAML keys, overridable as --name value)",
        "Any TRL GRPOConfig field is accepted under its TRL name (e.g. --num_generations 8 --beta 0.04 "
        "--loss_type dapo --learning_rate 1e-6 --use_vllm true --report_to trackio), and TRL's LoRA fields "
        "(--use_peft true --lora_r 16 --lora_alpha 32 --lora_dropout 0.05 --lora_target_modules all-linear). "
        "agentgrpo's own:")
    for f in dataclasses.fields(RunConfig):
        if f.name in declared:
            continue
        default = f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default
        group.add_argument(f"--{f.name}", dest=f"_doc_{f.name}", metavar="VALUE", nargs="?", const="true",
                           default=argparse.SUPPRESS,
                           help=f"{f.metadata.get('help', '')} (default: {default})".replace("%", "%%"))
    parser.set_defaults(_accepts_overrides=True)


def collect_overrides(args: argparse.Namespace) -> list[str]:
    """The overrides as ``--name value`` tokens: documented ones argparse parsed, plus unknown extras."""
    tokens = []
    for key, value in vars(args).items():
        if key.startswith("_doc_"):
            tokens += [f"--{key[5:]}", value]
    return tokens + list(getattr(args, "overrides", []) or [])
