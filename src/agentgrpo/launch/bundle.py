"""The job bundle: exactly the local code a remote run needs, in one content-addressed zip.

A bundle holds this agentgrpo's own source (``src/agentgrpo/``, as installed here, uncommitted edits
included), the user's files the config points to (``file.py:NAME`` tasks, rewards and tools, local data
files; with their sibling ``.py`` modules) under ``user/``, the config rewritten to those paths as
``config.yaml``, and ``manifest.json`` (version, git commit, what came from where). Timestamps are fixed, so
the same inputs give the same sha256.
"""

from __future__ import annotations

import hashlib
import io
import json
import re
import subprocess
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentgrpo import rundir
from agentgrpo.errors import ConfigError

_EPOCH = (2020, 1, 1, 0, 0, 0)
_SKIP_DIRS = {"__pycache__", ".pytest_cache"}
_SKIP_SUFFIXES = {".pyc", ".pyo"}
_DATA_SUFFIXES = {".py", ".json", ".jsonl", ".csv", ".parquet", ".yaml", ".yml", ".txt", ".arrow", ".gz"}
_MAX_USER_BYTES = 50 * 2**20
_FILE_ATTR = re.compile(r"^(?P<path>[^:\s]+\.py):(?P<attr>[A-Za-z_][\w.]*)$")


@dataclass
class Bundle:
    path: Path
    sha256: str
    config: dict[str, Any]
    files: list[str] = field(default_factory=list)
    manifest: dict[str, Any] = field(default_factory=dict)


def package_root() -> Path:
    """This agentgrpo's source directory (the package this module belongs to)."""
    return Path(__file__).resolve().parent.parent


def package_files(root: Path | None = None) -> list[Path]:
    """Every file of the agentgrpo package, bytecode and caches left out."""
    root = root or package_root()
    return sorted(p for p in root.rglob("*") if p.is_file() and not _SKIP_DIRS & set(p.relative_to(root).parts)
                  and p.suffix not in _SKIP_SUFFIXES)


def local_references(config: dict[str, Any], base: Path) -> tuple[dict[str, Path], list[str]]:
    """Local files the config names (``file.py:ATTR`` or an existing file path), and problems found.

    Returns ``{original string: resolved file}``. A local model directory is a problem: a job cannot see it.

    >>> refs, problems = local_references({"task": "calculator", "rewards": ["correct_answer"]}, Path("."))
    >>> refs, problems
    ({}, [])
    """
    refs: dict[str, Path] = {}
    problems: list[str] = []
    model = config.get("model")
    if isinstance(model, str) and model not in ("tiny", "tiny-random") and _as_path(model, base).is_dir():
        problems.append(f"model: {model!r} is a local directory, which a Hugging Face Job cannot read; push it "
                        f"to the Hub (`hf upload YOUR_NAME/my-model {model}`) and set model: YOUR_NAME/my-model.")
    for key, value in _strings(config):
        if key == "model":
            continue
        match = _FILE_ATTR.match(value)
        candidate = _as_path(match.group("path") if match else value, base)
        if match and not candidate.is_file():
            problems.append(f"{key}: {value!r} names {candidate}, which does not exist")
        elif candidate.is_file() and (match or candidate.suffix in _DATA_SUFFIXES):
            refs[value] = candidate.resolve()
    return refs, problems


def _strings(value: Any, key: str = ""):
    if isinstance(value, str):
        yield key, value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _strings(v, f"{key}.{k}" if key else str(k))
    elif isinstance(value, list | tuple):
        for i, v in enumerate(value):
            yield from _strings(v, f"{key}[{i}]")


def _as_path(text: str, base: Path) -> Path:
    path = Path(text).expanduser()
    return path if path.is_absolute() else base / path


def make_bundle(config: dict[str, Any], out_dir: Path, base: Path | None = None) -> Bundle:
    """Write ``bundle.zip`` into ``out_dir`` for ``config`` (paths relative to ``base``, default cwd)."""
    base = (base or Path.cwd()).resolve()
    refs, problems = local_references(config, base)
    if problems:
        raise ConfigError(problems)
    user_files = _user_files(refs)
    size = sum(p.stat().st_size for p in user_files.values())
    if size > _MAX_USER_BYTES:
        raise ConfigError([f"the config's local files total {size / 2**20:.0f} MB (> 50 MB): push large data to "
                           "the Hub as a dataset and name it instead of a local path."])
    arc_of = {src: arc for arc, src in user_files.items()}
    rewritten = _rewrite(config, {orig: arc_of[path] for orig, path in refs.items()})
    rewritten.update(target="local", runs_dir="runs")
    manifest = _manifest(user_files)
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / "bundle.zip"
    root = package_root()
    entries = {f"src/agentgrpo/{p.relative_to(root).as_posix()}": p.read_bytes() for p in package_files(root)}
    entries.update({arc: src.read_bytes() for arc, src in user_files.items()})
    entries[rundir.CONFIG] = rundir.config_text(rewritten).encode()
    entries["manifest.json"] = json.dumps(manifest, indent=1, sort_keys=True).encode()
    path.write_bytes(_zip(entries))
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    return Bundle(path, digest, rewritten, sorted(entries), manifest)


def _user_files(refs: dict[str, Path]) -> dict[str, Path]:
    """Archive name -> source file, for each referenced file and the sibling modules a .py may import."""
    chosen: set[Path] = set(refs.values())
    for path in list(chosen):
        if path.suffix == ".py":
            chosen.update(p.resolve() for p in sorted(path.parent.glob("*.py"))[:100])
    out: dict[str, Path] = {}
    dirs: dict[Path, str] = {}
    for path in sorted(chosen):
        prefix = dirs.setdefault(path.parent, f"user/{len(dirs)}")
        out[f"{prefix}/{path.name}"] = path
    return out


def _rewrite(value: Any, mapping: dict[str, str]) -> Any:
    if isinstance(value, str):
        if value in mapping:
            match = _FILE_ATTR.match(value)
            return f"{mapping[value]}:{match.group('attr')}" if match else mapping[value]
        return value
    if isinstance(value, dict):
        return {k: _rewrite(v, mapping) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_rewrite(v, mapping) for v in value]
    return value


def _manifest(user_files: dict[str, Path]) -> dict[str, Any]:
    from importlib.metadata import version

    root = package_root()
    return {"agentgrpo": version("agentgrpo"), "git": _git_state(root),
            "user_files": {arc: str(src) for arc, src in user_files.items()}}


def _git_state(root: Path) -> dict[str, Any]:
    try:
        commit = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True,
                                timeout=10, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--", "."], capture_output=True,
                               text=True, timeout=10, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return {}
    return {"commit": commit, "uncommitted_changes": bool(dirty)}


def _zip(entries: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name in sorted(entries):
            info = zipfile.ZipInfo(name, date_time=_EPOCH)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            zf.writestr(info, entries[name])
    return buf.getvalue()
