"""Errors with CUDA tensors: the C++ library's validation reaches Python as
InvalidArgumentError with the library's message, and a refused call writes
nothing."""

import dataclasses

import pytest

torch = pytest.importorskip("torch")

import fp4moe  # noqa: E402
import fp4_reference as ref  # noqa: E402

pytestmark = pytest.mark.gpu


def cuda_fp4(rng, shape, fmt=fp4moe.NVFP4):
    return ref.to_device(ref.random_fp4(shape, fmt, generator=rng), "cuda")


def test_library_messages_reach_python(rng):
    a, b = cuda_fp4(rng, (64, 256)), cuda_fp4(rng, (128, 512))
    out = torch.full((64, 128), float("nan"), device="cuda")
    with pytest.raises(fp4moe.InvalidArgumentError) as err:
        fp4moe.fp4_gemm_nt(a, b, out=out)
    assert str(err.value) == "fp4_gemm_nt: argument 'b.cols': must equal a.cols (K) = 256 (got 512)"
    mx = cuda_fp4(rng, (128, 256), fp4moe.MXFP4)
    with pytest.raises(fp4moe.InvalidArgumentError, match=r"^fp4_gemm_nt: argument 'b.format': must equal a.format"):
        fp4moe.fp4_gemm_nt(a, mx, out=out)
    torch.cuda.synchronize()
    assert torch.isnan(out).all()


def test_unaligned_data_is_refused(rng):
    a, b = cuda_fp4(rng, (64, 256)), cuda_fp4(rng, (128, 256))
    buffer = torch.empty(64 * 128 + 1, dtype=torch.uint8, device="cuda")
    shifted = buffer[1:].view(64, 128)
    shifted.copy_(a.data)
    bad = fp4moe.Fp4Tensor(shifted, a.scales, a.global_scale, scale_layout=a.scale_layout)
    with pytest.raises(fp4moe.InvalidArgumentError, match=r"argument 'a.data': must be 16-byte aligned"):
        fp4moe.fp4_gemm_nt(bad, b)


def test_uncompiled_tactic_is_refused(rng):
    a, b = cuda_fp4(rng, (64, 256)), cuda_fp4(rng, (128, 256))
    with pytest.raises(fp4moe.InvalidArgumentError, match=r"argument 'options.tactic': is not compiled"):
        fp4moe.fp4_gemm_nt(a, b, tactic=fp4moe.GemmTactic(False, 999, 128, 4))
    with pytest.raises(fp4moe.InvalidArgumentError, match=r"split_k must be 1, 2, 3, 4, 6, 8 or 0 \(stream-K\)"):
        t = fp4moe.gemm_tactics(fp4moe.NVFP4, "dense")[0]
        fp4moe.fp4_gemm_nt(a, b, tactic=dataclasses.replace(t, split_k=5))


def test_moe_rules_of_the_library(rng):
    a, b = cuda_fp4(rng, (8, 384)), cuda_fp4(rng, (128, 384))
    alpha = torch.zeros(8, 4, device="cuda")
    out = torch.full((8, 128), float("nan"), device="cuda")  # poison: a refused call writes none of it
    with pytest.raises(fp4moe.InvalidArgumentError, match=r"^moe_dense_fc2: argument 'expert_width': must be a multiple of 128"):
        fp4moe.moe_dense_fc2(a, b, alpha, out=out, out_dtype=torch.float32)  # W = 384 / 4 = 96
    with pytest.raises(fp4moe.InvalidArgumentError, match=r"^moe_dense_fc2: argument 'options.moe_top_k': must be in \[0, E = 3\]"):
        fp4moe.moe_dense_fc2(a, b, alpha[:, :3], out=out, out_dtype=torch.float32, top_k=4)  # W = 128, E = 3
    w13 = cuda_fp4(rng, (2, 128, 384))
    fc1_out = torch.full((8, 128), float("nan"), device="cuda", dtype=torch.bfloat16)
    with pytest.raises(fp4moe.InvalidArgumentError, match=r"^moe_dense_fc1_swiglu: argument 'b.rows': must be a multiple of 256"):
        fp4moe.moe_dense_fc1_swiglu(a, w13, out=fc1_out)
    torch.cuda.synchronize()
    assert torch.isnan(out).all() and torch.isnan(fc1_out).all(), "a refused MoE call wrote its output"


def test_quantizer_rules_of_the_library():
    out = fp4moe.empty_fp4((4, 64), fp4moe.NVFP4, device="cuda")
    with pytest.raises(fp4moe.InvalidArgumentError,
                       match=r"^quantize_nvfp4: argument 'encode_scale': must not overlap dst.global_scale"):
        fp4moe.quantize_nvfp4(torch.zeros(4, 64, device="cuda"), encode_scale=out.global_scale, out=out)


@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs two GPUs")
def test_tensors_on_two_devices_are_refused(rng):
    a, b = cuda_fp4(rng, (64, 256)), ref.to_device(ref.random_fp4((128, 256), fp4moe.NVFP4, generator=rng), "cuda:1")
    with pytest.raises(fp4moe.InvalidArgumentError, match=r"argument 'b.data': must be on the device of 'a.data'"):
        fp4moe.fp4_gemm_nt(a, b)


@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs two GPUs")
def test_runs_on_the_tensors_device_not_the_current_one(rng):
    a = ref.to_device(ref.random_fp4((64, 256), fp4moe.MXFP4, generator=rng), "cuda:1")
    b = ref.to_device(ref.random_fp4((128, 256), fp4moe.MXFP4, generator=rng), "cuda:1")
    with torch.cuda.device(0):
        out = fp4moe.fp4_gemm_nt(a, b, out_dtype=torch.float32)
    assert out.device == torch.device("cuda:1")
    ref.assert_close(out, ref.gemm_nt(ref.decode(a)[0], ref.decode(b)[0]), torch.float32)
