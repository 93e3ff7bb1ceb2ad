"""The output checks of fp4_reference on CPU tensors: assert_close's FP32
bound holds over the whole output and over every row on its own, so a row
far smaller than the others cannot be wrong (or left zero) unnoticed. No
GPU needed."""

import pytest

torch = pytest.importorskip("torch")

import fp4_reference as ref  # noqa: E402


def banded(rng, shape):
    """float64 values whose rows' magnitudes span 2^18 (rows cycle through
    2^0, 2^-6, 2^-12 and 2^-18)."""
    x = torch.randn(shape, generator=rng, dtype=torch.float64)
    rows = torch.arange(shape[-2], dtype=torch.float64)
    return x * torch.exp2(-6 * (rows % 4)).unsqueeze(-1)


def test_fp32_rounding_of_the_reference_passes(rng):
    want = banded(rng, (64, 96))
    ref.assert_close(want.float(), want, torch.float32)
    ref.assert_close(want.float()[:0], want[:0], torch.float32)  # no row: nothing to compare


def test_a_small_row_left_zero_is_caught(rng):
    want = banded(rng, (64, 96))
    got = want.float()
    got[7] = 0  # a 2^-18 row: 1e-6 of the whole output's norm
    assert ref.rel_frobenius(got, want) <= 1e-5, "the whole-output bound alone would pass"
    with pytest.raises(AssertionError, match=r"^fp32 out: row 7 relative Frobenius error 1 > 1e-5; 1 of 64 rows"):
        ref.assert_close(got, want, torch.float32, "fp32 out")


def test_a_row_slightly_off_is_caught_and_named(rng):
    want = banded(rng, (3, 40, 64))
    got = want.float()
    got[1, 2] *= 1 + 3e-5
    got[2, 5] *= 1 + 2e-5
    message = r"^grouped: row \(1, 2\) relative Frobenius error (2\.99|3|3\.01)e-05 > 1e-5; 2 of 120 rows"
    with pytest.raises(AssertionError, match=message):
        ref.assert_close(got, want, torch.float32, "grouped")


def test_a_zero_reference_row_must_be_exactly_zero(rng):
    want = banded(rng, (8, 32))
    want[3] = 0
    got = want.float()
    got[3] = -0.0
    ref.assert_close(got, want, torch.float32)
    got[3, 31] = 1e-30
    with pytest.raises(AssertionError, match=r"row 3 relative Frobenius error inf > 1e-5 \(its reference is all zero"):
        ref.assert_close(got, want, torch.float32)
