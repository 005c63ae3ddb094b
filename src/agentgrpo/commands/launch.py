"""Launch one run config on a target: this process, several processes, or a Hugging Face Job.

    agentgrpo launch --config demo                                   # target local: same as `agentgrpo train`
    agentgrpo launch --config demo --target accelerate --num_processes 2          # 2 CPU processes (gloo)
    agentgrpo launch --config qwen2.5-0.5b-1gpu --target accelerate --num_processes 8 --accelerate_config zero2
    agentgrpo launch --config qwen2.5-0.5b-1gpu --target hf-jobs --flavor a100-large --dry_run
    agentgrpo launch --config qwen2.5-0.5b-1gpu --target hf-jobs --flavor a100-large

The target is one config field (`target:`), so the same YAML trains anywhere. `accelerate` runs
`agentgrpo train` under `accelerate launch` (TRL's presets: multi_gpu, zero1-3, fsdp1-2). `hf-jobs` bundles
exactly the local code (this agentgrpo's source, your task/reward files, the resolved config) and submits it
with huggingface_hub's `run_uv_job`, dependencies pinned to the versions installed here and HF_TOKEN as a
secret; follow it with `agentgrpo jobs logs|status|doctor|cancel ID`. --dry_run prints the resolved config,
the job script and the equivalent `hf jobs uv run` command with a cost estimate, and submits nothing.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import yaml

from agentgrpo.commands._common import add_override_help, collect_overrides, config_path
from agentgrpo.errors import ConfigError

HELP = "train the same config locally, on several processes/GPUs (accelerate), or as a Hugging Face Job"


def add_arguments(parser) -> None:
    parser.add_argument("--config", required=True, help="YAML file, or a shipped config name (see `agentgrpo ls`).")
    parser.add_argument("--dry_run", action="store_true",
                        help="print what would run (config, script, command, cost estimate); start nothing")
    add_override_help(parser)


def run(args) -> int:
    """Resolve the plan once, for the target the options name, and launch it there."""
    from agentgrpo.plan import read_options, resolve_plan

    overrides = collect_overrides(args)
    path = config_path(args.config)
    options = read_options(path, overrides)  # the target (and flavor) decide how the plan is resolved
    if options.run.target == "hf-jobs":
        return _hf_jobs(path, overrides, options, args.dry_run)
    if options.run.target == "accelerate":
        return _accelerate(path, overrides, args.dry_run)
    plan = resolve_plan(path, overrides, deep=True)
    if args.dry_run:
        print(yaml.safe_dump(plan.to_dict(), sort_keys=False))
        return 0
    from agentgrpo.commands.train import run_resolved

    return run_resolved(plan)


def _accelerate(path, overrides: list[str], dry_run: bool) -> int:
    from agentgrpo.launch import accelerate_cmd
    from agentgrpo.plan import resolve_plan

    gpus = accelerate_cmd.visible_gpus()
    plan = resolve_plan(path, overrides, cuda_available=gpus > 0)  # names the run: every process writes there
    n = plan.launch.num_processes
    problems = accelerate_cmd.check(plan.setting, n, plan.launch.accelerate_config, gpus=gpus,
                                    vllm_installed=accelerate_cmd.vllm_installed())
    if plan.run.sft and n > 1:
        problems.append("sft: the SFT warm start runs in one process; run it first (`agentgrpo train --sft true "
                        "--max_steps 1 ...`) and launch GRPO from its run's sft/ directory (--model runs/NAME/sft).")
    if problems:
        raise ConfigError(problems)
    resolved = Path(plan.run.runs_dir) / f".launch-{plan.run_dir.name}.yaml"
    resolved.parent.mkdir(parents=True, exist_ok=True)
    resolved.write_text(yaml.safe_dump({**plan.to_dict(), "target": "local"}, sort_keys=False))
    cmd = accelerate_cmd.command(str(resolved), [], n, plan.launch.accelerate_config, gpus)
    print("[agentgrpo] " + " ".join(cmd), flush=True)
    if dry_run:
        return 0
    return subprocess.call(cmd)  # process 0 prints the summary, cost included


def _hf_jobs(path, overrides: list[str], options, dry_run: bool) -> int:
    """``options``: the config's options (`read_options`): its flavor decides the device the plan is
    resolved for and, on a multi-GPU flavor, the processes."""
    import dataclasses

    from agentgrpo.config import parse_overrides
    from agentgrpo.launch import bundle as bundle_mod
    from agentgrpo.launch import flavors, hf_jobs, hub_io
    from agentgrpo.plan import resolve_plan

    token = None if dry_run else hub_io.require_token()
    table, source = flavors.load_flavors(hub_io.api())  # the Hub's list (and prices) when online
    values = {**dataclasses.asdict(options.run), **options.grpo}
    problems = flavors.check_flavor(options.run.flavor, table, hf_jobs.gpu_options(values))
    if problems:
        raise ConfigError(problems)
    flavor = table[options.run.flavor]
    given, _ = parse_overrides(overrides)
    extra = {}
    if flavor.gpus > 1 and "num_processes" not in {*given, *_file_keys(path)}:
        extra["num_processes"] = flavor.gpus  # one process per GPU of the flavor
    plan = resolve_plan(path, [*overrides, *_as_flags(extra)], cuda_available=flavor.is_gpu)
    for warning in flavors.flavor_warnings(flavor, plan.setting, plan.launch.num_processes):
        print(f"[agentgrpo] warning: {warning}")
    config = plan.to_dict()
    out = plan.run_dir / "launch"
    bundle = bundle_mod.make_bundle(config, out)
    spec = hf_jobs.build_job_spec(config, bundle, flavor=flavor.name, timeout=plan.launch.job_timeout)
    script = out / "job.py"
    script.write_text(spec.script)
    print("[agentgrpo] " + _estimate_line(plan, flavor, source, spec.timeout))
    print(f"[agentgrpo] bundle {bundle.path} (sha256 {bundle.sha256[:12]}, {len(bundle.files)} files); "
          f"script {script}")
    if dry_run:
        print("--- resolved config ---")
        print(yaml.safe_dump(bundle.config, sort_keys=False))
        print("--- job script ---")
        print(spec.script)
        print("--- the same job with the hf CLI ---")
        print(hf_jobs.hf_cli_command(spec, str(script), str(bundle.path)))
        return 0
    job = hub_io.submit(spec, script, bundle.path, token)
    job_id = getattr(job, "id", job)
    (out / "job.json").write_text(yaml.safe_dump({"id": str(job_id), "url": str(getattr(job, "url", "")),
                                                  "flavor": flavor.name, "bundle": bundle.sha256}))
    print(f"[agentgrpo] submitted job {job_id}: {getattr(job, 'url', '')}")
    print(f"[agentgrpo] follow it: agentgrpo jobs logs {job_id}; diagnose it live: agentgrpo jobs doctor {job_id}")
    return 0


def _file_keys(path) -> set[str]:
    from agentgrpo.config import read_yaml

    return set(read_yaml(path)) if path else set()


def _as_flags(values: dict) -> list[str]:
    return [token for k, v in values.items() for token in (f"--{k}", str(v))]


def _estimate_line(plan, flavor, source: str, timeout: str) -> str:
    from agentgrpo.launch import cost, hf_jobs

    config = plan.to_dict()
    est = cost.estimate(plan.setting, hf_jobs.estimated_seconds(config), flavor.usd_per_hour,
                        num_processes=plan.launch.num_processes)
    line = (f"flavor {flavor.name} ({flavor.gpus} GPU) from {source}; timeout {timeout}; estimate "
            f"{est['seconds'] / 3600:.1f} h ({hf_jobs.SECONDS_PER_STEP:.0f} s/step assumed), at most "
            f"{est['max_tokens_generated']:,} tokens generated")
    if flavor.usd_per_hour is None:
        return line + "; price unknown offline (see huggingface.co/docs/hub/jobs-pricing)"
    worst = flavor.usd_per_hour * hf_jobs.timeout_seconds(timeout) / 3600
    return line + f"; cost about ${est['usd']:.2f} at ${flavor.usd_per_hour:.2f}/h, at most ${worst:.2f} (timeout)"



