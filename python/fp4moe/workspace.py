"""The device memory the library keeps per CUDA stream (include/fp4moe/workspace.hpp).

Split-K and stream-K partial sums and the gathered moe_dense_fc2 copy of the
tokens (about four times A's FP4 bytes) live in buffers the library allocates
per (device, stream) on the first call that needs them and keeps until the
process ends, unless released here. The next call that needs a buffer
allocates it again, which synchronises: not inside a CUDA-graph capture.
"""

import ctypes

import torch

from . import _capi
from ._checks import Checker


def _stream(function: str, stream) -> torch.cuda.Stream:
    if stream is None:
        return torch.cuda.current_stream()
    Checker(function).require(isinstance(stream, torch.cuda.Stream), "stream", "must be a torch.cuda.Stream or None",
                              type(stream).__name__)
    return stream


def _bytes_of(function: str, stream) -> int:
    """fp4moe_<function>(stream, &bytes) on the stream's device."""
    s = _stream(function, stream)
    n = ctypes.c_uint64(0)
    with torch.cuda.device(s.device):
        _capi.call("fp4moe_" + function, s.cuda_stream, ctypes.byref(n))
    return int(n.value)


def workspace_bytes(stream: torch.cuda.Stream = None) -> int:
    """Bytes the library holds for `stream` (default: the current stream) on its device."""
    return _bytes_of("workspace_bytes", stream)


def release_workspace(stream: torch.cuda.Stream = None) -> int:
    """Waits for the work queued on `stream` (default: the current stream),
    frees the library's buffers for it and returns the bytes freed. A buffer
    that a captured CUDA graph uses stays allocated (not counted). Raises
    InvalidArgumentError while `stream` is capturing."""
    return _bytes_of("release_workspace", stream)
