"""fp4moe: FP4 (NVFP4, MXFP4) block-scaled GEMMs for MoE inference on Hopper, for PyTorch.

Every operation takes torch tensors zero-copy and runs asynchronously on the
current CUDA stream of their device (no synchronisation, CUDA-graph
capturable). Packed FP4 and UE8M0 scales are torch.uint8, NVFP4 scales
torch.float8_e4m3fn, global scales torch.float32. Bad arguments raise
InvalidArgumentError (a ValueError) before anything is launched; CUDA
failures raise CudaError (a RuntimeError); messages are the C++ library's.

The library binding itself needs no PyTorch (fp4moe.library_version(),
fp4moe.abi_version(), fp4moe.gemm_tactics(), and the autotuner and its cache:
fp4moe.tune(), fp4moe.describe_tuning_cache(), ...); the operations do.
"""

from . import _capi
from .errors import CudaError, Fp4moeError, InternalError, InvalidArgumentError, LibraryError, OutOfMemoryError
from .formats import MXFP4, NVFP4, ROW_MAJOR, TILED_128X4
from .tactics import GemmTactic, gemm_tactics
from .tuning import (
    TuneProgress,
    TuneResult,
    TuneShape,
    cached_tactic,
    describe_tuning_cache,
    load_tuning_cache,
    parse_shape_list,
    print_tuning_cache,
    read_shape_list,
    reload_tuning_cache,
    set_tuning_cache_enabled,
    set_tuning_cache_path,
    tactic_space_version,
    tune,
    tune_shape_list,
    tuning_bucket,
    tuning_cache_path,
)

__version__ = _capi.version()


def library_version() -> str:
    """The version of the loaded libfp4moe_c.so."""
    return _capi.version()


def abi_version() -> int:
    """The C ABI version of the loaded libfp4moe_c.so (checked at import)."""
    return int(_capi.lib.fp4moe_abi_version())


# What needs PyTorch (imported below when it is there).
_TORCH_API = (
    "Fp4Tensor",
    "empty_fp4",
    "quantize_nvfp4",
    "quantize_mxfp4",
    "compute_amax",
    "dequantize",
    "prepack_weights",
    "nvfp4_global_encode_scale",
    "convert_scale_layout",
    "fp4_gemm_nt",
    "m_grouped_fp4_gemm_nt_contiguous",
    "m_grouped_fp4_gemm_nt_masked",
    "CONTIGUOUS_ALIGNMENT",
    "moe_dense_fc2",
    "moe_dense_fc1_swiglu",
    "moe_dense_fc1_swiglu_nvfp4",
    "moe_routing_alpha",
    "workspace_bytes",
    "release_workspace",
    "cpu",
)

try:
    import torch  # noqa: F401
except ImportError as _error:  # the binding works without torch; the operations need it
    _torch_error = _error
else:
    _torch_error = None
    from .gemm import CONTIGUOUS_ALIGNMENT, fp4_gemm_nt, m_grouped_fp4_gemm_nt_contiguous, m_grouped_fp4_gemm_nt_masked
    from .moe import moe_dense_fc1_swiglu, moe_dense_fc1_swiglu_nvfp4, moe_dense_fc2, moe_routing_alpha
    from .quantize import (compute_amax, dequantize, nvfp4_global_encode_scale, prepack_weights, quantize_mxfp4,
                           quantize_nvfp4)
    from .scale_layout import convert_scale_layout
    from .tensor import Fp4Tensor, empty_fp4
    from .workspace import release_workspace, workspace_bytes
    from . import cpu  # noqa: F401


def __getattr__(name):
    if name in _TORCH_API:
        raise ImportError(f"fp4moe.{name} needs PyTorch, which could not be imported: {_torch_error}")
    raise AttributeError(f"module 'fp4moe' has no attribute '{name}'")


__all__ = [
    "Fp4moeError", "InvalidArgumentError", "CudaError", "LibraryError", "OutOfMemoryError", "InternalError",
    "NVFP4", "MXFP4", "ROW_MAJOR", "TILED_128X4", "library_version", "abi_version",
    "GemmTactic", "gemm_tactics",
    "TuneShape", "TuneProgress", "TuneResult", "tune", "tune_shape_list", "parse_shape_list", "read_shape_list",
    "tuning_bucket", "set_tuning_cache_path", "tuning_cache_path", "set_tuning_cache_enabled", "load_tuning_cache",
    "reload_tuning_cache", "cached_tactic", "describe_tuning_cache", "print_tuning_cache", "tactic_space_version",
    *_TORCH_API,
]
