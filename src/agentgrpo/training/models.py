"""Resolve the config's `model` to something TRL loads: always a string (a local directory or a Hub id).

'tiny' is the shipped SFT'd checkpoint inside the package; 'tiny-random' is an untrained tiny model built
into the user cache. A directory saved with `save_pretrained` and a Hub id go to TRL unchanged, so every
model takes the same code path.
"""

from __future__ import annotations

from pathlib import Path

from platformdirs import user_cache_dir

from agentgrpo.errors import UserError
from agentgrpo.tasks.base import Task

CACHE = Path(user_cache_dir("agentgrpo"))


def resolve_model(name: str, task: Task) -> str:
    """A path or Hub id for ``name``; builds 'tiny-random' on first use (seconds, no download)."""
    from agentgrpo.tiny.build import SHIPPED_SFT, build_random

    if name == "tiny":
        if task.name != "calculator":
            raise UserError(f"model: 'tiny' is SFT'd on the calculator task, not {task.name!r}; use "
                            "'tiny-random' with sft: true, or a real model.")
        if not (SHIPPED_SFT / "config.json").exists():
            raise UserError(f"model: the shipped tiny checkpoint is missing at {SHIPPED_SFT}; rebuild it with "
                            "`agentgrpo build-tiny`.")
        return str(SHIPPED_SFT)
    if name == "tiny-random":
        path = CACHE / f"tiny-random-{task.name}-v{task.version}"
        if not (path / "config.json").exists():
            build_random(task, path)
        return str(path)
    path = Path(name).expanduser()
    if path.exists():
        if not (path / "config.json").exists():
            raise UserError(f"model: {name!r} is a directory without config.json; point at a directory "
                            "written by save_pretrained.")
        return str(path)
    if name.count("/") > 1 or name.startswith((".", "/", "~")):
        raise UserError(f"model: {name!r} is neither an existing directory nor a Hub id like 'org/name'.")
    return name  # a Hub id: TRL / transformers load it (needs network or a warm HF cache)


GENERIC_TOKENIZER_CLASSES = {"TokenizersBackend", "PreTrainedTokenizerFast"}


def load_tokenizer(model_path: str):
    """The model's tokenizer, left-padded, with TRL's response parser for its chat template.

    A directory whose tokenizer_config.json declares the generic fast tokenizer loads as exactly that:
    transformers 5's AutoTokenizer would otherwise pick the model type's tokenizer class (Qwen2Tokenizer
    for a Qwen2 model), which rebuilds its own pre-tokenizer and silently changes the token ids.
    """
    from transformers import AutoTokenizer
    from transformers.tokenization_utils_tokenizers import TokenizersBackend

    from agentgrpo.training.trl_compat import prepare_tokenizer

    declared = _declared_tokenizer_class(model_path)
    loader = TokenizersBackend if declared in GENERIC_TOKENIZER_CLASSES else AutoTokenizer
    return prepare_tokenizer(loader.from_pretrained(model_path))


def _declared_tokenizer_class(model_path: str) -> str | None:
    import json

    config = Path(model_path) / "tokenizer_config.json"
    if not config.is_file():
        return None
    return json.loads(config.read_text()).get("tokenizer_class")


def load_model(model_path: str, dtype: str = "float32"):
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(model_path, dtype=dtype)
