"""The autotuner from Python on the GPU: a small shape list tuned end to end
into a fresh cache, the GEMMs then running the cached tactic (bit-identical
to that tactic forced), a CUDA graph captured with the cache loaded, and a
progress callback that stops tuning."""

import pytest

torch = pytest.importorskip("torch")

import fp4moe  # noqa: E402
import fp4_reference as ref  # noqa: E402

pytestmark = pytest.mark.gpu

QUICK = {"warmup": 1, "reps": 3}


@pytest.fixture
def cache(tmp_path):
    path = tmp_path / "tuning.json"
    fp4moe.set_tuning_cache_path(path)
    yield path
    fp4moe.set_tuning_cache_path(None)


def test_tune_a_shape_list_and_use_it(cache, rng):
    shapes = fp4moe.parse_shape_list(
        "dense  nvfp4 bf16 m=40 n=512 k=1024\n"
        "masked mxfp4 bf16 groups=4 m=1-16 n=256 k=512\n")
    assert [s.m for s in shapes] == [40, 1, 2, 4, 8, 16]
    seen = []
    results = fp4moe.tune(shapes, progress=seen.append, **QUICK)
    assert seen and seen[-1].shape_index == len(shapes) - 1 and seen[-1].tactics_done == seen[-1].tactics
    for r in results:
        assert r.ok, r
        assert r.bucket == fp4moe.tuning_bucket(r.shape.m)
        assert r.candidates > 0 and r.unusable == 0
        assert 0 < r.best_us <= r.heuristic_us or r.heuristic_us == 0
        assert fp4moe.cached_tactic(r.shape) == r.best
    assert fp4moe.load_tuning_cache() == len(shapes)
    listing = fp4moe.describe_tuning_cache()
    assert "usable on this device" in listing and f"{len(shapes)} entries" in listing

    # M = 37 is in the dense shape's bucket (40): the GEMM runs the tuned tactic.
    a = ref.to_device(ref.random_fp4((37, 1024), fp4moe.NVFP4, generator=rng), "cuda")
    b = ref.to_device(ref.random_fp4((512, 1024), fp4moe.NVFP4, generator=rng), "cuda")
    via_cache = fp4moe.fp4_gemm_nt(a, b, out_dtype=torch.float32)
    forced = fp4moe.fp4_gemm_nt(a, b, out_dtype=torch.float32, tactic=results[0].best)
    torch.cuda.synchronize()
    assert torch.equal(via_cache, forced)
    ref.assert_close(via_cache, ref.gemm_nt(ref.decode(a)[0], ref.decode(b)[0]), torch.float32)

    # A bucket nobody tuned: no cached tactic, the heuristic decides.
    assert fp4moe.cached_tactic(fp4moe.TuneShape("dense", fp4moe.NVFP4, 300, 512, 1024)) is None
    fp4moe.set_tuning_cache_enabled(False)
    try:
        assert fp4moe.cached_tactic(shapes[0]) is None
    finally:
        fp4moe.set_tuning_cache_enabled(True)


def test_graph_capture_with_a_loaded_cache(cache, rng):
    shape = fp4moe.TuneShape("dense", fp4moe.MXFP4, 64, 256, 2048)
    (result,) = fp4moe.tune(shape, **QUICK)
    assert fp4moe.load_tuning_cache() == 1
    a = ref.to_device(ref.random_fp4((64, 2048), fp4moe.MXFP4, generator=rng), "cuda")
    b = ref.to_device(ref.random_fp4((256, 2048), fp4moe.MXFP4, generator=rng), "cuda")
    out = torch.empty(64, 256, dtype=torch.float32, device="cuda")
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        fp4moe.fp4_gemm_nt(a, b, out=out)  # warm-up: the split-K workspace, if the tuned tactic splits
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=side):
        fp4moe.fp4_gemm_nt(a, b, out=out)
    out.fill_(float("nan"))
    graph.replay()
    torch.cuda.synchronize()
    forced = fp4moe.fp4_gemm_nt(a, b, out_dtype=torch.float32, tactic=result.best)
    torch.cuda.synchronize()
    assert torch.equal(out, forced)


def test_an_exception_in_progress_stops_tuning(cache):
    shapes = [fp4moe.TuneShape("dense", fp4moe.NVFP4, m, 256, 512) for m in (8, 16, 24)]
    calls = []

    def stop_in_second_shape(p):
        calls.append(p)
        if p.shape_index == 1:
            raise KeyError("stop")

    with pytest.raises(KeyError, match="stop"):
        fp4moe.tune(shapes, progress=stop_in_second_shape, **QUICK)
    assert calls[-1].shape_index == 1 and calls[-1].tactics_done == 0
    assert fp4moe.load_tuning_cache() == 1, "the shape finished before stays in the cache"
    assert fp4moe.cached_tactic(shapes[0]) is not None and fp4moe.cached_tactic(shapes[1]) is None
