"""The autotuner and its persistent cache (include/fp4moe/tuning.hpp).

Every GEMM called without ``tactic=`` runs the tuning cache's tactic for its
problem if the cache has one, else the heuristic's. ``tune()`` times every
tactic that can run a problem on the current GPU (cold L2, warm-up, median of
repeats, CUDA events) and merges the best (TuneResult says which that is)
into the cache file, per bucket of the token dimension: 1, 2 and 4 tokens,
then every 8 up to 128, then every 128 up to ``max_m`` (default 8192); past
it the heuristic decides.

The cache file is JSON, one per library version, tactic set and device (a
file written for another one is refused with a warning on stderr, a corrupt
one is reported and ignored). Its location, first that applies:
``set_tuning_cache_path()``, ``$FP4MOE_TUNING_CACHE`` ("off" disables the
cache), ``$XDG_CACHE_HOME/fp4moe/tuning.json``, ``~/.cache/fp4moe/tuning.json``.

Nothing here needs PyTorch; ``tune()``, ``load_tuning_cache()`` and
``cached_tactic()`` need a GPU, the rest runs anywhere.
"""

import ctypes
import os
import sys
from dataclasses import dataclass
from typing import Callable, Iterable, List, NamedTuple, Optional, Union

from . import _capi
from .errors import invalid_argument
from .formats import FORMATS, MXFP4, NVFP4
from .tactics import GemmTactic

#: Operations, as tuning problems and shape lists name them.
OPS = {
    "dense": _capi.LAYOUT_DENSE,            # fp4_gemm_nt
    "contiguous": _capi.LAYOUT_CONTIGUOUS,  # m_grouped_fp4_gemm_nt_contiguous
    "masked": _capi.LAYOUT_MASKED,          # m_grouped_fp4_gemm_nt_masked
    "moe_fc2": _capi.LAYOUT_MOE_DENSE,      # moe_dense_fc2
    "moe_fc1": _capi.LAYOUT_MOE_FC1,        # moe_dense_fc1_swiglu(_nvfp4)
}
#: What an operation writes.
OUTPUTS = {"bf16": _capi.OUTPUT_BF16, "fp32": _capi.OUTPUT_FP32, "nvfp4": _capi.OUTPUT_NVFP4}

DEFAULT_MAX_M = 8192

_OP_NAMES = {v: k for k, v in OPS.items()}
_FORMAT_NAMES = {v: k for k, v in FORMATS.items()}
_OUTPUT_NAMES = {v: k for k, v in OUTPUTS.items()}


@dataclass(frozen=True)
class TuneShape:
    """One problem to tune (fp4moe::TuneShape).

    op            a key of OPS
    format        "nvfp4" or "mxfp4"
    m             tokens per group as the operation sees them: dense and MoE the
                  rows of A, contiguous rows / groups, masked expected_m; tuned
                  for the bucket holding it
    n             weight rows per group (moe_fc1: 2I)
    k             K (moe_fc2: 0, or groups * expert_width)
    groups        contiguous/masked: G; moe_fc2/moe_fc1: E; dense: 1
    out           "bf16" or "fp32" ("bf16" or "nvfp4" for moe_fc1)
    expert_width  moe_fc2: W (a multiple of 128); else 0
    top_k         moe_fc2: the routing the tuner's alpha follows (0: every token
                  uses every expert); not part of the cache key
    """

    op: str
    format: str
    m: int
    n: int
    k: int = 0
    groups: int = 1
    out: str = "bf16"
    expert_width: int = 0
    top_k: int = 0


class TuneProgress(NamedTuple):
    """What a progress callback of tune() receives, after every timed tactic."""

    shape_index: int   # the shape being tuned (0-based)
    shapes: int        # shapes in the call
    tactics_done: int  # tactics of this shape timed so far
    tactics: int       # tactics of this shape
    elapsed_s: float   # since the call began


@dataclass(frozen=True)
class TuneResult:
    """The outcome of tuning one shape (the cache listing has every tactic's fate).

    A bucket up to 128 is timed at its own token count; a 128-wide one at
    three (bucket - 96, bucket - 32, bucket), so that `best` suits the whole
    bucket: there it is the tactic whose worst slowdown against the fastest
    at each point is least, not necessarily the fastest at the bucket."""

    shape: TuneShape
    bucket: int                   # the bucket tuned (its largest token count)
    ok: bool                      # a usable tactic was found (and cached)
    best: Optional[GemmTactic]    # the tactic cached (None when not ok)
    best_us: float                # its time at the bucket
    heuristic: GemmTactic         # the heuristic's choice for the same problem
    heuristic_us: float           # its time at the bucket in the same run (0 if it failed)
    candidates: int               # tactics timed
    unusable: int                 # of which failed

    @property
    def speedup(self) -> float:
        """Heuristic time over tuned time (0 when either is missing)."""
        return self.heuristic_us / self.best_us if self.ok and self.best_us > 0 and self.heuristic_us > 0 else 0.0


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _c_shape(function: str, shape, argument: str) -> _capi.TuneShape:
    """The C descriptor of a TuneShape; names and field types are checked
    here, every other rule by the library (with the same argument names)."""
    if not isinstance(shape, TuneShape):
        raise invalid_argument(function, argument, "must be a fp4moe.TuneShape", type(shape).__name__)
    if shape.op not in OPS:
        raise invalid_argument(function, argument + ".op", "must be one of " + ", ".join(OPS), repr(shape.op))
    if shape.format not in FORMATS:
        raise invalid_argument(function, argument + ".format", f"must be '{NVFP4}' or '{MXFP4}'", repr(shape.format))
    if shape.out not in OUTPUTS:
        raise invalid_argument(function, argument + ".out", "must be one of " + ", ".join(OUTPUTS), repr(shape.out))
    for field in ("m", "n", "k", "groups", "expert_width", "top_k"):
        value = getattr(shape, field)
        if not _is_int(value):
            raise invalid_argument(function, f"{argument}.{field}", "must be an int", repr(value))
    if not -2**31 <= shape.top_k < 2**31:
        raise invalid_argument(function, argument + ".top_k", "must fit 32 bits", shape.top_k)
    for field in ("m", "n", "k", "groups", "expert_width"):
        if not -2**63 <= getattr(shape, field) < 2**63:
            raise invalid_argument(function, f"{argument}.{field}", "must fit 64 bits", getattr(shape, field))
    return _capi.TuneShape(OPS[shape.op], FORMATS[shape.format], OUTPUTS[shape.out], shape.top_k, shape.m, shape.n,
                           shape.k, shape.groups, shape.expert_width)


def _py_shape(s: _capi.TuneShape) -> TuneShape:
    return TuneShape(_OP_NAMES[s.op], _FORMAT_NAMES[s.format], s.m, s.n, s.k, s.groups, _OUTPUT_NAMES[s.out],
                     s.expert_width, s.top_k)


def _py_tactic(t: _capi.Tactic) -> GemmTactic:
    return GemmTactic(bool(t.swap_ab), t.block_n, t.block_k, t.stages, t.split_k, bool(t.moe_gather), bool(t.fp8), t.cluster)


def _check_int(function: str, argument: str, value, lo: int, bits: int = 64) -> None:
    """An int of at least `lo` that the C argument (signed, `bits` wide) holds:
    ctypes would wrap a larger one silently."""
    if not _is_int(value):
        raise invalid_argument(function, argument, "must be an int", repr(value))
    if value < lo:
        raise invalid_argument(function, argument, f"must be at least {lo}", value)
    if value >= 2**(bits - 1):
        raise invalid_argument(function, argument, f"must fit {bits} bits", value)


def _path_bytes(function: str, argument: str, path) -> Optional[bytes]:
    if path is None:
        return None
    if not isinstance(path, (str, os.PathLike)):
        raise invalid_argument(function, argument, "must be a str, an os.PathLike or None", type(path).__name__)
    return os.fsencode(path)


def tune(shapes: Union[TuneShape, Iterable[TuneShape]], *, warmup: int = 3, reps: int = 20, cold_l2: bool = True,
         max_m: int = DEFAULT_MAX_M, cache_path=None, write_cache: bool = True,
         progress: Optional[Callable[[TuneProgress], None]] = None) -> List[TuneResult]:
    """Tunes every shape on the current CUDA device and merges the best
    tactic per shape's bucket (TuneResult.best) into the cache file
    (``cache_path``, default the current one), then reloads the in-process
    cache. A tactic that fails is recorded as unusable; tuning goes on. Every
    argument is checked before the GPU is touched. ``progress`` is called
    with a TuneProgress after every timed tactic; an exception it raises
    stops tuning (the shapes finished before stay in the cache) and is raised
    again here.

    Needs a GPU; takes seconds to minutes (every tactic of every shape runs
    warmup + reps times)."""
    fn = "tune"
    shapes = [shapes] if isinstance(shapes, TuneShape) else list(shapes)
    if not shapes:
        raise invalid_argument(fn, "shapes", "must hold at least one TuneShape")
    if len(shapes) >= 2**31:
        raise invalid_argument(fn, "shapes", "must hold fewer than 2^31 shapes", len(shapes))
    c_shapes = (_capi.TuneShape * len(shapes))(*(_c_shape(fn, s, f"shapes[{i}]") for i, s in enumerate(shapes)))
    _check_int(fn, "options.warmup", warmup, 0, bits=32)
    _check_int(fn, "options.reps", reps, 1, bits=32)
    _check_int(fn, "options.max_m", max_m, 128)
    if progress is not None and not callable(progress):
        raise invalid_argument(fn, "progress", "must be callable or None", type(progress).__name__)
    options = _capi.TuneOptions()
    _capi.call("fp4moe_tune_options_default", ctypes.byref(options))
    options.warmup, options.reps, options.max_m = warmup, reps, max_m
    options.cold_l2, options.write_cache = int(bool(cold_l2)), int(bool(write_cache))
    options.cache_path = _path_bytes(fn, "cache_path", cache_path)

    raised = []

    def report(shape_index, count, done, tactics, elapsed_s, _user):
        # ctypes cannot carry an exception through C: keep it, stop tuning,
        # raise it again once fp4moe_tune has returned.
        try:
            progress(TuneProgress(shape_index, count, done, tactics, elapsed_s))
            return 0
        except BaseException as error:  # noqa: B036 (KeyboardInterrupt must stop tuning too)
            raised.append(error)
            return 1

    callback = _capi.TUNE_PROGRESS(report) if progress is not None else _capi.TUNE_PROGRESS()
    options.progress = callback
    results = (_capi.TuneResult * len(shapes))()
    status = _capi.lib.fp4moe_tune(c_shapes, len(shapes), ctypes.byref(options), results)
    if raised:
        raise raised[0]
    if status != _capi.OK:
        raise _capi.error_for(status)
    return [
        TuneResult(shape, r.bucket, bool(r.ok), _py_tactic(r.best) if r.ok else None, r.best_us, _py_tactic(r.heuristic),
                   r.heuristic_us, r.candidates, r.unusable)
        for shape, r in zip(shapes, results)
    ]


def parse_shape_list(text: str, *, name: str = "shapes", max_m: int = DEFAULT_MAX_M) -> List[TuneShape]:
    """The shapes of a shape list (the format of ``fp4moe tune --shapes FILE``),
    one per bucket, each checked by tune()'s rules; a bad line raises
    InvalidArgumentError naming "<name>:<line>". One problem per line::

        # comment
        dense   nvfp4 bf16 m=64 n=2112 k=7168
        masked  mxfp4 bf16 groups=8 m=1-64 n=4096 k=7168      # every bucket from 1 to 64
        moe_fc2 nvfp4 bf16 experts=256 width=256 m=32-384 n=7168 top_k=8
        moe_fc1 nvfp4 nvfp4 experts=8 m=all n=512 k=1024      # every bucket up to max_m
    """
    fn = "parse_shape_list"
    if not isinstance(text, str):
        raise invalid_argument(fn, "text", "must be a str", type(text).__name__)
    if not isinstance(name, str):
        raise invalid_argument(fn, "name", "must be a str", type(name).__name__)
    _check_int(fn, "max_m", max_m, 128)
    encoded, label = text.encode(), name.encode()
    count = ctypes.c_int32(0)
    _capi.call("fp4moe_parse_shape_list", encoded, label, max_m, None, 0, ctypes.byref(count))
    out = (_capi.TuneShape * count.value)()
    _capi.call("fp4moe_parse_shape_list", encoded, label, max_m, out, count.value, ctypes.byref(count))
    return [_py_shape(s) for s in out]


def read_shape_list(path, *, max_m: int = DEFAULT_MAX_M) -> List[TuneShape]:
    """parse_shape_list() of a file (named by its path in messages)."""
    if not isinstance(path, (str, os.PathLike)):  # (None, which _path_bytes allows elsewhere, names no file)
        raise invalid_argument("read_shape_list", "path", "must be a str or an os.PathLike", type(path).__name__)
    with open(path, encoding="utf-8") as f:
        return parse_shape_list(f.read(), name=os.fspath(path), max_m=max_m)


def tune_shape_list(path, **options) -> List[TuneResult]:
    """tune() every shape of a shape-list file; options as tune()'s."""
    return tune(read_shape_list(path, max_m=options.get("max_m", DEFAULT_MAX_M)), **options)


def tuning_bucket(m: int, max_m: int = DEFAULT_MAX_M) -> int:
    """The bucket holding token count m (rounded up: 1, 2, 4, then every 8 up
    to 128, then every 128), or 0 when it is past max_m (the heuristic
    decides there)."""
    for argument, value in (("m", m), ("max_m", max_m)):
        if not _is_int(value) or not -2**63 <= value < 2**63:
            raise invalid_argument("tuning_bucket", argument, "must be an int of 64 bits", repr(value))
    bucket = ctypes.c_int64(0)
    _capi.call("fp4moe_tuning_bucket", m, max_m, ctypes.byref(bucket))
    return bucket.value


def set_tuning_cache_path(path) -> None:
    """Uses `path` as the cache file in this process; None: back to the
    environment's choice. The next GEMM (or load_tuning_cache()) reads it."""
    _capi.call("fp4moe_set_tuning_cache_path", _path_bytes("set_tuning_cache_path", "path", path))


def tuning_cache_path() -> Optional[str]:
    """The cache file in effect; None when the cache is disabled
    (FP4MOE_TUNING_CACHE=off) or there is no location (no HOME)."""
    return _capi.string("fp4moe_tuning_cache_path") or None


def set_tuning_cache_enabled(enabled: bool) -> None:
    """False: every GEMM without a tactic runs the heuristic's (cache or not)."""
    if not isinstance(enabled, bool):
        raise invalid_argument("set_tuning_cache_enabled", "enabled", "must be a bool", type(enabled).__name__)
    _capi.call("fp4moe_set_tuning_cache_enabled", int(enabled))


def load_tuning_cache() -> int:
    """Reads the cache file now for the current device (instead of at the
    first GEMM); returns its usable entries (0 for a missing, refused or
    corrupt file: the reason goes to stderr). Needs a GPU."""
    entries = ctypes.c_int64(0)
    _capi.call("fp4moe_load_tuning_cache", ctypes.byref(entries))
    return entries.value


def reload_tuning_cache() -> None:
    """Forgets what was read: the next lookup reads the file again."""
    _capi.call("fp4moe_reload_tuning_cache")


def cached_tactic(shape: TuneShape) -> Optional[GemmTactic]:
    """The tactic the current device's cache holds for a problem (what the
    operation runs without tactic=), or None (the heuristic decides). Needs a GPU."""
    c_shape = _c_shape("cached_tactic", shape, "shape")
    tactic, found = _capi.Tactic(), ctypes.c_int32(0)
    _capi.call("fp4moe_cached_tactic", ctypes.byref(c_shape), ctypes.byref(tactic), ctypes.byref(found))
    return _py_tactic(tactic) if found.value else None


def describe_tuning_cache(path=None) -> str:
    """A readable listing of a cache file (default: the current one): whether
    this build (and device, where there is one) can use it, and every entry
    with its tactic, time and unusable tactics. A bad file is described, not
    raised."""
    return _capi.string("fp4moe_describe_tuning_cache", _path_bytes("describe_tuning_cache", "path", path))


def print_tuning_cache(path=None, file=None) -> None:
    """Prints describe_tuning_cache(path) (to sys.stdout unless `file`)."""
    print(describe_tuning_cache(path), end="", file=file if file is not None else sys.stdout)


def tactic_space_version() -> str:
    """The version of the compiled tactic set (16 hex digits): a cache written
    for another one is refused."""
    return _capi.string("fp4moe_tactic_space_version")
