"""TensorBoard event files (TRL's ``report_to="tensorboard"``): every scalar series, by step.

Read with TensorBoard's own ``EventAccumulator`` (``pip install tensorboard``, or
``pip install 'agentgrpo[tensorboard]'``). A path is one ``events.out.tfevents.*`` file or the folder
holding a run's event files; TRL's ``train/`` tag prefix is stripped like any tracker's.
"""

from __future__ import annotations

from pathlib import Path

from agentgrpo.errors import UserError

INSTALL_HINT = "pip install tensorboard  (or: pip install 'agentgrpo[tensorboard]')"


def event_files(folder: Path) -> list[Path]:
    """The event files under ``folder`` (any depth), in name order (their names start with a timestamp)."""
    return sorted(p for p in folder.rglob("*tfevents*") if p.is_file())


def read_tensorboard(path: Path) -> tuple[list[dict], list[str], str]:
    """(records, notes, format) from an event file or a folder of them (one run)."""
    try:
        from tensorboard.backend.event_processing import event_accumulator as ea
        from tensorboard.util import tensor_util
    except ImportError:
        raise UserError(f"{path}: reading TensorBoard event files needs tensorboard: {INSTALL_HINT}") from None
    guidance = {ea.SCALARS: 0, ea.TENSORS: 0, ea.HISTOGRAMS: 1, ea.IMAGES: 1, ea.AUDIO: 1, ea.COMPRESSED_HISTOGRAMS: 1}
    accumulator = ea.EventAccumulator(str(path), size_guidance=guidance)
    try:
        accumulator.Reload()
    except Exception as exc:  # corrupt or truncated records raise several error types
        raise UserError(f"{path}: unreadable TensorBoard event data ({type(exc).__name__}: {exc})") from None
    by_step: dict[int, dict] = {}
    tags = accumulator.Tags()
    for tag in tags.get("scalars", []):
        for event in accumulator.Scalars(tag):
            by_step.setdefault(event.step, {"step": event.step})[tag] = event.value
    skipped = []
    for tag in tags.get("tensors", []):
        for event in accumulator.Tensors(tag):
            value = tensor_util.make_ndarray(event.tensor_proto)
            if value.size != 1 or value.dtype.kind not in "fiub":
                skipped.append(tag)
                break
            by_step.setdefault(event.step, {"step": event.step})[tag] = float(value.reshape(()))
    if not by_step:
        raise UserError(
            f"{path}: TensorBoard event data without any scalar (tags: "
            f"{', '.join(sorted(t for v in tags.values() if isinstance(v, list) for t in v)[:10]) or 'none'})"
        )
    notes = [f"TensorBoard: non-scalar tags ignored: {', '.join(sorted(set(skipped)))}"] if skipped else []
    return [by_step[s] for s in sorted(by_step)], notes, "tensorboard"
