"""The FP4 GEMMs (include/fp4moe/gemm.hpp): D = A.B^T, A the activations
(tokens), B the weights, both K-major Fp4Tensors of one format.

Operands with row-major scales are converted to the 128x4 tiled layout the
kernels read, which allocates a scale tensor per call: convert weights once
with Fp4Tensor.to_tiled(). The conversion runs after this module's checks
but before the library's own (K, formats, alignment, the tactic), so a call
the library refuses may have launched it, into a temporary: nothing of the
caller's is written. Outputs are BF16 or FP32, freshly allocated or
written into `out` (unit column stride; rows may be further apart). Every
call is asynchronous on the current CUDA stream and can be captured in a
CUDA graph.
"""

import torch

from . import _capi
from ._checks import Checker, check_int32
from ._gemm_args import check_index_vector, check_operand, check_output, check_tactic, operand_tensors, output
from ._launch import launch
from ._views import fp4, matrix, tactic as tactic_view
from .tensor import Fp4Tensor

#: Rows of each expert start at a multiple of this in the contiguous layout (pad with m_indices = -1).
CONTIGUOUS_ALIGNMENT = int(_capi.lib.fp4moe_contiguous_alignment())


def fp4_gemm_nt(a: Fp4Tensor, b: Fp4Tensor, *, out: torch.Tensor = None, out_dtype: torch.dtype = torch.bfloat16,
                tactic=None) -> torch.Tensor:
    """D[M, N] = ga*gb * A[M, K] . B[N, K]^T."""
    c = Checker("fp4_gemm_nt")
    check_operand(c, a, "a", grouped=False, what="a single matrix [M, K]")
    check_operand(c, b, "b", grouped=False, what="a single matrix [N, K]")
    shape = (a.rows, b.rows)
    check_output(c, out, out_dtype, shape)
    check_tactic(c, tactic)
    device = c.cuda_device({**operand_tensors(a, "a"), **operand_tensors(b, "b"), "out": out})
    a, b = a.to_tiled(), b.to_tiled()
    out = output(out, out_dtype, shape, device)
    if out.numel() > 0:
        launch(device, "fp4moe_fp4_gemm_nt", fp4(a), fp4(b), matrix(out), tactic_view(tactic))
    return out


def m_grouped_fp4_gemm_nt_contiguous(a: Fp4Tensor, b: Fp4Tensor, m_indices: torch.Tensor, *,
                                     out: torch.Tensor = None, out_dtype: torch.dtype = torch.bfloat16,
                                     tactic=None) -> torch.Tensor:
    """Row r of A [sum M, K] uses expert m_indices[r] of B [G, N, K]; D [sum M, N].
    m_indices: int32 [sum M] on the device; -1 marks a padding row (written
    as 0); each expert's rows start at a multiple of CONTIGUOUS_ALIGNMENT."""
    c = Checker("m_grouped_fp4_gemm_nt_contiguous")
    check_operand(c, a, "a", grouped=False, what="a single matrix [sum M, K]")
    check_operand(c, b, "b", grouped=True, what="a stack of expert matrices [G, N, K]")
    check_index_vector(c, m_indices, "m_indices", a.rows)
    shape = (a.rows, b.rows)
    check_output(c, out, out_dtype, shape)
    check_tactic(c, tactic)
    device = c.cuda_device({**operand_tensors(a, "a"), **operand_tensors(b, "b"), "m_indices": m_indices, "out": out})
    a, b = a.to_tiled(), b.to_tiled()
    out = output(out, out_dtype, shape, device)
    if out.numel() > 0:
        launch(device, "fp4moe_m_grouped_fp4_gemm_nt_contiguous", fp4(a), fp4(b), matrix(out), m_indices.data_ptr(),
               tactic_view(tactic))
    return out


def m_grouped_fp4_gemm_nt_masked(a: Fp4Tensor, b: Fp4Tensor, masked_m: torch.Tensor, expected_m: int, *,
                                 out: torch.Tensor = None, out_dtype: torch.dtype = torch.bfloat16,
                                 tactic=None) -> torch.Tensor:
    """A [G, maxM, K], B [G, N, K], D [G, maxM, N]: rows m >= masked_m[g] of
    group g are not written (a new output leaves them uninitialised).
    masked_m: int32 [G] on the device; expected_m: a host hint of the typical
    masked_m, used only to pick a tactic."""
    c = Checker("m_grouped_fp4_gemm_nt_masked")
    check_operand(c, a, "a", grouped=True, what="a stack [G, maxM, K]")
    check_operand(c, b, "b", grouped=True, what="a stack of expert matrices [G, N, K]")
    check_index_vector(c, masked_m, "masked_m", a.groups)
    check_int32(c, expected_m, "expected_m")
    shape = (a.groups, a.rows, b.rows)
    check_output(c, out, out_dtype, shape)
    check_tactic(c, tactic)
    device = c.cuda_device({**operand_tensors(a, "a"), **operand_tensors(b, "b"), "masked_m": masked_m, "out": out})
    a, b = a.to_tiled(), b.to_tiled()
    out = output(out, out_dtype, shape, device)
    if out.numel() > 0:
        launch(device, "fp4moe_m_grouped_fp4_gemm_nt_masked", fp4(a), fp4(b), matrix(out), masked_m.data_ptr(),
               expected_m, tactic_view(tactic))
    return out
