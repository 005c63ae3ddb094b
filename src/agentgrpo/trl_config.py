"""TRL's configuration classes and bundled chat template, read in one place, on the bottom floor.

Besides `training/`, this is the only module that imports TRL (import contracts in .importlinter check it,
tests/test_layering.py runs them): `config.py` and `tiny/` read TRL's config dataclasses and template from
here, below everything that uses them, so an upgrade of TRL touches `training/` and this file.
Imports are lazy: `agentgrpo --help` stays fast.
"""

from __future__ import annotations


def grpo_config_class():
    """`trl.GRPOConfig`."""
    from trl import GRPOConfig

    return GRPOConfig


def model_config_class():
    """`trl.ModelConfig` (its LoRA fields: use_peft, lora_r, ...)."""
    from trl import ModelConfig

    return ModelConfig


def peft_config(fields: dict):
    """The `peft.LoraConfig` TRL builds from its ModelConfig LoRA fields (`trl.get_peft_config`)."""
    from trl import ModelConfig, get_peft_config

    return get_peft_config(ModelConfig(**fields))


def qwen2_5_chat_template() -> str:
    """TRL's bundled Qwen2.5 chat template (the tiny tokenizer uses it byte for byte)."""
    from trl.chat_template_utils import qwen2_5_chat_template as template

    return template
