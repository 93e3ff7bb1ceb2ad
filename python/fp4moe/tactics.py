"""GEMM tactics: how a GEMM runs (never what it computes beyond FP32 summation order)."""

import ctypes
from dataclasses import dataclass

from . import _capi
from .errors import invalid_argument
from .formats import FORMATS, MXFP4, NVFP4

#: Operation families, as the tactic listing names them.
LAYOUTS = {
    "dense": _capi.LAYOUT_DENSE,            # fp4_gemm_nt
    "contiguous": _capi.LAYOUT_CONTIGUOUS,  # m_grouped_fp4_gemm_nt_contiguous
    "masked": _capi.LAYOUT_MASKED,          # m_grouped_fp4_gemm_nt_masked
    "moe_dense": _capi.LAYOUT_MOE_DENSE,    # moe_dense_fc2
    "moe_fc1": _capi.LAYOUT_MOE_FC1,        # moe_dense_fc1_swiglu
}


@dataclass(frozen=True)
class GemmTactic:
    """fp4moe::GemmTactic. Pass one as `tactic=` to force it (it must be one
    of gemm_tactics(); split_k 1, 2, 3, 4, 6, 8 or 0); None runs the tuning cache's
    tactic for the call if it has one (fp4moe.tune), else the heuristic's.

    swap_ab  weights on wgmma's M side, tokens on N (the decode path)
    block_n  rows of the shared-memory operand per CTA
    block_k  K per pipeline stage
    stages   pipeline depth
    split_k  K slices per output tile, reduced by the library in a fixed
             order (bit-identical repeats); 0: stream-K (not the masked
             layout), every CTA an equal share of the last waves' K. Split-K uses a workspace the
             library keeps per stream: the first call on a stream that needs
             more than before allocates it, so run the call once before
             capturing it in a CUDA graph.
    moe_gather  moe_dense_fc2 only: the gathered formulation (each expert
             multiplied by its own tokens only, block_n at a time; at most a
             few hundred tokens; split_k 1). It uses the same per-stream
             workspace as split-K.
    fp8      MXFP4 without swap_ab only: the FP8 route (E4M3 operands, one
             FP8 MMA per 32-K block, its scales applied on the CUDA cores;
             exact like the BF16 route; dense, grouped and moe_dense_fc2).
             Never the heuristic's pick.
    cluster  CTAs per cluster, 1 or 2 (the 128 x 256 tile, dense and
             contiguous: two token blocks share each weight load by TMA
             multicast).
    """

    swap_ab: bool
    block_n: int
    block_k: int
    stages: int
    split_k: int = 1
    moe_gather: bool = False
    fp8: bool = False
    cluster: int = 1

    @property
    def name(self) -> str:
        buf = ctypes.create_string_buffer(96)
        tactic = _capi.Tactic(int(self.swap_ab), self.block_n, self.block_k, self.stages, self.split_k,
                              int(self.moe_gather), int(self.fp8), self.cluster)
        _capi.call("fp4moe_tactic_name", tactic, buf, len(buf))
        return buf.value.decode()


def gemm_tactics(format: str, layout: str):
    """The tactics compiled for a format ("nvfp4", "mxfp4") and layout (a key of
    LAYOUTS), each with split_k = 1; each also runs with split_k 2, 3, 4, 6, 8 or 0
    (stream-K, not the masked layout) where its tile allows (the 128 x 256
    tiles: 1 or 0; the library refuses the rest)."""
    if format not in FORMATS:
        raise invalid_argument("gemm_tactics", "format", f"must be '{NVFP4}' or '{MXFP4}'", repr(format))
    if layout not in LAYOUTS:
        raise invalid_argument("gemm_tactics", "layout", "must be one of " + ", ".join(LAYOUTS), repr(layout))
    count = ctypes.c_int32(0)
    _capi.call("fp4moe_gemm_tactics", FORMATS[format], LAYOUTS[layout], None, 0, ctypes.byref(count))
    out = (_capi.Tactic * count.value)()
    _capi.call("fp4moe_gemm_tactics", FORMATS[format], LAYOUTS[layout], out, count.value, ctypes.byref(count))
    return [GemmTactic(bool(t.swap_ab), t.block_n, t.block_k, t.stages, t.split_k, bool(t.moe_gather), bool(t.fp8), t.cluster) for t in out]
