"""Arguments refused in Python before anything is launched: devices, dtypes,
shapes, contiguity, types. Runs without a GPU (CPU tensors are refused by
the GPU operations; the other rules are checked before the device)."""

import pytest

torch = pytest.importorskip("torch")

import fp4moe  # noqa: E402
from fp4_reference import random_fp4  # noqa: E402
from refusal import refuses  # noqa: E402

NV, MX = fp4moe.NVFP4, fp4moe.MXFP4


def test_errors_are_value_errors():
    with pytest.raises(ValueError):
        fp4moe.quantize_nvfp4(torch.zeros(4, 16))


def test_a_rule_that_holds_makes_no_error_text():
    from fp4moe._checks import Checker
    made = []

    def text():
        made.append(1)
        return "text"

    c = Checker("f")
    c.require(True, "x", text, text)
    assert not made
    with refuses("f", "x", r"must hold \(got 7\)"):
        c.require(False, "x", lambda: "must hold", lambda: 7)


# -------------------------------------------------------------- devices ----

def test_gpu_operations_refuse_cpu_tensors(rng):
    x = torch.zeros(4, 64)
    with refuses("quantize_nvfp4", "x", "must be a CUDA tensor"):
        fp4moe.quantize_nvfp4(x)
    with refuses("quantize_mxfp4", "x", r"must be a CUDA tensor \(got device cpu\)"):
        fp4moe.quantize_mxfp4(x)
    with refuses("compute_amax", "x", "CUDA"):
        fp4moe.compute_amax(x)
    a = random_fp4((4, 64), NV, generator=rng)
    b = random_fp4((8, 64), NV, generator=rng, scale_layout=fp4moe.ROW_MAJOR)
    with refuses("dequantize", "t.data", "CUDA"):
        fp4moe.dequantize(a)
    # Refused before the row-major scales of b would be converted.
    with refuses("fp4_gemm_nt", "a.data", "CUDA"):
        fp4moe.fp4_gemm_nt(a, b)
    with refuses("convert_scale_layout", "scales", "CUDA"):
        fp4moe.convert_scale_layout(b.scales, 8, 4, fp4moe.ROW_MAJOR, fp4moe.TILED_128X4)
    ids = torch.zeros(4, 2, dtype=torch.int32)
    with refuses("moe_routing_alpha", "topk_ids", "CUDA"):
        fp4moe.moe_routing_alpha(ids, torch.zeros(4, 2), 8)


def test_cpu_module_refuses_non_cpu_tensors():
    meta = torch.zeros(4, 64, device="meta")
    with refuses(r"cpu::quantize_mxfp4", "x", "must be a CPU tensor"):
        fp4moe.cpu.quantize_mxfp4(meta)


# ----------------------------------------------------------- Fp4Tensor ----

def test_fp4_tensor_rules(rng):
    data = torch.zeros(4, 32, dtype=torch.uint8)
    e4m3 = torch.zeros(128, 4, dtype=torch.float8_e4m3fn)
    ue8m0 = torch.zeros(4, 2, dtype=torch.uint8)
    g = torch.ones(())
    t = fp4moe.Fp4Tensor(data, e4m3, g, scale_layout=fp4moe.TILED_128X4)
    assert (t.format, t.rows, t.cols, t.groups, t.shape) == (NV, 4, 64, 1, (4, 64))
    t = fp4moe.Fp4Tensor(data, ue8m0, scale_layout=fp4moe.ROW_MAJOR)
    assert t.format == MX and t.scale_cols == 2
    with pytest.raises(TypeError):
        fp4moe.Fp4Tensor(data, e4m3, g)  # the layout is always named
    with refuses("Fp4Tensor", "scale_layout"):
        fp4moe.Fp4Tensor(data, e4m3, g, scale_layout="swizzled")
    with refuses("Fp4Tensor", "data", "dtype uint8"):
        fp4moe.Fp4Tensor(data.int(), e4m3, g, scale_layout=fp4moe.TILED_128X4)
    with refuses("Fp4Tensor", "data", "2 or 3 dimensions"):
        fp4moe.Fp4Tensor(data.flatten(), e4m3, g, scale_layout=fp4moe.TILED_128X4)
    with refuses("Fp4Tensor", "data", "contiguous"):
        fp4moe.Fp4Tensor(torch.zeros(32, 4, dtype=torch.uint8).t(), e4m3, g, scale_layout=fp4moe.TILED_128X4)
    with refuses("Fp4Tensor", "scales", "float8_e4m3fn"):
        fp4moe.Fp4Tensor(data, ue8m0, g, scale_layout=fp4moe.ROW_MAJOR, format=NV)
    with refuses("Fp4Tensor", "scales", "512 elements"):
        fp4moe.Fp4Tensor(data, e4m3[:64], g, scale_layout=fp4moe.TILED_128X4)
    with refuses("Fp4Tensor", "scales", "K/block = 4 columns"):
        fp4moe.Fp4Tensor(data, torch.zeros(2, 8, dtype=torch.float8_e4m3fn), g, scale_layout=fp4moe.ROW_MAJOR)
    with refuses("Fp4Tensor", "global_scale", "must be given for NVFP4"):
        fp4moe.Fp4Tensor(data, e4m3, scale_layout=fp4moe.TILED_128X4)
    with refuses("Fp4Tensor", "global_scale", "must be None for MXFP4"):
        fp4moe.Fp4Tensor(data, ue8m0, g, scale_layout=fp4moe.ROW_MAJOR)
    with refuses("Fp4Tensor", "global_scale", "dtype float32"):
        fp4moe.Fp4Tensor(data, e4m3, g.double(), scale_layout=fp4moe.TILED_128X4)
    with refuses("Fp4Tensor", "global_scale", "3 elements"):
        fp4moe.Fp4Tensor(torch.zeros(3, 4, 32, dtype=torch.uint8), e4m3.repeat(3, 1), g,
                         scale_layout=fp4moe.TILED_128X4)
    with refuses("Fp4Tensor", "data", "multiple of the mxfp4 block"):
        fp4moe.Fp4Tensor(torch.zeros(4, 8, dtype=torch.uint8), ue8m0, scale_layout=fp4moe.ROW_MAJOR)


# ----------------------------------------------------- operation rules ----

def test_quantizer_rules():
    with refuses("quantize_nvfp4", "x", "dtype bfloat16 or float32"):
        fp4moe.quantize_nvfp4(torch.zeros(4, 64, dtype=torch.float16))
    with refuses("quantize_nvfp4", "x", "contiguous"):
        fp4moe.quantize_nvfp4(torch.zeros(64, 4).t())
    with refuses("quantize_nvfp4", "x", "K a multiple of the nvfp4 block"):
        fp4moe.quantize_nvfp4(torch.zeros(4, 40))
    with refuses("quantize_nvfp4", "x", "2 or 3 dimensions"):
        fp4moe.quantize_nvfp4(torch.zeros(64))
    with refuses("quantize_nvfp4", "encode_scale", "4 elements"):
        fp4moe.quantize_nvfp4(torch.zeros(4, 2, 64), encode_scale=torch.ones(2))
    out = fp4moe.empty_fp4((4, 64), MX)
    with refuses("quantize_nvfp4", "out", "must be an nvfp4 tensor"):
        fp4moe.quantize_nvfp4(torch.zeros(4, 64), out=out)
    with refuses("quantize_mxfp4", "out", r"must have the shape of x \(8, 64\)"):
        fp4moe.quantize_mxfp4(torch.zeros(8, 64), out=out)
    with refuses("dequantize", "dtype"):
        fp4moe.dequantize(out, torch.float16)


def test_quantizers_check_their_scale_layout():
    # Named by the quantizer, not by the empty_fp4 it calls; and with out=,
    # a layout other than out's is refused rather than ignored.
    for quantize, name in ((fp4moe.quantize_mxfp4, "quantize_mxfp4"), (fp4moe.cpu.quantize_mxfp4,
                                                                        "cpu::quantize_mxfp4")):
        with refuses(name, "scale_layout", "must be None, 'row_major' or 'tiled128x4'"):
            quantize(torch.zeros(4, 64), scale_layout="bad")
        out = fp4moe.empty_fp4((4, 64), MX, scale_layout=fp4moe.ROW_MAJOR)
        with refuses(name, "scale_layout", "must be None or out's layout"):
            quantize(torch.zeros(4, 64), scale_layout=fp4moe.TILED_128X4, out=out)
    out = fp4moe.empty_fp4((4, 64), MX, scale_layout=fp4moe.ROW_MAJOR)
    x = torch.linspace(-6, 6, 256).reshape(4, 64)
    assert fp4moe.cpu.quantize_mxfp4(x, out=out) is out, "out's own layout needs no scale_layout"
    assert fp4moe.cpu.quantize_mxfp4(x, scale_layout=fp4moe.ROW_MAJOR, out=out) is out
    assert fp4moe.cpu.quantize_mxfp4(x).scale_layout == fp4moe.TILED_128X4, "a new tensor's default"


def test_prepack_refuses_what_is_not_an_fp4_tensor(rng):
    t = random_fp4((8, 64), NV, generator=rng)
    for prepack, name in ((fp4moe.prepack_weights, "prepack_weights"), (fp4moe.cpu.prepack_weights,
                                                                         "cpu::prepack_weights")):
        with refuses(name, "t", "must be an fp4moe.Fp4Tensor"):
            prepack(t.data)
        with refuses(name, "t", "must be an fp4moe.Fp4Tensor"):
            prepack(None)
        with refuses(name, "out", "must be a torch.Tensor"):
            prepack(t, out=[0])
        with refuses(name, "out", "must have dtype uint8"):
            prepack(t, out=torch.zeros(t.data.shape, dtype=torch.int8))
        with refuses(name, "out", r"must have shape \(8, 32\)"):
            prepack(t, out=torch.zeros(8, 16, dtype=torch.uint8))


def test_gemm_rules(rng):
    a = random_fp4((4, 64), NV, generator=rng)
    b = random_fp4((8, 64), NV, generator=rng)
    bg = random_fp4((2, 8, 64), NV, generator=rng)
    with refuses("fp4_gemm_nt", "a", "must be an fp4moe.Fp4Tensor"):
        fp4moe.fp4_gemm_nt(a.data, b)
    with refuses("fp4_gemm_nt", "b", r"must be a single matrix \[N, K\]"):
        fp4moe.fp4_gemm_nt(a, bg)
    with refuses("fp4_gemm_nt", "out_dtype"):
        fp4moe.fp4_gemm_nt(a, b, out_dtype=torch.float16)
    with refuses("fp4_gemm_nt", "out", r"must have shape \(4, 8\)"):
        fp4moe.fp4_gemm_nt(a, b, out=torch.zeros(4, 9))
    with refuses("fp4_gemm_nt", "out", "unit stride"):
        fp4moe.fp4_gemm_nt(a, b, out=torch.zeros(8, 4).t())
    with refuses("fp4_gemm_nt", "tactic"):
        fp4moe.fp4_gemm_nt(a, b, tactic="fast")
    with refuses("m_grouped_fp4_gemm_nt_contiguous", "m_indices", "dtype int32"):
        fp4moe.m_grouped_fp4_gemm_nt_contiguous(a, bg, torch.zeros(4, dtype=torch.int64))
    with refuses("m_grouped_fp4_gemm_nt_contiguous", "m_indices", r"shape \(4,\)"):
        fp4moe.m_grouped_fp4_gemm_nt_contiguous(a, bg, torch.zeros(5, dtype=torch.int32))
    ag = random_fp4((2, 4, 64), NV, generator=rng)
    with refuses("m_grouped_fp4_gemm_nt_masked", "masked_m", r"shape \(2,\)"):
        fp4moe.m_grouped_fp4_gemm_nt_masked(ag, bg, torch.zeros(3, dtype=torch.int32), 4)
    with refuses("m_grouped_fp4_gemm_nt_masked", "expected_m", r"must be in \[0, 2\^31\)"):
        fp4moe.m_grouped_fp4_gemm_nt_masked(ag, bg, torch.zeros(2, dtype=torch.int32), -1)
    with refuses("m_grouped_fp4_gemm_nt_masked", "out", "groups at least a group apart"):
        out = torch.zeros(4, 2, 8).transpose(0, 1)
        fp4moe.m_grouped_fp4_gemm_nt_masked(ag, bg, torch.zeros(2, dtype=torch.int32), 4, out=out)
    with refuses("m_grouped_fp4_gemm_nt_masked", "a.data", "CUDA"):
        fp4moe.m_grouped_fp4_gemm_nt_masked(ag, bg, torch.zeros(2, dtype=torch.int32), 4)


def test_moe_rules(rng):
    a = random_fp4((4, 256), NV, generator=rng)
    b = random_fp4((8, 256), NV, generator=rng)
    with refuses("moe_dense_fc2", "alpha", "dtype float32"):
        fp4moe.moe_dense_fc2(a, b, torch.zeros(4, 2, dtype=torch.float64))
    with refuses("moe_dense_fc2", "alpha", "M = 4 rows"):
        fp4moe.moe_dense_fc2(a, b, torch.zeros(5, 2))
    with refuses("moe_dense_fc2", "a.data", "CUDA"):
        fp4moe.moe_dense_fc2(a, b, torch.zeros(2, 4).t())  # strided alpha is fine
    w13 = random_fp4((2, 256, 256), NV, generator=rng)
    with refuses("moe_dense_fc1_swiglu", "b", "stack of expert weights"):
        fp4moe.moe_dense_fc1_swiglu(a, b)
    with refuses("moe_dense_fc1_swiglu", "expert_scale", r"shape \(2,\)"):
        fp4moe.moe_dense_fc1_swiglu(a, w13, torch.ones(3))
    with refuses("moe_dense_fc1_swiglu", "out", "dtype bfloat16"):
        fp4moe.moe_dense_fc1_swiglu(a, w13, out=torch.zeros(4, 256))
    with refuses("moe_dense_fc1_swiglu", "encode_scale", "1 elements"):
        fp4moe.moe_dense_fc1_swiglu_nvfp4(a, w13, torch.ones(2))
    with refuses("moe_dense_fc1_swiglu", "out", "NVFP4 with tiled128x4"):
        fp4moe.moe_dense_fc1_swiglu_nvfp4(a, w13, torch.ones(()), out=fp4moe.empty_fp4((4, 256), MX))
    ids, weights = torch.zeros(4, 2, dtype=torch.int32), torch.zeros(4, 2)
    with refuses("moe_routing_alpha", "topk_ids", "dtype int32"):
        fp4moe.moe_routing_alpha(ids.long(), weights, 8)
    with refuses("moe_routing_alpha", "topk_weights", r"shape \(4, 2\)"):
        fp4moe.moe_routing_alpha(ids, weights[:, :1].contiguous(), 8)
    with refuses("moe_routing_alpha", "num_experts", "must be given"):
        fp4moe.moe_routing_alpha(ids, weights)
    with refuses("moe_routing_alpha", "out", r"shape \(4, 8\)"):
        fp4moe.moe_routing_alpha(ids, weights, 8, out=torch.zeros(4, 7))


def test_refused_call_leaves_out_untouched(rng):
    a = random_fp4((4, 64), NV, generator=rng)
    b = random_fp4((8, 64), NV, generator=rng)
    out = torch.full((4, 8), float("nan"))
    with pytest.raises(fp4moe.InvalidArgumentError):
        fp4moe.fp4_gemm_nt(a, b, out=out)
    assert torch.isnan(out).all()


# ------------------------------------------------------------ workspace ----

def test_workspace_functions_take_a_torch_stream():
    with refuses("workspace_bytes", "stream", r"must be a torch.cuda.Stream or None \(got int\)"):
        fp4moe.workspace_bytes(0)
    with refuses("release_workspace", "stream", "torch.cuda.Stream"):
        fp4moe.release_workspace("side")
