"""The embedded tiny model is an ordinary Hugging Face checkpoint (issue 19, item 7): plain
`AutoTokenizer` / `AutoModelForCausalLM` load it and give the ids the trainer uses; `agentgrpo ls` names
its path; the README's "own TRL script" snippet runs as written."""

from __future__ import annotations

import random
import re
from pathlib import Path

import torch

README = Path(__file__).resolve().parent.parent / "README.md"


def _chats(n: int, seed: int) -> list[str]:
    """Rendered calculator chats (tool calls, tool results, direct answers) and free text: generated inputs."""
    from agentgrpo.tasks.calculator import TASK
    from agentgrpo.tasks.demonstrations import demonstrations
    from agentgrpo.tiny.tokenizer import template_renderer

    renderer = template_renderer()
    texts = [renderer.apply_chat_template(d["messages"], tools=d["tools"], tokenize=False)
             for d in demonstrations(TASK, n, tool_fraction=0.5, seed=seed)]
    rng = random.Random(seed)
    alphabet = "abcdefghij 0123456789+-*/()=?.,\n<>|_{}\":"
    texts += ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 80))) for _ in range(n)]
    return texts


def _assert_same_ids(path, texts):
    from transformers import AutoTokenizer

    from agentgrpo.training.models import load_tokenizer

    plain, ours = AutoTokenizer.from_pretrained(str(path)), load_tokenizer(str(path))
    for text in texts:
        assert plain(text)["input_ids"] == ours(text)["input_ids"], (path, text)
    assert plain.eos_token_id == ours.eos_token_id and plain.pad_token_id == ours.pad_token_id


def test_plain_auto_classes_load_the_shipped_tiny_model_with_the_trainers_ids(tiny_sft_dir):
    from transformers import AutoModelForCausalLM

    _assert_same_ids(tiny_sft_dir, _chats(40, seed=1))
    model = AutoModelForCausalLM.from_pretrained(str(tiny_sft_dir))
    ids = torch.tensor([[1, 5, 9, 12]])
    with torch.no_grad():
        assert model(ids).logits.shape == (1, 4, model.config.vocab_size)


def test_a_random_tiny_build_is_ordinary_too(tiny_random_dir):
    _assert_same_ids(tiny_random_dir, _chats(10, seed=2))


def test_llama_form_is_the_same_network_as_the_qwen2_it_came_from():
    """The conversion is exact: the same logits, bit for bit, and the fixed bias stays out of training."""
    from transformers import Qwen2Config, Qwen2ForCausalLM

    from agentgrpo.tiny.model import TINY_ARCH, as_llama
    from agentgrpo.training.models import freeze_fixed_parameters

    torch.manual_seed(3)
    qwen = Qwen2ForCausalLM(Qwen2Config(vocab_size=97, pad_token_id=0, eos_token_id=2, **TINY_ARCH))
    llama = as_llama(qwen)
    ids = torch.randint(0, 97, (3, 17))
    with torch.no_grad():
        assert torch.equal(qwen(ids).logits, llama(ids).logits)
    frozen = freeze_fixed_parameters(llama)
    assert frozen and all(n.endswith("o_proj.bias") for n in frozen)
    assert all(p.requires_grad for n, p in llama.named_parameters() if n not in frozen)


def test_ls_prints_the_tiny_model_path(capsys, tiny_sft_dir):
    from agentgrpo.cli import main

    assert main(["ls", "models"]) == 0
    out = capsys.readouterr().out
    assert str(tiny_sft_dir) in out


def readme_snippet() -> str:
    section = README.read_text().split("## Use it from your own TRL script", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, re.S)
    assert blocks, "no python block in the README's 'Use it from your own TRL script' section"
    return blocks[0]


def test_readme_trl_script_runs_as_written(tmp_path, monkeypatch, tiny_sft_dir):
    """The snippet, unchanged except for a shorter run (max_steps), trains the tiny model with plain TRL."""
    import json

    code = readme_snippet()
    assert "processing_class" not in code  # TRL loads the tokenizer itself, as for any checkpoint
    steps = re.search(r"max_steps=(\d+)", code)
    assert steps, "the snippet sets max_steps"
    monkeypatch.chdir(tmp_path)
    exec(compile(code, "README.md", "exec"), {"__name__": "readme"})  # noqa: S102 - our own README
    records = [json.loads(line) for line in (tmp_path / "runs/mine/metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in records] == list(range(1, int(steps.group(1)) + 1))
    # TRL's own tokenizer load gives the ids the model was trained on: it solves problems (garbage would not)
    solved = sum(r["rewards/correct_answer/mean"] for r in records) / len(records)
    assert solved > 0.2, records
