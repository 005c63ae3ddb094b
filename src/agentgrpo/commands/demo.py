"""The whole loop on the embedded tiny model, on a CPU, in a few minutes; or a failure, planted and caught.

    agentgrpo demo                     # shipped SFT checkpoint -> eval -> 80 GRPO steps -> eval -> curves
    agentgrpo demo --sft               # redo the SFT warm start from a random init (10-14 min more, 2 cores)
    agentgrpo demo --seed 7            # any option of `agentgrpo train` works here too
    agentgrpo demo --task wordle-easy  # another task's demo (its shipped config demo-<task>.yaml and warm start)
    agentgrpo demo --failure hacking   # a gameable proxy is trained; the live doctor stops the run
    agentgrpo demo --failure length    # a length bonus the model pads its answers for
    agentgrpo demo --failure collapse  # a learning rate that collapses the policy
    agentgrpo demo --failure collapse --heal   # ... and the run heals: rollback, remedy, on to the end

The tiny model answers arithmetic questions; after SFT it uses its calculator tool only about half the
time. GRPO, trained on the outcome alone (was the final answer right?), teaches it that the tool pays.
The summary shows held-out success before and after with 95% confidence intervals.

A failure demo trains the same model on a flawed recipe (see `agentgrpo.demos.failures`), with the live
doctor watching; then the doctor reads the run, prints its verdict and writes report.html with the onset
marked. It exits 0 when the doctor named the planted failure, 1 when it did not. With --heal (on_failure: heal,
a checkpoint every step, eval after) the run rolls back to the checkpoint before the onset and goes on with
the mode's remedy (docs/heal.md); it exits 0 when the run ended healed (the doctor names no failure in the
final segment) or stopped at a checkpoint before the onset, 1 otherwise.
"""

from __future__ import annotations

from agentgrpo.commands._common import add_override_help, collect_overrides, config_path

HEAL_SAVE_STEPS = 1  # the planted collapse breaks the model at its first real update: only checkpoint-1 precedes it
HEAL_SETTINGS = {"on_failure": "heal", "save_steps": HEAL_SAVE_STEPS, "eval_after": True, "eval_modes": ["sampled"]}
HELP = "run the embedded demo (tiny agent learns its calculator), or --failure MODE to watch one caught"
FAILURES = ("hacking", "length", "collapse")


def add_arguments(parser) -> None:
    parser.add_argument("--config", default="demo", help="Config to start from (default: the shipped demo).")
    parser.add_argument("--task", default=None,
                        help="the task to demo: " + ", ".join(demo_tasks()) + " (its shipped demo-<task>.yaml); "
                             "wordle, function-calling, reasoning and coding run their easy variants "
                             "(the full tasks are beyond a 1M-parameter model); "
                             "with --config: overrides the config's task")
    parser.add_argument("--failure", choices=FAILURES, default=None,
                        help="plant a failure mode instead: hacking (gameable proxy), length (length bonus), "
                             "collapse (learning rate too high); the doctor names it with its onset")
    parser.add_argument("--heal", action="store_true",
                        help="with --failure: on_failure: heal (roll back to the checkpoint before the onset, apply "
                             "the remedy, go on), a checkpoint every step, held-out eval after")
    add_override_help(parser, declared=("task",))


def demo_tasks() -> list[str]:
    """The tasks with a shipped demo config (``demo.yaml`` is the calculator's)."""
    from agentgrpo.config import shipped_configs

    return ["calculator", *sorted(n.removeprefix("demo-") for n in shipped_configs() if n.startswith("demo-"))]


def demo_config(task: str) -> str:
    """The shipped demo config for ``task``; an easy variant's for a task beyond the tiny model (with a note)."""
    from agentgrpo.errors import UserError
    from agentgrpo.pipeline import say
    from agentgrpo.tiny.build import EASY_VARIANTS

    if task in EASY_VARIANTS:
        say(f"task {task!r} is beyond the tiny model: the demo runs its easy variant {EASY_VARIANTS[task]!r} "
            "(docs/tasks.md, 'The tiny model')")
        task = EASY_VARIANTS[task]
    if task not in demo_tasks():
        raise UserError(f"demo --task {task!r}: no demo for it; demos: {', '.join(demo_tasks())} (or train it: "
                        f"agentgrpo train --task {task} --model ...)")
    return "demo" if task == "calculator" else f"demo-{task}"


def run(args) -> int:
    from agentgrpo.pipeline import run as run_pipeline
    from agentgrpo.pipeline import say, summary_lines
    from agentgrpo.plan import resolve_plan

    overrides = collect_overrides(args)
    if args.task is not None and args.config == "demo":
        args.config = demo_config(args.task)
    elif args.task is not None:
        overrides += ["--task", args.task]
    if args.heal and not args.failure:
        from agentgrpo.errors import UserError

        raise UserError("--heal heals a planted failure: give --failure hacking|length|collapse too (to heal your "
                        "own run: agentgrpo train ... --on_failure heal)")
    planted = {}
    if args.failure:
        from agentgrpo.demos.failures import overrides as failure_overrides

        planted = failure_overrides(args.failure)
        planted.setdefault("run_name", None)
        if args.heal:
            from agentgrpo.demos.failures import HEAL

            planted.update({**HEAL_SETTINGS, **HEAL[args.failure]})
    path = config_path(args.config)
    plan = resolve_plan(path, _demo_choices(path, _merge(planted, overrides), args.failure), deep=True)
    result = run_pipeline(plan)
    say("done.")
    for line in summary_lines(result):
        say(line)
    if not args.failure:
        return 0 if args.task is None else _task_verdict(result.run_dir)
    if args.heal:
        return _heal_verdict(result.run_dir, args.failure)
    return _doctor_verdict(result.run_dir, args.failure)


def _demo_choices(path, values: dict, failure: str | None) -> dict:
    """What the demo decides before the plan is resolved: SFT redone from the random init (not on top of the
    shipped SFT), and a failure demo's run name."""
    import time

    from agentgrpo.config import read_yaml

    file_values = read_yaml(path) if path else {}
    out = dict(values)
    sft, model = out.get("sft", file_values.get("sft")), out.get("model", file_values.get("model"))
    if sft is True and model == "tiny":
        out["model"] = "tiny-random"
    if failure and not out.get("run_name") and not out.get("output_dir"):
        out["run_name"] = f"demo-{failure}-{time.strftime('%Y%m%d-%H%M%S')}"
    return out


def _merge(planted: dict, overrides: list[str]) -> dict:
    """The planted recipe, then the user's own flags on top."""
    from agentgrpo.config import parse_overrides
    from agentgrpo.errors import ConfigError

    parsed, problems = parse_overrides(overrides)
    if problems:
        raise ConfigError(problems)
    return {k: v for k, v in {**planted, **parsed}.items() if v is not None or k != "run_name"}


def _doctor_verdict(run_dir, mode: str) -> int:
    from agentgrpo.commands.doctor import write_report
    from agentgrpo.demos.failures import RECIPES
    from agentgrpo.doctor import diagnose, read_run
    from agentgrpo.doctor.summary import text
    from agentgrpo.pipeline import say

    source = read_run(run_dir)
    report = diagnose(source.table)
    paths = write_report(source, report, None, png=True)
    print(text(source, report), flush=True)
    expected, true_onset = RECIPES[mode][1], RECIPES[mode][2]
    named = next((f for f in report.failures if f.detector == expected), None)
    say(f"report: {paths[0]}")
    if named is None:
        say(f"the doctor did NOT name the planted {mode} failure (planted at step {true_onset})")
        return 1
    say(f"the doctor named the planted {mode} failure: onset step {named.onset} (planted at step {true_onset})")
    return 0


def _task_verdict(run_dir) -> int:
    """A task demo's last word: the doctor's reading of the run (report.html beside it); 1 when it names a
    failure, else 0."""
    from agentgrpo.commands.doctor import write_report
    from agentgrpo.doctor import diagnose, read_run
    from agentgrpo.doctor.summary import text
    from agentgrpo.pipeline import say

    source = read_run(run_dir)
    report = diagnose(source.table)
    paths = write_report(source, report, None, png=True)
    print(text(source, report), flush=True)
    say(f"report: {paths[0]}")
    failures = [f.detector for f in report.failures]
    say("the doctor names " + (", ".join(failures) if failures else "no failure"))
    return 1 if failures else 0


def _heal_verdict(run_dir, mode: str) -> int:
    """A healed demo: the heal history, the doctor on the final segment, held-out success; 0 when the run ended
    healed (no failure named) or stopped at a checkpoint before the onset."""
    from agentgrpo.commands.doctor import write_report
    from agentgrpo.doctor.summary import text
    from agentgrpo.heal import history
    from agentgrpo.heal.judge import diagnose_healed, read_healed
    from agentgrpo.pipeline import say

    source = read_healed(run_dir)
    judged, report = diagnose_healed(source)  # the final segment; the report draws the lineage
    paths = write_report(source, report, None, png=True)
    print(text(judged, report), flush=True)
    heals = history.heals(run_dir)
    say(f"report: {paths[0]}")
    if not heals:
        say(f"no heal: the live doctor did not stop the run on the planted {mode} failure")
        return 1
    last = heals[-1]
    if last.get("action") == "stop":
        at = last.get("checkpoint_step")
        say(f"the run stopped at checkpoint-{at} (onset step {last.get('onset')}): {last.get('reason')}"
            if at is not None else f"the run stopped without a checkpoint to roll back to: {last.get('reason')}")
        return 0 if at is not None else 1
    failures = [f.detector for f in report.failures]
    say(f"after {len(heals)} heal(s) the doctor names " + (", ".join(failures) if failures else "no failure"))
    return 1 if failures else 0
