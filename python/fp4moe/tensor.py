"""Fp4Tensor: the torch tensors of one block-scaled FP4 matrix, or a stack of them."""

import torch

from . import _dtypes
from ._checks import Checker
from .formats import FORMATS, LAYOUTS, MXFP4, NVFP4, ROW_MAJOR, TILED_128X4, block_size, scale_numel, scale_shape


class Fp4Tensor:
    """A K-major block-scaled FP4 matrix [rows, K], or a stack [groups, rows, K]
    (one matrix per expert).

    data          packed E2M1, torch.uint8 (or torch.float4_e2m1fn_x2)
                  [rows, K/2] or [groups, rows, K/2], contiguous; element 2i
                  of a row in the low nibble of byte i.
    scales        block scales, contiguous: torch.float8_e4m3fn for NVFP4,
                  torch.uint8 (or torch.float8_e8m0fnu) for MXFP4, laid out
                  as `scale_layout` says:
                    "row_major"   [rows, K/block] per matrix (any shape whose
                                  last dimension is K/block, e.g. [groups,
                                  rows, K/block]);
                    "tiled128x4"  rows padded to 128 and K/block to 4, 128x4
                                  tiles of 512 bytes (any shape with that many
                                  elements, e.g. [groups, rows', cols'] or
                                  [rows'/128, cols'/4, 32, 4, 4]).
                  The layout cannot be told from the tensor, so it is always
                  named.
    global_scale  NVFP4: the FP32 global *decode* scale(s), one per matrix
                  (a tensor with `groups` elements, e.g. a 0-d tensor for one
                  matrix); MXFP4: None.
    format        "nvfp4" or "mxfp4"; by default read off the scales' dtype.
    prepacked     True when `data` holds the prepacked bit order that
                  prepack_weights() writes (GEMM weights only).

    The tensors stay the caller's: nothing is copied. GEMMs read tiled scales;
    `to_tiled()` converts once (do that to weights at load time).
    """

    __slots__ = ("data", "scales", "global_scale", "format", "scale_layout", "prepacked")

    def __init__(self, data, scales, global_scale=None, *, scale_layout, format=None, prepacked=False):
        c = Checker("Fp4Tensor")
        c.require(scale_layout in LAYOUTS, "scale_layout", f"must be '{ROW_MAJOR}' or '{TILED_128X4}'", repr(scale_layout))
        c.tensor(data, "data", _dtypes.PACKED_FP4, ndims=(2, 3))
        c.tensor(scales, "scales", _dtypes.SCALE_BYTES)
        if format is None:
            format = NVFP4 if scales.dtype in _dtypes.E4M3_SCALES else MXFP4
        c.require(format in FORMATS, "format", f"must be '{NVFP4}' or '{MXFP4}'", repr(format))
        want = _dtypes.E4M3_SCALES if format == NVFP4 else _dtypes.UE8M0_SCALES
        c.tensor(scales, "scales", want)
        rows, cols = data.shape[-2], 2 * data.shape[-1]
        groups = data.shape[0] if data.dim() == 3 else 1
        block = block_size(format)
        c.require(cols % block == 0, "data", f"must have K = 2*shape[-1] a multiple of the {format} block ({block})",
                  f"K = {cols}")
        c.numel(scales, "scales", groups * scale_numel(scale_layout, rows, cols // block),
                f"{groups} x {scale_shape(scale_layout, rows, cols // block)} {scale_layout} scales")
        if scale_layout == ROW_MAJOR and scales.dim() >= 2:
            c.require(scales.shape[-1] == cols // block, "scales", f"must have K/block = {cols // block} columns (row_major)",
                      f"shape {tuple(scales.shape)}")
        if format == NVFP4:
            c.require(global_scale is not None, "global_scale", "must be given for NVFP4 (the FP32 global decode scale)")
            c.tensor(global_scale, "global_scale", (torch.float32,))
            c.numel(global_scale, "global_scale", groups, "one decode scale per matrix")
        else:
            c.require(global_scale is None, "global_scale", "must be None for MXFP4 (no global scale)")
        for name, t in (("scales", scales), ("global_scale", global_scale)):
            if t is not None:
                c.require(t.device == data.device, name, f"must be on the device of 'data' ({data.device})", f"{t.device}")
        self.data, self.scales, self.global_scale = data, scales, global_scale
        self.format, self.scale_layout = format, scale_layout
        self.prepacked = bool(prepacked)

    @property
    def rows(self) -> int:
        return self.data.shape[-2]

    @property
    def cols(self) -> int:
        """K, in elements."""
        return 2 * self.data.shape[-1]

    @property
    def groups(self) -> int:
        return self.data.shape[0] if self.data.dim() == 3 else 1

    @property
    def grouped(self) -> bool:
        return self.data.dim() == 3

    @property
    def shape(self):
        """Logical shape in FP4 elements: (rows, K) or (groups, rows, K)."""
        return tuple(self.data.shape[:-1]) + (self.cols,)

    @property
    def device(self) -> torch.device:
        return self.data.device

    @property
    def scale_cols(self) -> int:
        return self.cols // block_size(self.format)

    def with_scales(self, scales: torch.Tensor, scale_layout: str) -> "Fp4Tensor":
        return Fp4Tensor(self.data, scales, self.global_scale, scale_layout=scale_layout, format=self.format,
                         prepacked=self.prepacked)

    def to_tiled(self) -> "Fp4Tensor":
        """The same matrix with 128x4-tiled scales (self if they already are).
        Converting allocates a new scale tensor; data and global scale are shared."""
        return self._to_layout(TILED_128X4)

    def to_row_major(self) -> "Fp4Tensor":
        """The same matrix with row-major scales (self if they already are)."""
        return self._to_layout(ROW_MAJOR)

    def _to_layout(self, layout: str) -> "Fp4Tensor":
        if self.scale_layout == layout:
            return self
        # Imported here: fp4moe.cpu imports this module.
        if self.device.type == "cpu":
            from .cpu import convert_scale_layout
        else:
            from .scale_layout import convert_scale_layout

        scales = convert_scale_layout(self.scales, self.rows, self.scale_cols, self.scale_layout, layout,
                                      groups=self.groups)
        return self.with_scales(scales, layout)

    def __repr__(self) -> str:
        return (f"Fp4Tensor({self.format}, shape={self.shape}, scales={self.scale_layout}, "
                f"device={self.device}{', prepacked' if self.prepacked else ''})")


def empty_fp4(shape, format: str, *, scale_layout: str = TILED_128X4, device=None) -> Fp4Tensor:
    """An uninitialised Fp4Tensor of logical shape (rows, K) or (groups, rows, K):
    the buffers a quantizer or FC1's NVFP4 output fills. The NVFP4 global
    scale is a 0-d tensor for one matrix and [groups] for a stack."""
    c = Checker("empty_fp4")
    c.require(format in FORMATS, "format", f"must be '{NVFP4}' or '{MXFP4}'", repr(format))
    c.require(scale_layout in LAYOUTS, "scale_layout", f"must be '{ROW_MAJOR}' or '{TILED_128X4}'", repr(scale_layout))
    shape = tuple(int(s) for s in shape)
    c.require(len(shape) in (2, 3), "shape", "must be (rows, K) or (groups, rows, K)", shape)
    c.require(shape[-1] % block_size(format) == 0, "shape", f"must have K a multiple of {block_size(format)}", shape)
    lead, rows, cols = shape[:-2], shape[-2], shape[-1]
    data = torch.empty(lead + (rows, cols // 2), dtype=torch.uint8, device=device)
    scale_dtype = torch.float8_e4m3fn if format == NVFP4 else torch.uint8
    scales = torch.empty(lead + scale_shape(scale_layout, rows, cols // block_size(format)), dtype=scale_dtype,
                         device=device)
    global_scale = torch.empty(lead, dtype=torch.float32, device=device) if format == NVFP4 else None
    return Fp4Tensor(data, scales, global_scale, scale_layout=scale_layout, format=format)
