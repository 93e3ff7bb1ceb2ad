"""Running a C entry point on the current CUDA stream of a tensor's device."""

import torch

from . import _capi

# The current stream's handle of a device index, as torch keeps it. The
# public route (torch.cuda.current_stream(device).cuda_stream) makes a
# Stream object and resolves the device on every call (3.6-7.3 us on the
# H200's host); torch's own raw accessor (private, also what Triton calls)
# answers directly (0.15-0.3 us; tools/probes/python_call_probe.py,
# docs/PERF.md stop 70). The public route where a torch lacks it.
_raw_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None)


def current_stream_handle(device: torch.device) -> int:
    if _raw_stream is not None:
        return _raw_stream(device.index)
    return torch.cuda.current_stream(device).cuda_stream


def launch(device: torch.device, name: str, *args) -> None:
    """Calls C function `name` with `args` and, last, the current stream of
    `device`, with `device` current (the library works on the current device).
    Launches asynchronously and allocates nothing itself; a GEMM may make or
    grow the library's per-stream workspace (fp4moe.workspace), which
    synchronises: not during a CUDA-graph capture."""
    if torch.cuda.current_device() == device.index:
        _capi.call(name, *args, current_stream_handle(device))
    else:
        with torch.cuda.device(device):
            _capi.call(name, *args, current_stream_handle(device))
