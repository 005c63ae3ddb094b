"""Resolve the config's `model` to something TRL loads: always a string (a local directory or a Hub id).

'tiny' is the shipped SFT'd checkpoint inside the package; 'tiny-random' is an untrained tiny model built
into the user cache. A directory saved with `save_pretrained` and a Hub id go to TRL unchanged, so every
model takes the same code path.
"""

from __future__ import annotations

from pathlib import Path

from agentgrpo.errors import UserError
from agentgrpo.tasks.base import Task

ADAPTER_CONFIG = "adapter_config.json"


def tiny_note(task_name: str) -> str | None:
    """A warning for model 'tiny' on task ``task_name``, or None: the shipped checkpoint was SFT'd on the
    calculator task's demonstrations only (`SHIPPED_SFT_TASKS`). It is accepted for every task, as its path
    is: every model form goes through the same path; this only says what to expect."""
    from agentgrpo.tiny.build import EASY_VARIANTS, warm_start

    if warm_start(task_name) is not None:
        return None
    easy = EASY_VARIANTS.get(task_name)
    variant = (f"; its easy variant has a warm start of its own: task {easy!r}, `agentgrpo demo --task {easy}`"
               if easy else "")
    return (f"model: 'tiny' was SFT'd on the calculator task only, not on {task_name!r}: expect it to start near "
            "0% success there (fine for trying the pipeline; to learn the task, start from a model trained for "
            f"it: a run directory, a save_pretrained directory or a Hub id){variant}.")


def resolve_model(name: str, task: Task) -> str:
    """A path or Hub id for ``name``; builds 'tiny-random' on first use (seconds, no download).

    A LoRA adapter directory (``adapter_config.json``, as a PEFT run saves) is accepted as it is.
    """
    from agentgrpo.tiny.build import SHIPPED_SFT, random_checkpoint, warm_start

    if name == "tiny":
        own = warm_start(task.name) if task is not None else None
        path = own or SHIPPED_SFT
        if not (path / "config.json").exists():
            flag = f" --task {task.name}" if own is not None and path != SHIPPED_SFT else ""
            raise UserError(f"model: the shipped tiny checkpoint is missing at {path}; rebuild it with "
                            f"`agentgrpo build-tiny{flag}`.")
        return str(path)
    if name == "tiny-random":
        return str(random_checkpoint(task))
    path = Path(name).expanduser()
    if path.exists():
        if not (path / "config.json").exists() and not (path / ADAPTER_CONFIG).exists():
            raise UserError(f"model: {name!r} is a directory without config.json (or adapter_config.json); "
                            "point at a directory written by save_pretrained.")
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

    base = adapter_base(model_path)
    if base is not None and not (Path(model_path) / "tokenizer_config.json").is_file():
        model_path = base  # an adapter saved without its tokenizer: the base model's
    declared = _declared_tokenizer_class(model_path)
    loader = TokenizersBackend if declared in GENERIC_TOKENIZER_CLASSES else AutoTokenizer
    return prepare_tokenizer(loader.from_pretrained(model_path))


def _declared_tokenizer_class(model_path: str) -> str | None:
    import json

    config = Path(model_path) / "tokenizer_config.json"
    if not config.is_file():
        return None
    return json.loads(config.read_text()).get("tokenizer_class")


def adapter_base(model_path: str) -> str | None:
    """The base model a LoRA adapter directory was trained on (from its adapter_config.json), else None."""
    import json

    config = Path(model_path) / ADAPTER_CONFIG
    if not config.is_file():
        return None
    base = json.loads(config.read_text()).get("base_model_name_or_path")
    if not base:
        raise UserError(f"model: {config} names no base_model_name_or_path; cannot load the adapter.")
    return base


def load_model(model_path: str, dtype: str = "float32"):
    """A causal LM from a save_pretrained directory or Hub id; an adapter directory loads base + adapter."""
    from transformers import AutoModelForCausalLM

    base = adapter_base(model_path)
    if base is None:
        return AutoModelForCausalLM.from_pretrained(model_path, dtype=dtype)
    try:
        from peft import PeftModel
    except ImportError as exc:
        raise UserError(f"model: {model_path} is a LoRA adapter; loading it needs peft (pip install peft).") from exc
    return PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(base, dtype=dtype), model_path)


def freeze_fixed_parameters(model) -> list[str]:
    """Keep the parameters the model's config names as fixed (``agentgrpo_frozen_parameters``: name suffixes,
    e.g. the tiny model's zero output-projection bias) out of training; the names frozen."""
    from agentgrpo.tiny.model import FROZEN_KEY

    suffixes = tuple(getattr(getattr(model, "config", None), FROZEN_KEY, None) or ())
    frozen = []
    for name, param in model.named_parameters() if suffixes else ():
        if name.endswith(suffixes) and param.requires_grad:
            param.requires_grad_(False)
            frozen.append(name)
    return frozen


def merge_adapter(adapter_dir: str | Path, out_dir: str | Path) -> Path:
    """Save the adapter's base model with the adapter merged in (`merge_and_unload`), plus the tokenizer."""
    model = load_model(str(adapter_dir)).merge_and_unload()
    out = Path(out_dir)
    model.save_pretrained(out)
    load_tokenizer(str(adapter_dir)).save_pretrained(out)
    return out
