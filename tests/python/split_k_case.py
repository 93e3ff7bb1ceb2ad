"""A small split-K GEMM on the GPU that the graph and workspace tests share:
16 x 256 x 2048 operands of one format and a compiled swap-AB tactic split
4 ways (so the call uses the library's per-stream workspace)."""

import dataclasses

import fp4moe
import fp4_reference as ref


def split_k_case(rng, fmt):
    """(a, b, tactic): device Fp4Tensors [16, 2048] and [256, 2048] of `fmt`."""
    a = ref.to_device(ref.random_fp4((16, 2048), fmt, generator=rng), "cuda")
    b = ref.to_device(ref.random_fp4((256, 2048), fmt, generator=rng), "cuda")
    tactic = next((dataclasses.replace(t, split_k=4) for t in fp4moe.gemm_tactics(fmt, "dense") if t.swap_ab), None)
    assert tactic is not None, "a compiled swap-AB tile"
    return a, b, tactic
