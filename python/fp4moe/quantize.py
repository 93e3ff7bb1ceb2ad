"""GPU quantizers, amax, dequantizer (include/fp4moe/quantize.hpp).

Rules (bit-identical to the CPU versions in fp4moe.cpu):
  NVFP4  g = 448*6 / amax(matrix) (or the caller's encode_scale), block scale
         s = E4M3(amax(block) / 6 * g), element E2M1(x * g / s); the global
         decode scale written is 1/g.
  MXFP4  scale 2^(floor(log2(amax(block))) - 2), element E2M1(x / scale).
A block holding NaN or Inf gets the NaN scale and zero elements.
The kernels move the dense (BF16/FP32) side 16 bytes at a time: x, and
dequantize's `out`, must be contiguous with their data 16-byte aligned (a
slice that starts mid-vector is refused).
"""

import torch

from . import _capi
from ._checks import Checker
from ._launch import launch
from ._quantize_checks import (check_dequantize_out, check_destination, check_encode_scale, check_prepack, check_source,
                               prepack_destination, prepacked)
from ._views import address, fp4, matrix
from .formats import MXFP4, NVFP4
from .tensor import Fp4Tensor, empty_fp4


def _quantize(name: str, fmt: str, x, encode_scale, scale_layout, out) -> Fp4Tensor:
    c = Checker(name)
    check_source(c, x, fmt)
    check_encode_scale(c, encode_scale, x)
    scale_layout = check_destination(c, x, out, fmt, scale_layout)
    if out is not None:
        device = c.cuda_device({"x": x, "encode_scale": encode_scale, "out.data": out.data, "out.scales": out.scales,
                                "out.global_scale": out.global_scale})
    else:
        device = c.cuda_device({"x": x, "encode_scale": encode_scale})
        out = empty_fp4(x.shape, fmt, scale_layout=scale_layout, device=device)
    if x.numel() == 0:
        return out
    if fmt == NVFP4:
        launch(device, "fp4moe_quantize_nvfp4", matrix(x), fp4(out), address(encode_scale))
    else:
        launch(device, "fp4moe_quantize_mxfp4", matrix(x), fp4(out))
    return out


def quantize_nvfp4(x: torch.Tensor, *, encode_scale: torch.Tensor = None, scale_layout: str = None,
                   out: Fp4Tensor = None) -> Fp4Tensor:
    """BF16/FP32 x [rows, K] (or [groups, rows, K], one global scale per
    group) to NVFP4. encode_scale: the global encode scale g (FP32 CUDA tensor,
    one per group); None derives it from amax(x) on the GPU (one more read
    of x). Returns a new Fp4Tensor with `scale_layout` scales (default
    TILED_128X4), or fills `out` (scale_layout, if given, must be out's)."""
    return _quantize("quantize_nvfp4", NVFP4, x, encode_scale, scale_layout, out)


def quantize_mxfp4(x: torch.Tensor, *, scale_layout: str = None, out: Fp4Tensor = None) -> Fp4Tensor:
    """BF16/FP32 x [rows, K] or [groups, rows, K] to MXFP4 (K a multiple of 32)."""
    return _quantize("quantize_mxfp4", MXFP4, x, None, scale_layout, out)


def compute_amax(x: torch.Tensor, *, out: torch.Tensor = None) -> torch.Tensor:
    """amax over the finite elements of x, per group: FP32, 0-d for a 2-D x,
    [groups] for a 3-D one (or written into `out`). x: BF16 or FP32,
    contiguous, data 16-byte aligned, K (its last dimension) a multiple of 8
    (BF16) or 4 (FP32) so that each row is whole 16-byte vectors."""
    c = Checker("compute_amax")
    check_source(c, x)
    lead = tuple(x.shape[:-2])
    if out is not None:
        c.tensor(out, "out", (torch.float32,))
        c.numel(out, "out", x.shape[0] if lead else 1, "one amax per group")
    device = c.cuda_device({"x": x, "out": out})
    if out is None:
        out = torch.empty(lead, dtype=torch.float32, device=device)
    if x.numel() == 0:
        return out.zero_()
    launch(device, "fp4moe_compute_amax", matrix(x), out.data_ptr())
    return out


def dequantize(t: Fp4Tensor, dtype: torch.dtype = torch.bfloat16, *, out: torch.Tensor = None) -> torch.Tensor:
    """Decodes t (e2m1 * block scale * global scale) into a new tensor of t's
    shape and `dtype` (BF16 or FP32), or into `out` (BF16 or FP32 of t's
    shape, contiguous, data 16-byte aligned)."""
    c = Checker("dequantize")
    dtype = check_dequantize_out(c, t, dtype, out)
    device = c.cuda_device({"t.data": t.data, "t.scales": t.scales, "t.global_scale": t.global_scale, "out": out})
    if out is None:
        out = torch.empty(t.shape, dtype=dtype, device=device)
    if out.numel() == 0:
        return out
    launch(device, "fp4moe_dequantize", fp4(t), matrix(out))
    return out


def prepack_weights(t: Fp4Tensor, *, out: torch.Tensor = None) -> Fp4Tensor:
    """The weights t in the prepacked bit order (fp4moe::prepack_weights): a
    one-time step at weight load after which the GEMMs (fp4_gemm_nt, both
    m-grouped GEMMs, moe_dense_fc2) convert them with fewer instructions.
    Returns a new Fp4Tensor whose data is `out` (a uint8 tensor like t.data,
    which may be t.data itself: in place) or a new tensor; scales and global
    scale are t's."""
    c = Checker("prepack_weights")
    check_prepack(c, t, out)
    device = c.cuda_device({"t.data": t.data, "t.scales": t.scales, "t.global_scale": t.global_scale, "out": out})
    out = prepack_destination(t, out)
    if t.data.numel() > 0:
        launch(device, "fp4moe_prepack_weights", fp4(t), out.data_ptr())
    return prepacked(t, out)


def nvfp4_global_encode_scale(amax: float) -> float:
    """g = 448*6 / amax; 1 when amax is 0 or not finite (host arithmetic, no launch)."""
    return float(_capi.lib.fp4moe_nvfp4_global_encode_scale(float(amax)))
