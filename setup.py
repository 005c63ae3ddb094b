"""The build steps pyproject.toml cannot declare: the sandbox's C extension (Linux), and the doctor's
optional decoder of W&B history records.

`agentgrpo.sandbox._native` is the only implementation of a sandbox job's setup. Where it does not build
(no C compiler, not Linux), installation still succeeds (everything but running model-written code
works), and `Sandbox` refuses to start with a message saying to install a C compiler and reinstall.
`agentgrpo.doctor.readers._wirehistory` only makes reading a W&B run file faster; without it the same rows
are read in Python (`fasthistory`).
"""

import hashlib
import sys

from setuptools import Extension, setup

SOURCE = "src/agentgrpo/sandbox/_native.c"
with open(SOURCE, "rb") as fh:  # compiled in: the sandbox refuses a build older than its source
    digest = hashlib.sha256(fh.read()).hexdigest()
native = Extension("agentgrpo.sandbox._native", [SOURCE], optional=True,
                   define_macros=[("AGENTGRPO_SOURCE_SHA256", f'"{digest}"')])
WIRE = "src/agentgrpo/doctor/readers/_wirehistory.c"
with open(WIRE, "rb") as fh:  # the doctor ignores a build older than its source
    wire_digest = hashlib.sha256(fh.read()).hexdigest()
wire = Extension("agentgrpo.doctor.readers._wirehistory", [WIRE], optional=True,
                 define_macros=[("AGENTGRPO_SOURCE_SHA256", f'"{wire_digest}"')])
setup(ext_modules=[native, wire] if sys.platform.startswith("linux") else [wire])
