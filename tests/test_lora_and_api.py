"""LoRA through peft as TRL does it, the Python API with extra callbacks, and eval of a saved adapter."""

from __future__ import annotations

import json

import pytest
import torch
from transformers import TrainerCallback

from agentgrpo import rundir
from agentgrpo.cli import main

pytest.importorskip("peft")

SMALL = dict(
    per_device_train_batch_size=16,
    num_generations=8,
    max_completion_length=48,
    save_strategy="no",
    disable_tqdm=True,
    doctor_every=0,
    eval_before=False,
    eval_after=False,
    seed=3,
)


class CountSteps(TrainerCallback):
    def __init__(self):
        self.steps = []

    def on_step_end(self, args, state, control, **kwargs):
        self.steps.append(state.global_step)


@pytest.fixture(scope="module")
def lora_run(tiny_sft_dir, tmp_path_factory):
    import agentgrpo

    counter = CountSteps()
    result = agentgrpo.train(
        {"model": "tiny", "max_steps": 2, **SMALL},
        callbacks=[counter],
        runs_dir=str(tmp_path_factory.mktemp("runs")),
        run_name="lora",
        use_peft=True,
        lora_r=4,
        lora_alpha=8,
        lora_dropout=0.0,
        learning_rate=5e-3,
        save_merged=True,
    )
    return result, counter


def test_lora_run_saves_an_adapter_and_leaves_the_base_unchanged(lora_run, tiny_sft_dir):
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    result, counter = lora_run
    assert counter.steps == [1, 2]  # the API's callbacks reach the trainer
    final = result.run_dir / rundir.FINAL
    adapter = json.loads((final / "adapter_config.json").read_text())
    assert adapter["r"] == 4 and adapter["base_model_name_or_path"] == str(tiny_sft_dir)
    assert not (final / "model.safetensors").exists()  # the adapter only, not a full copy
    base = AutoModelForCausalLM.from_pretrained(tiny_sft_dir)
    model = PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(tiny_sft_dir), str(final))
    lora_b = [p for n, p in model.named_parameters() if "lora_B" in n]
    assert lora_b and any(p.abs().sum() > 0 for p in lora_b)  # lora_B starts at 0: the adapter trained
    base_params = dict(base.named_parameters())
    for name, p in model.named_parameters():
        if "lora_" not in name:
            key = name.replace("base_model.model.", "").replace(".base_layer", "")
            assert torch.equal(p, base_params[key]), name  # base weights unchanged
    merged = AutoModelForCausalLM.from_pretrained(result.run_dir / rundir.MERGED)
    ids = torch.tensor([[1, 2, 3, 4, 5]])
    with torch.no_grad():
        assert torch.allclose(merged(ids).logits, model(ids).logits, atol=1e-4)


def test_eval_loads_the_adapter_with_the_runs_settings(lora_run, tmp_path):
    result, _ = lora_run
    out = tmp_path / "eval.json"
    assert main(["eval", "--model", str(result.run_dir), "--n", "8", "--modes", "greedy", "--out", str(out)]) == 0
    data = json.loads(out.read_text())
    assert data["model"] == str(result.run_dir / rundir.FINAL) and data["greedy"]["n"] == 8
    # exactly as GRPO generated: the run's budget and temperature, not eval's own defaults
    assert data["settings"]["max_completion_length"] == 48 and data["settings"]["temperature"] == 1.0
    assert data["task"] == "calculator"


def test_eval_help_example_uses_real_flags():
    from agentgrpo.cli import build_parser
    from agentgrpo.commands import evaluate

    parser = build_parser()
    for line in (evaluate.__doc__ or "").splitlines():
        if line.strip().startswith("agentgrpo eval"):
            args = line.split("#")[0].split()[1:]
            parsed, extra = parser.parse_known_args(args)
            assert not extra, f"{line!r}: unknown flags {extra}"


def test_final_and_merged_tokenizers_load_plainly_with_the_trainers_ids(lora_run, tiny_sft_dir):
    """Issue 19 item 7: `AutoTokenizer.from_pretrained` on final/ and final-merged/ gives the trainer's ids."""
    from transformers import AutoTokenizer

    from agentgrpo.training.models import load_tokenizer

    result, _ = lora_run
    texts = ["<|im_start|>user\nWhat is 17 * 23?<|im_end|>\n<|im_start|>assistant\n<tool_call>\n"
             '{"name": "calculate", "arguments": {"expression": "17 * 23"}}\n</tool_call><|im_end|>', "12+7=19"]
    reference = load_tokenizer(str(tiny_sft_dir))
    for sub in (rundir.FINAL, rundir.MERGED):
        plain = AutoTokenizer.from_pretrained(str(result.run_dir / sub))
        assert [plain(t)["input_ids"] for t in texts] == [reference(t)["input_ids"] for t in texts], sub
