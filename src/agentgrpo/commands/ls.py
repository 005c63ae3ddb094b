"""List what exists: tasks, reward functions, shipped configs, the embedded models.

    agentgrpo ls            # everything
    agentgrpo ls rewards    # one section
    agentgrpo ls models     # where the embedded tiny model is (an ordinary checkpoint for from_pretrained)
"""

from __future__ import annotations

HELP = "list tasks, reward functions, shipped configs and the embedded models"


def add_arguments(parser) -> None:
    parser.add_argument("what", nargs="?", choices=["tasks", "rewards", "configs", "models"], help="One section only.")


def _first_line(obj) -> str:
    return ((obj.__doc__ or "").strip().splitlines() or [""])[0]


def _task_or_error(get_task, name: str):
    """The task, or the message saying why it cannot load here (e.g. a missing optional package)."""
    from agentgrpo.errors import UserError

    try:
        return get_task(name)
    except UserError as exc:
        return str(exc)


def run(args) -> int:
    from agentgrpo.commands._common import shipped_configs
    from agentgrpo.tasks import get_task, task_names

    tasks = {name: _task_or_error(get_task, name) for name in task_names()}
    if args.what in (None, "tasks"):
        print("tasks:")
        for name, task in tasks.items():
            about = f"v{task.version}  {task.description}" if not isinstance(task, str) else f"(unavailable: {task})"
            print(f"  {name:<24} {about}")
    if args.what in (None, "rewards"):
        print("rewards (task rewards, then the library; use in `rewards:`; weight 0 = shadow):")
        for name, task in tasks.items():
            for rname, func in ({} if isinstance(task, str) else task.reward_funcs).items():
                print(f"  {rname:<24} [{name}] {_first_line(func)}")
        try:
            from agentgrpo.rewards import REWARDS
        except ImportError:
            REWARDS = {}
        for rname, factory in sorted(REWARDS.items()):
            print(f"  {rname:<24} {_first_line(factory)}")
    if args.what in (None, "configs"):
        print("configs (use with --config NAME; copy one to edit it):")
        for name, path in shipped_configs().items():
            print(f"  {name:<24} {path}")
    if args.what in (None, "models"):
        from agentgrpo.tiny.build import SHIPPED_SFT, WARM_START_STEPS, warm_start

        print("models (use as model: NAME; the path loads with AutoTokenizer / AutoModelForCausalLM.from_pretrained):")
        print(f"  {'tiny':<24} {SHIPPED_SFT}  (SFT'd on calculator; on another task below, that task's warm start)")
        for name in sorted(set(WARM_START_STEPS) - {"calculator"}):
            print(f"  {'tiny (' + name + ')':<24} {warm_start(name)}")
        print(f"  {'tiny-random':<24} built per task on first use into the user cache (untrained)")
    return 0
