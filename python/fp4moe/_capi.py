"""The raw C interface (include/fp4moe/fp4moe_c.h) through ctypes.

Nothing here knows about PyTorch: descriptors hold raw addresses, dtype codes,
shapes and element strides, and ``call`` turns a failed status into the
matching exception carrying the library's message verbatim.
"""

import ctypes
from ctypes import POINTER, c_char_p, c_float, c_int32, c_int64, c_void_p

from . import _library
from .errors import CudaError, Fp4moeError, InternalError, InvalidArgumentError, LibraryError, OutOfMemoryError

#: The FP4MOE_C_ABI_VERSION this package was written for.
ABI_VERSION = 5

# fp4moe_status
OK, ERROR_INVALID_ARGUMENT, ERROR_CUDA, ERROR_OUT_OF_MEMORY, ERROR_LIBRARY, ERROR_INTERNAL = range(6)
# fp4moe_dtype
DTYPE_E2M1X2, DTYPE_E4M3, DTYPE_UE8M0, DTYPE_BF16, DTYPE_FP32, DTYPE_I32 = range(6)
# fp4moe_format
FORMAT_NVFP4, FORMAT_MXFP4 = range(2)
# fp4moe_scale_layout
SCALES_ROW_MAJOR, SCALES_TILED_128X4 = range(2)
# fp4moe_gemm_layout (also the operation of a tuning problem)
LAYOUT_DENSE, LAYOUT_CONTIGUOUS, LAYOUT_MASKED, LAYOUT_MOE_DENSE, LAYOUT_MOE_FC1 = range(5)
# fp4moe_gemm_output
OUTPUT_BF16, OUTPUT_FP32, OUTPUT_NVFP4 = range(3)


class Matrix(ctypes.Structure):
    """fp4moe_matrix (fp4moe::MatrixView)."""

    _fields_ = [
        ("data", c_void_p),
        ("dtype", c_int32),
        ("rows", c_int64),
        ("cols", c_int64),
        ("row_stride", c_int64),
        ("col_stride", c_int64),
        ("groups", c_int64),
        ("group_stride", c_int64),
    ]


class Fp4(ctypes.Structure):
    """fp4moe_fp4_tensor (fp4moe::Fp4Tensor)."""

    _fields_ = [
        ("data", c_void_p),
        ("scales", c_void_p),
        ("global_scale", c_void_p),
        ("format", c_int32),
        ("scale_layout", c_int32),
        ("rows", c_int64),
        ("cols", c_int64),
        ("groups", c_int64),
        ("prepacked", c_int32),
    ]


class Tactic(ctypes.Structure):
    """fp4moe_tactic (fp4moe::GemmTactic)."""

    _fields_ = [
        ("swap_ab", c_int32),
        ("block_n", c_int32),
        ("block_k", c_int32),
        ("stages", c_int32),
        ("split_k", c_int32),
        ("moe_gather", c_int32),
        ("fp8", c_int32),
        ("cluster", c_int32),
    ]


class TuneShape(ctypes.Structure):
    """fp4moe_tune_shape (fp4moe::TuneShape)."""

    _fields_ = [
        ("op", c_int32),
        ("format", c_int32),
        ("out", c_int32),
        ("top_k", c_int32),
        ("m", c_int64),
        ("n", c_int64),
        ("k", c_int64),
        ("groups", c_int64),
        ("expert_width", c_int64),
    ]


#: fp4moe_tune_progress_fn: (shape_index, shapes, tactics_done, tactics, elapsed_s, user) -> non-zero stops.
TUNE_PROGRESS = ctypes.CFUNCTYPE(c_int32, c_int64, c_int64, c_int64, c_int64, ctypes.c_double, c_void_p)


class TuneOptions(ctypes.Structure):
    """fp4moe_tune_options (fp4moe::TuneOptions)."""

    _fields_ = [
        ("warmup", c_int32),
        ("reps", c_int32),
        ("cold_l2", c_int32),
        ("write_cache", c_int32),
        ("max_m", c_int64),
        ("cache_path", c_char_p),
        ("progress", TUNE_PROGRESS),
        ("progress_user", c_void_p),
    ]


class TuneResult(ctypes.Structure):
    """fp4moe_tune_result."""

    _fields_ = [
        ("bucket", c_int64),
        ("ok", c_int32),
        ("candidates", c_int32),
        ("unusable", c_int32),
        ("best", Tactic),
        ("best_us", ctypes.c_double),
        ("heuristic", Tactic),
        ("heuristic_us", ctypes.c_double),
    ]


_M, _F, _T = POINTER(Matrix), POINTER(Fp4), POINTER(Tactic)
_I64P = POINTER(c_int64)
_I32P = c_void_p  # device int32 arrays travel as addresses
_FP = c_void_p    # so do float pointers (device or host)

_PROTOTYPES = {
    "fp4moe_abi_version": (c_int32, []),
    "fp4moe_version": (c_char_p, []),
    "fp4moe_last_error": (c_char_p, []),
    "fp4moe_last_cuda_error": (c_int32, []),
    "fp4moe_contiguous_alignment": (c_int32, []),
    "fp4moe_workspace_bytes": (c_int32, [c_void_p, POINTER(ctypes.c_uint64)]),
    "fp4moe_release_workspace": (c_int32, [c_void_p, POINTER(ctypes.c_uint64)]),
    "fp4moe_nvfp4_global_encode_scale": (c_float, [c_float]),
    "fp4moe_quantize_nvfp4": (c_int32, [_M, _F, _FP, c_void_p]),
    "fp4moe_quantize_mxfp4": (c_int32, [_M, _F, c_void_p]),
    "fp4moe_compute_amax": (c_int32, [_M, _FP, c_void_p]),
    "fp4moe_dequantize": (c_int32, [_F, _M, c_void_p]),
    "fp4moe_prepack_weights": (c_int32, [_F, c_void_p, c_void_p]),
    "fp4moe_convert_scale_layout": (c_int32, [c_void_p, c_int32, c_void_p, c_int32, c_int64, c_int64, c_int64, c_void_p]),
    "fp4moe_cpu_quantize_nvfp4": (c_int32, [_M, _F, _FP]),
    "fp4moe_cpu_quantize_mxfp4": (c_int32, [_M, _F]),
    "fp4moe_cpu_dequantize": (c_int32, [_F, _M]),
    "fp4moe_cpu_prepack_weights": (c_int32, [_F, c_void_p]),
    "fp4moe_cpu_convert_scale_layout": (c_int32, [c_void_p, c_int32, c_void_p, c_int32, c_int64, c_int64, c_int64]),
    "fp4moe_fp4_gemm_nt": (c_int32, [_F, _F, _M, _T, c_void_p]),
    "fp4moe_m_grouped_fp4_gemm_nt_contiguous": (c_int32, [_F, _F, _M, _I32P, _T, c_void_p]),
    "fp4moe_m_grouped_fp4_gemm_nt_masked": (c_int32, [_F, _F, _M, _I32P, c_int32, _T, c_void_p]),
    "fp4moe_moe_dense_fc2": (c_int32, [_F, _F, _M, c_int32, _M, _T, c_void_p]),
    "fp4moe_moe_dense_fc2_topk": (c_int32, [_F, _F, _M, c_int32, c_int32, _M, _T, c_void_p]),
    "fp4moe_moe_dense_fc1_swiglu": (c_int32, [_F, _F, _FP, _M, _T, c_void_p]),
    "fp4moe_moe_dense_fc1_swiglu_nvfp4": (c_int32, [_F, _F, _FP, _F, _FP, _T, c_void_p]),
    "fp4moe_moe_routing_alpha": (c_int32, [_I32P, _FP, c_int32, _FP, _M, c_void_p]),
    "fp4moe_gemm_tactics": (c_int32, [c_int32, c_int32, _T, c_int32, POINTER(c_int32)]),
    "fp4moe_tactic_name": (c_int32, [_T, c_char_p, c_int32]),
    "fp4moe_tune_options_default": (c_int32, [POINTER(TuneOptions)]),
    "fp4moe_tune": (c_int32, [POINTER(TuneShape), c_int32, POINTER(TuneOptions), POINTER(TuneResult)]),
    "fp4moe_parse_shape_list": (c_int32, [c_char_p, c_char_p, c_int64, POINTER(TuneShape), c_int32, POINTER(c_int32)]),
    "fp4moe_tuning_bucket": (c_int32, [c_int64, c_int64, _I64P]),
    "fp4moe_set_tuning_cache_path": (c_int32, [c_char_p]),
    "fp4moe_tuning_cache_path": (c_int32, [c_char_p, c_int64, _I64P]),
    "fp4moe_set_tuning_cache_enabled": (c_int32, [c_int32]),
    "fp4moe_load_tuning_cache": (c_int32, [_I64P]),
    "fp4moe_reload_tuning_cache": (c_int32, []),
    "fp4moe_cached_tactic": (c_int32, [POINTER(TuneShape), _T, POINTER(c_int32)]),
    "fp4moe_describe_tuning_cache": (c_int32, [c_char_p, c_char_p, c_int64, _I64P]),
    "fp4moe_tactic_space_version": (c_int32, [c_char_p, c_int64, _I64P]),
}


def _bind(lib: ctypes.CDLL) -> ctypes.CDLL:
    for name, (restype, argtypes) in _PROTOTYPES.items():
        try:
            fn = getattr(lib, name)
        except AttributeError:  # a library older than the package (functions come without an ABI bump)
            raise ImportError(f"fp4moe: {_library.library_path()} has no {name}: rebuild the library from the same "
                              "sources as this package") from None
        fn.restype = restype
        fn.argtypes = argtypes
    return lib


lib = _bind(_library.load())

if lib.fp4moe_abi_version() != ABI_VERSION:
    raise ImportError(
        f"fp4moe: {_library.library_path()} has C ABI version {lib.fp4moe_abi_version()}, "
        f"this package needs {ABI_VERSION}: rebuild the library from the same sources"
    )

_ERRORS = {
    ERROR_INVALID_ARGUMENT: InvalidArgumentError,
    ERROR_OUT_OF_MEMORY: OutOfMemoryError,
    ERROR_LIBRARY: LibraryError,
    ERROR_INTERNAL: InternalError,
}


def error_for(status: int) -> Fp4moeError:
    """The exception for a failed status, with this thread's last error message."""
    message = (lib.fp4moe_last_error() or b"").decode("utf-8", errors="replace")
    if status == ERROR_CUDA:
        return CudaError(message, lib.fp4moe_last_cuda_error())
    return _ERRORS.get(status, InternalError)(message or f"fp4moe: unknown status {status}")


def call(name: str, *args) -> None:
    """Calls C function `name`; raises the library's error if it fails."""
    status = getattr(lib, name)(*args)
    if status != OK:
        raise error_for(status)


def version() -> str:
    return lib.fp4moe_version().decode()


def string(name: str, *args) -> str:
    """Calls a C function that returns a string through (buf, size, *length)
    after `args`, growing the buffer until the whole string fits."""
    length = c_int64(0)
    call(name, *args, None, 0, ctypes.byref(length))
    while True:
        buf = ctypes.create_string_buffer(length.value + 1)
        call(name, *args, buf, len(buf), ctypes.byref(length))
        if length.value < len(buf):  # it did not grow in between (a file being rewritten can)
            return buf.value.decode("utf-8", errors="replace")
