"""Dynamic sampling (DAPO): which groups carry a learning signal, and the batch surgery to train on those only.

A group whose completions all earn the same reward has zero advantage: it teaches nothing. ``filter`` drops
such groups from the loss; ``refill`` generates for further prompts until the batch holds as many mixed
groups as it has prompts, within ``max_generation_rounds`` (`agentgrpo.training.dynamic_trainer` does the
generating). Everything here is plain tensor code, tested against plain Python.
"""

from __future__ import annotations

import math

import torch

KEEP = "dynamic_sampling_keep"  # the batch key marking the rows the loss sees (the rest are dropped there)
CARRIED = "dynamic_sampling_carried"  # the batch key marking rows of groups generated in an earlier step
LEFT_PADDED = {"prompt_ids": "pad", "prompt_mask": 0}  # TRL pads prompts on the left, completions on the right
RIGHT_PAD = {"completion_ids": "pad", "tool_mask": 1}  # every other per-token tensor is padded with 0
ROW_LEVEL_ONLY = ("pixel_values", "image_grid_thw", "num_images", "pixel_attention_mask", "image_sizes")

# metric names (TRL's log averages them over the logging window; recorded in metrics.jsonl)
METRIC_ROUNDS = "dynamic_sampling/generation_rounds"
METRIC_DROPPED = "dynamic_sampling/groups_dropped"
METRIC_MIXED = "dynamic_sampling/mixed_groups"
METRIC_UNUSED = "dynamic_sampling/groups_unused"
METRIC_CARRIED = "dynamic_sampling/groups_carried"
METRIC_SOLVED = "dynamic_sampling/groups_solved"
METRIC_TOKENS = "dynamic_sampling/generated_tokens"
METRIC_TOKENS_TOTAL = "dynamic_sampling/generated_tokens_total"
METRIC_LIMIT_HIT = "dynamic_sampling/round_limit_hit"
METRICS = (METRIC_ROUNDS, METRIC_DROPPED, METRIC_MIXED, METRIC_UNUSED, METRIC_CARRIED, METRIC_SOLVED,
           METRIC_TOKENS, METRIC_TOKENS_TOTAL, METRIC_LIMIT_HIT)


def mixed_groups(rewards_per_func: torch.Tensor, weights: torch.Tensor, num_generations: int,
                       aggregation: str) -> torch.Tensor:
    """One bool per group (``num_generations`` consecutive rows): do its rewards differ, as GRPO sees them?

    ``rewards_per_func`` is TRL's (completions x reward functions) tensor, NaN where a function returned None.
    With TRL's ``sum_then_normalize`` a group teaches when its weighted total reward varies (the test TRL's
    ``frac_reward_zero_std`` uses); with ``normalize_then_sum``, when any trained reward (weight != 0) varies.
    Fewer than two scorable completions in a group: no spread, not mixed.
    """
    from trl.trainer.utils import nanstd

    if rewards_per_func.shape[0] % num_generations:
        raise ValueError(f"{rewards_per_func.shape[0]} completions do not split into groups of {num_generations}")
    rewards = rewards_per_func.float()
    weights = weights.to(rewards.device, rewards.dtype)
    unscorable = torch.isnan(rewards).all(dim=1)
    if aggregation == "normalize_then_sum":
        grouped = rewards.view(-1, num_generations, rewards.shape[1])
        std = nanstd(grouped, dim=1)  # (groups, funcs)
        varies = torch.isfinite(std) & ~torch.isclose(std, torch.zeros_like(std)) & (weights != 0)
        return varies.any(dim=1)
    if aggregation != "sum_then_normalize":
        raise ValueError(f"unknown multi_objective_aggregation {aggregation!r}")
    total = (rewards * weights.unsqueeze(0)).nansum(dim=1)
    total[unscorable] = torch.nan
    std = nanstd(total.view(-1, num_generations), dim=1)
    return torch.isfinite(std) & ~torch.isclose(std, torch.zeros_like(std))


def decision_rewards(rewards_per_func: torch.Tensor, weights: torch.Tensor, names: list[str],
                     reward: str | None) -> tuple[torch.Tensor, torch.Tensor]:
    """The reward table and weights a group is judged mixed on: the run's, or with
    ``dynamic_sampling_reward`` named, that reward's column alone with weight 1 (its spread decides; a
    completion it did not score (NaN) does not count, whatever the other rewards gave it).

    >>> table = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    >>> [t.tolist() for t in decision_rewards(table, torch.tensor([1.0, 0.5]), ["correct", "format"], "correct")]
    [[[1.0], [0.0]], [1.0]]
    """
    if reward is None:
        return rewards_per_func, weights
    if reward not in names:
        raise ValueError(f"dynamic_sampling_reward {reward!r} is not one of the rewards {list(names)}")
    k = list(names).index(reward)
    return rewards_per_func[:, k:k + 1], torch.ones(1, dtype=torch.float32)


def weighted_totals(rewards_per_func: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    """Each completion's weighted total reward (TRL's sum over reward functions, NaN ignored); NaN for a
    completion no function scored."""
    rewards = rewards_per_func.float()
    total = (rewards * weights.to(rewards.device, rewards.dtype).unsqueeze(0)).nansum(dim=1)
    total[torch.isnan(rewards).all(dim=1)] = torch.nan
    return total


def solved_groups(totals: torch.Tensor, num_generations: int, best: float, worst: float) -> torch.Tensor:
    """One bool per group: did every completion earn ``best``, the highest weighted total reward seen so far,
    when a lower one (``worst`` < ``best``) was seen too? Such a group has equal rewards (it teaches nothing)
    because its prompt is solved, not because it is out of reach.

    When every completion seen earned the same total (a constant reward) no group is solved: nothing tells
    solved from failed there.

    >>> totals = torch.tensor([1., 1., 0., 1., 0., 0., 1., 1.])
    >>> solved_groups(totals, 2, best=1.0, worst=0.0).tolist()
    [True, False, False, True]
    >>> solved_groups(torch.ones(4), 2, best=1.0, worst=1.0).tolist()
    [False, False]
    """
    grouped = totals.view(-1, num_generations)
    if not (math.isfinite(best) and math.isfinite(worst)) or math.isclose(best, worst, rel_tol=1e-6, abs_tol=1e-6):
        return torch.zeros(grouped.shape[0], dtype=torch.bool)
    at_best = torch.isclose(grouped, torch.full_like(grouped, best), rtol=1e-6, atol=1e-6)
    return at_best.all(dim=1)


def first_mixed(mixed: torch.Tensor, wanted: int) -> torch.Tensor:
    """The groups to train on: the first ``wanted`` mixed ones (all of them when there are fewer)."""
    chosen = mixed.clone()
    positions = mixed.nonzero().flatten()
    chosen[positions[max(0, wanted):]] = False
    return chosen


def refill_prompts(missing: int, mixed_seen: int, groups_seen: int, full: int, processes: int,
                   num_generations: int, last_round: bool, size: str) -> int:
    """How many prompts a refill round generates for: with ``size`` "expected", enough to bring ``missing``
    mixed groups at the mixed rate seen so far this step (``mixed_seen`` of
    ``groups_seen``), not a whole batch; with "missing", ``missing`` (no group beyond the target).

    A whole batch (``full`` prompts) when the rate is unknown (nothing mixed seen yet) or this is the
    last round allowed (the round limit would leave the step short otherwise). Never more than ``full`` (TRL's
    generation batch bounds memory); rounded up so the round's rows (prompts x ``num_generations``) split
    evenly over ``processes`` (TRL gathers equal shares from every process).
    """
    if missing < 1:
        raise ValueError(f"refill_prompts: missing must be >= 1, got {missing}")
    if last_round or mixed_seen == 0:
        return full
    if size == "missing":
        wanted = min(full, missing)
    elif size == "expected":
        wanted = min(full, -(-missing * groups_seen // mixed_seen))  # ceil(missing / rate)
    else:
        raise ValueError(f"refill_prompts: size must be 'expected' or 'missing', got {size!r}")
    step = processes // math.gcd(num_generations, processes)  # prompts per unit that splits evenly
    return min(full, -(-wanted // step) * step)


def local_rows(groups: torch.Tensor, num_generations: int, process_index: int, local_size: int) -> torch.Tensor:
    """Per-group flags as flags for this process's rows (TRL gives process ``i`` global rows
    ``[i * local_size, (i + 1) * local_size)``; a group may span processes)."""
    rows = groups.repeat_interleave(num_generations)
    return rows[process_index * local_size:(process_index + 1) * local_size]


def check_images(batch: dict) -> None:
    """Row surgery needs one row per completion; image tensors are laid out per image (refused clearly)."""
    present = [k for k in ROW_LEVEL_ONLY if batch.get(k) is not None]
    if present:
        raise NotImplementedError(
            f"dynamic_sampling: batches with images ({', '.join(present)}) are not supported yet; "
            "set dynamic_sampling: off for a vision-language model.")


def take_rows(batch: dict, index: torch.Tensor) -> dict:
    """The batch restricted to rows ``index`` (tensors with a batch dimension, lists); scalars unchanged."""
    size = len(batch["prompt_ids"])
    out = {}
    for key, value in batch.items():
        if isinstance(value, torch.Tensor) and value.ndim >= 1 and value.shape[0] == size:
            out[key] = value[index.to(value.device)]
        elif isinstance(value, list) and len(value) == size:
            out[key] = [value[i] for i in index.tolist()]
        else:
            out[key] = value
    return out


def concat_batches(batches: list[dict], pad_token_id: int) -> dict:
    """TRL output batches (one per generation round) as one: rows stacked, per-token tensors padded to the
    widest (prompts on the left, everything else on the right, as TRL pads them). Scalars: the last one's."""
    if len(batches) == 1:
        return batches[0]
    out = {}
    for key, value in batches[-1].items():
        values = [b.get(key) for b in batches]
        if not isinstance(value, torch.Tensor) or value.ndim == 0:
            out[key] = value
        elif any(v is None for v in values):
            raise ValueError(f"dynamic_sampling: generation rounds disagree on whether {key!r} is present")
        elif value.ndim == 1:
            out[key] = torch.cat(values)
        else:
            out[key] = torch.cat(_pad_width(key, values, pad_token_id))
    return out


def _pad_width(key: str, values: list[torch.Tensor], pad_token_id: int) -> list[torch.Tensor]:
    width = max(v.shape[1] for v in values)
    fill = LEFT_PADDED.get(key, RIGHT_PAD.get(key, 0))
    fill = pad_token_id if fill == "pad" else fill
    padded = []
    for v in values:
        extra = v.new_full((v.shape[0], width - v.shape[1], *v.shape[2:]), fill)
        padded.append(torch.cat([extra, v] if key in LEFT_PADDED else [v, extra], dim=1))
    return padded


def compact(batch: dict, keep: torch.Tensor, size: int) -> dict:
    """``size`` rows: the kept ones first, then dropped ones (marked so the loss skips them) as filler, so
    TRL can split the buffer into equal slices; ``keep`` goes into the batch under `KEEP`."""
    kept = keep.nonzero().flatten()
    rest = (~keep).nonzero().flatten()
    filler = rest[: max(0, size - len(kept))]
    if len(kept) + len(filler) < size:  # more rows wanted than exist: repeat row 0, marked dropped
        filler = torch.cat([filler, filler.new_zeros(size - len(kept) - len(filler))])
    index = torch.cat([kept, filler])
    out = take_rows(batch, index)
    out[KEEP] = torch.arange(len(index), device=keep.device) < len(kept)
    return out


def loss_tokens(batch: dict) -> torch.Tensor:
    """Tokens each row contributes to the loss (TRL's loss mask: completion mask x tool mask)."""
    mask = batch["completion_mask"]
    if batch.get("tool_mask") is not None:
        mask = mask * batch["tool_mask"]
    return mask.sum(dim=1)


def rows_for_loss(inputs: dict, rows: int | None = None) -> dict:
    """What `compute_loss` passes on: the kept rows, then filler rows (copies of row 0 with their loss mask
    and advantage zeroed, adding exactly nothing to a token-normalised loss) up to ``rows`` (default: the kept
    rows, at least one). A slice with no kept row still runs a forward and backward, so every process joins
    the gradient all-reduce; padding every process to the same count keeps TRL's per-row metric gathers
    (equal shapes on every process) in step."""
    keep = inputs[KEEP]
    batch = {k: v for k, v in inputs.items() if k not in (KEEP, CARRIED)}
    kept = keep.nonzero().flatten()
    rows = max(1, len(kept)) if rows is None else rows
    if rows < len(kept):
        raise ValueError(f"rows_for_loss: {rows} rows asked for, {len(kept)} kept")
    if rows == len(kept):
        return take_rows(batch, kept)
    batch = take_rows(batch, torch.cat([kept, kept.new_zeros(rows - len(kept))]))
    live = torch.arange(rows, device=keep.device) < len(kept)
    batch["completion_mask"] = batch["completion_mask"] * live.unsqueeze(1).to(batch["completion_mask"].dtype)
    batch["advantages"] = torch.where(live.view(-1, *([1] * (batch["advantages"].ndim - 1))),
                                      batch["advantages"], torch.zeros_like(batch["advantages"]))
    return batch
