"""C descriptors (fp4moe_matrix, fp4moe_fp4_tensor, fp4moe_tactic) of torch tensors.

The descriptors carry addresses, not references: the caller keeps the
tensors alive for the duration of the call.
"""

import torch

from . import _capi, _dtypes
from .formats import FORMATS, LAYOUTS


def address(t):
    """data_ptr() of a tensor, None for None (a null pointer)."""
    return None if t is None else t.data_ptr()


def fp4(t) -> _capi.Fp4:
    # (Positional: ctypes takes keywords at twice the cost, on every call.)
    return _capi.Fp4(t.data.data_ptr(), t.scales.data_ptr(), address(t.global_scale), FORMATS[t.format],
                     LAYOUTS[t.scale_layout], t.rows, t.cols, t.groups, int(t.prepacked))


def matrix(t: torch.Tensor) -> _capi.Matrix:
    """A 2-D [rows, cols] or 3-D [groups, rows, cols] tensor with its strides
    (the caller has checked them). Strides of dimensions of size 1 do not
    matter to torch; they are given their dense value here."""
    rows, cols = t.shape[-2], t.shape[-1]
    col_stride = t.stride(-1) if cols > 1 else 1
    row_stride = t.stride(-2) if rows > 1 else cols * col_stride
    groups = t.shape[0] if t.dim() == 3 else 1
    group_stride = t.stride(0) if t.dim() == 3 and groups > 1 else rows * row_stride
    return _capi.Matrix(t.data_ptr(), _dtypes.code(t.dtype), rows, cols, row_stride, col_stride, groups, group_stride)


def tactic(t):
    """A GemmTactic as a descriptor, None (tuning cache, else heuristic) for None."""
    if t is None:
        return None
    return _capi.Tactic(int(t.swap_ab), t.block_n, t.block_k, t.stages, t.split_k, int(t.moe_gather), int(t.fp8), t.cluster)
