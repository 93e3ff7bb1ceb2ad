"""The binding without PyTorch and without a GPU: loading, versions, the C
error path (status codes, verbatim messages, exception types) and the CPU
quantizer reached through the raw C interface."""

import ctypes
import os
import re
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest

import fp4moe
from fp4moe import _capi, _library

REPO = Path(__file__).resolve().parents[2]


def test_versions_match_the_project():
    cmake = (REPO / "CMakeLists.txt").read_text()
    version = re.search(r"project\(fp4moe VERSION ([0-9.]+)", cmake).group(1)
    assert fp4moe.__version__ == version
    assert fp4moe.library_version() == version
    assert fp4moe.abi_version() == _capi.ABI_VERSION == 5


def import_fp4moe(prelude="", **env):
    """`import fp4moe` in a fresh interpreter after `prelude` (so a stand-in
    library never reaches this process's fp4moe); the package found here, the
    environment's FP4MOE_LIBRARY unless `env` overrides it. Returns stderr."""
    package_root = str(Path(fp4moe.__file__).resolve().parents[1])
    environment = dict(os.environ, **env)
    environment["PYTHONPATH"] = os.pathsep.join(filter(None, [package_root, os.environ.get("PYTHONPATH")]))
    done = subprocess.run([sys.executable, "-c", prelude + "\nimport fp4moe\n"], env=environment, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode != 0, "the import should have failed"
    return done.stderr


# The library as ctypes loads it but for one attribute: the real library is
# loaded (nothing is built), then `hide` is hidden (a library older than the
# package) or fp4moe_abi_version made to report `abi`.
STAND_IN = """
import ctypes
PATH, HIDE, ABI = {path!r}, {hide!r}, {abi!r}
class StandIn(ctypes.CDLL):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if self._name == PATH and ABI is not None:
            self.fp4moe_abi_version = lambda: ABI
    def __getattr__(self, name):
        if self._name == PATH and name == HIDE:
            raise AttributeError(name)
        return super().__getattr__(name)
ctypes.CDLL = StandIn
"""


def test_a_library_without_a_function_is_refused_at_import():
    path = str(_library.library_path())
    stderr = import_fp4moe(STAND_IN.format(path=path, hide="fp4moe_tactic_space_version", abi=None))
    assert (f"ImportError: fp4moe: {path} has no fp4moe_tactic_space_version: rebuild the library from the same "
            "sources as this package") in stderr, stderr


def test_a_library_of_another_abi_is_refused_at_import():
    path = str(_library.library_path())
    stderr = import_fp4moe(STAND_IN.format(path=path, hide=None, abi=_capi.ABI_VERSION - 1))
    assert (f"ImportError: fp4moe: {path} has C ABI version {_capi.ABI_VERSION - 1}, this package needs "
            f"{_capi.ABI_VERSION}") in stderr, stderr


def test_a_missing_library_is_refused_at_import(tmp_path):
    missing = tmp_path / "libfp4moe_c.so"
    stderr = import_fp4moe(FP4MOE_LIBRARY=str(missing))
    assert f"ImportError: fp4moe: {missing} not found." in stderr, stderr


@pytest.mark.skipif(shutil.which("nm") is None, reason="needs nm (binutils)")
def test_only_the_c_interface_is_exported():
    listing = subprocess.run(["nm", "-D", "--defined-only", str(_library.library_path())], check=True,
                             capture_output=True, text=True).stdout
    exported = {line.split()[-1] for line in listing.splitlines() if line.strip()}
    assert exported == set(_capi._PROTOTYPES), exported ^ set(_capi._PROTOTYPES)


def raw_message():
    return _capi.lib.fp4moe_last_error().decode()


def test_null_descriptor_is_refused_naming_the_argument():
    status = _capi.lib.fp4moe_fp4_gemm_nt(None, None, None, None, None)
    assert status == _capi.ERROR_INVALID_ARGUMENT
    assert raw_message() == "fp4_gemm_nt: argument 'a': must not be null (the fp4moe_fp4_tensor descriptor)"


def test_library_validation_reaches_python_verbatim():
    a = _capi.Fp4(format=_capi.FORMAT_MXFP4, scale_layout=_capi.SCALES_TILED_128X4, rows=4, cols=64, groups=1)
    d = _capi.Matrix(dtype=_capi.DTYPE_BF16, rows=4, cols=4, col_stride=1, groups=1)
    with pytest.raises(fp4moe.InvalidArgumentError) as err:
        _capi.call("fp4moe_fp4_gemm_nt", a, a, d, None, None)
    assert str(err.value) == "fp4_gemm_nt: argument 'a.data': must not be null"
    assert str(err.value) == raw_message()
    assert isinstance(err.value, ValueError) and isinstance(err.value, fp4moe.Fp4moeError)


def test_unknown_enum_codes_are_refused():
    a = _capi.Fp4(format=7, scale_layout=0, rows=1, cols=32, groups=1)
    with pytest.raises(fp4moe.InvalidArgumentError, match=r"^dequantize: argument 'src.format': must be "):
        _capi.call("fp4moe_dequantize", a, _capi.Matrix(), None)
    m = _capi.Matrix(dtype=42)
    with pytest.raises(fp4moe.InvalidArgumentError, match=r"argument 'src.dtype': .* \(got 42\)"):
        _capi.call("fp4moe_compute_amax", m, None, None)
    with pytest.raises(fp4moe.InvalidArgumentError, match=r"^convert_scale_layout: argument 'dst_layout'"):
        _capi.call("fp4moe_convert_scale_layout", None, 0, None, 9, 1, 1, 1, None)


def test_last_error_is_per_thread():
    _capi.lib.fp4moe_fp4_gemm_nt(None, None, None, None, None)
    mine = raw_message()
    seen = []

    def other():
        seen.append(raw_message())
        _capi.lib.fp4moe_moe_routing_alpha(None, None, 1, None, None, None)
        seen.append(raw_message())

    t = threading.Thread(target=other)
    t.start()
    t.join()
    assert seen[0] == ""
    assert seen[1] == "moe_routing_alpha: argument 'alpha': must not be null (the fp4moe_matrix descriptor)"
    assert raw_message() == mine


@pytest.mark.no_driver
def test_cuda_failure_is_a_cuda_error():
    # Valid arguments (host memory is never touched: the first CUDA call fails).
    x = (ctypes.c_float * 64)()
    amax = ctypes.c_float()
    src = _capi.Matrix(data=ctypes.addressof(x), dtype=_capi.DTYPE_FP32, rows=2, cols=32, col_stride=1, groups=1)
    with pytest.raises(fp4moe.CudaError) as err:
        _capi.call("fp4moe_compute_amax", src, ctypes.addressof(amax), None)
    assert isinstance(err.value, RuntimeError)
    assert err.value.cuda_error != 0
    assert "failed: cuda" in str(err.value)


def test_cpu_quantizer_through_the_c_interface():
    # One MXFP4 block: amax 6 -> shared exponent floor(log2 6) - 2 = 0 (code 127),
    # elements are their own E2M1 codes.
    values = [0, 0.5, 1, 1.5, 2, 3, 4, 6, -0.0, -0.5, -1, -1.5, -2, -3, -4, -6] * 2
    x = (ctypes.c_float * 32)(*values)
    data = (ctypes.c_uint8 * 16)()
    scale = (ctypes.c_uint8 * 1)()
    src = _capi.Matrix(data=ctypes.addressof(x), dtype=_capi.DTYPE_FP32, rows=1, cols=32, col_stride=1, groups=1)
    dst = _capi.Fp4(data=ctypes.addressof(data), scales=ctypes.addressof(scale), format=_capi.FORMAT_MXFP4,
                    scale_layout=_capi.SCALES_ROW_MAJOR, rows=1, cols=32, groups=1)
    _capi.call("fp4moe_cpu_quantize_mxfp4", src, dst)
    assert scale[0] == 127
    codes = [v for byte in data for v in (byte & 15, byte >> 4)]
    assert codes == list(range(16)) * 2


def test_global_encode_scale():
    assert _capi.lib.fp4moe_nvfp4_global_encode_scale(6.0) == 448.0
    assert _capi.lib.fp4moe_nvfp4_global_encode_scale(2688.0) == 1.0
    assert _capi.lib.fp4moe_nvfp4_global_encode_scale(0.0) == 1.0
    assert _capi.lib.fp4moe_nvfp4_global_encode_scale(float("inf")) == 1.0


def test_tactics_are_listed_and_named():
    for fmt in (fp4moe.NVFP4, fp4moe.MXFP4):
        for layout in ("dense", "contiguous", "masked", "moe_dense", "moe_fc1"):
            tactics = fp4moe.gemm_tactics(fmt, layout)
            assert tactics, (fmt, layout)
            for t in tactics:
                assert t.split_k == 1
                # (swap-AB with 8 tokens a tile outside the gather layout: the CUDA-core route)
                dp4a = t.swap_ab and not t.moe_gather and not t.fp8 and t.block_n == 8
                kind = ("gather" if t.moe_gather else "dp4a" if dp4a else "swapAB" if t.swap_ab else "fp8" if t.fp8
                        else "cluster2" if t.cluster == 2 else "direct")
                assert t.name == f"{kind} bn{t.block_n} bk{t.block_k} st{t.stages} sk1"
                assert not dp4a or layout in ("dense", "contiguous", "masked")
                assert not t.moe_gather or layout == "moe_dense"
                assert not t.fp8 or (fmt == fp4moe.MXFP4 and layout in ("dense", "contiguous", "masked", "moe_dense"))
                assert t.cluster == 1 or layout in ("dense", "contiguous")
    with pytest.raises(fp4moe.InvalidArgumentError, match="gemm_tactics: argument 'layout'"):
        fp4moe.gemm_tactics(fp4moe.NVFP4, "sparse")
    with pytest.raises(fp4moe.InvalidArgumentError, match="gemm_tactics: argument 'format'"):
        fp4moe.gemm_tactics("fp8", "dense")
    count = ctypes.c_int32()
    assert _capi.lib.fp4moe_gemm_tactics(0, 9, None, 0, ctypes.byref(count)) == _capi.ERROR_INVALID_ARGUMENT
    assert raw_message().startswith("gemm_tactics: argument 'layout'")
