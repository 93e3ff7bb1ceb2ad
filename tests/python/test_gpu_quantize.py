"""GPU quantizers, amax, dequantizer and scale-layout converter: bit-identical
to the CPU versions (themselves checked against the rules in test_cpu_ops),
into poisoned buffers, on the current stream."""

import pytest

torch = pytest.importorskip("torch")

import fp4moe  # noqa: E402
import fp4_reference as ref  # noqa: E402
from test_cpu_ops import random_input  # noqa: E402

pytestmark = pytest.mark.gpu
LAYOUTS = (fp4moe.ROW_MAJOR, fp4moe.TILED_128X4)


def poisoned_fp4(shape, fmt, layout):
    out = fp4moe.empty_fp4(shape, fmt, scale_layout=layout, device="cuda")
    out.data.fill_(0xFF)
    out.scales.view(torch.uint8).fill_(0xAB)
    if out.global_scale is not None:
        out.global_scale.fill_(float("nan"))
    return out


def assert_same_fp4(got, want):
    assert torch.equal(got.data.cpu(), want.data)
    assert torch.equal(got.scales.view(torch.uint8).cpu(), want.scales.view(torch.uint8))
    if want.global_scale is None:
        assert got.global_scale is None
    else:
        assert torch.equal(got.global_scale.cpu(), want.global_scale)


@pytest.mark.parametrize("fmt", [fp4moe.NVFP4, fp4moe.MXFP4])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("shape", [(1, 64), (130, 192), (3, 200, 128)])
def test_quantize_matches_the_cpu_quantizer(rng, fmt, dtype, layout, shape):
    for _ in range(2):  # fresh data each round
        x = random_input(shape, dtype, rng) if shape[-2] > 1 else torch.randn(shape, generator=rng).to(dtype)
        quantize = fp4moe.quantize_nvfp4 if fmt == fp4moe.NVFP4 else fp4moe.quantize_mxfp4
        cpu_quantize = fp4moe.cpu.quantize_nvfp4 if fmt == fp4moe.NVFP4 else fp4moe.cpu.quantize_mxfp4
        want = cpu_quantize(x, scale_layout=layout)
        got = quantize(x.cuda(), scale_layout=layout)
        assert_same_fp4(got, want)
        out = poisoned_fp4(shape, fmt, layout)
        assert quantize(x.cuda(), out=out) is out
        assert_same_fp4(out, want)


def test_quantize_with_a_given_encode_scale(rng):
    x = random_input((2, 128, 64), torch.bfloat16, rng)
    g = torch.tensor([300.0, 0.5])
    want = fp4moe.cpu.quantize_nvfp4(x, encode_scale=g)
    got = fp4moe.quantize_nvfp4(x.cuda(), encode_scale=g.cuda())
    assert_same_fp4(got, want)


def test_non_finite_input_matches_the_cpu():
    x = torch.ones(4, 64)
    x[0, 3], x[1, 40], x[2, 63] = float("nan"), float("inf"), -float("inf")
    for gpu, cpu in ((fp4moe.quantize_nvfp4, fp4moe.cpu.quantize_nvfp4),
                     (fp4moe.quantize_mxfp4, fp4moe.cpu.quantize_mxfp4)):
        assert_same_fp4(gpu(x.cuda()), cpu(x))


def test_compute_amax(rng):
    x = random_input((3, 70, 64), torch.float32, rng)
    x[1, 5, 7] = float("nan")
    x[2, 0, 0] = -float("inf")
    got = fp4moe.compute_amax(x.cuda())
    finite = torch.where(torch.isfinite(x), x.abs(), torch.zeros_like(x))
    assert torch.equal(got.cpu(), finite.amax(dim=(1, 2)))
    one = fp4moe.compute_amax(x[0].contiguous().bfloat16().cuda())
    assert one.shape == () and one.item() == x[0].bfloat16().float().abs().max().item()
    out = torch.full((3,), float("nan"), device="cuda")
    assert fp4moe.compute_amax(x.cuda(), out=out) is out and torch.equal(out.cpu(), got.cpu())


@pytest.mark.parametrize("fmt", [fp4moe.NVFP4, fp4moe.MXFP4])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_dequantize_matches_the_cpu(rng, fmt, layout):
    t = ref.random_fp4((2, 130, 256), fmt, generator=rng, scale_layout=layout)
    tg = fp4moe.Fp4Tensor(t.data.cuda(), t.scales.cuda(), None if t.global_scale is None else t.global_scale.cuda(),
                          scale_layout=layout)
    for dtype in (torch.float32, torch.bfloat16):
        out = torch.full(t.shape, float("nan"), dtype=dtype, device="cuda")
        assert fp4moe.dequantize(tg, out=out) is out
        assert torch.equal(out.cpu(), fp4moe.cpu.dequantize(t, dtype))
    assert fp4moe.dequantize(tg).dtype == torch.bfloat16


@pytest.mark.parametrize("rows, scale_cols, groups", [(1, 1, 1), (130, 6, 1), (256, 8, 3), (77, 13, 2)])
def test_scale_layout_conversion(rng, rows, scale_cols, groups):
    rm = torch.randint(0, 256, (groups, rows, scale_cols), generator=rng, dtype=torch.uint8)
    want = ref.tile_scales(rm)
    out = torch.full(want.shape, 0xAB, dtype=torch.uint8, device="cuda")  # padding must become 0
    fp4moe.convert_scale_layout(rm.cuda(), rows, scale_cols, fp4moe.ROW_MAJOR, fp4moe.TILED_128X4, groups=groups,
                                out=out)
    assert torch.equal(out.cpu(), want)
    back = fp4moe.convert_scale_layout(out, rows, scale_cols, fp4moe.TILED_128X4, fp4moe.ROW_MAJOR, groups=groups)
    assert torch.equal(back.cpu().reshape(rm.shape), rm)
    e4m3 = fp4moe.convert_scale_layout(rm.view(torch.float8_e4m3fn).cuda(), rows, scale_cols, fp4moe.ROW_MAJOR,
                                       fp4moe.TILED_128X4, groups=groups)
    assert e4m3.dtype == torch.float8_e4m3fn


def test_runs_on_the_current_stream(rng):
    x = random_input((256, 512), torch.bfloat16, rng)
    want = fp4moe.cpu.quantize_mxfp4(x)
    side = torch.cuda.Stream()
    xg = x.cuda()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        got = fp4moe.quantize_mxfp4(xg)
        deq = fp4moe.dequantize(got)
    side.synchronize()
    assert_same_fp4(got, want)
    assert torch.equal(deq.cpu(), fp4moe.cpu.dequantize(want, torch.bfloat16))
