"""`GRPOTrainer` with dynamic sampling: train only on groups whose rewards differ (DAPO's dynamic sampling).

Override points of TRL's `GRPOTrainer`, no copy of its code:

* ``_calculate_rewards`` keeps the rewards TRL has gathered from every process, so the decision about each
  group sees every rank's completions and is the same on every rank.
* ``_generate_and_score_completions`` (TRL calls it once per generation batch) marks the rows of groups with
  equal rewards as dropped (``filter``), or, under ``refill``, calls TRL's own generation again for further
  prompts until the batch holds as many mixed groups as it has prompts, within
  ``max_generation_rounds``; then it trains on what it has and says so. A refill round generates for as
  many prompts as the step's mixed rate so far says are missing (`ds.refill_prompts`), not a
  whole batch.
* ``compute_loss`` passes TRL only the rows kept: a dropped group never reaches the loss.
* ``train`` empties the buffer of carried groups (below) before TRL's.

Under ``refill`` with ``refill_carry``, mixed groups a round brings beyond the step's target are not
discarded: they are carried into the next step (and trained on there, once), with the log-probabilities of
the policy that sampled them, so TRL's loss weighs them by the importance ratio (current / sampling policy),
clipped as PPO clips. TRL computes no such log-probabilities when generation and optimisation are aligned
(``old_per_token_logps`` is None, ratio 1); a step that carries groups in or out computes them with TRL's own
``_get_per_token_logps_and_entropies`` for every row it generated (a batch has them for every row or for
none). The next step's first round then generates only for the groups still missing. The buffer lives in
memory: it is not saved in checkpoints, and every ``train()`` call (a resume included) starts without one.

Under ``refill`` with ``refill_skip_solved``, a group whose completions all earned the best total reward seen
(a solved prompt) fills its slot instead of being replaced: not trained on, its tokens counted in the loss's
token normaliser as under ``off``; refill rounds replace only the groups that failed alike.

Every process runs the same number of generation rounds (the decision is global), so TRL's collective
calls, vLLM's server and colocate generation included, stay in step. Advantages are TRL's, computed in the
round a group was generated in (per group: exact for ``scale_rewards`` group or none).
"""

from __future__ import annotations

import logging
import math

import torch
from trl import GRPOTrainer

from agentgrpo.errors import UserError
from agentgrpo.training import dynamic_sampling as ds
from agentgrpo.training.dynamic_sampling_options import DynamicSampling

DEFAULT = DynamicSampling()  # off: TRL's own training

logger = logging.getLogger(__name__)


class NoLearningSignal(UserError):
    """The run's first generation rounds produced no group with differing rewards: nothing can be learned."""


class DynamicSamplingTrainer(GRPOTrainer):
    """TRL's `GRPOTrainer` plus ``dynamic_sampling``: a `DynamicSampling` (off | filter | refill,
    ``max_generation_rounds``, ...), checked when it was made; the trainer checks only its dataset against it.

    ``off`` trains exactly as TRL does and only logs the `ds.METRICS`. ``refill_carry`` (refill only): train
    the mixed groups beyond a step's target in the next step instead of discarding them.
    """

    def __init__(self, *args, dynamic_sampling: DynamicSampling = DEFAULT, **kwargs):
        if not isinstance(dynamic_sampling, DynamicSampling):
            raise UserError(f"dynamic_sampling: expected a DynamicSampling, got {dynamic_sampling!r}; e.g. "
                            "dynamic_sampling=DynamicSampling(dynamic_sampling='refill', max_generation_rounds=4)")
        super().__init__(*args, **kwargs)
        self.dynamic_sampling_settings = dynamic_sampling  # checked when it was made (and by the plan, for a run)
        self._reward_span = (math.inf, -math.inf)  # refill_skip_solved: lowest and highest total reward seen
        self._round_rewards = None
        self._barren_rounds = 0  # generation rounds without a mixed group, before the first one
        self._seen_signal = None  # has any group taught yet (None: not known before the first generation)
        self._generated_tokens_total = 0
        self._refill_prompts = None
        self._carry = None  # refill: this process's rows of the groups carried into the next step
        self._carry_groups = 0  # how many groups that is (the same on every process)
        self._last_rate = None  # refill: (mixed, groups) generated in the previous step
        if dynamic_sampling.dynamic_sampling == "refill":
            self._check_refill_dataset()

    # --- the settings (one frozen object; a heal in a user's script replaces it: `heal_callbacks.retune`) ---

    @property
    def dynamic_sampling(self) -> str:
        return self.dynamic_sampling_settings.dynamic_sampling

    @property
    def max_generation_rounds(self) -> int:
        return self.dynamic_sampling_settings.max_generation_rounds

    @property
    def refill_carry(self) -> bool:
        return self.dynamic_sampling_settings.refill_carry

    @property
    def refill_skip_solved(self) -> bool:
        return self.dynamic_sampling_settings.refill_skip_solved

    @property
    def refill_round_size(self) -> str:
        return self.dynamic_sampling_settings.refill_round_size

    @property
    def dynamic_sampling_reward(self) -> str | None:
        return self.dynamic_sampling_settings.dynamic_sampling_reward

    def train(self, *args, **kwargs):
        """TRL's ``train``, starting without carried groups and with a fresh refill prompt stream: the buffer
        is not in checkpoints, and a resume (in this process or another) must not train on groups sampled by
        a policy it rolled back."""
        self._carry, self._carry_groups, self._last_rate, self._refill_prompts = None, 0, None, None
        return super().train(*args, **kwargs)

    # --- override points ----------------------------------------------------------------------------

    def _calculate_rewards(self, inputs, prompts, completions, completion_ids_list):
        rewards = super()._calculate_rewards(inputs, prompts, completions, completion_ids_list)
        self._round_rewards = rewards  # gathered over every process: (all completions, reward functions)
        return rewards

    def _generate_and_score_completions(self, inputs):
        if not self.model.training:
            return super()._generate_and_score_completions(inputs)
        local_size, wanted = len(inputs), len(inputs) * self.accelerator.num_processes // self.num_generations
        carried_in = self._carry_groups
        batches, keeps = [], []
        stats = {"rounds": 0, "dropped": 0, "unused": 0, "carried": 0, "mixed": carried_in, "tokens": 0,
                 "solved": 0}
        seen = {"mixed": 0, "groups": 0}  # this step's mixed rate so far, to size refill rounds
        solved_tokens = 0  # refill_skip_solved: this process's loss tokens in solved groups
        round_inputs = self._first_round_inputs(inputs, wanted - carried_in)
        while True:
            batch = super()._generate_and_score_completions(round_inputs)
            stats["rounds"] += 1
            stats["tokens"] += self._round_generated_tokens()
            mixed = self._mixed()
            if self.dynamic_sampling == "off":
                stats["mixed"] = int(mixed.sum())
                self._log_round_stats(stats, limit_hit=False)
                return batch
            ds.check_images(batch)
            self._count_barren(mixed)
            solved = self._solved(mixed)
            stats["solved"] += int(solved.sum())
            if solved.any():  # their tokens count in the loss's token normaliser, as under off (below)
                rows = ds.local_rows(solved, self.num_generations, self.accelerator.process_index, len(round_inputs))
                solved_tokens += int(ds.loss_tokens(batch)[rows.to(batch["completion_mask"].device)].sum())
            chosen = ds.first_mixed(mixed, wanted - stats["solved"] - stats["mixed"])
            stats["mixed"] += int(chosen.sum())
            stats["dropped"] += int((~mixed).sum())
            seen["mixed"] += int(mixed.sum()) + int(solved.sum())
            seen["groups"] += len(mixed)
            batches.append(batch)
            keeps.append(ds.local_rows(chosen, self.num_generations, self.accelerator.process_index,
                                       len(round_inputs)))
            if (self.dynamic_sampling == "filter" or stats["mixed"] + stats["solved"] >= wanted
                    or stats["rounds"] >= self.max_generation_rounds):
                break
            last_round = stats["rounds"] + 1 == self.max_generation_rounds
            prompts = ds.refill_prompts(wanted - stats["solved"] - stats["mixed"], seen["mixed"],
                                        seen["groups"],
                                        self._prompts_per_batch(), self.accelerator.num_processes,
                                        self.num_generations, last_round, self.refill_round_size)
            round_inputs = self._next_refill_inputs(prompts)
        surplus = mixed & ~chosen  # the last round's mixed groups beyond the target
        limit_hit = self.dynamic_sampling == "refill" and stats["mixed"] + stats["solved"] < wanted
        if limit_hit:
            logger.warning(
                "dynamic_sampling refill: step %d reached max_generation_rounds=%d with %d of %d mixed "
                "groups; training on those %d", self.state.global_step + 1, self.max_generation_rounds,
                stats["mixed"], wanted - stats["solved"], stats["mixed"])
        if self.dynamic_sampling == "refill" and self.refill_carry:
            self._last_rate = (seen["mixed"], seen["groups"])
            stats["carried"] = self._carry_surplus(batch, surplus, batches, keeps, carried_in, len(round_inputs))
        else:
            stats["unused"] = int(surplus.sum())
        self._log_round_stats(stats, limit_hit)
        return self._batch_for_loss(batches, keeps, local_size, carried_rows=len(keeps[0]) if carried_in else 0,
                                    solved_tokens=solved_tokens)

    def _carry_surplus(self, batch, surplus, batches: list, keeps: list, carried_in: int, round_size: int) -> int:
        """refill_carry: keep the last round's ``surplus`` groups (with their sampling log-probs) for the next
        step, and put the groups carried into this step first in ``batches``/``keeps``; returns the groups
        carried on. The decisions are global: every process runs the same forwards (sharded models stay in
        step)."""
        if carried_in:  # rows carried in have sampling log-probs: a batch needs them on every row
            for b in batches:
                self._add_sampling_logps(b)
        last = dict(batch)
        if surplus.any():
            self._add_sampling_logps(last)
        carry_in = self._carry
        self._carry = ds.take_rows(last, ds.local_rows(surplus, self.num_generations, self.accelerator.process_index,
                                                       round_size).nonzero().flatten())
        self._carry_groups = int(surplus.sum())
        if carry_in is not None and carried_in:
            batches.insert(0, carry_in)
            keeps.insert(0, torch.ones(len(carry_in["prompt_ids"]), dtype=torch.bool))
        return self._carry_groups

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        if ds.KEEP in inputs:
            inputs = ds.rows_for_loss(inputs, self._loss_rows(int(inputs[ds.KEEP].sum())))
        return super().compute_loss(model, inputs, return_outputs=return_outputs,
                                    num_items_in_batch=num_items_in_batch)

    # --- helpers ------------------------------------------------------------------------------------

    def _loss_rows(self, kept: int) -> int:
        """Rows this micro-step hands TRL's loss: the most any process kept (at least one), the same on every
        process (TRL gathers per-row clip metrics, which needs equal shapes). Filler rows add nothing to
        token-normalised losses (dapo, bnpo, cispo, vespo); with the row-averaged ones (grpo, dr_grpo, sapo,
        luspo) they count in each process's mean, so every kept row weighs the same on every process."""
        rows = max(1, kept)
        if self.accelerator.num_processes > 1:
            rows = int(self.accelerator.gather(torch.tensor([rows], device=self.accelerator.device)).max())
        return rows

    def _mixed(self) -> torch.Tensor:
        """The round's groups that teach: their total reward varies (TRL's test), or with
        ``dynamic_sampling_reward`` named, that reward varies."""
        aggregation = self.multi_objective_aggregation  # TRL's copy of the GRPOConfig field
        if self.dynamic_sampling_reward is not None:
            aggregation = "sum_then_normalize"  # one reward with weight 1: its own spread
        return ds.mixed_groups(*self._decision_rewards(), self.num_generations, aggregation).cpu()

    def _decision_rewards(self) -> tuple[torch.Tensor, torch.Tensor]:
        """The round's reward table and weights the groups are judged on (`ds.decision_rewards`)."""
        return ds.decision_rewards(self._round_rewards, self.reward_weights, self.reward_func_names,
                                   self.dynamic_sampling_reward)

    def _solved(self, mixed: torch.Tensor) -> torch.Tensor:
        """``refill_skip_solved``: the round's groups whose completions all earned the best total reward this
        training process has seen, when it has seen a lower one too (`_reward_span`, updated here with this
        round); none otherwise. A reward constant for every prompt never has a solved group, so such a run
        still stops with `NoLearningSignal`."""
        if not (self.dynamic_sampling == "refill" and self.refill_skip_solved):
            return torch.zeros_like(mixed)
        totals = ds.weighted_totals(*self._decision_rewards()).cpu()
        finite = totals[torch.isfinite(totals)]
        span = self._reward_span
        if len(finite):
            self._reward_span = span = (min(span[0], float(finite.min())), max(span[1], float(finite.max())))
        return ds.solved_groups(totals, self.num_generations, span[1], span[0]) & ~mixed

    def _round_generated_tokens(self) -> int:
        """Completion tokens the model generated this round, over every process (tool output excluded):
        TRL's own ``completions/mean_length`` of the round times its completions."""
        lengths = self._metrics["train"].get("completions/mean_length")
        if not lengths or self._round_rewards is None:
            return 0
        return round(lengths[-1] * self._round_rewards.shape[0])

    def _count_barren(self, mixed: torch.Tensor) -> None:
        """Stop a run whose first ``max_generation_rounds`` generation rounds held no mixed group (a
        reward constant for every prompt, a task out of reach). Once a group has taught, a step without one
        (a policy that solves everything) trains on nothing, logged, and the run goes on."""
        if self._seen_signal is None:
            self._seen_signal = self.state.global_step > 0  # a resumed run has learned before
        if self._seen_signal or mixed.any():
            self._seen_signal = True
            return
        self._barren_rounds += 1
        if self._barren_rounds >= self.max_generation_rounds:
            rewards = self._round_rewards
            raise NoLearningSignal(
                f"dynamic_sampling {self.dynamic_sampling}: the run's first {self._barren_rounds} generation "
                f"rounds ({rewards.shape[0] // self.num_generations} groups each) produced no group whose "
                "completions earned different rewards, so nothing can be learned. Check the rewards (`agentgrpo "
                "audit`, the preflight signal check): a reward that is constant for every prompt, a task far too "
                "hard or too easy for the model, or too few num_generations. Raise max_generation_rounds to "
                "search longer, or set dynamic_sampling: off.")

    def _batch_for_loss(self, batches: list[dict], keeps: list[torch.Tensor], local_size: int,
                        carried_rows: int = 0, solved_tokens: int = 0) -> dict:
        """One buffer TRL can shuffle and split into ``steps_per_generation`` equal slices; the kept rows
        marked, the first ``carried_rows`` (groups carried from the previous step) flagged under `ds.CARRIED`,
        the loss's token count recounted over the kept rows (every process), plus ``solved_tokens``: under
        ``refill_skip_solved`` a solved group fills a slot of the batch with zero advantage, as under off, so
        its tokens count in the normaliser of the token-level losses (dapo, cispo, vespo) though it
        never reaches the loss."""
        batch = ds.concat_batches(batches, self._tokenizer.pad_token_id)
        keep = torch.cat(keeps).to(batch["prompt_ids"].device)
        batch[ds.CARRIED] = torch.arange(len(keep), device=keep.device) < carried_rows
        slices = self.args.steps_per_generation
        kept = int(keep.sum())
        size = max(local_size, -(-kept // slices) * slices)
        batch = ds.compact(batch, keep, size)
        tokens = (ds.loss_tokens(batch) * batch[ds.KEEP]).sum() + solved_tokens
        batch["num_items_in_batch"] = self.accelerator.gather(tokens.reshape(1)).sum()
        return batch

    def _log_round_stats(self, stats: dict, limit_hit: bool) -> None:
        self._generated_tokens_total += stats["tokens"]
        metrics = self._metrics["train"]
        metrics[ds.METRIC_ROUNDS].append(float(stats["rounds"]))
        metrics[ds.METRIC_DROPPED].append(float(stats["dropped"]))
        metrics[ds.METRIC_UNUSED].append(float(stats["unused"]))
        metrics[ds.METRIC_CARRIED].append(float(stats["carried"]))
        metrics[ds.METRIC_SOLVED].append(float(stats.get("solved", 0)))
        metrics[ds.METRIC_MIXED].append(float(stats["mixed"]))
        metrics[ds.METRIC_TOKENS].append(float(stats["tokens"]))
        metrics[ds.METRIC_TOKENS_TOTAL].append(float(self._generated_tokens_total))
        metrics[ds.METRIC_LIMIT_HIT].append(float(limit_hit))

    def _add_sampling_logps(self, batch: dict) -> None:
        """The sampling policy's per-token log-probabilities of a round's completions, as TRL computes them
        when generation and optimisation are misaligned (its own forward, temperature, chunking), unless TRL
        already did (``old_per_token_logps``). Called before any update of the step: the policy that sampled."""
        if batch.get("old_per_token_logps") is not None:
            return
        from trl.models.utils import disable_gradient_checkpointing

        prompt_completion = torch.cat([batch["prompt_ids"], batch["completion_ids"]], dim=1)
        attention_mask = torch.cat([batch["prompt_mask"], batch["completion_mask"]], dim=1)
        with torch.no_grad(), disable_gradient_checkpointing(self.model, self.args.gradient_checkpointing_kwargs):
            logps, _, _ = self._get_per_token_logps_and_entropies(
                self.model, prompt_completion, attention_mask, batch["completion_ids"].size(1),
                batch_size=self.args.per_device_train_batch_size)
        batch["old_per_token_logps"] = logps

    # --- refill prompts -----------------------------------------------------------------------------

    def _first_round_inputs(self, inputs: list[dict], missing: int) -> list[dict]:
        """The step's first round: TRL's batch, or under ``refill`` with groups carried in, fresh prompts for
        the groups still missing at the previous step's mixed rate (`ds.refill_prompts`)."""
        if self.dynamic_sampling != "refill" or not self._carry_groups or self._last_rate is None:
            return inputs
        full = self._prompts_per_batch()
        prompts = ds.refill_prompts(missing, *self._last_rate, full, self.accelerator.num_processes,
                                    self.num_generations, last_round=self.max_generation_rounds == 1,
                                    size=self.refill_round_size)
        return inputs if prompts >= full else self._next_refill_inputs(prompts)

    def _prompts_per_batch(self) -> int:
        return self.args.generation_batch_size // self.num_generations

    def _check_refill_dataset(self) -> None:
        dataset = self.train_dataset
        if not hasattr(dataset, "__len__") or not hasattr(dataset, "__getitem__"):
            raise UserError("dynamic_sampling: refill draws further prompts by index; the training dataset is an "
                            "IterableDataset. Pass a map-style Dataset, or use dynamic_sampling: filter.")
        problems = self.dynamic_sampling_settings.problems_with(train_size=len(dataset),
                                                                prompts_per_batch=self._prompts_per_batch())
        if problems:
            raise UserError("; ".join(problems))

    def _next_refill_inputs(self, prompts: int) -> list[dict]:
        """This process's share of the next refill round: ``prompts`` fresh prompts, each repeated
        ``num_generations`` times, laid out across processes as TRL's sampler lays them out."""
        if self._refill_prompts is None:
            self._refill_prompts = self._refill_prompt_stream()
        indices = [next(self._refill_prompts) for _ in range(prompts)]
        rows = [i for i in indices for _ in range(self.num_generations)]
        local = len(rows) // self.accelerator.num_processes
        start = self.accelerator.process_index * local
        return [self.train_dataset[i] for i in rows[start:start + local]]

    def _refill_prompt_stream(self):
        """Endless prompt indices, shuffled per pass over the dataset, the same on every process (seeded by the
        run's seed and the step the stream starts at, so a resumed run draws afresh)."""
        n = len(self.train_dataset)
        seed = self.args.seed * 1_000_003 + self.state.global_step
        epoch = 0
        while True:
            yield from torch.randperm(n, generator=torch.Generator().manual_seed(seed + epoch)).tolist()
            epoch += 1
