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


def run(args) -> int:
    from agentgrpo.commands._common import shipped_configs
    from agentgrpo.tasks import get_task, task_names

    if args.what in (None, "tasks"):
        print("tasks:")
        for name in task_names():
            task = get_task(name)
            print(f"  {name:<24} v{task.version}  {task.description}")
    if args.what in (None, "rewards"):
        print("rewards (task rewards, then the library; use in `rewards:`; weight 0 = shadow):")
        for name in task_names():
            for rname, func in get_task(name).reward_funcs.items():
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
        from agentgrpo.tiny.build import SHIPPED_SFT

        print("models (use as model: NAME; the path loads with AutoTokenizer / AutoModelForCausalLM.from_pretrained):")
        print(f"  {'tiny':<24} {SHIPPED_SFT}  (SFT'd on calculator)")
        print(f"  {'tiny-random':<24} built per task on first use into the user cache (untrained)")
    return 0
