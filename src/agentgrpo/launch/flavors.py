"""Hugging Face Jobs hardware: the valid flavors, their GPUs and their price.

Online, the list comes from ``HfApi.list_jobs_hardware()`` (names, accelerators, unit costs) and is cached
in the user cache directory; offline, the last cached list is used, else the built-in table: huggingface_hub's
flavor names with the dated price table shipped in ``prices.json`` (its date is printed with every estimate).
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass
from pathlib import Path

from agentgrpo.errors import did_you_mean

PRICES = Path(__file__).with_name("prices.json")  # the shipped, dated price table (USD per hour)
# GPUs without bfloat16 (compute capability < 8.0), by flavor-name prefix.
NO_BF16 = ("t4-",)


def shipped_prices() -> tuple[dict[str, float], str]:
    """(flavor -> USD per hour, 'as of DATE') from the table shipped with agentgrpo."""
    data = json.loads(PRICES.read_text())
    return {k: float(v) for k, v in data["usd_per_hour"].items()}, f"as of {data['as_of']}"


@dataclass(frozen=True)
class Flavor:
    name: str
    gpus: int  # 0 for CPU flavors
    usd_per_hour: float | None
    pretty_name: str = ""

    @property
    def is_gpu(self) -> bool:
        return self.gpus > 0


def gpus_in(name: str) -> int:
    """GPUs in a flavor, from its name when no hardware list is at hand.

    >>> gpus_in("cpu-basic"), gpus_in("a100-large"), gpus_in("h200x8"), gpus_in("a10g-largex4"), gpus_in("l4x1")
    (0, 1, 8, 4, 1)
    """
    if name.startswith("cpu"):
        return 0
    match = re.search(r"x(\d+)$", name)
    return int(match.group(1)) if match else 1


def builtin_flavors() -> dict[str, Flavor]:
    from huggingface_hub import JobHardware

    prices, _ = shipped_prices()
    return {h.value: Flavor(h.value, gpus_in(h.value), prices.get(h.value)) for h in JobHardware}


def from_hardware_info(infos) -> dict[str, Flavor]:
    """Flavors from `list_jobs_hardware()` results (unit cost per ``unit_label``, usually a minute)."""
    out = {}
    for info in infos:
        per = {"minute": 60.0, "hour": 1.0, "second": 3600.0}.get(getattr(info, "unit_label", "minute"), 60.0)
        cost = getattr(info, "unit_cost_usd", None)
        acc = getattr(info, "accelerator", None)
        gpus = int(getattr(acc, "quantity", 0) or 0) if acc is not None else 0
        if acc is not None and not gpus:
            gpus = gpus_in(info.name)
        out[info.name] = Flavor(info.name, gpus, None if cost is None else round(cost * per, 4),
                                getattr(info, "pretty_name", "") or "")
    return out


def cache_path() -> Path:
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("agentgrpo")) / "jobs_hardware.json"


def load_flavors(api=None) -> tuple[dict[str, Flavor], str]:
    """``(flavors, source)``: from the Hub when reachable (and cache it), else the cache, else built-in."""
    if api is not None:
        try:
            flavors = from_hardware_info(api.list_jobs_hardware())
        except Exception:  # offline, no token, Hub down: fall back, never fail here  # noqa: BLE001
            flavors = {}
        if flavors:
            _save_cache(flavors)
            return flavors, "the Hub (list_jobs_hardware)"
    cached = _read_cache()
    if cached:
        return cached, f"cache {cache_path()}"
    return builtin_flavors(), f"built-in table (offline; prices {shipped_prices()[1]})"


def _save_cache(flavors: dict[str, Flavor]) -> None:
    try:
        path = cache_path()
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps([asdict(f) for f in flavors.values()], indent=1))
    except OSError:
        pass


def _read_cache() -> dict[str, Flavor]:
    try:
        return {f["name"]: Flavor(**f) for f in json.loads(cache_path().read_text())}
    except (OSError, ValueError, TypeError, KeyError):
        return {}


def check_flavor(name: str | None, flavors: dict[str, Flavor], needs_gpu: list[str]) -> list[str]:
    """Problems with a flavor for a config: unknown (valid ones listed), or CPU-only for a GPU config."""
    if not name:
        return ["flavor: required for target hf-jobs (e.g. flavor: a100-large). " + _listing(flavors)]
    if name not in flavors:
        return [f"flavor: unknown flavor {name!r}. {did_you_mean(name, flavors)}"]
    if needs_gpu and not flavors[name].is_gpu:
        gpu = sorted(n for n, f in flavors.items() if f.is_gpu)
        return [f"flavor: {name} has no GPU, but the config needs one ({', '.join(needs_gpu)}); choose a GPU "
                f"flavor ({', '.join(gpu[:6])}, ...) or set those options to false."]
    return []


def _listing(flavors: dict[str, Flavor]) -> str:
    return "Available: " + ", ".join(sorted(flavors))


def flavor_warnings(flavor: Flavor, grpo_setting, num_processes: int) -> list[str]:
    """What is doubtful about running a plan on ``flavor`` (``grpo_setting``: name -> the plan's value)."""
    warnings = []
    if flavor.name.startswith(NO_BF16) and grpo_setting("bf16"):
        warnings.append(f"bf16: {flavor.name}'s GPU (T4) has no bfloat16 support; set bf16: false and fp16: true, "
                        "or pick an Ampere-or-newer flavor (l4x1, a10g-small, a100-large, ...).")
    if flavor.is_gpu and num_processes > flavor.gpus:
        warnings.append(f"num_processes: {num_processes} processes on {flavor.name}, which has {flavor.gpus} "
                        f"GPU(s); one process per GPU: use num_processes {flavor.gpus} or a flavor with "
                        f"{num_processes} GPUs.")
    return warnings
