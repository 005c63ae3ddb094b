"""The embedded default model: a tiny Qwen2-style causal LM, randomly initialised, built locally."""

from __future__ import annotations

import torch
from transformers import GenerationConfig, PreTrainedTokenizerBase, Qwen2Config, Qwen2ForCausalLM

TINY_ARCH = dict(hidden_size=128, intermediate_size=384, num_hidden_layers=4, num_attention_heads=4,
                 num_key_value_heads=2, max_position_embeddings=512, tie_word_embeddings=True)


def build_tiny_model(tokenizer: PreTrainedTokenizerBase, seed: int = 0, **overrides) -> Qwen2ForCausalLM:
    """A ~0.9M-parameter Qwen2 model sized to ``tokenizer``; same seed, same weights."""
    config = Qwen2Config(
        vocab_size=len(tokenizer),
        bos_token_id=None,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        **{**TINY_ARCH, **overrides},
    )
    torch.manual_seed(seed)
    model = Qwen2ForCausalLM(config)
    model.generation_config = GenerationConfig(
        eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id, bos_token_id=None
    )
    return model
