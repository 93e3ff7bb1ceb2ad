"""Names of the FP4 formats and scale layouts (DESIGN.md section 2)."""

from . import _capi

#: 16-element blocks, E4M3 block scales (torch.float8_e4m3fn), FP32 global decode scale.
NVFP4 = "nvfp4"
#: 32-element blocks, UE8M0 block scales (torch.uint8), no global scale.
MXFP4 = "mxfp4"
#: Scales [rows, K/block], row-major: the canonical layout of checkpoints.
ROW_MAJOR = "row_major"
#: The 128x4 tiled layout of cuBLASLt / TensorRT-LLM / CUTLASS / FlashInfer:
#: rows padded to 128 and scale columns to 4. GEMMs read this layout.
TILED_128X4 = "tiled128x4"

FORMATS = {NVFP4: _capi.FORMAT_NVFP4, MXFP4: _capi.FORMAT_MXFP4}
LAYOUTS = {ROW_MAJOR: _capi.SCALES_ROW_MAJOR, TILED_128X4: _capi.SCALES_TILED_128X4}


def block_size(fmt: str) -> int:
    return 16 if fmt == NVFP4 else 32


def round_up(x: int, m: int) -> int:
    return (x + m - 1) // m * m


def scale_shape(layout: str, rows: int, scale_cols: int):
    """Shape of one matrix's scales: [rows, cols] row-major, padded [rows', cols'] tiled."""
    if layout == ROW_MAJOR:
        return (rows, scale_cols)
    return (round_up(rows, 128), round_up(scale_cols, 4))


def scale_numel(layout: str, rows: int, scale_cols: int) -> int:
    r, c = scale_shape(layout, rows, scale_cols)
    return r * c
