"""The MoE operations on the GPU against float64 references: the routing
helper, FC2 over all experts (sparse alpha of any strides), FC1 with SwiGLU
in BF16 and in NVFP4 (the quantised reference), and FC1 feeding FC2."""

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
@pytest.mark.parametrize("tokens", [1, 45, 160])
def test_moe_dense_fc2(rng, fmt, out_dtype, tokens):
    experts, width, n, top_k = 8, 128, 256, 2
    a = ref.to_device(ref.random_fp4((tokens, experts * width), fmt, generator=rng), "cuda")
    b = ref.to_device(ref.random_fp4((n, experts * width), fmt, generator=rng), "cuda")
    ids, weights = random_routing(rng, tokens, experts, top_k)
    alpha = fp4moe.moe_routing_alpha(ids.cuda(), weights.cuda(), experts)
    want = fc2_reference(a, b, alpha, width)
    out = ref.poisoned((tokens, n), out_dtype, pad=8)
    assert fp4moe.moe_dense_fc2(a, b, alpha, out=out) is out
    ref.assert_close(out, want, out_dtype, f"{fmt} M={tokens}")
    # alpha stored expert-major, passed as a strided view; W given explicitly.
    alpha_t = alpha.t().contiguous().t()
    got = fp4moe.moe_dense_fc2(a, b, alpha_t, expert_width=width, out_dtype=out_dtype)
    ref.assert_close(got, want, out_dtype, "strided alpha")
    # The routing hint picks the tactic only: the same result.
    got = fp4moe.moe_dense_fc2(a, b, alpha, out_dtype=out_dtype, top_k=top_k)
    ref.assert_close(got, want, out_dtype, "top_k hint")


def fc1_case(rng, fmt, tokens, k, experts, inter, scaled):
    a = ref.to_device(ref.random_fp4((tokens, k), fmt, generator=rng), "cuda")
    b = ref.to_device(ref.random_fp4((experts, 2 * inter, k), fmt, generator=rng), "cuda")
    scale = (torch.rand(experts, generator=rng) * 1.5 + 0.5).cuda() if scaled else None
    da, db = ref.decode(a)[0], ref.decode(b)
    parts = []
    for e in range(experts):
        gate = ref.gemm_nt(da, db[e, :inter])
        up = ref.gemm_nt(da, db[e, inter:])
        parts.append(gate / (1 + torch.exp(-gate)) * up * (1.0 if scale is None else float(scale[e])))
    return a, b, scale, torch.cat(parts, dim=1)


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("tokens, k, experts, inter", [(1, 256, 1, 128), (31, 512, 3, 128), (130, 256, 2, 256)])
def test_moe_dense_fc1_swiglu_bf16(rng, fmt, tokens, k, experts, inter):
    a, b, scale, want = fc1_case(rng, fmt, tokens, k, experts, inter, scaled=tokens % 2 == 1)
    out = ref.poisoned((tokens, experts * inter), torch.bfloat16, pad=8)
    assert fp4moe.moe_dense_fc1_swiglu(a, b, scale, out=out) is out
    # silu in FP32: a few ulps beyond BF16 rounding.
    ref.assert_close(out, want, torch.bfloat16, f"{fmt} fc1")
    assert fp4moe.moe_dense_fc1_swiglu(a, b, scale).shape == (tokens, experts * inter)


@pytest.mark.parametrize("fmt", FORMATS)
def test_moe_dense_fc1_swiglu_nvfp4_is_the_quantized_reference(rng, fmt):
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
    # Codes and scales agree except where FP32 rounding straddles a boundary.
    same_scales = (out.scales.view(torch.uint8).cpu() == expect.scales.view(torch.uint8)).float().mean().item()
    same_codes = (ref.unpack_e2m1_codes(out.data.cpu()) == ref.unpack_e2m1_codes(expect.data)).float().mean().item()
    assert same_scales >= 0.99 and same_codes >= 0.99, (same_scales, same_codes)
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
