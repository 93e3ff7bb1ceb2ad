"""fp4moe.cpu (the library's CPU quantizers, dequantizer and scale-layout
converter) against the torch references of fp4_reference, bit for bit; the
Fp4Tensor conveniences on CPU tensors. No GPU needed."""

import pytest

torch = pytest.importorskip("torch")

import fp4moe  # noqa: E402
import fp4_reference as ref  # noqa: E402

LAYOUTS = (fp4moe.ROW_MAJOR, fp4moe.TILED_128X4)


def random_input(shape, dtype, generator):
    """Values over many binades (so block scales vary), some exact zeros and one all-zero block."""
    x = torch.randn(shape, generator=generator) * torch.exp2(torch.randint(-6, 7, shape, generator=generator).float())
    x[..., 0, :32] = 0
    x[..., 1, 5] = 0
    return x.to(dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("groups", [None, 3])
def test_nvfp4_quantizer_matches_the_rules(rng, dtype, layout, groups):
    shape = (130, 96) if groups is None else (groups, 130, 96)
    x = random_input(shape, dtype, rng)
    q = fp4moe.cpu.quantize_nvfp4(x, scale_layout=layout)
    assert q.format == fp4moe.NVFP4 and q.scale_layout == layout and q.shape == shape
    xs = x.float().reshape(-1, 130, 96)
    scales = ref.row_major_scales(q).view(torch.uint8)
    codes = ref.unpack_e2m1_codes(q.data).reshape(-1, 130, 96)
    for grp in range(xs.shape[0]):
        g = ref.nvfp4_encode_scale(xs[grp].abs().max())
        want_codes, want_scales = ref.quantize_nvfp4_rows(xs[grp], g)
        assert torch.equal(scales[grp], want_scales)
        assert torch.equal(codes[grp], want_codes)
        assert q.global_scale.reshape(-1)[grp].item() == (1 / g).item()


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_mxfp4_quantizer_matches_the_rules(rng, dtype, layout):
    x = random_input((2, 257, 128), dtype, rng)
    q = fp4moe.cpu.quantize_mxfp4(x, scale_layout=layout)
    assert q.global_scale is None and q.groups == 2
    scales = ref.row_major_scales(q).view(torch.uint8)
    codes = ref.unpack_e2m1_codes(q.data)
    for grp in range(2):
        want_codes, want_scales = ref.quantize_mxfp4_rows(x[grp].float())
        assert torch.equal(scales[grp], want_scales)
        assert torch.equal(codes[grp], want_codes)


def test_nvfp4_caller_encode_scale(rng):
    x = random_input((64, 64), torch.float32, rng)
    q = fp4moe.cpu.quantize_nvfp4(x, encode_scale=100.0, scale_layout=fp4moe.ROW_MAJOR)
    want_codes, want_scales = ref.quantize_nvfp4_rows(x, torch.tensor(100.0))
    assert torch.equal(q.scales.view(torch.uint8), want_scales)
    assert torch.equal(ref.unpack_e2m1_codes(q.data), want_codes)
    assert q.global_scale.item() == pytest.approx(0.01, rel=1e-7)


def test_non_finite_blocks_get_the_nan_scale():
    x = torch.ones(2, 64)
    x[0, 3] = float("nan")
    x[1, 40] = float("inf")
    nv = fp4moe.cpu.quantize_nvfp4(x, scale_layout=fp4moe.ROW_MAJOR)
    assert nv.scales.view(torch.uint8)[0, 0] == 0x7F and nv.scales.view(torch.uint8)[1, 2] == 0x7F
    assert (nv.data[0, :8] == 0).all() and (nv.data[1, 16:24] == 0).all()
    mx = fp4moe.cpu.quantize_mxfp4(x, scale_layout=fp4moe.ROW_MAJOR)
    assert mx.scales[0, 0] == 0xFF and mx.scales[1, 1] == 0xFF and mx.scales[0, 1] != 0xFF
    assert torch.isnan(fp4moe.cpu.dequantize(mx)[0, :32]).all()


@pytest.mark.parametrize("fmt", [fp4moe.NVFP4, fp4moe.MXFP4])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_dequantize_is_the_exact_decode(rng, fmt, layout):
    t = ref.random_fp4((3, 200, 128), fmt, generator=rng, scale_layout=layout)
    got = fp4moe.cpu.dequantize(t)
    assert got.dtype == torch.float32 and got.shape == (3, 200, 128)
    assert torch.equal(got, ref.decode(t).float())  # the global scale rounds once, in FP32
    bf16 = fp4moe.cpu.dequantize(t, torch.bfloat16)
    assert torch.equal(bf16, ref.decode(t).float().bfloat16())


@pytest.mark.parametrize("rows, scale_cols, groups", [(1, 1, 1), (130, 6, 1), (256, 8, 3), (77, 13, 2)])
def test_scale_layout_conversion(rng, rows, scale_cols, groups):
    rm = torch.randint(0, 256, (groups, rows, scale_cols), generator=rng, dtype=torch.uint8)
    tiled = fp4moe.cpu.convert_scale_layout(rm, rows, scale_cols, fp4moe.ROW_MAJOR, fp4moe.TILED_128X4, groups=groups)
    assert torch.equal(tiled.reshape(groups, -1), ref.tile_scales(rm).reshape(groups, -1))
    want_shape = (ref.round_up(rows, 128), ref.round_up(scale_cols, 4))
    assert tiled.shape == (want_shape if groups == 1 else (groups, *want_shape))
    back = fp4moe.cpu.convert_scale_layout(tiled, rows, scale_cols, fp4moe.TILED_128X4, fp4moe.ROW_MAJOR,
                                           groups=groups)
    assert torch.equal(back.reshape(rm.shape), rm)


def test_fp4_tensor_layout_round_trip(rng):
    t = ref.random_fp4((2, 130, 64), fp4moe.NVFP4, generator=rng, scale_layout=fp4moe.ROW_MAJOR)
    tiled = t.to_tiled()
    assert tiled.scale_layout == fp4moe.TILED_128X4 and tiled.scales.dtype == torch.float8_e4m3fn
    assert tiled.data is t.data and tiled.global_scale is t.global_scale
    assert tiled.to_tiled() is tiled
    assert torch.equal(tiled.to_row_major().scales.view(torch.uint8), t.scales.view(torch.uint8))
    assert torch.equal(fp4moe.cpu.dequantize(tiled), fp4moe.cpu.dequantize(t))


def test_empty_fp4_shapes():
    t = fp4moe.empty_fp4((3, 130, 64), fp4moe.NVFP4)
    assert t.data.shape == (3, 130, 32) and t.scales.shape == (3, 256, 4) and t.global_scale.shape == (3,)
    t = fp4moe.empty_fp4((5, 96), fp4moe.MXFP4, scale_layout=fp4moe.ROW_MAJOR)
    assert t.data.shape == (5, 48) and t.scales.shape == (5, 3) and t.global_scale is None


def test_global_encode_scale():
    assert fp4moe.nvfp4_global_encode_scale(6.0) == 448.0
    assert fp4moe.nvfp4_global_encode_scale(0.0) == 1.0
    assert fp4moe.nvfp4_global_encode_scale(float("nan")) == 1.0


def test_torch_native_fp4_dtypes_are_accepted(rng):
    if not hasattr(torch, "float4_e2m1fn_x2") or not hasattr(torch, "float8_e8m0fnu"):
        pytest.skip("this torch has no float4_e2m1fn_x2 / float8_e8m0fnu")
    t = ref.random_fp4((4, 64), fp4moe.MXFP4, generator=rng, scale_layout=fp4moe.ROW_MAJOR)
    native = fp4moe.Fp4Tensor(t.data.view(torch.float4_e2m1fn_x2), t.scales.view(torch.float8_e8m0fnu),
                              scale_layout=fp4moe.ROW_MAJOR)
    assert native.format == fp4moe.MXFP4
    assert torch.equal(fp4moe.cpu.dequantize(native), fp4moe.cpu.dequantize(t))


def _prepacked_word(w: int) -> int:
    """The prepacked bit order, spelt out independently of the library
    (src/format/weight_prepack.hpp): bit b (m, e0, e1, sign) of element i goes
    to the place its raw BF16 pair reads it from: pairs 0, 1, 2 (elements
    i, i + 4) shifted left by 0, 3, 6; pair 3 gathered by
    ((w >> 8) & 0x006c006c) * (1 + 2**5 + 2**10), m from bit 14, e0 and e1
    from 10 and 11, the sign from 13 (16 higher for element 7)."""
    out = 0
    for i in range(8):
        for b in range(4):
            high = 16 if i >= 4 else 0
            target = (15 if b == 3 else 6 + b) + high
            place = {0: target, 1: target - 3, 2: target - 6}.get(i % 4, (14, 10, 11, 13)[b] + high)
            out |= ((w >> (4 * i + b)) & 1) << place
    return out


def test_prepack_weights_permutes_the_bits_of_every_word(rng):
    t = ref.random_fp4((2, 64, 256), fp4moe.NVFP4, generator=rng, scale_layout=fp4moe.TILED_128X4)
    p = fp4moe.cpu.prepack_weights(t)
    assert p.prepacked and not t.prepacked and p.scales is t.scales and "prepacked" in repr(p)
    words = t.data.contiguous().view(torch.int32).flatten().tolist()
    got = p.data.contiguous().view(torch.int32).flatten().tolist()
    assert [g & 0xFFFFFFFF for g in got] == [_prepacked_word(w & 0xFFFFFFFF) for w in words]
    same = t.data.clone()
    fp4moe.cpu.prepack_weights(fp4moe.Fp4Tensor(same, t.scales, t.global_scale, scale_layout=t.scale_layout), out=same)
    assert torch.equal(same, p.data), "in place"
    with pytest.raises(fp4moe.InvalidArgumentError, match="already prepacked"):
        fp4moe.cpu.prepack_weights(p)
    with pytest.raises(fp4moe.InvalidArgumentError, match="prepacked"):
        fp4moe.cpu.dequantize(p)
