"""Shared fixtures. Everything runs on the CPU, offline, with tiny models built locally."""

from __future__ import annotations

import os
import sys

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("WANDB_DISABLED", "true")

import pytest  # noqa: E402

# tests/data holds fixtures (logs, stores, the scripts that wrote them), never tests: not collected, and their
# scripts are not imported by --doctest-modules.
collect_ignore_glob = ["data/*"]


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


@pytest.fixture(autouse=True)
def _no_watchdog_outlives_its_test():
    """A training watchdog still armed after its test would end this pytest process with status 3 once its
    step_timeout (default 30 min) passed, in the middle of a later test and with no summary (issue 35, item
    6: a trainer whose train() raised never got on_train_end). Fail the test that leaves one; disarm it."""
    yield
    watchdog = sys.modules.get("agentgrpo.training.watchdog")
    left = watchdog.running() if watchdog is not None else []
    for dog in left:
        dog.stop()
    assert not left, f"{len(left)} training watchdog(s) still armed after this test (train() ended, they did not)"
