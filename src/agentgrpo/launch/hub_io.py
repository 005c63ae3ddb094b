"""The thin I/O layer over huggingface_hub's Jobs API. Read-only calls retry transient network errors;
submitting and cancelling never retry (a retried submission could start the job twice)."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from agentgrpo.errors import UserError
from agentgrpo.launch.hf_jobs import JobSpec, run_uv_job_kwargs

T = TypeVar("T")
RETRIES, BACKOFF_S = 3, 2.0


def api():
    from huggingface_hub import HfApi

    return HfApi()


def require_token() -> str:
    """The user's Hugging Face token, or a `UserError` saying how to log in."""
    from huggingface_hub import get_token

    token = get_token()
    if not token:
        raise UserError("no Hugging Face token found: run `hf auth login` (or set HF_TOKEN) first. The token "
                        "is passed to the job as a secret, never as plain environment or on a command line.")
    return token


def is_transient(exc: BaseException) -> bool:
    """Connection problems, timeouts, HTTP 429 and 5xx: worth retrying. Everything else is final."""
    if isinstance(exc, TimeoutError | ConnectionError):
        return True
    # huggingface_hub's HTTP client (httpx / httpx2): transport errors are connection-level failures
    if any(cls.__name__ in ("TransportError", "TimeoutException", "NetworkError") for cls in type(exc).__mro__):
        return True
    response = getattr(exc, "response", None)
    status = getattr(response, "status_code", None)
    return status is not None and (status == 429 or status >= 500)


def with_retries(fn: Callable[[], T], *, sleep: Callable[[float], None] = time.sleep) -> T:
    for attempt in range(RETRIES):
        try:
            return fn()
        except Exception as exc:  # noqa: BLE001 - classified just below
            if attempt == RETRIES - 1 or not is_transient(exc):
                raise
            sleep(BACKOFF_S * 2**attempt)
    raise AssertionError("unreachable")


def submit(spec: JobSpec, script_path: Path, bundle_path: Path, token: str, hf=None):
    """Submit the job once; returns huggingface_hub's `JobInfo`."""
    hf = hf or api()
    return hf.run_uv_job(**run_uv_job_kwargs(spec, str(script_path), str(bundle_path), token))


def inspect(job_id: str, hf=None, namespace: str | None = None) -> Any:
    hf = hf or api()
    return with_retries(lambda: hf.inspect_job(job_id=job_id, namespace=namespace))


def logs(job_id: str, hf=None, namespace: str | None = None, follow: bool = False) -> list[str]:
    hf = hf or api()
    if follow:
        return hf.fetch_job_logs(job_id=job_id, namespace=namespace, follow=True)
    return with_retries(lambda: list(hf.fetch_job_logs(job_id=job_id, namespace=namespace)))


def cancel(job_id: str, hf=None, namespace: str | None = None) -> None:
    (hf or api()).cancel_job(job_id=job_id, namespace=namespace)
