"""The one build step pyproject.toml cannot declare: the sandbox's C extension (Linux).

`agentgrpo.sandbox._native` is the only implementation of a sandbox job's setup. Where it does not build
(no C compiler, not Linux), installation still succeeds (everything but running model-written code
works), and `Sandbox` refuses to start with a message saying to install a C compiler and reinstall.
"""

import sys

from setuptools import Extension, setup

native = Extension("agentgrpo.sandbox._native", ["src/agentgrpo/sandbox/_native.c"], optional=True)
setup(ext_modules=[native] if sys.platform.startswith("linux") else [])
