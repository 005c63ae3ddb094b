"""The one build step pyproject.toml cannot declare: the sandbox's optional C extension (Linux).

`agentgrpo.sandbox._native` sets each sandbox job up in C. Where it does not build (no C compiler, not
Linux), installation still succeeds and the same setup runs in Python, only slower;
`Sandbox.isolation["job_setup"]` says which one is in use.
"""

import sys

from setuptools import Extension, setup

native = Extension("agentgrpo.sandbox._native", ["src/agentgrpo/sandbox/_native.c"], optional=True)
setup(ext_modules=[native] if sys.platform.startswith("linux") else [])
