"""Running a C entry point on the current CUDA stream of a tensor's device."""

import torch

from . import _capi


def launch(device: torch.device, name: str, *args) -> None:
    """Calls C function `name` with `args` and, last, the current stream of
    `device`, with `device` current (the library works on the current device).
    Launches asynchronously and allocates nothing itself; a GEMM may make or
    grow the library's per-stream workspace (fp4moe.workspace), which
    synchronises: not during a CUDA-graph capture."""
    if torch.cuda.current_device() == device.index:
        _capi.call(name, *args, torch.cuda.current_stream(device).cuda_stream)
    else:
        with torch.cuda.device(device):
            _capi.call(name, *args, torch.cuda.current_stream(device).cuda_stream)
