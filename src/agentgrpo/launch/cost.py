"""What a run cost: wall time, tokens generated and trained, tokens/s, and on a Hugging Face Job the price.

Read from the run directory after the fact (metrics.jsonl, the trainer's summary, config.yaml), like every
report. The price is the flavor's hourly price times the wall time measured here; the job's bill also counts
the minutes spent installing packages and downloading the model before training starts.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agentgrpo import rundir
from agentgrpo.config import RunConfig


def _config(run_dir: Path) -> dict[str, Any]:
    return rundir.read_config(run_dir, notes=[])


def _summary(run_dir: Path) -> dict[str, Any]:
    try:
        return rundir.read_json(run_dir / rundir.SUMMARY) or {}
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


def completions_per_step(setting, num_processes: int = RunConfig.num_processes) -> int:
    """Completions generated for one optimizer step, as TRL batches them (``setting``: name -> value).

    >>> completions_per_step(setting_of({"per_device_train_batch_size": 32, "gradient_accumulation_steps": 2}), 4)
    256
    """
    return int(setting("per_device_train_batch_size")) * int(setting("gradient_accumulation_steps")) * num_processes


def run_cost(run_dir: str | Path, flavor: str | None = None, usd_per_hour: float | None = None) -> dict[str, Any]:
    """Cost figures for a finished (or running) run; ``summary`` is one printable line.

    Every training segment counts (`agentgrpo.heal.history.segments`: a healed run's abandoned segments are
    read from segments/N/): steps, generated tokens (`rundir.generated_tokens`: dynamic sampling's count,
    refill rounds included, where logged) and trained tokens are summed over them."""
    from agentgrpo.heal import history

    run_dir = Path(run_dir)
    config = _config(run_dir)
    segments = history.segments(run_dir)
    per_step = completions_per_step(setting_of(config), int(config.get("num_processes") or RunConfig.num_processes))
    steps = sum(sum(rundir.step_gaps(s["rows"])) for s in segments)
    generated = sum(rundir.generated_tokens(s["rows"], per_step) for s in segments)
    trained_parts = [t for t in (history.trained_tokens(s) for s in segments) if t is not None]
    trained = sum(trained_parts) if trained_parts else None
    wall = _summary(run_dir).get("train_runtime") if len(segments) == 1 else None
    if wall is None:  # a healed run (the summary is its last segment's), or no summary: the logged times
        wall = sum(_span(s["rows"]) for s in segments) or None
    out: dict[str, Any] = {"steps": steps, "wall_seconds": round(wall, 1) if wall else None,
                           "tokens_generated": int(generated), "tokens_trained": int(trained) if trained else None,
                           "segments": len(segments)}
    out["tokens_per_second"] = round(generated / wall, 1) if wall else None
    if flavor and usd_per_hour is None:
        from agentgrpo.launch.flavors import load_flavors

        found = load_flavors()[0].get(flavor)
        usd_per_hour = found.usd_per_hour if found else None
    out.update(flavor=flavor, usd_per_hour=usd_per_hour)
    out["usd"] = round(usd_per_hour * wall / 3600, 2) if usd_per_hour is not None and wall else None
    out["summary"] = _line(out)
    return out


def _span(rows: list[dict]) -> float:
    """Seconds a segment trained, from its rows' logged times: first to last, plus one mean step (the first
    row is logged after its step ran); 0 with fewer than two timed rows."""
    times = [r["time"] for r in rows if isinstance(r.get("time"), int | float)]
    if len(times) < 2:
        return 0.0
    return (times[-1] - times[0]) * len(times) / (len(times) - 1)


def _line(c: dict[str, Any]) -> str:
    parts = [f"{c['steps']} steps" + (f" in {c['segments']} segments" if c.get("segments", 1) > 1 else "")]
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


def estimate(setting, seconds: float, usd_per_hour: float | None,
             num_processes: int = RunConfig.num_processes) -> dict[str, Any]:
    """A dry run's estimate for a plan (``setting``: name -> the plan's value): the upper bound on tokens
    (every completion at max length) and the price."""
    steps = max(int(setting("max_steps")), 0)
    tokens = steps * completions_per_step(setting, num_processes) * int(setting("max_completion_length"))
    usd = round(usd_per_hour * seconds / 3600, 2) if usd_per_hour is not None else None
    return {"steps": steps, "max_tokens_generated": tokens, "seconds": seconds, "usd_per_hour": usd_per_hour,
            "usd": usd}
