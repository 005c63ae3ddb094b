"""Can this process reach the Hugging Face Hub? Asked once per process, in at most about two seconds.

A task whose data lives on the Hub (``coding-mbpp``, ``function-calling-hub``) asks first, so with no network
it says "unavailable offline" at once instead of letting ``huggingface_hub`` retry each file for half a
minute (issue 35: `validate --all` spent ~23 s so). ``HF_HUB_OFFLINE`` / ``HF_DATASETS_OFFLINE`` answer
without a probe; otherwise one TCP connection to the Hub endpoint's host (``HF_ENDPOINT``) is tried, name
resolution included. Behind an HTTP(S) proxy a direct connection proves nothing, so no probe is made there.
"""

from __future__ import annotations

import functools
import os
import socket
import threading
from urllib.parse import urlsplit

PROBE_SECONDS = 2.0
FLAGS = ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE")
PROXIES = ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy")


def offline_flag() -> str | None:
    """The offline variable that is set (``1``, ``true``, ``yes``, ``on``), or None."""
    return next((v for v in FLAGS if os.environ.get(v, "").strip().lower() in ("1", "true", "yes", "on")), None)


def endpoint() -> str:
    return os.environ.get("HF_ENDPOINT", "").rstrip("/") or "https://huggingface.co"


def unreachable() -> str | None:
    """Why the Hub cannot be reached from here, or None when it may be (then downloads are tried)."""
    flag = offline_flag()
    if flag:
        return f"{flag} is set"
    if any(os.environ.get(v) for v in PROXIES):
        return None
    return _probe(endpoint())


@functools.cache
def _probe(url: str, seconds: float = PROBE_SECONDS) -> str | None:
    """One connection to ``url``'s host and port; the reason it failed, or None. The name lookup has no
    timeout of its own, so the attempt runs in a daemon thread that is waited for ``seconds`` at most."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    port = parts.port or (80 if parts.scheme == "http" else 443)
    outcome: dict = {}

    def connect() -> None:
        try:
            socket.create_connection((host, port), timeout=seconds).close()
            outcome["ok"] = True
        except OSError as exc:
            outcome["error"] = exc

    thread = threading.Thread(target=connect, name="agentgrpo-hub-probe", daemon=True)
    thread.start()
    thread.join(seconds + 0.5)
    if outcome.get("ok"):
        return None
    if "error" in outcome:
        exc = outcome["error"]
        return f"{host}:{port} cannot be reached ({type(exc).__name__}: {exc})"
    return f"{host}:{port} did not answer within {seconds:g} s"
