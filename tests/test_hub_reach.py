"""With no network and no offline flag, a task whose data is on the Hub says "unavailable offline" at once,
after one short connection attempt, and never starts a download that retries (issue 35, item 3)."""

from __future__ import annotations

import socket
import threading
import time

import pytest

from agentgrpo.cli import main
from agentgrpo.errors import UserError
from agentgrpo.tasks import get_task, hub

HUB_TASKS = {"function-calling-hub": "function-calling", "coding-mbpp": "coding"}


@pytest.fixture
def no_flags(monkeypatch):
    for name in (*hub.FLAGS, *hub.PROXIES, "HF_ENDPOINT"):
        monkeypatch.delenv(name, raising=False)
    probe = hub._probe
    probe.cache_clear()
    yield monkeypatch
    probe.cache_clear()


def _closed_port() -> int:
    """A local port nothing listens on (connections are refused at once)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _no_download(monkeypatch):
    import datasets
    import huggingface_hub

    def download(*args, **kwargs):
        raise AssertionError("a download was started though the Hub is unreachable")

    monkeypatch.setattr(huggingface_hub, "hf_hub_download", download)
    monkeypatch.setattr(datasets, "load_dataset", download)


def test_the_flags_answer_without_a_probe(no_flags):
    no_flags.setattr(hub, "_probe", lambda url: pytest.fail("probed although an offline flag is set"))
    for flag in hub.FLAGS:
        no_flags.setenv(flag, "1")
        assert hub.unreachable() == f"{flag} is set"
        no_flags.delenv(flag)


def test_a_refused_connection_and_a_silent_host_are_unreachable_a_listening_one_is_not(no_flags):
    assert "cannot be reached" in hub._probe(f"http://127.0.0.1:{_closed_port()}")
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        assert hub._probe(f"http://127.0.0.1:{server.getsockname()[1]}") is None

    released = threading.Event()

    def hangs(*args, **kwargs):  # a name lookup or a connection that does not return
        released.wait(30)
        raise OSError("released by the test")

    no_flags.setattr(socket, "create_connection", hangs)
    start = time.monotonic()
    try:
        assert hub._probe("https://hub.invalid", seconds=0.2) == "hub.invalid:443 did not answer within 0.2 s"
        assert time.monotonic() - start < 2
    finally:
        released.set()


def test_behind_a_proxy_no_probe_is_made(no_flags):
    no_flags.setenv("HTTPS_PROXY", "http://proxy.invalid:3128")
    no_flags.setattr(hub, "_probe", lambda url: pytest.fail("probed behind a proxy"))
    assert hub.unreachable() is None


@pytest.mark.parametrize("name", sorted(HUB_TASKS))
def test_a_hub_task_without_network_is_unavailable_offline_at_once(no_flags, name):
    no_flags.setenv("HF_ENDPOINT", f"http://127.0.0.1:{_closed_port()}")
    _no_download(no_flags)
    start = time.monotonic()
    with pytest.raises(UserError, match=rf"task {name}: unavailable offline \(127.0.0.1:\d+ cannot be reached"):
        get_task(name).train_problems(4, 0)
    assert time.monotonic() - start < 5  # one connection attempt; huggingface_hub's retries took ~23-36 s
    with pytest.raises(UserError, match=f"use task '{HUB_TASKS[name]}'"):
        get_task(name).train_problems(4, 0)


def test_validate_a_hub_task_without_network_says_unavailable_offline(no_flags, capsys):
    no_flags.setenv("HF_ENDPOINT", f"http://127.0.0.1:{_closed_port()}")
    _no_download(no_flags)
    assert main(["validate", "function-calling-hub"]) == 2
    err = capsys.readouterr().err
    assert "unavailable offline" in err and "use task 'function-calling'" in err
