"""TRL's GRPOConfig and LoRA (ModelConfig) field table, without importing TRL (which imports torch).

Checking a config needs every field's name, type and default. Read from TRL's dataclasses it costs the
torch + transformers + TRL imports (seconds, much more on a loaded machine) before the first bad value can
be named; so the table is kept as a snapshot: shipped (``trl_fields.json``, for the TRL and transformers
versions pinned in CI) or, for other versions, written to the user cache the first time TRL's classes are read.
A snapshot is used only for the exact versions it was made from (read from package metadata, no import).

Types are kept as a small schema and rebuilt with the same structure: builtins, unions, ``list``/``dict``,
``Literal`` as they are; a ``str`` enum (``SchedulerType``) as a ``str`` subclass of the same name and any
other class as an empty class of the same name, so `agentgrpo.config.coerce` accepts and refuses exactly as
with TRL's own annotations, with the same messages (tests/test_trl_fields.py checks it against TRL).
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import json
import os
import sys
import types
import typing
from importlib import metadata
from pathlib import Path
from typing import Any

SHIPPED = Path(__file__).with_name("trl_fields.json")
_UNKNOWN = {"unknown_default": True}  # a default JSON cannot hold: read from TRL when asked for
HELP_KEPT = ("loss_type",)  # fields whose help text the checks read (the loss types TRL supports)


class Field:
    """What the config checks read of a dataclass field (name, type, default; no default factory)."""

    default_factory = dataclasses.MISSING
    init = True

    def __init__(self, name: str, type: Any, default: Any):  # noqa: A002 - dataclasses.Field's own name
        self.name, self.type, self.default = name, type, default


def versions() -> dict[str, str]:
    out = {"python": f"{sys.version_info.major}.{sys.version_info.minor}"}
    for name in ("trl", "transformers"):
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "missing"
    return out


def _cache_file() -> Path:
    from platformdirs import user_cache_dir

    key = "-".join(f"{k}{v}" for k, v in sorted(versions().items()))
    return Path(os.environ.get("AGENTGRPO_CACHE") or user_cache_dir("agentgrpo")) / f"trl-fields-{key}.json"


@functools.cache
def snapshot() -> dict | None:
    """The snapshot for the installed versions ({"grpo": {...}, "peft": {...}}), or None."""
    wanted = versions()
    for path in (SHIPPED, _cache_file()):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if data.get("versions") == wanted:
            return data
    return None


def fields(kind: str) -> dict[str, Field] | None:
    """The ``kind`` ("grpo" or "peft") fields from the snapshot, or None when there is none for these versions."""
    data = snapshot()
    if data is None:
        return None
    return {name: Field(name, from_schema(f["type"]), None if f["default"] == _UNKNOWN else f["default"])
            for name, f in data[kind].items()}


def help_text(name: str) -> str | None:
    """The help text of GRPOConfig field ``name`` (one of `HELP_KEPT`) from the snapshot, or None."""
    data = snapshot()
    return data["grpo"][name].get("help") if data is not None and name in data["grpo"] else None


def default_known(name: str) -> bool:
    data = snapshot()
    return data is not None and name in data["grpo"] and data["grpo"][name]["default"] != _UNKNOWN


def make(grpo: dict[str, dataclasses.Field], peft: dict[str, dataclasses.Field]) -> dict:
    """The snapshot of TRL's real fields (as read from its dataclasses)."""
    return {"versions": versions(), "grpo": {n: _entry(f, n in HELP_KEPT) for n, f in grpo.items()},
            "peft": {n: _entry(f) for n, f in peft.items()}}


def remember(grpo: dict[str, dataclasses.Field], peft: dict[str, dataclasses.Field]) -> None:
    """Write the snapshot for these versions to the user cache (best effort: a read-only cache is fine)."""
    if snapshot() is not None:
        return
    path = _cache_file()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(make(grpo, peft)), encoding="utf-8")
        os.replace(tmp, path)
    except (OSError, TypeError, ValueError):
        return
    snapshot.cache_clear()


def _entry(f: dataclasses.Field, keep_help: bool = False) -> dict:
    default = f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default
    entry = {"type": to_schema(f.type), "default": _jsonable(default)}
    if keep_help:
        entry["help"] = f.metadata.get("help", "")
    return entry


def _jsonable(value: Any) -> Any:
    if isinstance(value, enum.Enum):
        value = value.value
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return _UNKNOWN
    return value


# --- types ----------------------------------------------------------------------------------------------

_BUILTINS = {"str": str, "int": int, "float": float, "bool": bool, "dict": dict, "list": list, "tuple": tuple,
             "None": type(None), "Any": Any}


def to_schema(tp: Any) -> Any:
    """A JSON form of the annotation ``tp``."""
    if isinstance(tp, str):
        return {"forward": tp}
    if tp is Any:
        return "Any"
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        return {"union": [to_schema(a) for a in typing.get_args(tp)]}
    if origin is typing.Literal:
        return {"literal": list(typing.get_args(tp))}
    if origin is not None:
        return {"generic": to_schema(origin), "args": [to_schema(a) for a in typing.get_args(tp)]}
    if tp is type(None):
        return "None"
    if isinstance(tp, type):
        if tp.__name__ in _BUILTINS and _BUILTINS[tp.__name__] is tp:
            return tp.__name__
        return {"class": tp.__name__, "str": issubclass(tp, str)}
    return "Any"


@functools.cache
def _stand_in(name: str, is_str: bool) -> type:
    return type(name, (str,) if is_str else (), {})


def from_schema(schema: Any) -> Any:
    """The annotation ``schema`` stands for (see the module docstring)."""
    if isinstance(schema, str):
        return _BUILTINS[schema]
    if "forward" in schema:
        return schema["forward"]
    if "union" in schema:
        return typing.Union[tuple(from_schema(a) for a in schema["union"])]  # noqa: UP007 - built at run time
    if "literal" in schema:
        return typing.Literal[tuple(schema["literal"])]
    if "generic" in schema:
        return from_schema(schema["generic"])[tuple(from_schema(a) for a in schema["args"])]
    return _stand_in(schema["class"], schema["str"])
