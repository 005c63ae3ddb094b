"""What a run cost: wall time, tokens generated and trained, tokens/s, and on a Hugging Face Job the price.

Read from the run directory after the fact (metrics.jsonl, the trainer's summary, config.yaml), like every
report. The price is the flavor's hourly price times the wall time measured here; the job's bill also counts
the minutes spent installing packages and downloading the model before training starts.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from agentgrpo import rundir


def _config(run_dir: Path) -> dict[str, Any]:
    try:
        return yaml.safe_load((run_dir / rundir.CONFIG).read_text()) or {}
    except (OSError, yaml.YAMLError):
        return {}


def _summary(run_dir: Path) -> dict[str, Any]:
    try:
        return json.loads((run_dir / rundir.SUMMARY).read_text())
    except (OSError, ValueError):
        return {}


def setting_of(config: dict[str, Any]):
    """name -> value for a recorded plan (config.yaml): its value, else TRL's GRPOConfig default (read from
    the dataclass, never retyped)."""
    from agentgrpo.config import trl_default

    def setting(name: str):
        value = config.get(name)
        return value if value is not None else trl_default(name)

    return setting


def completions_per_step(setting, num_processes: int = 1) -> int:
    """Completions generated for one optimizer step, as TRL batches them (``setting``: name -> value).

    >>> completions_per_step(setting_of({"per_device_train_batch_size": 32, "gradient_accumulation_steps": 2}), 4)
    256
    """
    return int(setting("per_device_train_batch_size")) * int(setting("gradient_accumulation_steps")) * num_processes


def run_cost(run_dir: str | Path, flavor: str | None = None, usd_per_hour: float | None = None) -> dict[str, Any]:
    """Cost figures for a finished (or running) run; ``summary`` is one printable line."""
    run_dir = Path(run_dir)
    records = [r for r in rundir.read_jsonl(run_dir / rundir.METRICS) if "step" in r]
    config = _config(run_dir)
    wall = _summary(run_dir).get("train_runtime")
    times = [r["time"] for r in records if isinstance(r.get("time"), int | float)]
    if wall is None and len(times) >= 2:
        wall = times[-1] - times[0]
    per_step = completions_per_step(setting_of(config), int(config.get("num_processes") or 1))
    generated = sum(float(r.get("completions/mean_length") or r.get("completion_length") or 0) * per_step
                    for r in records)
    trained = max((float(r["num_tokens"]) for r in records if isinstance(r.get("num_tokens"), int | float)),
                  default=None)
    out: dict[str, Any] = {"steps": len(records), "wall_seconds": round(wall, 1) if wall else None,
                           "tokens_generated": int(generated), "tokens_trained": int(trained) if trained else None}
    out["tokens_per_second"] = round(generated / wall, 1) if wall else None
    if flavor and usd_per_hour is None:
        from agentgrpo.launch.flavors import load_flavors

        found = load_flavors()[0].get(flavor)
        usd_per_hour = found.usd_per_hour if found else None
    out.update(flavor=flavor, usd_per_hour=usd_per_hour)
    out["usd"] = round(usd_per_hour * wall / 3600, 2) if usd_per_hour is not None and wall else None
    out["summary"] = _line(out)
    return out


def _line(c: dict[str, Any]) -> str:
    parts = [f"{c['steps']} steps"]
    if c["wall_seconds"]:
        parts.append(f"{c['wall_seconds'] / 60:.1f} min training")
    parts.append(f"{c['tokens_generated']:,} tokens generated")
    if c["tokens_trained"]:
        parts.append(f"{c['tokens_trained']:,} trained (prompt + completion)")
    if c["tokens_per_second"]:
        parts.append(f"{c['tokens_per_second']:,.0f} generated tokens/s")
    if c["flavor"]:
        price = f"${c['usd']:.2f} at ${c['usd_per_hour']:.2f}/h" if c["usd"] is not None else "price unknown"
        parts.append(f"{c['flavor']}: {price} (plus install and download time)")
    return "cost: " + ", ".join(parts)


def estimate(setting, seconds: float, usd_per_hour: float | None, num_processes: int = 1) -> dict[str, Any]:
    """A dry run's estimate for a plan (``setting``: name -> the plan's value): the upper bound on tokens
    (every completion at max length) and the price."""
    steps = max(int(setting("max_steps")), 0)
    tokens = steps * completions_per_step(setting, num_processes) * int(setting("max_completion_length"))
    usd = round(usd_per_hour * seconds / 3600, 2) if usd_per_hour is not None else None
    return {"steps": steps, "max_tokens_generated": tokens, "seconds": seconds, "usd_per_hour": usd_per_hour,
            "usd": usd}
