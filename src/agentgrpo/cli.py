"""The `agentgrpo` command line: a thin dispatcher.

Each sub-command lives in its own module under `agentgrpo.commands` and exposes `HELP` (one line),
`add_arguments(parser)` and `run(args) -> int`. Modules import heavy libraries (torch, TRL) inside `run`,
so `agentgrpo --help` stays instant.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from agentgrpo.errors import UserError

# Sub-command name -> module under agentgrpo.commands. Add a command by adding a module and a line here.
COMMANDS: dict[str, str] = {
    "demo": "demo",
    "train": "train",
    "eval": "evaluate",
    "ls": "ls",
    "validate": "validate",
    "doctor": "doctor",
    "compare": "compare",
    "launch": "launch",
    "jobs": "jobs",
    "build-tiny": "build_tiny",
    "audit": "audit",
    "check": "check",
}


def _load(module_name: str):
    return importlib.import_module(f"agentgrpo.commands.{module_name}")


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser of every command, or of ``only`` that one (`main` imports just the command it runs)."""
    parser = argparse.ArgumentParser(
        prog="agentgrpo",
        description="Train tool-using LLM agents on outcomes with GRPO (TRL's GRPOTrainer).",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, module_name in COMMANDS.items():
        if only is not None and name != only:
            continue
        try:
            module = _load(module_name)
        except ModuleNotFoundError as exc:  # a command whose module is not there yet
            if exc.name != f"agentgrpo.commands.{module_name}":
                raise
            continue
        p = sub.add_parser(
            name,
            help=module.HELP,  # HELP strings escape % as %%
            description=(module.__doc__ or module.HELP).strip(),
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        module.add_arguments(p)
        p.set_defaults(_run=module.run)
    return parser


def main(argv: list[str] | None = None) -> int:
    first = (sys.argv[1:] if argv is None else argv)[:1]
    parser = build_parser(first[0] if first and first[0] in COMMANDS else None)
    args, extra = parser.parse_known_args(argv)
    if not getattr(args, "_run", None):
        parser.print_help()
        return 0
    # Only `train`/`demo` accept free-form `--<GRPOConfig field> value` overrides.
    if extra and not getattr(args, "_accepts_overrides", False):
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    args.overrides = extra
    try:
        return int(args._run(args) or 0)
    except UserError as exc:
        print(f"agentgrpo {args.command}: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
