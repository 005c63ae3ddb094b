"""GRPO through TRL with our task and environment: tool output is masked, parameters move, metrics are kept."""

from __future__ import annotations

import torch

from agentgrpo import rundir
from agentgrpo.plan import resolve_plan
from agentgrpo.tasks.calculator import safe_arithmetic
from agentgrpo.training.grpo import build_grpo_trainer

SMALL = ["--model", "tiny", "--max_steps", "2",
         "--per_device_train_batch_size", "16", "--num_generations", "8", "--max_completion_length", "48",
         "--logging_steps", "1", "--save_strategy", "no", "--disable_tqdm", "true", "--doctor_every", "0"]


def trainer_for(model_dir, tmp_path, calculator, *extra):
    cfg = resolve_plan(None, [*SMALL, *extra, "--output_dir", str(tmp_path)], cuda_available=False)
    assert cfg.task.name == calculator.name
    return build_grpo_trainer(cfg, str(model_dir))


def test_tool_output_is_masked_out_of_the_loss(tiny_sft_dir, tmp_path, calculator):
    trainer = trainer_for(tiny_sft_dir, tmp_path, calculator, "--seed", "3")
    tok = trainer.processing_class
    rows = [trainer.train_dataset[i] for i in range(2)]
    torch.manual_seed(0)
    out = trainer._generate_and_score_completions([r for r in rows for _ in range(8)])
    ids, mask, tool_mask = out["completion_ids"], out["completion_mask"], out["tool_mask"]
    with_tool = [i for i in range(len(ids)) if (tool_mask[i][mask[i].bool()] == 0).any()]
    assert with_tool, "the SFT'd model should call the tool in some of 16 samples"
    for i in with_tool:
        real = mask[i].bool()
        masked = tok.decode(ids[i][real & (tool_mask[i] == 0)])
        trained = tok.decode(ids[i][real & (tool_mask[i] == 1)])
        # Everything the tool wrote (and the template around it) is masked; nothing the model sampled is.
        assert masked.startswith("\n<|im_start|>user\n<tool_response>\n"), masked
        assert masked.endswith("</tool_response><|im_end|>\n<|im_start|>assistant\n"), masked
        assert "<tool_response>" not in trained and "<tool_call>" in trained
        expression = trained.split('"expression": "')[1].split('"')[0]
        try:
            assert masked.split("<tool_response>\n")[1].split("\n</tool_response>")[0] == str(
                safe_arithmetic(expression))
        except ValueError:  # a malformed expression: the tool's error message is what is masked
            assert "error" in masked


def test_parameters_change_after_a_few_steps(tiny_sft_dir, tmp_path, calculator):
    trainer = trainer_for(tiny_sft_dir, tmp_path, calculator, "--max_steps", "2", "--learning_rate", "1e-3")
    before = {n: p.detach().clone() for n, p in trainer.model.named_parameters()}
    trainer.train()
    changed = [n for n, p in trainer.model.named_parameters() if not torch.equal(before[n], p.detach())]
    assert len(changed) > len(before) // 2, f"only {len(changed)} of {len(before)} tensors changed"
    records = rundir.read_jsonl(tmp_path / rundir.METRICS)
    assert [r["step"] for r in records] == [1, 2]
    for key in ("reward", "reward_std", "frac_reward_zero_std", "rewards/correct_answer/mean", "entropy",
                "completions/mean_length", "tools/call_frequency"):
        assert key in records[0], key
