"""Shared fixtures. Everything runs on the CPU, offline, with tiny models built locally."""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("WANDB_DISABLED", "true")

import pytest  # noqa: E402


def pytest_collection_modifyitems(config, items):
    """GPU tests skip cleanly on machines without CUDA."""
    try:
        import torch

        has_gpu = torch.cuda.is_available()
    except ImportError:
        has_gpu = False
    if has_gpu:
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def calculator():
    from agentgrpo.tasks import get_task

    return get_task("calculator")


@pytest.fixture(scope="session")
def tiny_random_dir(tmp_path_factory, calculator):
    """An untrained tiny model + tokenizer saved with save_pretrained (seconds to build)."""
    from agentgrpo.tiny.build import build_random

    return build_random(calculator, tmp_path_factory.mktemp("tiny-random"))


@pytest.fixture(scope="session")
def tiny_sft_dir():
    """The shipped SFT'd tiny checkpoint (uses the tool about half the time)."""
    from agentgrpo.tiny.build import SHIPPED_SFT

    if not (SHIPPED_SFT / "config.json").exists():
        pytest.fail(f"the shipped tiny checkpoint is missing at {SHIPPED_SFT}; run `agentgrpo build-tiny`")
    return SHIPPED_SFT
