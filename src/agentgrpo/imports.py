"""Load a user object named ``"path/to/file.py:NAME"`` or ``"package.module:NAME"``.

Tasks, reward functions, tools and environment classes are all named this way in a config. A file path is
loaded with importlib (no PYTHONPATH needed); a dotted module is imported as usual.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import sys
from pathlib import Path

from agentgrpo.errors import UserError


def is_reference(text: str) -> bool:
    """Whether ``text`` looks like ``module:NAME`` or ``file.py:NAME``.

    >>> is_reference("my_rewards.py:score"), is_reference("pkg.mod:score"), is_reference("exact_answer")
    (True, True, False)
    """
    module, sep, attr = text.rpartition(":")
    return bool(sep and module and attr)


def load_object(reference: str, what: str):
    """The object ``reference`` names; a `UserError` saying what is wrong and how to fix it otherwise.

    ``what`` names the option (``"task"``, ``"reward"``, ``"tool"``) in the error message.
    """
    if not isinstance(reference, str) or not is_reference(reference):
        raise UserError(f"{what} {reference!r}: expected 'path/to/file.py:NAME' or 'package.module:NAME'.")
    module_part, _, attr = reference.rpartition(":")
    module = _load_module(module_part, reference, what)
    try:
        return getattr(module, attr)
    except AttributeError:
        public = sorted(n for n in vars(module) if not n.startswith("_"))
        raise UserError(
            f"{what} {reference!r}: {module_part} defines no {attr!r}. It defines: "
            f"{', '.join(public) or 'nothing public'}."
        ) from None


def _load_module(module_part: str, reference: str, what: str):
    if module_part.endswith(".py") or "/" in module_part or "\\" in module_part:
        return _load_file(Path(module_part).expanduser(), reference, what)
    try:
        return importlib.import_module(module_part)
    except ImportError as exc:
        raise UserError(
            f"{what} {reference!r}: cannot import module {module_part!r} ({exc}). Use "
            "'path/to/file.py:NAME' for a file, or make the module importable (pip install -e, "
            "or PYTHONPATH)."
        ) from exc


def _load_file(path: Path, reference: str, what: str):
    if not path.is_file():
        raise UserError(
            f"{what} {reference!r}: file {str(path)!r} does not exist (relative paths are from "
            f"the current directory, {Path.cwd()})."
        )
    resolved = path.resolve()
    name = f"agentgrpo_user_{resolved.stem}_{hashlib.sha1(str(resolved).encode()).hexdigest()[:8]}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, resolved)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # before exec: dataclasses and pickling look the module up by name
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        del sys.modules[name]
        raise UserError(f"{what} {reference!r}: importing {path} raised {type(exc).__name__}: {exc}") from exc
    return module
