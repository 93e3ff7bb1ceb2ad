"""The CPU versions of the quantizers, dequantizer and scale-layout converter
(the cpu:: namespace of include/fp4moe/quantize.hpp): host tensors, run on the
calling thread, bit-identical to the GPU versions. Useful as a reference and
for preparing weights without a GPU."""

import torch

from ._capi import call
from ._checks import Checker
from ._quantize_checks import (check_dequantize_out, check_destination, check_encode_scale, check_prepack, check_source,
                               prepack_destination, prepacked)
from ._views import address, fp4, matrix
from .formats import LAYOUTS, MXFP4, NVFP4
from .scale_layout import check_conversion
from .tensor import Fp4Tensor, empty_fp4


def _quantize(name: str, fmt: str, x, encode_scale, scale_layout, out) -> Fp4Tensor:
    c = Checker(name)
    check_source(c, x, fmt)
    if isinstance(encode_scale, (int, float)) and not isinstance(encode_scale, bool):
        encode_scale = torch.full((), float(encode_scale), dtype=torch.float32)
    check_encode_scale(c, encode_scale, x)
    scale_layout = check_destination(c, x, out, fmt, scale_layout)
    c.cpu_device({"x": x, "encode_scale": encode_scale, "out.data": out and out.data,
                  "out.scales": out and out.scales, "out.global_scale": out and out.global_scale})
    if out is None:
        out = empty_fp4(x.shape, fmt, scale_layout=scale_layout, device="cpu")
    if x.numel() == 0:
        return out
    if fmt == NVFP4:
        call("fp4moe_cpu_quantize_nvfp4", matrix(x), fp4(out), address(encode_scale))
    else:
        call("fp4moe_cpu_quantize_mxfp4", matrix(x), fp4(out))
    return out


def quantize_nvfp4(x: torch.Tensor, *, encode_scale=None, scale_layout: str = None,
                   out: Fp4Tensor = None) -> Fp4Tensor:
    """fp4moe.quantize_nvfp4 on the CPU; encode_scale may also be a float."""
    return _quantize("cpu::quantize_nvfp4", NVFP4, x, encode_scale, scale_layout, out)


def quantize_mxfp4(x: torch.Tensor, *, scale_layout: str = None, out: Fp4Tensor = None) -> Fp4Tensor:
    """fp4moe.quantize_mxfp4 on the CPU."""
    return _quantize("cpu::quantize_mxfp4", MXFP4, x, None, scale_layout, out)


def dequantize(t: Fp4Tensor, dtype: torch.dtype = torch.float32, *, out: torch.Tensor = None) -> torch.Tensor:
    """fp4moe.dequantize on the CPU (FP32 by default: the exact decoded values)."""
    c = Checker("cpu::dequantize")
    dtype = check_dequantize_out(c, t, dtype, out)
    c.cpu_device({"t.data": t.data, "out": out})
    if out is None:
        out = torch.empty(t.shape, dtype=dtype)
    if out.numel() > 0:
        call("fp4moe_cpu_dequantize", fp4(t), matrix(out))
    return out


def prepack_weights(t: Fp4Tensor, *, out: torch.Tensor = None) -> Fp4Tensor:
    """fp4moe.prepack_weights on the CPU."""
    c = Checker("cpu::prepack_weights")
    check_prepack(c, t, out)
    c.cpu_device({"t.data": t.data, "out": out})
    out = prepack_destination(t, out)
    if t.data.numel() > 0:
        call("fp4moe_cpu_prepack_weights", fp4(t), out.data_ptr())
    return prepacked(t, out)


def convert_scale_layout(scales: torch.Tensor, rows: int, scale_cols: int, src_layout: str, dst_layout: str, *,
                         groups: int = 1, out: torch.Tensor = None) -> torch.Tensor:
    """fp4moe.convert_scale_layout on the CPU."""
    c = Checker("cpu::convert_scale_layout")
    shape = check_conversion(c, scales, rows, scale_cols, src_layout, dst_layout, groups, out)
    c.cpu_device({"scales": scales, "out": out})
    if out is None:
        out = torch.empty(shape, dtype=scales.dtype)
    if rows > 0:
        call("fp4moe_cpu_convert_scale_layout", scales.data_ptr(), LAYOUTS[src_layout], out.data_ptr(),
             LAYOUTS[dst_layout], rows, scale_cols, groups)
    return out
