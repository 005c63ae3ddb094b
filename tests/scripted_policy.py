"""A scripted ``model.generate`` for GRPO smoke tests of agent tasks on a tiny model.

``ScriptedPolicy(model, tokenizer, script)`` replaces ``model.generate``: for each sequence it decodes the
conversation so far and asks ``script(text, row_index)`` for the next assistant turn (a string in the tiny
chat template's format, ending with ``<|im_end|>``), or None for the model's own tokens (kept short).
"""

from __future__ import annotations

import copy
import json

import torch

END = "<|im_end|>"


def tool_call(name: str, arguments: dict) -> str:
    """One assistant turn calling ``name`` in the tiny template's (Qwen's) format."""
    return f'<tool_call>\n{json.dumps({"name": name, "arguments": arguments})}\n</tool_call>{END}'


class ScriptedPolicy:
    def __init__(self, model, tokenizer, script, own_tokens: int = 16):
        self.model, self.tok, self.real, self.script, self.own_tokens = model, tokenizer, model.generate, script, \
            own_tokens
        self.calls = 0

    def __call__(self, input_ids, attention_mask=None, **kwargs):
        self.calls += 1
        texts = [self.tok.decode(ids[attention_mask[i].bool()]) for i, ids in enumerate(input_ids)]
        turns = [self.script(text, i) for i, text in enumerate(texts)]
        if None in turns:
            config = copy.deepcopy(kwargs.pop("generation_config", None) or self.model.generation_config)
            config.max_new_tokens = self.own_tokens
            real = self.real(input_ids=input_ids, attention_mask=attention_mask, generation_config=config, **kwargs)
        rows = []
        for i, (ids, scripted) in enumerate(zip(input_ids, turns)):
            new = self.tok.encode(scripted, add_special_tokens=False) if scripted else real[i, input_ids.shape[1]:]
            rows.append(torch.cat([ids, torch.as_tensor(new, dtype=ids.dtype)]))
        width = max(len(r) for r in rows)
        pad = self.tok.pad_token_id
        return torch.stack([torch.cat([r, r.new_full((width - len(r),), pad)]) for r in rows])


def long_context_copy(model_dir, out_dir, positions: int = 4096):
    """A copy of a tiny model directory whose config allows ``positions`` tokens (prompts with several tool
    schemas and multi-turn episodes outgrow the tiny model's 512; the weights do not depend on it)."""
    import shutil
    from pathlib import Path

    out = Path(out_dir)
    shutil.copytree(model_dir, out, dirs_exist_ok=True)
    config = json.loads((out / "config.json").read_text())
    config["max_position_embeddings"] = positions
    (out / "config.json").write_text(json.dumps(config, indent=2))
    return out
