"""Shared pytest setup: what the machine offers (torch, an sm_90 GPU) and the
markers that skip tests needing what is missing.

The tests import fp4moe from PYTHONPATH (python/ in the repository, with
FP4MOE_LIBRARY naming a built libfp4moe_c.so) or from an installed package.
"""

import ctypes
import os
import secrets
import warnings

import pytest

# The tests never read the user's tuning cache: an operation run without a
# tactic gets the heuristic's, whatever was tuned on this machine. The tuning
# tests set their own file (set_tuning_cache_path wins) or environment.
os.environ["FP4MOE_TUNING_CACHE"] = "off"

# torch without numpy says so on import; the tests do not use numpy.
warnings.filterwarnings("ignore", message="Failed to initialize NumPy")
try:
    import torch
except ImportError:
    torch = None


def gpu_reason():
    """Why GPU tests cannot run here, or None when they can."""
    if torch is None:
        return "PyTorch is not installed"
    if not torch.cuda.is_available():
        return "no CUDA device"
    major, minor = torch.cuda.get_device_capability()
    if (major, minor) != (9, 0):
        return f"the device is sm_{major}{minor}; fp4moe's kernels are compiled for sm_90a"
    return None


def driver_present():
    """Whether the CUDA driver library loads (then the no-driver tests skip)."""
    for name in ("libcuda.so.1", "libcuda.so"):
        try:
            ctypes.CDLL(name)
            return True
        except OSError:
            pass
    return False


def device_here():
    """(name, SM count) of the device a tuning-cache listing compares a file
    with: the current CUDA device where there is one (a cache for another
    device is refused there), an H200's where there is none (a listing then
    shows the file's own). None where a driver is present but PyTorch, which
    names the device, is not."""
    if torch is not None and torch.cuda.is_available():
        props = torch.cuda.get_device_properties(torch.cuda.current_device())
        return props.name, props.multi_processor_count
    if driver_present() and torch is None:
        return None
    return "NVIDIA H200", 132


def pytest_collection_modifyitems(config, items):
    reason = gpu_reason()
    # FP4MOE_TEST_REQUIRE_GPU (the device scripts set it): GPU tests that
    # cannot run are an error, not a green run of skips.
    if reason is not None and os.environ.get("FP4MOE_TEST_REQUIRE_GPU", "0") not in ("", "0") and any(
            "gpu" in item.keywords for item in items):
        raise pytest.UsageError(f"GPU tests required (FP4MOE_TEST_REQUIRE_GPU) but {reason}")
    if reason is not None:
        skip = pytest.mark.skip(reason=f"GPU test: {reason}")
        for item in items:
            if "gpu" in item.keywords:
                item.add_marker(skip)
    if any("no_driver" in item.keywords for item in items) and driver_present():
        skip = pytest.mark.skip(reason="a CUDA driver is present (this checks the no-driver error path)")
        for item in items:
            if "no_driver" in item.keywords:
                item.add_marker(skip)


def random_seed():
    """The seed of the tests' random data: FP4MOE_TEST_SEED when set (as for
    the C++ tests: decimal, or 0x hex), else a fresh 64-bit one."""
    text = os.environ.get("FP4MOE_TEST_SEED", "").strip()
    if not text:
        return secrets.randbits(64)
    try:
        seed = int(text, 0)
    except ValueError:
        raise pytest.UsageError(f"FP4MOE_TEST_SEED={text!r} is not an integer") from None
    if not 0 <= seed < 2**64:
        raise pytest.UsageError(f"FP4MOE_TEST_SEED={text!r} is not a 64-bit unsigned integer")
    return seed


def pytest_configure(config):
    random_seed()  # a malformed FP4MOE_TEST_SEED stops the run before any test


@pytest.fixture
def rng(request):
    """A fresh torch generator per test, with a fresh seed on every run
    (FP4MOE_TEST_SEED=N sets it to reproduce a failure). The seed is printed,
    so a failing test's report shows it with its captured output, and kept
    in the test's user_properties (junitxml)."""
    if torch is None:
        pytest.skip("PyTorch is not installed")
    seed = random_seed()
    request.node.user_properties.append(("seed", str(seed)))
    print(f"[ seed     ] FP4MOE_TEST_SEED={seed}")
    g = torch.Generator()
    g.manual_seed(seed)
    return g
