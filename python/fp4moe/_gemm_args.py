"""Argument handling shared by the GEMM and MoE entry points: FP4 operands,
the output, the tactic."""

import torch

from . import _dtypes
from ._checks import Checker
from .tactics import GemmTactic
from .tensor import Fp4Tensor


def check_operand(c: Checker, t, name: str, *, grouped: bool, what: str) -> Fp4Tensor:
    """t is an Fp4Tensor, a stack of matrices when `grouped`, a single one otherwise."""
    c.require(isinstance(t, Fp4Tensor), name, "must be an fp4moe.Fp4Tensor", type(t).__name__)
    c.require(t.grouped == grouped, name, lambda: f"must be {what}", lambda: f"shape {t.shape}")
    return t


def operand_tensors(t: Fp4Tensor, name: str) -> dict:
    return {f"{name}.data": t.data, f"{name}.scales": t.scales, f"{name}.global_scale": t.global_scale}


def check_output(c: Checker, out, out_dtype, shape, dtypes=_dtypes.DENSE_FLOAT) -> None:
    """out: None, or one of `dtypes` (BF16/FP32) of `shape` written row by row
    (unit column stride; rows and groups may be further apart: a slice of a
    wider buffer)."""
    if out is None:
        c.require(out_dtype in dtypes, "out_dtype", "must be torch.bfloat16 or torch.float32", out_dtype)
        return
    c.tensor(out, "out", dtypes, contiguous=False)
    c.shape(out, "out", shape)
    c.output_rows(out, "out")


def output(out, out_dtype, shape, device) -> torch.Tensor:
    return out if out is not None else torch.empty(shape, dtype=out_dtype, device=device)


def check_tactic(c: Checker, tactic) -> None:
    c.require(tactic is None or isinstance(tactic, GemmTactic), "tactic", "must be None or an fp4moe.GemmTactic",
              type(tactic).__name__)


def check_index_vector(c: Checker, t, name: str, length: int) -> None:
    """An int32 vector of `length` elements, contiguous."""
    c.tensor(t, name, (torch.int32,), ndims=(1,))
    c.shape(t, name, (length,))
