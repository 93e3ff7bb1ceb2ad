"""Mixture-of-Experts operations (include/fp4moe/moe.hpp): FC2 as one dense
GEMM over all experts, FC1 with SwiGLU fused (BF16 or NVFP4 output), and the
routing helper that builds FC2's alpha.

Like the GEMMs: operands with row-major scales are converted to the tiled
layout (allocating; convert weights once with Fp4Tensor.to_tiled()); every
call is asynchronous on the current CUDA stream and graph-capturable.
"""

import torch

from ._checks import Checker, check_int32
from ._gemm_args import check_operand, check_output, check_tactic, operand_tensors, output
from ._launch import launch
from ._views import address, fp4, matrix, tactic as tactic_view
from .formats import NVFP4, TILED_128X4
from .tensor import Fp4Tensor, empty_fp4


def moe_dense_fc2(a: Fp4Tensor, b: Fp4Tensor, alpha: torch.Tensor, *, expert_width: int = None,
                  out: torch.Tensor = None, out_dtype: torch.dtype = torch.bfloat16, tactic=None,
                  top_k: int = 0) -> torch.Tensor:
    """D[m, :] = ga*gb * sum_e alpha[m, e] * A[m, eW:(e+1)W] . B[:, eW:(e+1)W]^T.

    a      [M, E*W]: every expert's FC1 output of each token side by side.
    b      [N, E*W]: every expert's down projection side by side.
    alpha  FP32 [M, E] on the device, strided (a transposed or sliced view
           works; a row stride of 0 with M > 1, as expand() along M gives,
           is refused): the routing weight, 0 where the token did not pick
           the expert (those experts' bytes are skipped). moe_routing_alpha
           builds it.
    expert_width  W (a multiple of 128); default K / E.
    top_k  experts each token routes to, where known (0: unknown): a hint for
           the tactic choice (GemmOptions::moe_top_k), never for the result.
    """
    c = Checker("moe_dense_fc2")
    check_operand(c, a, "a", grouped=False, what="a single matrix [M, E*W]")
    check_operand(c, b, "b", grouped=False, what="a single matrix [N, E*W]")
    c.tensor(alpha, "alpha", (torch.float32,), ndims=(2,), contiguous=False)
    c.require(alpha.shape[0] == a.rows, "alpha", lambda: f"must have M = {a.rows} rows (the tokens of a)",
              lambda: f"shape {tuple(alpha.shape)}")
    c.rows_apart(alpha, "alpha")
    if expert_width is None:
        c.require(alpha.shape[1] > 0, "alpha", "must have at least one expert column", lambda: f"shape {tuple(alpha.shape)}")
        expert_width = a.cols // alpha.shape[1]
    check_int32(c, expert_width, "expert_width")
    check_int32(c, top_k, "top_k")
    shape = (a.rows, b.rows)
    check_output(c, out, out_dtype, shape)
    check_tactic(c, tactic)
    device = c.cuda_device({**operand_tensors(a, "a"), **operand_tensors(b, "b"), "alpha": alpha, "out": out})
    a, b = a.to_tiled(), b.to_tiled()
    out = output(out, out_dtype, shape, device)
    if out.numel() > 0:
        launch(device, "fp4moe_moe_dense_fc2_topk", fp4(a), fp4(b), matrix(alpha), expert_width, top_k, matrix(out),
               tactic_view(tactic))
    return out


def _check_fc1(c: Checker, a, b, expert_scale):
    check_operand(c, a, "a", grouped=False, what="a single matrix [M, K]")
    check_operand(c, b, "b", grouped=True, what="a stack of expert weights [E, 2I, K] (gate rows, then up rows)")
    if expert_scale is not None:
        c.tensor(expert_scale, "expert_scale", (torch.float32,), ndims=(1,))
        c.shape(expert_scale, "expert_scale", (b.groups,))
    return (a.rows, b.groups * (b.rows // 2))


def moe_dense_fc1_swiglu(a: Fp4Tensor, b: Fp4Tensor, expert_scale: torch.Tensor = None, *,
                         out: torch.Tensor = None, tactic=None) -> torch.Tensor:
    """out[m, e*I + i] = silu(gate) * up * expert_scale[e] in BF16 [M, E*I],
    gate = ga*gb[e] * A[m] . B_e[i], up = ga*gb[e] * A[m] . B_e[I + i].

    a             [M, K].
    b             [E, 2I, K], each expert's gate rows then up rows (w13); I a
                  multiple of 128; NVFP4: one global scale per expert.
    expert_scale  FP32 [E] on the device, or None (1).
    """
    c = Checker("moe_dense_fc1_swiglu")
    shape = _check_fc1(c, a, b, expert_scale)
    check_output(c, out, torch.bfloat16, shape, dtypes=(torch.bfloat16,))
    check_tactic(c, tactic)
    device = c.cuda_device({**operand_tensors(a, "a"), **operand_tensors(b, "b"), "expert_scale": expert_scale,
                            "out": out})
    a, b = a.to_tiled(), b.to_tiled()
    out = output(out, torch.bfloat16, shape, device)
    if out.numel() > 0:
        launch(device, "fp4moe_moe_dense_fc1_swiglu", fp4(a), fp4(b), address(expert_scale), matrix(out),
               tactic_view(tactic))
    return out


def moe_dense_fc1_swiglu_nvfp4(a: Fp4Tensor, b: Fp4Tensor, encode_scale: torch.Tensor,
                               expert_scale: torch.Tensor = None, *, out: Fp4Tensor = None,
                               tactic=None) -> Fp4Tensor:
    """moe_dense_fc1_swiglu with NVFP4 output, quantised in the epilogue exactly
    as quantize_nvfp4 would quantise the FP32 result with global encode scale
    g = encode_scale (an FP32 CUDA tensor of one element). Returns (or fills)
    an NVFP4 Fp4Tensor [M, E*I] with tiled scales whose global scale receives
    1/g: FC2's `a` (with expert_width = I)."""
    c = Checker("moe_dense_fc1_swiglu")
    shape = _check_fc1(c, a, b, expert_scale)
    c.tensor(encode_scale, "encode_scale", (torch.float32,))
    c.numel(encode_scale, "encode_scale", 1, "the global encode scale g of the output")
    if out is not None:
        c.require(isinstance(out, Fp4Tensor), "out", "must be an fp4moe.Fp4Tensor", type(out).__name__)
        c.require(out.format == NVFP4 and out.scale_layout == TILED_128X4, "out",
                  "must be NVFP4 with tiled128x4 scales", lambda: f"{out.format}, {out.scale_layout}")
        c.require(out.shape == shape, "out", lambda: f"must have shape {shape}", out.shape)
    check_tactic(c, tactic)
    outs = {} if out is None else operand_tensors(out, "out")
    device = c.cuda_device({**operand_tensors(a, "a"), **operand_tensors(b, "b"), "expert_scale": expert_scale,
                            "encode_scale": encode_scale, **outs})
    a, b = a.to_tiled(), b.to_tiled()
    if out is None:
        out = empty_fp4(shape, NVFP4, scale_layout=TILED_128X4, device=device)
    if out.data.numel() > 0:
        launch(device, "fp4moe_moe_dense_fc1_swiglu_nvfp4", fp4(a), fp4(b), address(expert_scale), fp4(out),
               encode_scale.data_ptr(), tactic_view(tactic))
    return out


def moe_routing_alpha(topk_ids: torch.Tensor, topk_weights: torch.Tensor, num_experts: int = None, *,
                      expert_scale: torch.Tensor = None, out: torch.Tensor = None) -> torch.Tensor:
    """alpha[m, e] = expert_scale[e] * sum of topk_weights[m, j] over j with
    topk_ids[m, j] = e, for every (m, e): FP32 [M, num_experts], new or
    written into `out` (strided, such as a transposed or sliced view, but no
    stride 0: each (m, e) needs an element of its own). Ids outside [0, E)
    select nothing.

    topk_ids      int32 [M, top_k], contiguous (convert torch.topk's int64
                  indices with .int()).
    topk_weights  FP32 [M, top_k], contiguous.
    expert_scale  FP32 [E] or None (1).
    """
    c = Checker("moe_routing_alpha")
    c.tensor(topk_ids, "topk_ids", (torch.int32,), ndims=(2,))
    c.tensor(topk_weights, "topk_weights", (torch.float32,), ndims=(2,))
    c.shape(topk_weights, "topk_weights", topk_ids.shape)
    if out is not None:
        c.tensor(out, "out", (torch.float32,), ndims=(2,), contiguous=False)
        c.rows_apart(out, "out")
        if num_experts is None:
            num_experts = out.shape[1]
    c.require(num_experts is not None, "num_experts", "must be given when out is None")
    check_int32(c, num_experts, "num_experts", minimum=1)
    shape = (topk_ids.shape[0], num_experts)
    if out is not None:
        c.shape(out, "out", shape)
    if expert_scale is not None:
        c.tensor(expert_scale, "expert_scale", (torch.float32,), ndims=(1,))
        c.shape(expert_scale, "expert_scale", (num_experts,))
    top_k = topk_ids.shape[1]
    c.require(1 <= top_k < 2**31, "topk_ids", "must have at least one column (top_k)", lambda: f"shape {tuple(topk_ids.shape)}")
    device = c.cuda_device({"topk_ids": topk_ids, "topk_weights": topk_weights, "expert_scale": expert_scale,
                            "out": out})
    out = output(out, torch.float32, shape, device)
    if out.numel() > 0:
        launch(device, "fp4moe_moe_routing_alpha", topk_ids.data_ptr(), topk_weights.data_ptr(), top_k,
               address(expert_scale), matrix(out))
    return out
