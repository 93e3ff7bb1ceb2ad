"""Scale-layout conversion (row-major <-> 128x4 tiled) on the GPU."""

import torch

from . import _dtypes
from ._checks import Checker
from ._launch import launch
from .formats import LAYOUTS, ROW_MAJOR, TILED_128X4, scale_numel, scale_shape


def check_conversion(c: Checker, scales, rows, scale_cols, src_layout, dst_layout, groups, out):
    """The rules shared by the GPU and CPU converters; returns the output shape."""
    for name, layout in (("src_layout", src_layout), ("dst_layout", dst_layout)):
        c.require(layout in LAYOUTS, name, f"must be '{ROW_MAJOR}' or '{TILED_128X4}'", repr(layout))
    for name, v in (("rows", rows), ("scale_cols", scale_cols), ("groups", groups)):
        c.require(isinstance(v, int) and not isinstance(v, bool), name, "must be an int", type(v).__name__)
    c.tensor(scales, "scales", _dtypes.SCALE_BYTES)
    c.numel(scales, "scales", groups * scale_numel(src_layout, rows, scale_cols),
            f"{groups} x {scale_shape(src_layout, rows, scale_cols)} {src_layout} scales")
    shape = scale_shape(dst_layout, rows, scale_cols)
    shape = shape if groups == 1 else (groups,) + shape
    if out is not None:
        c.tensor(out, "out", (scales.dtype,))
        c.numel(out, "out", groups * scale_numel(dst_layout, rows, scale_cols),
                f"{groups} x {scale_shape(dst_layout, rows, scale_cols)} {dst_layout} scales")
    return shape


def convert_scale_layout(scales: torch.Tensor, rows: int, scale_cols: int, src_layout: str, dst_layout: str, *,
                         groups: int = 1, out: torch.Tensor = None) -> torch.Tensor:
    """Copies `groups` scale matrices of [rows, scale_cols] from one layout to
    the other on the current stream (scale_cols = K / block). Padding of a
    tiled destination is written as 0. Returns `out`, or a new tensor of the
    scales' dtype shaped [rows, scale_cols] / [rows', cols'] (tiled, padded),
    with a leading groups dimension when groups > 1."""
    c = Checker("convert_scale_layout")
    shape = check_conversion(c, scales, rows, scale_cols, src_layout, dst_layout, groups, out)
    device = c.cuda_device({"scales": scales, "out": out})
    if out is None:
        out = torch.empty(shape, dtype=scales.dtype, device=device)
    if rows > 0:
        launch(device, "fp4moe_convert_scale_layout", scales.data_ptr(), LAYOUTS[src_layout], out.data_ptr(),
               LAYOUTS[dst_layout], rows, scale_cols, groups)
    return out
