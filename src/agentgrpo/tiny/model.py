"""The embedded default model: a tiny Llama-architecture causal LM, randomly initialised, built locally.

It is saved as an ordinary ``llama`` checkpoint so that plain ``AutoTokenizer.from_pretrained`` loads the
tokenizer it was trained with (for a ``qwen2`` model type transformers 5 swaps in its own Qwen2 tokenizer,
whose pre-tokenizer gives other ids). The weights are those of a Qwen2 model (query/key/value biases, no
output-projection bias): the Llama form carries an output-projection bias fixed at zero, which training keeps
frozen (`FROZEN_PARAMETERS`, read by `agentgrpo.training.models.freeze_fixed_parameters`).
"""

from __future__ import annotations

import torch
from transformers import (
    GenerationConfig,
    LlamaConfig,
    LlamaForCausalLM,
    PreTrainedTokenizerBase,
    Qwen2Config,
    Qwen2ForCausalLM,
)

TINY_ARCH = dict(hidden_size=128, intermediate_size=384, num_hidden_layers=4, num_attention_heads=4,
                 num_key_value_heads=2, max_position_embeddings=512, tie_word_embeddings=True)
# config attribute naming parameter-name suffixes that stay at their saved value during training
FROZEN_KEY = "agentgrpo_frozen_parameters"
FROZEN_PARAMETERS = ["self_attn.o_proj.bias"]


def build_tiny_model(tokenizer: PreTrainedTokenizerBase, seed: int = 0, **overrides) -> LlamaForCausalLM:
    """A ~0.9M-parameter model sized to ``tokenizer``; same seed, same weights."""
    config = Qwen2Config(
        vocab_size=len(tokenizer),
        bos_token_id=None,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        **{**TINY_ARCH, **overrides},
    )
    torch.manual_seed(seed)
    model = as_llama(Qwen2ForCausalLM(config))
    model.generation_config = GenerationConfig(
        eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id, bos_token_id=None
    )
    return model


def as_llama(qwen2: Qwen2ForCausalLM) -> LlamaForCausalLM:
    """The same network as a `LlamaForCausalLM` (attention biases on, output-projection bias zero and frozen):
    identical logits, bit for bit."""
    c = qwen2.config
    config = LlamaConfig(
        vocab_size=c.vocab_size, hidden_size=c.hidden_size, intermediate_size=c.intermediate_size,
        num_hidden_layers=c.num_hidden_layers, num_attention_heads=c.num_attention_heads,
        num_key_value_heads=c.num_key_value_heads, max_position_embeddings=c.max_position_embeddings,
        rms_norm_eps=c.rms_norm_eps, rope_parameters=c.rope_parameters, hidden_act=c.hidden_act,
        tie_word_embeddings=c.tie_word_embeddings, attention_bias=True, mlp_bias=False, attention_dropout=0.0,
        bos_token_id=c.bos_token_id, eos_token_id=c.eos_token_id, pad_token_id=c.pad_token_id,
        use_cache=c.use_cache, **{FROZEN_KEY: list(FROZEN_PARAMETERS)},
    )
    model = LlamaForCausalLM(config)
    state = qwen2.state_dict()
    for i in range(c.num_hidden_layers):
        state[f"model.layers.{i}.self_attn.o_proj.bias"] = torch.zeros(c.hidden_size)
    model.load_state_dict(state, strict=True)
    model.generation_config = qwen2.generation_config
    return model
