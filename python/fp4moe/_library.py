"""Finds and loads libfp4moe_c.so, the C interface of the library.

The library ships inside the package (installed there by ``pip install``).
The environment variable FP4MOE_LIBRARY names another copy (a build tree's
``build/src/capi/libfp4moe_c.so``), which lets the sources under python/ run
against a library built with scripts/build.sh.
"""

import ctypes
import os
from pathlib import Path

LIBRARY_NAME = "libfp4moe_c.so"


def library_path() -> Path:
    override = os.environ.get("FP4MOE_LIBRARY")
    if override:
        return Path(override)
    return Path(__file__).resolve().with_name(LIBRARY_NAME)


def load() -> ctypes.CDLL:
    path = library_path()
    if not path.is_file():
        raise ImportError(
            f"fp4moe: {path} not found. Install the package with 'pip install .' from the repository, "
            f"or build it (scripts/build.sh) and set FP4MOE_LIBRARY to build/src/capi/{LIBRARY_NAME}."
        )
    # RTLD_LOCAL: the library's symbols (it carries its own C++ and CUDA
    # runtimes, hidden) never mix with PyTorch's.
    return ctypes.CDLL(str(path), mode=os.RTLD_LOCAL)
