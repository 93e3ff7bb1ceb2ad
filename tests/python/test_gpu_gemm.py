"""The GEMMs on the GPU against the float64 reference of the decoded
operands: fresh random data, random scales, poisoned outputs (padding that
must stay unwritten), both formats and output types, every compiled tactic,
row-major operands converted on the fly."""

import dataclasses

import pytest

torch = pytest.importorskip("torch")

import fp4moe  # noqa: E402
import fp4_reference as ref  # noqa: E402

pytestmark = pytest.mark.gpu
FORMATS = (fp4moe.NVFP4, fp4moe.MXFP4)
OUT_DTYPES = (torch.bfloat16, torch.float32)


def operands(rng, a_shape, b_shape, fmt, **kw):
    a = ref.to_device(ref.random_fp4(a_shape, fmt, generator=rng, **kw), "cuda")
    b = ref.to_device(ref.random_fp4(b_shape, fmt, generator=rng, **kw), "cuda")
    return a, b


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("out_dtype", OUT_DTYPES)
@pytest.mark.parametrize("m, n, k", [(1, 256, 256), (77, 200, 512), (256, 384, 1024)])
def test_dense(rng, fmt, out_dtype, m, n, k):
    for _ in range(2):
        a, b = operands(rng, (m, k), (n, k), fmt)
        want = ref.gemm_nt(ref.decode(a)[0], ref.decode(b)[0])
        out = ref.poisoned((m, n), out_dtype, pad=8)
        assert fp4moe.fp4_gemm_nt(a, b, out=out) is out
        torch.cuda.synchronize()
        ref.assert_close(out, want, out_dtype, f"{fmt} {m}x{n}x{k}")
        assert torch.isnan(out.as_strided((m, 8), (out.stride(0), 1), n)).all(), "row padding written"
        fresh = fp4moe.fp4_gemm_nt(a, b, out_dtype=out_dtype)
        assert fresh.dtype == out_dtype and fresh.shape == (m, n)
        ref.assert_close(fresh, want, out_dtype, "allocated output")


@pytest.mark.parametrize("fmt", FORMATS)
def test_integer_valued_data_is_exact(rng, fmt):
    """Integer operands under block scales 2, 4 and 8: every partial sum is an
    integer below 2^24, so FP32 accumulation in any order (and split-K, and
    the scales applied as powers of two) gives the float64 result exactly."""
    a, b = operands(rng, (100, 512), (300, 512), fmt, integer=True)
    da, db = ref.decode(a)[0], ref.decode(b)[0]
    scales = torch.cat([ref.decode_scales(ref.row_major_scales(t), fmt).flatten() for t in (a, b)])
    assert set(scales.unique().tolist()) == {2.0, 4.0, 8.0}, "block scales are 2, 4 and 8, none 1"
    assert torch.equal(da, da.round()) and torch.equal(db, db.round()), "decoded values are integers"
    assert da.abs().max() > 6 and db.abs().max() > 6, "values beyond the unscaled E2M1 range"
    assert ref.gemm_nt(da.abs(), db.abs()).max() < 2**24, "every partial sum exact in FP32"
    want = ref.gemm_nt(da, db)
    got = fp4moe.fp4_gemm_nt(a, b, out_dtype=torch.float32)
    assert torch.equal(got.double(), want)


@pytest.mark.parametrize("fmt", FORMATS)
def test_row_major_operands_are_converted(rng, fmt):
    a, b = operands(rng, (130, 256), (256, 256), fmt, scale_layout=fp4moe.ROW_MAJOR)
    got = fp4moe.fp4_gemm_nt(a, b, out_dtype=torch.float32)
    tiled = fp4moe.fp4_gemm_nt(a.to_tiled(), b.to_tiled(), out_dtype=torch.float32)
    assert torch.equal(got, tiled)
    ref.assert_close(got, ref.gemm_nt(ref.decode(a)[0], ref.decode(b)[0]), torch.float32)


@pytest.mark.parametrize("fmt", FORMATS)
def test_every_compiled_tactic(rng, fmt):
    a, b = operands(rng, (96, 512), (384, 512), fmt)
    want = ref.gemm_nt(ref.decode(a)[0], ref.decode(b)[0])
    ran_split = 0
    for tactic in fp4moe.gemm_tactics(fmt, "dense"):
        for split in (1, 2):
            t = dataclasses.replace(tactic, split_k=split)  # keeps every other field (fp8, cluster)
            out = ref.poisoned((96, 384), torch.float32)
            try:
                fp4moe.fp4_gemm_nt(a, b, out=out, tactic=t)
            except fp4moe.InvalidArgumentError as e:
                assert split == 2 and ("compiled without split-K" in str(e) or "takes no fixed split" in str(e)), str(e)
                assert torch.isnan(out).all()
                continue
            ran_split += split == 2
            ref.assert_close(out, want, torch.float32, t.name)
    assert ran_split > 0


def contiguous_case(rng, fmt, expert_rows, n, k):
    align = fp4moe.CONTIGUOUS_ALIGNMENT
    ids = []
    for e, rows in enumerate(expert_rows):
        ids += [e] * rows + [-1] * (ref.round_up(rows, align) - rows)
    m = len(ids)
    a, b = operands(rng, (m, k), (len(expert_rows), n, k), fmt)
    m_indices = torch.tensor(ids, dtype=torch.int32)
    da, db = ref.decode(a)[0], ref.decode(b)
    want = torch.zeros(m, n, dtype=torch.float64, device="cuda")
    for e in range(len(expert_rows)):
        rows = (m_indices == e).cuda()
        want[rows] = ref.gemm_nt(da[rows], db[e])
    return a, b, m_indices.cuda(), want


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("out_dtype", OUT_DTYPES)
def test_grouped_contiguous(rng, fmt, out_dtype):
    for expert_rows in ([5, 0, 130, 128], [1], [200, 3, 77]):
        a, b, m_indices, want = contiguous_case(rng, fmt, expert_rows, 256, 256)
        out = ref.poisoned(want.shape, out_dtype)
        fp4moe.m_grouped_fp4_gemm_nt_contiguous(a, b, m_indices, out=out)
        ref.assert_close(out, want, out_dtype, f"experts {expert_rows}")
        padding = m_indices == -1
        assert padding.any(), "the case has padding rows"
        assert (out[padding] == 0).all(), f"experts {expert_rows}: padding rows (m_indices -1) not written as 0"


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("out_dtype", OUT_DTYPES)
def test_grouped_masked(rng, fmt, out_dtype):
    groups, max_m, n, k = 4, 96, 256, 512
    for masked in ([0, 96, 1, 50], [96, 96, 96, 96], [3, 0, 0, 7]):
        a, b = operands(rng, (groups, max_m, k), (groups, n, k), fmt)
        masked_m = torch.tensor(masked, dtype=torch.int32, device="cuda")
        want = ref.gemm_nt(ref.decode(a), ref.decode(b))
        out = ref.poisoned((groups, max_m, n), out_dtype, pad=4)
        fp4moe.m_grouped_fp4_gemm_nt_masked(a, b, masked_m, expected_m=max(1, sum(masked) // groups), out=out)
        for g, rows in enumerate(masked):
            ref.assert_close(out[g, :rows], want[g, :rows], out_dtype, f"group {g}")
            assert torch.isnan(out[g, rows:]).all(), f"group {g}: rows past masked_m written"


@pytest.mark.parametrize("fmt", FORMATS)
def test_prepacked_weights_give_the_same_products(rng, fmt):
    """prepack_weights: dense (decode and prefill shapes) and masked, the
    heuristic's tactic on the prepacked weights against the standard ones."""
    for m, n, k in [(8, 512, 1024), (300, 512, 1024)]:
        a, b = operands(rng, (m, k), (n, k), fmt)
        p = fp4moe.prepack_weights(b)
        assert p.prepacked and not torch.equal(p.data, b.data)
        assert torch.equal(fp4moe.fp4_gemm_nt(a, p, out_dtype=torch.float32),
                           fp4moe.fp4_gemm_nt(a, b, out_dtype=torch.float32)), f"{fmt} {m}x{n}x{k}"
    a, b = operands(rng, (3, 64, 512), (3, 256, 512), fmt)
    masked_m = torch.tensor([64, 1, 0], dtype=torch.int32, device="cuda")
    want = fp4moe.m_grouped_fp4_gemm_nt_masked(a, b, masked_m, expected_m=64, out_dtype=torch.float32)
    got = fp4moe.m_grouped_fp4_gemm_nt_masked(a, fp4moe.prepack_weights(b), masked_m, expected_m=64,
                                               out_dtype=torch.float32)
    assert torch.equal(got[0], want[0]) and torch.equal(got[1, :1], want[1, :1])
