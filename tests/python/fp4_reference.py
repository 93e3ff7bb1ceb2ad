"""Float references for the tests, written from DESIGN.md section 2 with
torch alone (independent of the library): E2M1/E4M3/UE8M0 decoding, the
128x4 tiled scale layout, FP4 tensors decoded to float64, the quantizer
rules, random FP4 operands and the reference GEMMs."""

import math

import torch

import fp4moe

E2M1_VALUES = torch.tensor([0, 0.5, 1, 1.5, 2, 3, 4, 6, -0.0, -0.5, -1, -1.5, -2, -3, -4, -6], dtype=torch.float64)


def block_size(fmt):
    return 16 if fmt == fp4moe.NVFP4 else 32


def round_up(x, m):
    return (x + m - 1) // m * m


# ------------------------------------------------------------- codecs ----

def unpack_e2m1_codes(data):
    """uint8 [..., K/2] -> int64 codes [..., K]; element 2i is the low nibble."""
    d = data.view(torch.uint8).to(torch.int64)
    return torch.stack([d & 15, d >> 4], dim=-1).flatten(-2)


def pack_e2m1_codes(codes):
    """int64 codes [..., K] -> uint8 [..., K/2]."""
    c = codes.reshape(*codes.shape[:-1], -1, 2)
    return (c[..., 0] | (c[..., 1] << 4)).to(torch.uint8)


def decode_e2m1(data):
    return E2M1_VALUES.to(data.device)[unpack_e2m1_codes(data)]


def decode_scales(raw, fmt):
    """Scale bytes (uint8) -> float64: E4M3 for NVFP4, 2^(e-127) (0xFF NaN) for MXFP4."""
    raw = raw.view(torch.uint8)
    if fmt == fp4moe.NVFP4:
        return raw.view(torch.float8_e4m3fn).to(torch.float32).to(torch.float64)
    v = torch.exp2(raw.to(torch.float64) - 127)
    return torch.where(raw == 255, torch.full_like(v, float("nan")), v)


def encode_e2m1(x):
    """float32 -> E2M1 codes, round to nearest even, saturating; NaN -> +6."""
    a = x.abs()
    code = ((a > 0.25).long() + (a >= 0.75).long() + (a > 1.25).long() + (a >= 1.75).long() + (a > 2.5).long()
            + (a >= 3.5).long() + (a > 5.0).long())
    code = torch.where(torch.isnan(x), torch.full_like(code, 7), code)
    return code | (torch.signbit(x) & ~torch.isnan(x)).long() * 8


def encode_e4m3(x):
    """float32 >= 0 -> E4M3 bytes, round to nearest even, saturating at 448."""
    return x.clamp(max=448.0).to(torch.float8_e4m3fn).view(torch.uint8)


# ------------------------------------------------------- scale layout ----

def tiled_offsets(rows, cols, device="cpu"):
    """offset(r, c) of the 128x4 tiled layout for a [rows, cols] scale matrix."""
    r = torch.arange(rows, device=device).unsqueeze(1)
    c = torch.arange(cols, device=device).unsqueeze(0)
    col_tiles = (cols + 3) // 4
    return (r // 128) * col_tiles * 512 + (c // 4) * 512 + (r % 32) * 16 + ((r % 128) // 32) * 4 + c % 4


def tile_scales(row_major):
    """[groups, rows, cols] row-major scale bytes -> [groups, rows', cols'] tiled, padding 0."""
    groups, rows, cols = row_major.shape
    rp, cp = round_up(rows, 128), round_up(cols, 4)
    out = torch.zeros(groups, rp * cp, dtype=torch.uint8, device=row_major.device)
    out[:, tiled_offsets(rows, cols, row_major.device).flatten()] = row_major.view(torch.uint8).reshape(groups, -1)
    return out.reshape(groups, rp, cp).view(row_major.dtype)


def untile_scales(tiled, rows, cols, groups):
    """Tiled scale bytes (any shape) -> [groups, rows, cols] row-major."""
    flat = tiled.view(torch.uint8).reshape(groups, -1)
    return flat[:, tiled_offsets(rows, cols, tiled.device).flatten()].reshape(groups, rows, cols).view(tiled.dtype)


def row_major_scales(t):
    """The scales of an Fp4Tensor as [groups, rows, K/block] bytes, whatever their layout."""
    sc = t.cols // block_size(t.format)
    if t.scale_layout == fp4moe.ROW_MAJOR:
        return t.scales.reshape(t.groups, t.rows, sc)
    return untile_scales(t.scales, t.rows, sc, t.groups)


# ------------------------------------------------------------ decoding ----

def decode(t):
    """An Fp4Tensor as float64 [groups, rows, K] (on its device)."""
    values = decode_e2m1(t.data).reshape(t.groups, t.rows, t.cols)
    scales = decode_scales(row_major_scales(t), t.format).repeat_interleave(block_size(t.format), dim=-1)
    out = values * scales
    if t.global_scale is not None:
        out = out * t.global_scale.reshape(t.groups, 1, 1).to(torch.float64)
    return out


# ---------------------------------------------------------- quantizers ----

def nvfp4_encode_scale(amax):
    """g = 448*6 / amax in float32; 1 for 0 or non-finite amax."""
    amax = torch.as_tensor(amax, dtype=torch.float32)
    g = torch.tensor(2688.0, dtype=torch.float32) / amax
    ok = (amax > 0) & torch.isfinite(amax)
    return torch.where(ok, g, torch.ones_like(g))


def quantize_nvfp4_rows(x, g):
    """float32 [rows, K] with encode scale g (float32 scalar) -> (codes, scale bytes [rows, K/16]) (finite x)."""
    blocks = x.reshape(x.shape[0], -1, 16)
    amax = blocks.abs().amax(dim=-1)
    scale = encode_e4m3((amax / 6.0) * g)
    sf = scale.view(torch.float8_e4m3fn).to(torch.float32)
    q = encode_e2m1((blocks * g) / sf.unsqueeze(-1))
    q = torch.where((scale == 0).unsqueeze(-1), torch.zeros_like(q), q)
    return q.reshape(x.shape), scale


def quantize_mxfp4_rows(x):
    """float32 [rows, K] -> (codes, UE8M0 bytes [rows, K/32]) (finite x)."""
    blocks = x.reshape(x.shape[0], -1, 32)
    amax = blocks.abs().amax(dim=-1)
    _, exponent = torch.frexp(amax)  # amax = m * 2^exponent, m in [0.5, 1)
    e = (exponent - 1 - 2).clamp(-127, 127)
    code = torch.where(amax == 0, torch.zeros_like(e), e + 127)
    inverse = torch.exp2(-(code.to(torch.float64) - 127))
    q = encode_e2m1((blocks.to(torch.float64) * inverse.unsqueeze(-1)).to(torch.float32))
    return q.reshape(x.shape), code.to(torch.uint8)


# ------------------------------------------------------ random operands ----

def random_fp4(shape, fmt, *, generator, device="cpu", scale_layout=fp4moe.TILED_128X4, integer=False, level=0):
    """A random Fp4Tensor of logical shape (rows, K) or (groups, rows, K): every
    E2M1 code, random block scales, random NVFP4 global scales. With
    `integer`: block scales 2, 4 or 8 and global scale 1, so every decoded
    value is an integer of magnitude at most 48 (E2M1 has halves) and FP32
    sums of their products are exact below 2^24 (K up to 7281). `level`
    multiplies every value by 2**level (NVFP4 through the global scales,
    MXFP4 through the block exponents)."""
    *lead, rows, cols = shape
    groups = lead[0] if lead else 1
    data = torch.randint(0, 256, (groups, rows, cols // 2), generator=generator, dtype=torch.uint8)
    sc = cols // block_size(fmt)
    if fmt == fp4moe.NVFP4:
        if integer:
            values = torch.exp2(torch.randint(1, 4, (groups, rows, sc), generator=generator).float())
        else:
            values = torch.exp2(torch.rand(groups, rows, sc, generator=generator) * 4 - 2)
        scales = values.to(torch.float8_e4m3fn)
        if integer:
            global_scale = torch.ones(groups)
        else:
            global_scale = torch.rand(groups, generator=generator) * 1.5 + 0.5
        global_scale = global_scale * 2.0 ** level
    else:
        low, high = (128, 131) if integer else (124, 131)  # 2^1..2^3 when integer
        low, high = low + level, high + level
        scales = torch.randint(low, high, (groups, rows, sc), generator=generator, dtype=torch.uint8)
        global_scale = None
    if scale_layout == fp4moe.TILED_128X4:
        scales = tile_scales(scales)
    if not lead:
        data, scales = data[0], scales[0]
        global_scale = None if global_scale is None else global_scale[0]
    move = (lambda t: None if t is None else t.to(device))
    return fp4moe.Fp4Tensor(move(data), move(scales), move(global_scale), scale_layout=scale_layout, format=fmt)


# --------------------------------------------------------- references ----

def gemm_nt(a, b):
    """float64 [M, K] x [N, K] -> [M, N]."""
    return a @ b.transpose(-1, -2)


def rel_frobenius(got, want):
    got, want = got.to(torch.float64), want.to(torch.float64)
    return (torch.linalg.vector_norm(got - want) / torch.linalg.vector_norm(want).clamp_min(1e-300)).item()


def row_rel_frobenius(got, want):
    """The relative Frobenius error of each row of an output, float64 [rows]:
    the last dimension holds the columns and every leading index names a row
    ([rows, N] or [groups, rows, N] alike, flattened in order). A row whose
    reference is all zero has error 0 when the output row is exactly zero
    too and inf otherwise."""
    got, want = got.to(torch.float64), want.to(torch.float64)
    rows = math.prod(got.shape[:-1])
    diff = torch.linalg.vector_norm((got - want).reshape(rows, got.shape[-1]), dim=-1)
    norm = torch.linalg.vector_norm(want.reshape(rows, want.shape[-1]), dim=-1)
    zero = norm == 0
    err = diff / torch.where(zero, torch.ones_like(norm), norm)
    return torch.where(zero & (diff != 0), torch.full_like(err, float("inf")), err)


def assert_close(got, want, out_dtype, what=""):
    """FP32 output: relative Frobenius error <= 1e-5 (FP32 accumulation), over
    the whole output and over each row on its own (a row is the output of an
    M = 1 call; a row whose reference is all zero must be exactly zero).
    BF16 output: each element within its rounding (2^-8 relative) plus FP32
    accumulation error (1e-5 of the output's RMS).
    `got` and `want` hold the written elements only: every row is compared."""
    want = want.to(torch.float64).to(got.device)
    assert got.shape == want.shape, f"{what}: output shape {tuple(got.shape)}, reference {tuple(want.shape)}"
    assert not torch.isnan(got).any(), f"{what}: NaN in the output (unwritten or poisoned elements)"
    if out_dtype == torch.float32:
        err = rel_frobenius(got, want)
        assert err <= 1e-5, f"{what}: relative Frobenius error {err:.3g} > 1e-5"
        rows = row_rel_frobenius(got, want)
        bad = int((rows > 1e-5).sum())
        if bad:
            worst = int(rows.argmax())
            index, rest = [], worst
            for size in reversed(got.shape[:-1]):
                rest, i = divmod(rest, size)
                index.insert(0, i)
            name = "the row" if not index else f"row {index[0]}" if len(index) == 1 else f"row {tuple(index)}"
            zero_ref = bool((want.reshape(rows.numel(), got.shape[-1])[worst] == 0).all())
            detail = " (its reference is all zero)" if zero_ref else ""
            raise AssertionError(f"{what}: {name} relative Frobenius error {rows[worst].item():.3g} > 1e-5{detail}; "
                                 f"{bad} of {rows.numel()} rows beyond 1e-5")
    else:
        rms = want.pow(2).mean().sqrt().item() if want.numel() else 0.0
        bound = 2.0**-8 * want.abs() + 1e-5 * rms + 1e-30
        excess = ((got.to(torch.float64) - want).abs() - bound).max().item() if want.numel() else -1
        assert excess <= 0, f"{what}: BF16 output beyond its rounding by {excess:.3g}"


def to_device(t, device):
    """An Fp4Tensor's tensors copied to `device`."""
    move = (lambda x: None if x is None else x.to(device))
    return fp4moe.Fp4Tensor(move(t.data), move(t.scales), move(t.global_scale), scale_layout=t.scale_layout,
                            format=t.format)


def poisoned(shape, dtype, *, pad=0):
    """A CUDA output of `shape` filled with NaN, rows `pad` elements wider than
    needed (the padding must stay NaN)."""
    full = torch.full((*shape[:-1], shape[-1] + pad), float("nan"), dtype=dtype, device="cuda")
    return full[..., : shape[-1]]
