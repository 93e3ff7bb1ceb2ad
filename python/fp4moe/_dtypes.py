"""The torch dtypes of each role, and the C dtype codes of dense tensors."""

import torch

from . import _capi


def _optional(name):
    d = getattr(torch, name, None)
    return (d,) if d is not None else ()


#: Packed E2M1 pairs (element 2i in the low nibble).
PACKED_FP4 = (torch.uint8,) + _optional("float4_e2m1fn_x2")
#: NVFP4 block scales.
E4M3_SCALES = (torch.float8_e4m3fn,)
#: MXFP4 block scales.
UE8M0_SCALES = (torch.uint8,) + _optional("float8_e8m0fnu")
#: Every dtype a 1-byte scale tensor may have.
SCALE_BYTES = tuple(dict.fromkeys(E4M3_SCALES + UE8M0_SCALES))
#: Dense inputs of the quantizers and outputs of GEMMs / dequantize.
DENSE_FLOAT = (torch.bfloat16, torch.float32)

_CODES = {torch.bfloat16: _capi.DTYPE_BF16, torch.float32: _capi.DTYPE_FP32, torch.int32: _capi.DTYPE_I32}


def code(dtype: torch.dtype) -> int:
    return _CODES[dtype]
