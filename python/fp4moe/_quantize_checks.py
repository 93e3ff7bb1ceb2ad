"""Argument rules shared by the GPU quantizers (fp4moe.quantize) and the CPU
ones (fp4moe.cpu)."""

import torch

from . import _dtypes
from ._checks import Checker
from .formats import LAYOUTS, ROW_MAJOR, TILED_128X4, block_size
from .tensor import Fp4Tensor


def check_source(c: Checker, x, fmt: str = None) -> None:
    """x: BF16/FP32 [rows, K] or [groups, rows, K], contiguous; with a format,
    K a multiple of its block."""
    c.tensor(x, "x", _dtypes.DENSE_FLOAT, ndims=(2, 3))
    if fmt is not None:
        c.require(x.shape[-1] % block_size(fmt) == 0, "x", f"must have K a multiple of the {fmt} block ({block_size(fmt)})",
                  f"shape {tuple(x.shape)}")


def check_destination(c: Checker, x: torch.Tensor, out, fmt: str, scale_layout) -> str:
    """scale_layout None or a layout name; out None or an Fp4Tensor of format
    `fmt`, the shape of x and, where both are given, that scale layout.
    Returns the layout the quantizer writes (a new tensor's: 128x4-tiled
    unless named)."""
    c.require(scale_layout is None or scale_layout in LAYOUTS, "scale_layout",
              f"must be None, '{ROW_MAJOR}' or '{TILED_128X4}'", repr(scale_layout))
    if out is None:
        return TILED_128X4 if scale_layout is None else scale_layout
    c.require(isinstance(out, Fp4Tensor), "out", "must be an fp4moe.Fp4Tensor", type(out).__name__)
    c.require(out.format == fmt, "out", f"must be an {fmt} tensor", out.format)
    c.require(out.shape == tuple(x.shape), "out", f"must have the shape of x {tuple(x.shape)}", out.shape)
    c.require(scale_layout is None or scale_layout == out.scale_layout, "scale_layout",
              f"must be None or out's layout ('{out.scale_layout}')", repr(scale_layout))
    return out.scale_layout


def check_encode_scale(c: Checker, encode_scale, x: torch.Tensor) -> None:
    """encode_scale: None, or FP32 with one g per group of x."""
    if encode_scale is not None:
        c.tensor(encode_scale, "encode_scale", (torch.float32,))
        groups = x.shape[0] if x.dim() == 3 else 1
        c.numel(encode_scale, "encode_scale", groups, "one global encode scale g per matrix")


def check_dequantize_out(c: Checker, t, dtype, out) -> torch.dtype:
    """t an Fp4Tensor; out None or a contiguous BF16/FP32 tensor of t's shape. Returns the output dtype."""
    c.require(isinstance(t, Fp4Tensor), "t", "must be an fp4moe.Fp4Tensor", type(t).__name__)
    if out is None:
        c.require(dtype in _dtypes.DENSE_FLOAT, "dtype", "must be torch.bfloat16 or torch.float32", dtype)
        return dtype
    c.tensor(out, "out", _dtypes.DENSE_FLOAT)
    c.shape(out, "out", t.shape)
    return out.dtype


def check_prepack(c: Checker, t, out) -> None:
    """t an Fp4Tensor not yet prepacked; out None or a contiguous uint8 tensor
    of t.data's shape (t.data itself: in place). Checked before any of their
    attributes is read."""
    c.require(isinstance(t, Fp4Tensor), "t", "must be an fp4moe.Fp4Tensor", type(t).__name__)
    c.require(not t.prepacked, "t", "is already prepacked")
    if out is not None:
        c.tensor(out, "out", (torch.uint8,))
        c.shape(out, "out", tuple(t.data.shape))


def prepack_destination(t: Fp4Tensor, out) -> torch.Tensor:
    """The tensor prepack_weights writes (check_prepack passed): out, or a new
    uint8 tensor like t.data."""
    return torch.empty_like(t.data, dtype=torch.uint8) if out is None else out


def prepacked(t: Fp4Tensor, data: torch.Tensor) -> Fp4Tensor:
    """t with its data in the prepacked bit order in `data` (scales and global scale t's)."""
    return Fp4Tensor(data, t.scales, t.global_scale, scale_layout=t.scale_layout, format=t.format, prepacked=True)
