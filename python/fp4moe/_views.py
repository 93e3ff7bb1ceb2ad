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
    return _capi.Fp4(
        data=t.data.data_ptr(),
        scales=t.scales.data_ptr(),
        global_scale=address(t.global_scale),
        format=FORMATS[t.format],
        scale_layout=LAYOUTS[t.scale_layout],
        rows=t.rows,
        cols=t.cols,
        groups=t.groups,
        prepacked=int(t.prepacked),
    )


def matrix(t: torch.Tensor) -> _capi.Matrix:
    """A 2-D [rows, cols] or 3-D [groups, rows, cols] tensor with its strides
    (the caller has checked them). Strides of dimensions of size 1 do not
    matter to torch; they are given their dense value here."""
    rows, cols = t.shape[-2], t.shape[-1]
    col_stride = t.stride(-1) if cols > 1 else 1
    row_stride = t.stride(-2) if rows > 1 else cols * col_stride
    groups = t.shape[0] if t.dim() == 3 else 1
    group_stride = t.stride(0) if t.dim() == 3 and groups > 1 else rows * row_stride
    return _capi.Matrix(
        data=t.data_ptr(),
        dtype=_dtypes.code(t.dtype),
        rows=rows,
        cols=cols,
        row_stride=row_stride,
        col_stride=col_stride,
        groups=groups,
        group_stride=group_stride,
    )


def tactic(t):
    """A GemmTactic as a descriptor, None (tuning cache, else heuristic) for None."""
    if t is None:
        return None
    return _capi.Tactic(int(t.swap_ab), t.block_n, t.block_k, t.stages, t.split_k, int(t.moe_gather), int(t.fp8), t.cluster)
