"""The autotuner's Python binding without a GPU: buckets, shape lists, where
the cache lives (API over environment), listings of good, refused, corrupt and
truncated cache files, and the refusal of bad arguments before any GPU work."""

import ctypes
import dataclasses
import json
import os
import re

import pytest

import fp4moe
from conftest import device_here
from fp4moe import _capi

H200 = "NVIDIA H200"


@pytest.fixture
def cache_env(monkeypatch, tmp_path):
    """A clean cache setting: no API override, no FP4MOE_TUNING_CACHE, HOME
    and XDG_CACHE_HOME under tmp_path; the override is reset afterwards."""
    monkeypatch.delenv("FP4MOE_TUNING_CACHE", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    fp4moe.set_tuning_cache_path(None)
    yield tmp_path
    fp4moe.set_tuning_cache_path(None)


def cache_document(entries, *, version=None, tactic_space=None, device=H200, sm_count=132):
    """A cache file as the library writes it (src/tuning/tuning_cache.hpp)."""
    return {
        "fp4moe_tuning_cache": 1,
        "library_version": version or fp4moe.library_version(),
        "tactic_space": tactic_space or fp4moe.tactic_space_version(),
        "device": device,
        "sm_count": sm_count,
        "entries": entries,
    }


def masked_entry(bucket, tactic, **extra):
    entry = {
        "op": "masked", "format": "nvfp4", "out": "bf16", "groups": 8, "n": 4096, "k": 7168, "bucket": bucket,
        "tactic": {"swap_ab": tactic.swap_ab, "block_n": tactic.block_n, "block_k": tactic.block_k,
                   "stages": tactic.stages, "split_k": tactic.split_k},
        "median_us": 41.5, "heuristic_us": 44.0, "candidates": 13, "unusable": [],
    }
    entry.update(extra)
    return entry


def a_tactic():
    return fp4moe.gemm_tactics(fp4moe.NVFP4, "masked")[-1]


# ------------------------------------------------------------ buckets ----

def test_buckets_1_2_4_then_every_8_below_128_then_every_128_up_to_the_maximum():
    assert [fp4moe.tuning_bucket(m) for m in range(1, 5)] == [1, 2, 4, 4]
    for m in range(5, 129):
        assert fp4moe.tuning_bucket(m) == (m + 7) // 8 * 8, m
    for m in range(129, 8193, 41):
        assert fp4moe.tuning_bucket(m) == (m + 127) // 128 * 128, m
    assert fp4moe.tuning_bucket(0) == 1  # m < 1 counts as 1
    assert fp4moe.tuning_bucket(8192) == 8192
    assert fp4moe.tuning_bucket(8193) == 0, "past the maximum the heuristic decides"
    assert fp4moe.tuning_bucket(8193, max_m=16384) == 8320
    assert fp4moe.tuning_bucket(1025, max_m=1024) == 0


def test_bucket_maximum_is_checked():
    with pytest.raises(fp4moe.InvalidArgumentError, match=r"^tuning_bucket: argument 'max_m': must be a multiple of 128"):
        fp4moe.tuning_bucket(5, max_m=1000)
    with pytest.raises(fp4moe.InvalidArgumentError, match=r"^tuning_bucket: argument 'm': must be an int"):
        fp4moe.tuning_bucket(5.0)


# -------------------------------------------------------- shape lists ----

def test_shape_list_one_shape_per_bucket():
    shapes = fp4moe.parse_shape_list(
        "# decode\n"
        "masked  mxfp4 bf16 groups=8 m=1-64 n=4096 k=7168\n"
        "\n"
        "moe_fc2 nvfp4 fp32 experts=256 width=256 m=300 n=7168 top_k=8  # prefill\n"
        "moe_fc1 nvfp4 nvfp4 experts=8 m=all n=512 k=1024\n",
        max_m=1024)
    masked, rest = shapes[:11], shapes[11:]
    assert [s.m for s in masked] == [1, 2, 4, 8, 16, 24, 32, 40, 48, 56, 64]
    assert all(s == fp4moe.TuneShape("masked", "mxfp4", s.m, 4096, 7168, groups=8) for s in masked)
    assert rest[0] == fp4moe.TuneShape("moe_fc2", "nvfp4", 300, 7168, 65536, groups=256, out="fp32", expert_width=256,
                                       top_k=8), "k filled in from E*W"
    fc1 = rest[1:]
    assert len(fc1) == 3 + 16 + 7 and fc1[-1].m == 1024, "m=all: every bucket up to max_m"
    assert all(s.op == "moe_fc1" and s.out == "nvfp4" for s in fc1)


def test_shape_list_errors_name_the_line_and_the_rule(tmp_path):
    bad = tmp_path / "shapes.txt"
    bad.write_text("dense nvfp4 bf16 m=64 n=256 k=256\n# ok so far\ndense nvfp4 bf16 m=64 n=256 k=250\n")
    with pytest.raises(fp4moe.InvalidArgumentError) as err:
        fp4moe.read_shape_list(bad)
    assert str(err.value).startswith(f"parse_shape_list: argument 'text': {bad}:3: k must be a multiple of 32")
    for path in (None, 7):  # (not a TypeError from open())
        with pytest.raises(fp4moe.InvalidArgumentError, match="^read_shape_list: argument 'path': must be a str"):
            fp4moe.read_shape_list(path)
    for line, rule in [("sparse nvfp4 bf16 m=1 n=256 k=256", "unknown op"),
                       ("dense nvfp4 bf16 m=9000 n=256 k=256", "max_m"),
                       ("masked nvfp4 bf16 m=8 n=256 k=256 groups=2 colour=red", "unknown key")]:
        with pytest.raises(fp4moe.InvalidArgumentError, match="list:1: .*" + rule):
            fp4moe.parse_shape_list(line, name="list")
    with pytest.raises(fp4moe.InvalidArgumentError, match="argument 'max_m'"):
        fp4moe.parse_shape_list("", max_m=100)
    # ctypes would wrap a value past int64 into a small valid one.
    with pytest.raises(fp4moe.InvalidArgumentError, match="argument 'max_m': must fit 64 bits"):
        fp4moe.parse_shape_list("", max_m=2**64 + 1024)
    assert fp4moe.parse_shape_list("# nothing\n") == []


def test_shape_list_text_and_name_are_str():
    # Without these checks, .encode() would fail with an AttributeError.
    with pytest.raises(fp4moe.InvalidArgumentError,
                       match=r"^parse_shape_list: argument 'text': must be a str \(got bytes\)"):
        fp4moe.parse_shape_list(b"dense nvfp4 bf16 m=64 n=256 k=256\n")
    with pytest.raises(fp4moe.InvalidArgumentError,
                       match=r"^parse_shape_list: argument 'name': must be a str \(got NoneType\)"):
        fp4moe.parse_shape_list("", name=None)


# --------------------------------------------------- where it lives ----

def test_default_location_environment_and_api(cache_env, monkeypatch):
    home = cache_env / "home"
    assert fp4moe.tuning_cache_path() == f"{home}/.cache/fp4moe/tuning.json"
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache_env / "xdg"))
    assert fp4moe.tuning_cache_path() == f"{cache_env}/xdg/fp4moe/tuning.json"
    monkeypatch.setenv("FP4MOE_TUNING_CACHE", str(cache_env / "env.json"))
    assert fp4moe.tuning_cache_path() == str(cache_env / "env.json")
    fp4moe.set_tuning_cache_path(cache_env / "api.json")  # the API wins over the environment
    assert fp4moe.tuning_cache_path() == str(cache_env / "api.json")
    fp4moe.set_tuning_cache_path(None)
    assert fp4moe.tuning_cache_path() == str(cache_env / "env.json")
    monkeypatch.setenv("FP4MOE_TUNING_CACHE", "off")
    assert fp4moe.tuning_cache_path() is None
    assert "disabled" in fp4moe.describe_tuning_cache()


def test_long_paths_come_back_whole(cache_env):
    long = str(cache_env / ("d" * 200) / ("e" * 200) / "tuning.json")
    fp4moe.set_tuning_cache_path(long)
    assert fp4moe.tuning_cache_path() == long


# ----------------------------------------------------------- listings ----

def test_listing_of_a_cache_for_this_build(cache_env):
    here = device_here()
    if here is None:
        pytest.skip("a CUDA driver without PyTorch: cannot name this device")
    path = cache_env / "tuning.json"
    t = a_tactic()
    doc = cache_document([masked_entry(8, t), masked_entry(256, t, unusable=["direct bn256 bk128 st4 sk2: refused"])],
                         device=here[0], sm_count=here[1])
    path.write_text(json.dumps(doc))
    text = fp4moe.describe_tuning_cache(path)
    assert f"written for fp4moe {fp4moe.library_version()}" in text
    assert f"{here[0]} ({here[1]} SMs)" in text and "2 entries" in text
    assert text.count(t.name) == 2
    assert "unusable: direct bn256 bk128 st4 sk2: refused" in text
    fp4moe.set_tuning_cache_path(path)  # the default listing is the current file's
    assert fp4moe.describe_tuning_cache() == text
    printed = []
    fp4moe.print_tuning_cache(path, file=type("F", (), {"write": lambda self, s: printed.append(s)})())
    assert "".join(printed) == text


@pytest.mark.parametrize("field, value", [("version", "0.0.1"), ("tactic_space", "0123456789abcdef")])
def test_a_cache_of_another_build_is_refused(cache_env, field, value):
    path = cache_env / "tuning.json"
    path.write_text(json.dumps(cache_document([masked_entry(8, a_tactic())], **{field: value})))
    text = fp4moe.describe_tuning_cache(path)
    assert "refused here" in text and value in text, text
    assert "entries" not in text


@pytest.mark.parametrize("damage", ["truncated", "garbage", "empty", "duplicate key", "unknown member", "bad tactic"])
def test_corrupt_and_truncated_files_are_reported(cache_env, damage):
    path = cache_env / "tuning.json"
    good = json.dumps(cache_document([masked_entry(8, a_tactic()), masked_entry(16, a_tactic())]))
    text = {
        "truncated": good[: len(good) // 2],
        "garbage": "\x89PNG\x00\x01",
        "empty": "",
        "duplicate key": json.dumps(cache_document([masked_entry(8, a_tactic()), masked_entry(8, a_tactic())])),
        "unknown member": json.dumps(cache_document([masked_entry(8, a_tactic(), colour="red")])),
        "bad tactic": good.replace('"split_k": 1', '"split_k": 1.5'),
    }[damage]
    path.write_text(text)
    listing = fp4moe.describe_tuning_cache(path)
    assert "unusable: corrupt" in listing, listing


def test_every_prefix_of_a_cache_is_refused(cache_env):
    path = cache_env / "tuning.json"
    good = json.dumps(cache_document([masked_entry(8, a_tactic())]))
    for n in range(0, len(good), 7):
        path.write_text(good[:n])
        assert "unusable: corrupt" in fp4moe.describe_tuning_cache(path), n


def test_missing_file(cache_env):
    assert "no such file" in fp4moe.describe_tuning_cache(cache_env / "none.json")


# ---------------------------------------------------- tune() arguments ----

def test_tune_checks_everything_before_the_gpu():
    ok = fp4moe.TuneShape("dense", fp4moe.NVFP4, 64, 256, 256)
    cases = [
        (fp4moe.TuneShape("dense", fp4moe.NVFP4, 64, 256, 250), {}, "shapes[1].k"),
        (fp4moe.TuneShape("dense", fp4moe.NVFP4, 0, 256, 256), {}, "shapes[1].m"),
        (fp4moe.TuneShape("dense", fp4moe.NVFP4, 9000, 256, 256), {}, "shapes[1].m"),
        (fp4moe.TuneShape("sparse", fp4moe.NVFP4, 64, 256, 256), {}, "shapes[1].op"),
        (fp4moe.TuneShape("dense", "fp8", 64, 256, 256), {}, "shapes[1].format"),
        (fp4moe.TuneShape("dense", fp4moe.NVFP4, 64, 256, 256, out="nvfp4"), {}, "shapes[1].out"),
        (fp4moe.TuneShape("dense", fp4moe.NVFP4, 64.0, 256, 256), {}, "shapes[1].m"),
        (fp4moe.TuneShape("moe_fc2", fp4moe.NVFP4, 64, 256, 0, groups=4, expert_width=100), {}, "shapes[1].expert_width"),
        (fp4moe.TuneShape("moe_fc2", fp4moe.NVFP4, 64, 256, 0, groups=4, expert_width=128, top_k=5), {},
         "shapes[1].top_k"),
        ((64, 256, 256), {}, "shapes[1]"),
        (ok, {"reps": 0}, "options.reps"),
        (ok, {"warmup": -1}, "options.warmup"),
        (ok, {"max_m": 1000}, "options.max_m"),
        (ok, {"max_m": 2**64 + 1024}, "options.max_m"),  # (ctypes would wrap it to 1024)
        (ok, {"reps": 2**31}, "options.reps"),
        (ok, {"warmup": 2**31}, "options.warmup"),
        (ok, {"cache_path": 7}, "cache_path"),
        (ok, {"progress": "yes"}, "progress"),
    ]
    for shape, options, argument in cases:
        with pytest.raises(fp4moe.InvalidArgumentError) as err:
            fp4moe.tune([ok, shape], **options)
        assert str(err.value).startswith(f"tune: argument '{argument}': "), (argument, str(err.value))
    with pytest.raises(fp4moe.InvalidArgumentError, match="argument 'shapes'"):
        fp4moe.tune([])


def test_tune_refuses_in_the_binding_what_ctypes_would_wrap_or_refuse():
    # Each with its rule: names the binding has no code for, and values the C
    # fields would not hold (ctypes wraps a big int and refuses a float only
    # with a TypeError). out="nvfp4" of a dense op, above, is the library's rule.
    ok = fp4moe.TuneShape("dense", fp4moe.NVFP4, 64, 256, 256)
    fc2 = fp4moe.TuneShape("moe_fc2", fp4moe.NVFP4, 64, 256, 0, groups=4, expert_width=128)
    cases = [
        ([ok, dataclasses.replace(ok, out="fp16")], {}, "shapes[1].out",
         r"must be one of bf16, fp32, nvfp4 \(got 'fp16'\)"),
        ([ok, dataclasses.replace(fc2, top_k=2**31)], {}, "shapes[1].top_k", "must fit 32 bits"),
        (ok, {"warmup": 1.5}, "options.warmup", r"must be an int \(got 1.5\)"),
        (ok, {"reps": "20"}, "options.reps", r"must be an int \(got '20'\)"),
        (ok, {"max_m": 8192.0}, "options.max_m", r"must be an int \(got 8192.0\)"),
    ]
    cases += [([ok, dataclasses.replace(ok, **{field: 2**63})], {}, f"shapes[1].{field}", "must fit 64 bits")
              for field in ("m", "n", "k", "groups", "expert_width")]
    for shapes, options, argument, rule in cases:
        with pytest.raises(fp4moe.InvalidArgumentError, match=rf"^tune: argument '{re.escape(argument)}': {rule}"):
            fp4moe.tune(shapes, **options)


def test_cached_tactic_checks_its_shape_before_the_gpu():
    ok = fp4moe.TuneShape("dense", fp4moe.NVFP4, 64, 256, 256)
    with pytest.raises(fp4moe.InvalidArgumentError,
                       match=r"^cached_tactic: argument 'shape': must be a fp4moe.TuneShape"):
        fp4moe.cached_tactic((64, 256, 256))
    with pytest.raises(fp4moe.InvalidArgumentError,
                       match=r"^cached_tactic: argument 'shape.out': must be one of bf16, fp32, nvfp4 \(got 'fp16'\)"):
        fp4moe.cached_tactic(dataclasses.replace(ok, out="fp16"))


def test_the_c_interface_refuses_bad_codes_and_pointers():
    shape = _capi.TuneShape(op=9, format=0, out=0, m=8, n=256, k=256, groups=1)
    assert _capi.lib.fp4moe_tune(ctypes.byref(shape), 1, None, None) == _capi.ERROR_INVALID_ARGUMENT
    assert _capi.lib.fp4moe_last_error() == b"tune: argument 'shapes[0].op': must be an fp4moe_gemm_layout code (0..4) (got 9)"
    shape.op, shape.out = 0, 5
    assert _capi.lib.fp4moe_tune(ctypes.byref(shape), 1, None, None) == _capi.ERROR_INVALID_ARGUMENT
    assert b"'shapes[0].out'" in _capi.lib.fp4moe_last_error()
    assert _capi.lib.fp4moe_tune(None, 1, None, None) == _capi.ERROR_INVALID_ARGUMENT
    assert _capi.lib.fp4moe_last_error() == b"tune: argument 'shapes': must not be null"
    assert _capi.lib.fp4moe_tune(ctypes.byref(shape), 0, None, None) == _capi.ERROR_INVALID_ARGUMENT
    assert _capi.lib.fp4moe_last_error() == b"tune: argument 'count': must be positive (got 0)"
    options = _capi.TuneOptions()
    _capi.call("fp4moe_tune_options_default", ctypes.byref(options))
    assert (options.warmup, options.reps, options.cold_l2, options.write_cache, options.max_m) == (3, 20, 1, 1, 8192)
    shape.out = 0
    options.cold_l2 = 2
    assert _capi.lib.fp4moe_tune(ctypes.byref(shape), 1, ctypes.byref(options), None) == _capi.ERROR_INVALID_ARGUMENT
    assert b"'options.cold_l2'" in _capi.lib.fp4moe_last_error()
    length = ctypes.c_int64()
    assert _capi.lib.fp4moe_tuning_cache_path(None, 4, ctypes.byref(length)) == _capi.ERROR_INVALID_ARGUMENT
    assert _capi.lib.fp4moe_last_error() == b"tuning_cache_path: argument 'buf': must not be null when size is positive"
    assert _capi.lib.fp4moe_set_tuning_cache_enabled(2) == _capi.ERROR_INVALID_ARGUMENT
    with pytest.raises(fp4moe.InvalidArgumentError, match="argument 'enabled'"):
        fp4moe.set_tuning_cache_enabled(1)
    buf = ctypes.create_string_buffer(5)
    _capi.call("fp4moe_tactic_space_version", buf, len(buf), ctypes.byref(length))
    assert length.value == 16 and buf.value == fp4moe.tactic_space_version()[:4].encode(), "truncated, NUL-terminated"


@pytest.mark.no_driver
def test_tuning_without_a_gpu_is_a_cuda_error(cache_env):
    with pytest.raises(fp4moe.CudaError):
        fp4moe.tune(fp4moe.TuneShape("dense", fp4moe.NVFP4, 64, 256, 256))
    assert not os.path.exists(fp4moe.tuning_cache_path()), "nothing written"
    with pytest.raises(fp4moe.CudaError):
        fp4moe.load_tuning_cache()
