"""The MoE operations on the GPU against float64 references: the routing
helper, FC2 over all experts (sparse alpha of any strides), FC1 with SwiGLU
in BF16 and in NVFP4 (the quantised reference), and FC1 feeding FC2."""

import math

import pytest

torch = pytest.importorskip("torch")

import fp4moe  # noqa: E402
import fp4_reference as ref  # noqa: E402

pytestmark = pytest.mark.gpu
FORMATS = (fp4moe.NVFP4, fp4moe.MXFP4)


def random_routing(rng, tokens, experts, top_k):
    ids = torch.stack([torch.randperm(experts, generator=rng)[:top_k] for _ in range(tokens)]).int()
    weights = torch.rand(tokens, top_k, generator=rng)
    return ids, weights


def alpha_reference(ids, weights, experts, expert_scale=None):
    alpha = torch.zeros(ids.shape[0], experts, dtype=torch.float64)
    for m in range(ids.shape[0]):
        for j in range(ids.shape[1]):
            e = int(ids[m, j])
            if 0 <= e < experts:
                alpha[m, e] += float(weights[m, j]) * (1.0 if expert_scale is None else float(expert_scale[e]))
    return alpha


def test_routing_alpha(rng):
    tokens, experts, top_k = 37, 16, 4
    ids, weights = random_routing(rng, tokens, experts, top_k)
    ids[3, 1] = -1  # a dropped slot selects nothing
    ids[5, 2] = ids[5, 0]  # a repeated expert adds up
    scale = torch.rand(experts, generator=rng) + 0.5
    got = fp4moe.moe_routing_alpha(ids.cuda(), weights.cuda(), experts)
    torch.testing.assert_close(got.cpu().double(), alpha_reference(ids, weights, experts), rtol=1e-6, atol=0)
    # Expert-major storage (a transposed view), every element written.
    storage = torch.full((experts, tokens), float("nan"), device="cuda")
    out = storage.t()
    assert fp4moe.moe_routing_alpha(ids.cuda(), weights.cuda(), expert_scale=scale.cuda(), out=out) is out
    torch.testing.assert_close(out.cpu().double(), alpha_reference(ids, weights, experts, scale), rtol=1e-6, atol=0)


def fc2_reference(a, b, alpha, width):
    da, db = ref.decode(a)[0], ref.decode(b)[0]
    out = torch.zeros(a.rows, b.rows, dtype=torch.float64, device="cuda")
    for e in range(alpha.shape[1]):
        part = ref.gemm_nt(da[:, e * width:(e + 1) * width], db[:, e * width:(e + 1) * width])
        out += alpha[:, e:e + 1].double() * part
    return out


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("out_dtype", [torch.bfloat16, torch.float32])
@pytest.mark.parametrize("tokens, width", [(1, 128), (45, 128), (160, 128), (176, 256)])
def test_moe_dense_fc2(rng, fmt, out_dtype, tokens, width):
    # (176 tokens at W = 256: two calls, 96 tokens and 80 whose scales start
    # inside a 128-row band.)
    experts, n, top_k = 8, 256, 2
    a = ref.to_device(ref.random_fp4((tokens, experts * width), fmt, generator=rng), "cuda")
    b = ref.to_device(ref.random_fp4((n, experts * width), fmt, generator=rng), "cuda")
    ids, weights = random_routing(rng, tokens, experts, top_k)
    alpha = fp4moe.moe_routing_alpha(ids.cuda(), weights.cuda(), experts)
    want = fc2_reference(a, b, alpha, width)
    out = ref.poisoned((tokens, n), out_dtype, pad=8)
    assert fp4moe.moe_dense_fc2(a, b, alpha, out=out) is out
    ref.assert_close(out, want, out_dtype, f"{fmt} M={tokens}")
    assert torch.isnan(out.as_strided((tokens, 8), (out.stride(0), 1), n)).all(), "row padding written"
    # alpha stored expert-major, passed as a strided view; W given explicitly.
    alpha_t = alpha.t().contiguous().t()
    got = fp4moe.moe_dense_fc2(a, b, alpha_t, expert_width=width, out_dtype=out_dtype)
    ref.assert_close(got, want, out_dtype, "strided alpha")
    # The routing hint picks the tactic only: the same result.
    got = fp4moe.moe_dense_fc2(a, b, alpha, out_dtype=out_dtype, top_k=top_k)
    ref.assert_close(got, want, out_dtype, "top_k hint")


def gate_level(fmt, k):
    """The power of two for A that puts FC1's gates' spread near 5: a gate sums
    K products of values whose mean square is ~25 (NVFP4: E2M1 codes 8.6,
    block scales 2.9) or ~104 (MXFP4's block scales 12.2). Unscaled, a gate is
    in the hundreds, so silu is the identity or underflows to 0 and its curve
    between is never tested (about half the reference was 0)."""
    mean_square = 24.6 if fmt == fp4moe.NVFP4 else 104.0
    return round(math.log2(5.0 / (mean_square * math.sqrt(k))))


def fc1_case(rng, fmt, tokens, k, experts, inter, scaled):
    a = ref.to_device(ref.random_fp4((tokens, k), fmt, generator=rng, level=gate_level(fmt, k)), "cuda")
    b = ref.to_device(ref.random_fp4((experts, 2 * inter, k), fmt, generator=rng), "cuda")
    scale = (torch.rand(experts, generator=rng) * 1.5 + 0.5).cuda() if scaled else None
    da, db = ref.decode(a)[0], ref.decode(b)
    parts = []
    for e in range(experts):
        gate = ref.gemm_nt(da, db[e, :inter])
        up = ref.gemm_nt(da, db[e, inter:])
        parts.append(gate / (1 + torch.exp(-gate)) * up * (1.0 if scale is None else float(scale[e])))
    want = torch.cat(parts, dim=1)
    assert (want.abs() < 1e-20).double().mean() <= 0.02, "reference values at 0: the gates saturate silu"
    return a, b, scale, want


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("tokens, k, experts, inter", [(1, 256, 1, 128), (31, 512, 3, 128), (130, 256, 2, 256)])
def test_moe_dense_fc1_swiglu_bf16(rng, fmt, tokens, k, experts, inter):
    a, b, scale, want = fc1_case(rng, fmt, tokens, k, experts, inter, scaled=tokens % 2 == 1)
    out = ref.poisoned((tokens, experts * inter), torch.bfloat16, pad=8)
    assert fp4moe.moe_dense_fc1_swiglu(a, b, scale, out=out) is out
    # silu in FP32: a few ulps beyond BF16 rounding.
    ref.assert_close(out, want, torch.bfloat16, f"{fmt} fc1")
    assert fp4moe.moe_dense_fc1_swiglu(a, b, scale).shape == (tokens, experts * inter)


def nvfp4_differences(got, want, value, g):
    """Compares an NVFP4 tensor `got` with `want`, the CPU quantizer on the
    float32 reference `value` [rows, K] with encode scale g, as the C++ test
    does (tests/gpu/gemm/moe_fc1_test.cpp): the GPU's value is taken to be
    within delta = 1e-5 of the output's RMS (accumulation error is relative to
    the sum of |products|, not to a cancelled result) plus 1e-6 relative of
    the reference. A code or block scale is near a boundary where quantising
    value - delta and value + delta disagree (a scale from the block amax, a
    code with the block's agreed scale), and a difference is explained only
    there and only by a value between those two quantisations. A differing
    scale changes its whole block's codes, so those are not compared.
    Returns counts: near (codes and scales near a boundary between two values),
    near_zero (codes near zero, whose quantisations differ only in the sign
    of the zero), explained, moved (explained differences that change a
    decoded value), unexplained, blocks."""
    rows, cols = value.shape
    g32 = torch.tensor(g, dtype=torch.float32)
    v = value.double()
    rms = v.pow(2).mean().sqrt()
    gs = ref.row_major_scales(got)[0].view(torch.uint8).cpu()
    ws = ref.row_major_scales(want)[0].view(torch.uint8)
    gc = ref.unpack_e2m1_codes(got.data.cpu()).reshape(rows, cols)
    wc = ref.unpack_e2m1_codes(want.data).reshape(rows, cols)

    def blocks(t):
        return t.reshape(rows, cols // 16, 16)

    def between(x, lo, hi):
        return (torch.minimum(lo, hi) <= x) & (x <= torch.maximum(lo, hi))

    # Block scales: E4M3 bytes of non-negative values order as the values.
    bamax = blocks(v.abs()).amax(dim=-1)
    bdelta = 1e-5 * rms + 1e-6 * bamax
    s_lo, s_hi = (ref.encode_e4m3(((bamax + d).float() / 6.0) * g32) for d in (-bdelta, bdelta))
    scale_near = s_lo != s_hi
    scale_diff = gs != ws
    scale_ok = scale_near & between(gs, s_lo, s_hi)
    # Codes, in blocks whose scales agree (and whose codes are not all zeroed).
    sf = ws.view(torch.float8_e4m3fn).to(torch.float32).unsqueeze(-1)
    delta = 1e-5 * rms + 1e-6 * v.abs()
    c_lo, c_hi = (ref.encode_e2m1((blocks((v + d).float()) * g32) / sf).reshape(rows, cols) for d in (-delta, delta))
    compared = ~(scale_diff | (ws == 0) | (ws == 0x7F)).repeat_interleave(16, dim=-1)
    code_near = (c_lo != c_hi) & compared
    e2m1 = ref.E2M1_VALUES
    near_zero = code_near & (e2m1[c_lo] == e2m1[c_hi])
    code_diff = (gc != wc) & ~scale_diff.repeat_interleave(16, dim=-1)
    code_ok = code_near & between(e2m1[gc], e2m1[c_lo], e2m1[c_hi])
    code_moved = e2m1[gc] != e2m1[wc]
    return dict(near=int(scale_near.sum() + (code_near & ~near_zero).sum()), near_zero=int(near_zero.sum()),
                explained=int((scale_diff & scale_ok).sum() + (code_diff & code_ok).sum()),
                moved=int((scale_diff & scale_ok).sum() + (code_diff & code_ok & code_moved).sum()),
                unexplained=int((scale_diff & ~scale_ok).sum() + (code_diff & ~code_ok).sum()),
                blocks=rows * cols // 16)


@pytest.mark.parametrize("fmt", FORMATS)
def test_moe_dense_fc1_swiglu_nvfp4_is_the_quantized_reference(rng, fmt):
    """The NVFP4 output is the CPU quantizer on the float64 reference (rounded
    to FP32) byte for byte, except codes and block scales whose reference value
    lies within FP32 rounding of a quantisation boundary (counted, reported)."""
    tokens, k, experts, inter = 70, 256, 2, 128
    a, b, scale, want = fc1_case(rng, fmt, tokens, k, experts, inter, scaled=True)
    want32 = want.float().cpu()
    g = fp4moe.nvfp4_global_encode_scale(want32.abs().max().item()) * 0.75
    encode = torch.full((), g, dtype=torch.float32, device="cuda")
    out = fp4moe.empty_fp4((tokens, experts * inter), fp4moe.NVFP4, device="cuda")
    out.data.fill_(0xFF)
    out.scales.view(torch.uint8).fill_(0xAB)
    assert fp4moe.moe_dense_fc1_swiglu_nvfp4(a, b, encode, scale, out=out) is out
    expect = fp4moe.cpu.quantize_nvfp4(want32, encode_scale=g)
    assert out.global_scale.item() == expect.global_scale.item()
    d = nvfp4_differences(out, expect, want32, g)
    print(f"FC1 NVFP4 output ({fmt}): {d['blocks']} blocks; {d['near']} codes/scales within FP32 rounding of a "
          f"boundary and {d['near_zero']} codes of zero; {d['explained']} of them differ ({d['moved']} in value)")
    assert d["unexplained"] == 0, f"codes/scales differ from the quantized reference away from a boundary: {d}"
    assert d["moved"] <= d["blocks"] // 100, f"more boundary cases than FP32 rounding explains: {d}"
    # Padding rows of the last scale band are 0.
    tail = ref.untile_scales(out.scales.cpu(), 128, experts * inter // 16, 1)[0, tokens:]
    assert (tail.view(torch.uint8) == 0).all()
    # The allocating form, decoded, is the reference within NVFP4 quantisation error.
    fresh = fp4moe.moe_dense_fc1_swiglu_nvfp4(a, b, encode, scale)
    decoded = ref.decode(fresh)[0]
    assert ref.rel_frobenius(decoded, want) < 0.1


def test_fc1_nvfp4_output_feeds_fc2(rng):
    tokens, k, experts, inter, n = 64, 256, 4, 128, 256
    a, w13, _, h = fc1_case(rng, fp4moe.NVFP4, tokens, k, experts, inter, scaled=False)
    encode = torch.full((), fp4moe.nvfp4_global_encode_scale(h.abs().max().item()), device="cuda")
    hq = fp4moe.moe_dense_fc1_swiglu_nvfp4(a, w13, encode)
    w2 = ref.to_device(ref.random_fp4((n, experts * inter), fp4moe.NVFP4, generator=rng), "cuda")
    ids, weights = random_routing(rng, tokens, experts, 2)
    alpha = fp4moe.moe_routing_alpha(ids.cuda(), weights.cuda(), experts)
    got = fp4moe.moe_dense_fc2(hq, w2, alpha, out_dtype=torch.float32)
    ref.assert_close(got, fc2_reference(hq, w2, alpha, inter), torch.float32, "fc1 -> fc2")
