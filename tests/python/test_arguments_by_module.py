"""More arguments refused in Python before anything is launched, one test per
module of python/fp4moe whose rule it provokes (test_arguments.py has the
first ones). Runs without a GPU: the GPU operations check types, dtypes and
shapes before the device, so CPU (or meta) tensors reach every rule here."""

import pytest

torch = pytest.importorskip("torch")

import fp4moe  # noqa: E402
from fp4_reference import random_fp4  # noqa: E402
from refusal import refuses  # noqa: E402

NV, MX = fp4moe.NVFP4, fp4moe.MXFP4
ROW, TILED = fp4moe.ROW_MAJOR, fp4moe.TILED_128X4


# ------------------------------------------------------------ _checks ----

def test_checker_rules(rng):
    a = random_fp4((4, 64), NV, generator=rng)
    b = random_fp4((8, 64), NV, generator=rng)
    # Rows 4 elements apart in an output 8 wide: they would overlap.
    overlapping = torch.zeros(40).as_strided((4, 8), (4, 1))
    with refuses("fp4_gemm_nt", "out", r"must have rows at least a row apart \(stride\(-2\) >= shape\[-1\]\)"):
        fp4moe.fp4_gemm_nt(a, b, out=overlapping)
    # check_int32: an int, not a float that happens to be whole (nor a bool).
    ids, weights = torch.zeros(4, 2, dtype=torch.int32), torch.zeros(4, 2)
    with refuses("moe_routing_alpha", "num_experts", r"must be an int \(got float\)"):
        fp4moe.moe_routing_alpha(ids, weights, 8.0)
    ag, bg = random_fp4((2, 4, 64), NV, generator=rng), random_fp4((2, 8, 64), NV, generator=rng)
    with refuses("m_grouped_fp4_gemm_nt_masked", "expected_m", r"must be an int \(got bool\)"):
        fp4moe.m_grouped_fp4_gemm_nt_masked(ag, bg, torch.zeros(2, dtype=torch.int32), True)


# -------------------------------------------------- _quantize_checks ----

QUANTIZE_NVFP4 = ((fp4moe.quantize_nvfp4, "quantize_nvfp4"), (fp4moe.cpu.quantize_nvfp4, "cpu::quantize_nvfp4"))
DEQUANTIZE = ((fp4moe.dequantize, "dequantize"), (fp4moe.cpu.dequantize, "cpu::dequantize"))


def test_encode_scale_rules():
    for quantize, name in QUANTIZE_NVFP4:
        with refuses(name, "encode_scale", r"must have dtype float32 \(got float64\)"):
            quantize(torch.zeros(4, 64), encode_scale=torch.ones(1, dtype=torch.float64))
        # One g per group, but every other element of a wider tensor.
        with refuses(name, "encode_scale", "must be contiguous"):
            quantize(torch.zeros(2, 4, 64), encode_scale=torch.ones(2, 2)[:, 0])


def test_dequantize_rules(rng):
    t = random_fp4((4, 64), NV, generator=rng)
    for dequantize, name in DEQUANTIZE:
        with refuses(name, "t", r"must be an fp4moe.Fp4Tensor \(got Tensor\)"):
            dequantize(t.data)
        with refuses(name, "out", r"must have dtype bfloat16 or float32 \(got float16\)"):
            dequantize(t, out=torch.zeros(4, 64, dtype=torch.float16))
        # The logical shape (K elements), not the packed one (K/2 bytes).
        with refuses(name, "out", r"must have shape \(4, 64\) \(got \(4, 32\)\)"):
            dequantize(t, out=torch.zeros(4, 32))


# ------------------------------------------------------------- tensor ----

def test_fp4_tensor_dtype_format_and_device_rules():
    data = torch.zeros(4, 32, dtype=torch.uint8)
    e4m3 = torch.zeros(128, 4, dtype=torch.float8_e4m3fn)
    g = torch.ones(())
    # Before the format is read off it: the scales must be a 1-byte type at all.
    with refuses("Fp4Tensor", "scales", r"must have dtype float8_e4m3fn or uint8.* \(got float32\)"):
        fp4moe.Fp4Tensor(data, torch.zeros(128, 4), g, scale_layout=TILED)
    with refuses("Fp4Tensor", "format", r"must be 'nvfp4' or 'mxfp4' \(got 'fp8'\)"):
        fp4moe.Fp4Tensor(data, e4m3, g, scale_layout=TILED, format="fp8")
    # A meta tensor stands in for a second device.
    meta = data.to("meta")
    with refuses("Fp4Tensor", "scales", r"must be on the device of 'data' \(meta\) \(got cpu\)"):
        fp4moe.Fp4Tensor(meta, e4m3, g, scale_layout=TILED)
    with refuses("Fp4Tensor", "global_scale", r"must be on the device of 'data' \(meta\) \(got cpu\)"):
        fp4moe.Fp4Tensor(meta, e4m3.to("meta"), g, scale_layout=TILED)


def test_empty_fp4_rules():
    with refuses("empty_fp4", "format", r"must be 'nvfp4' or 'mxfp4' \(got 'fp8'\)"):
        fp4moe.empty_fp4((4, 64), "fp8")
    with refuses("empty_fp4", "scale_layout", r"must be 'row_major' or 'tiled128x4' \(got 'swizzled'\)"):
        fp4moe.empty_fp4((4, 64), NV, scale_layout="swizzled")
    with refuses("empty_fp4", "shape", r"must be \(rows, K\) or \(groups, rows, K\) \(got \(64,\)\)"):
        fp4moe.empty_fp4((64,), NV)
    # The format's block: 48 is a multiple of NVFP4's 16 but not of MXFP4's 32.
    with refuses("empty_fp4", "shape", r"must have K a multiple of 32 \(got \(4, 48\)\)"):
        fp4moe.empty_fp4((4, 48), MX)


# ---------------------------------------------------------------- moe ----

def test_moe_dense_fc2_rules(rng):
    a = random_fp4((4, 256), NV, generator=rng)
    b = random_fp4((8, 256), NV, generator=rng)
    alpha = torch.zeros(4, 2)
    # Without expert_width, W = K / E needs E >= 1.
    with refuses("moe_dense_fc2", "alpha", r"must have at least one expert column \(got shape \(4, 0\)\)"):
        fp4moe.moe_dense_fc2(a, b, torch.zeros(4, 0))
    with refuses("moe_dense_fc2", "expert_width", r"must be an int \(got float\)"):
        fp4moe.moe_dense_fc2(a, b, alpha, expert_width=128.0)
    with refuses("moe_dense_fc2", "expert_width", r"must be in \[0, 2\^31\) \(got 2147483648\)"):
        fp4moe.moe_dense_fc2(a, b, alpha, expert_width=2**31)
    # The binding's own int32 rule (the library's options.moe_top_k rule is test_gpu_errors').
    with refuses("moe_dense_fc2", "top_k", r"must be in \[0, 2\^31\) \(got -1\)"):
        fp4moe.moe_dense_fc2(a, b, alpha, top_k=-1)
    with refuses("moe_dense_fc2", "top_k", r"must be an int \(got str\)"):
        fp4moe.moe_dense_fc2(a, b, alpha, top_k="2")
    # A row stride of 0 (one token's alpha expanded along M) would be read as dense rows, past the tensor.
    with refuses("moe_dense_fc2", "alpha", r"must not have a row stride of 0 .* \(got strides \(0, 1\)\)"):
        fp4moe.moe_dense_fc2(a, b, torch.zeros(1, 2).expand(4, 2))


def test_moe_dense_fc1_rules(rng):
    a = random_fp4((4, 256), NV, generator=rng)
    w13 = random_fp4((2, 256, 256), NV, generator=rng)  # E = 2, I = 128: output (4, 256)
    g = torch.ones(())
    with refuses("moe_dense_fc1_swiglu", "expert_scale", r"must have dtype float32 \(got float64\)"):
        fp4moe.moe_dense_fc1_swiglu(a, w13, torch.ones(2, dtype=torch.float64))
    with refuses("moe_dense_fc1_swiglu", "encode_scale", r"must have dtype float32 \(got float64\)"):
        fp4moe.moe_dense_fc1_swiglu_nvfp4(a, w13, g.double())
    with refuses("moe_dense_fc1_swiglu", "out", r"must be an fp4moe.Fp4Tensor \(got Tensor\)"):
        fp4moe.moe_dense_fc1_swiglu_nvfp4(a, w13, g, out=torch.zeros(4, 256))
    with refuses("moe_dense_fc1_swiglu", "out", r"must have shape \(4, 256\) \(got \(8, 256\)\)"):
        fp4moe.moe_dense_fc1_swiglu_nvfp4(a, w13, g, out=fp4moe.empty_fp4((8, 256), NV))


def test_moe_routing_alpha_rules():
    ids, weights = torch.zeros(4, 2, dtype=torch.int32), torch.zeros(4, 2)
    with refuses("moe_routing_alpha", "topk_weights", r"must have dtype float32 \(got float64\)"):
        fp4moe.moe_routing_alpha(ids, weights.double(), 8)
    with refuses("moe_routing_alpha", "out", r"must have dtype float32 \(got float64\)"):
        fp4moe.moe_routing_alpha(ids, weights, 8, out=torch.zeros(4, 8, dtype=torch.float64))
    with refuses("moe_routing_alpha", "out", r"must have 2 dimensions \(got shape \(32,\)\)"):
        fp4moe.moe_routing_alpha(ids, weights, 8, out=torch.zeros(32))
    with refuses("moe_routing_alpha", "out", r"must not have a row stride of 0 .* \(got strides \(0, 1\)\)"):
        fp4moe.moe_routing_alpha(ids, weights, 8, out=torch.zeros(1, 8).expand(4, 8))
    with refuses("moe_routing_alpha", "num_experts", r"must be in \[1, 2\^31\) \(got 0\)"):
        fp4moe.moe_routing_alpha(ids, weights, 0)
    # num_experts read off an out without columns is refused the same way.
    with refuses("moe_routing_alpha", "num_experts", r"must be in \[1, 2\^31\) \(got 0\)"):
        fp4moe.moe_routing_alpha(ids, weights, out=torch.zeros(4, 0))
    with refuses("moe_routing_alpha", "expert_scale", r"must have dtype float32 \(got float64\)"):
        fp4moe.moe_routing_alpha(ids, weights, 8, expert_scale=torch.ones(8, dtype=torch.float64))
    with refuses("moe_routing_alpha", "expert_scale", r"must have shape \(8,\) \(got \(7,\)\)"):
        fp4moe.moe_routing_alpha(ids, weights, 8, expert_scale=torch.ones(7))
    with refuses("moe_routing_alpha", "topk_ids", r"must have at least one column \(top_k\)"):
        fp4moe.moe_routing_alpha(torch.zeros(4, 0, dtype=torch.int32), torch.zeros(4, 0), 8)


# ----------------------------------------------------------- quantize ----

def test_compute_amax_out_rules():
    with refuses("compute_amax", "out", r"must have dtype float32 \(got float64\)"):
        fp4moe.compute_amax(torch.zeros(4, 64), out=torch.zeros((), dtype=torch.float64))
    with refuses("compute_amax", "out", r"must have 2 elements \(one amax per group\) \(got 3"):
        fp4moe.compute_amax(torch.zeros(2, 4, 64), out=torch.zeros(3))


# -------------------------------------------------------- scale_layout ----

CONVERTERS = ((fp4moe.convert_scale_layout, "convert_scale_layout"),
              (fp4moe.cpu.convert_scale_layout, "cpu::convert_scale_layout"))


def test_convert_scale_layout_rules():
    s = torch.zeros(8, 4, dtype=torch.uint8)  # row-major scales of 8 rows, 4 scale columns
    for convert, name in CONVERTERS:
        with refuses(name, "src_layout", r"must be 'row_major' or 'tiled128x4' \(got 'bad'\)"):
            convert(s, 8, 4, "bad", TILED)
        with refuses(name, "dst_layout", r"must be 'row_major' or 'tiled128x4' \(got 'swizzled'\)"):
            convert(s, 8, 4, ROW, "swizzled")
        with refuses(name, "rows", r"must be an int \(got float\)"):
            convert(s, 8.0, 4, ROW, TILED)
        with refuses(name, "scale_cols", r"must be an int \(got bool\)"):
            convert(s, 8, True, ROW, TILED)
        with refuses(name, "groups", r"must be an int \(got str\)"):
            convert(s, 8, 4, ROW, TILED, groups="1")
        with refuses(name, "scales", r"must have dtype float8_e4m3fn or uint8.* \(got float32\)"):
            convert(s.float(), 8, 4, ROW, TILED)
        with refuses(name, "scales", r"must have 32 elements \(1 x \(8, 4\) row_major scales\)"):
            convert(s[:4], 8, 4, ROW, TILED)
        # out keeps the scales' dtype.
        with refuses(name, "out", r"must have dtype uint8 \(got float8_e4m3fn\)"):
            convert(s, 8, 4, ROW, TILED, out=torch.zeros(128, 4, dtype=torch.float8_e4m3fn))
        # A tiled destination is padded to 128 rows: 8 x 4 is too small.
        with refuses(name, "out", r"must have 512 elements \(1 x \(128, 4\) tiled128x4 scales\)"):
            convert(s, 8, 4, ROW, TILED, out=torch.zeros(8, 4, dtype=torch.uint8))
