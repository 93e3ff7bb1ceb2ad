"""CUDA graphs and synchronisation: operations captured with torch.cuda.graph
replay to the eager results on new inputs, and no call synchronises (torch's
sync debug mode raises on any synchronising torch call; a long GPU spin queued
before each warm call must outlast it, which a synchronising CUDA call inside
the library would not let happen)."""

import pytest

torch = pytest.importorskip("torch")

import fp4moe  # noqa: E402
import fp4_reference as ref  # noqa: E402
from split_k_case import split_k_case as shared_split_k_case  # noqa: E402

pytestmark = pytest.mark.gpu


class SyncDebugError:
    """Within: any synchronising torch call raises."""

    def __enter__(self):
        self.previous = torch.cuda.get_sync_debug_mode()
        torch.cuda.set_sync_debug_mode("error")

    def __exit__(self, *exc):
        torch.cuda.set_sync_debug_mode(self.previous)


def test_quantize_and_gemm_in_a_graph(rng):
    m, n, k = 64, 256, 512
    x = torch.randn(m, k, generator=rng).bfloat16().cuda()
    w = ref.to_device(ref.random_fp4((n, k), fp4moe.NVFP4, generator=rng), "cuda")
    xq = fp4moe.empty_fp4((m, k), fp4moe.NVFP4, device="cuda")
    out = torch.empty(m, n, dtype=torch.float32, device="cuda")

    def step():
        fp4moe.quantize_nvfp4(x, out=xq)
        fp4moe.fp4_gemm_nt(xq, w, out=out)

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        step()  # warm-up outside the capture
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=side):
        step()
    for _ in range(3):
        x.copy_(torch.randn(m, k, generator=rng).bfloat16())
        out.fill_(float("nan"))
        graph.replay()
        torch.cuda.synchronize()
        replayed = out.clone()
        step()
        torch.cuda.synchronize()
        assert torch.equal(replayed, out)
        ref.assert_close(out, ref.gemm_nt(ref.decode(xq)[0], ref.decode(w)[0]), torch.float32)


def split_k_case(rng):
    a, b, tactic = shared_split_k_case(rng, fp4moe.MXFP4)
    return a, b, tactic, torch.empty(16, 256, dtype=torch.float32, device="cuda")


def test_split_k_gemm_in_a_graph(rng):
    a, b, tactic, out = split_k_case(rng)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        fp4moe.fp4_gemm_nt(a, b, out=out, tactic=tactic)  # makes this stream's split-K workspace
        eager = out.clone()
        out.fill_(float("nan"))
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=side):
        fp4moe.fp4_gemm_nt(a, b, out=out, tactic=tactic)
    graph.replay()
    torch.cuda.synchronize()
    assert torch.equal(out, eager), "split-K repeats are bit-identical"
    ref.assert_close(out, ref.gemm_nt(ref.decode(a)[0], ref.decode(b)[0]), torch.float32)


def test_split_k_capture_without_warm_up_is_refused(rng):
    a, b, tactic, out = split_k_case(rng)
    fresh = torch.cuda.Stream()
    graph = torch.cuda.CUDAGraph()
    with pytest.raises(fp4moe.LibraryError, match="run the same call once before capturing"):
        with torch.cuda.graph(graph, stream=fresh):
            out.zero_()  # the graph is not empty when the capture ends
            fp4moe.fp4_gemm_nt(a, b, out=out, tactic=tactic)


def spin_cycles():
    """GPU clock cycles of a ~100 ms spin (torch.cuda._sleep), far longer than
    any call here takes on the host."""
    khz = getattr(torch.cuda.get_device_properties(torch.cuda.current_device()), "clock_rate", 0) or 2_000_000
    return khz * 100


def test_no_call_synchronises(rng):
    """No call synchronises with the host. Torch's sync debug mode sees only
    torch's own synchronisations (the first pass, cold); a
    cudaStreamSynchronize, cudaDeviceSynchronize or cudaFree inside the library
    would wait for a long spin queued on the stream before the call, so in a
    second, warm pass (the per-stream workspace is made on first use) the
    spin must still be running when each call returns."""
    tokens, experts, inter, k, n = 32, 4, 128, 256, 256
    x = torch.randn(tokens, k, generator=rng).cuda()
    w13 = ref.to_device(ref.random_fp4((experts, 2 * inter, k), fp4moe.NVFP4, generator=rng), "cuda")
    w2 = ref.to_device(ref.random_fp4((n, experts * inter), fp4moe.NVFP4, generator=rng), "cuda")
    wd = ref.to_device(ref.random_fp4((n, k), fp4moe.NVFP4, generator=rng, scale_layout=fp4moe.ROW_MAJOR), "cuda")
    wg = ref.to_device(ref.random_fp4((experts, n, k), fp4moe.NVFP4, generator=rng), "cuda")
    ids = torch.randint(0, experts, (tokens, 2), generator=rng, dtype=torch.int32).cuda()
    weights = torch.rand(tokens, 2, generator=rng).cuda()
    encode = torch.full((), 100.0, device="cuda")
    m_indices = torch.zeros(128, dtype=torch.int32, device="cuda")
    masked_m = torch.full((experts,), 5, dtype=torch.int32, device="cuda")
    z128 = torch.zeros(128, k, device="cuda")
    zg = torch.zeros(experts, 8, k, device="cuda")
    torch.cuda.synchronize()
    with SyncDebugError():
        xq = fp4moe.quantize_nvfp4(x)
        a128 = fp4moe.quantize_nvfp4(z128)
        ag = fp4moe.quantize_nvfp4(zg)
        alpha = fp4moe.moe_routing_alpha(ids, weights, experts)
        h = fp4moe.moe_dense_fc1_swiglu_nvfp4(xq, w13, encode)
    calls = [
        ("quantize_nvfp4", lambda: fp4moe.quantize_nvfp4(x)),
        ("compute_amax", lambda: fp4moe.compute_amax(x)),
        ("dequantize", lambda: fp4moe.dequantize(xq)),
        ("quantize_mxfp4", lambda: fp4moe.quantize_mxfp4(x)),
        ("fp4_gemm_nt (row-major scales, converted on the GPU)", lambda: fp4moe.fp4_gemm_nt(xq, wd)),
        ("quantize_nvfp4 (128 rows)", lambda: fp4moe.quantize_nvfp4(z128)),
        ("m_grouped_fp4_gemm_nt_contiguous", lambda: fp4moe.m_grouped_fp4_gemm_nt_contiguous(a128, wg, m_indices)),
        ("quantize_nvfp4 (grouped)", lambda: fp4moe.quantize_nvfp4(zg)),
        ("m_grouped_fp4_gemm_nt_masked", lambda: fp4moe.m_grouped_fp4_gemm_nt_masked(ag, wg, masked_m, 5)),
        ("moe_routing_alpha", lambda: fp4moe.moe_routing_alpha(ids, weights, experts)),
        ("moe_dense_fc1_swiglu_nvfp4", lambda: fp4moe.moe_dense_fc1_swiglu_nvfp4(xq, w13, encode)),
        ("moe_dense_fc1_swiglu", lambda: fp4moe.moe_dense_fc1_swiglu(xq, w13)),
        ("moe_dense_fc2", lambda: fp4moe.moe_dense_fc2(h, w2, alpha)),
    ]
    with SyncDebugError():
        for _, call in calls:
            call()
    torch.cuda.synchronize()
    cycles = spin_cycles()
    with SyncDebugError():
        for name, call in calls:
            torch.cuda._sleep(cycles)
            spun = torch.cuda.Event()
            spun.record()
            call()
            # The spin's end, not the stream's: a call that synchronised before
            # launching its kernels could return with them still running.
            assert not spun.query(), f"{name} synchronised: the GPU spin queued before it had ended when it returned"
    torch.cuda.synchronize()


def test_moe_layer_in_a_graph(rng):
    tokens, experts, inter, k, n, top_k = 48, 8, 128, 512, 256, 2
    x = torch.randn(tokens, k, generator=rng).bfloat16().cuda()
    ids = torch.zeros(tokens, top_k, dtype=torch.int32, device="cuda")
    weights = torch.zeros(tokens, top_k, device="cuda")
    w13 = ref.to_device(ref.random_fp4((experts, 2 * inter, k), fp4moe.NVFP4, generator=rng), "cuda")
    w2 = ref.to_device(ref.random_fp4((n, experts * inter), fp4moe.NVFP4, generator=rng), "cuda")
    encode = torch.full((), 50.0, device="cuda")
    xq = fp4moe.empty_fp4((tokens, k), fp4moe.NVFP4, device="cuda")
    h = fp4moe.empty_fp4((tokens, experts * inter), fp4moe.NVFP4, device="cuda")
    alpha = torch.empty(tokens, experts, device="cuda")
    out = torch.empty(tokens, n, dtype=torch.bfloat16, device="cuda")

    def layer():
        fp4moe.quantize_nvfp4(x, out=xq)
        fp4moe.moe_routing_alpha(ids, weights, out=alpha)
        fp4moe.moe_dense_fc1_swiglu_nvfp4(xq, w13, encode, out=h)
        fp4moe.moe_dense_fc2(h, w2, alpha, out=out)

    def new_inputs():
        x.copy_(torch.randn(tokens, k, generator=rng).bfloat16())
        ids.copy_(torch.stack([torch.randperm(experts, generator=rng)[:top_k] for _ in range(tokens)]).int())
        weights.copy_(torch.rand(tokens, top_k, generator=rng))

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    new_inputs()
    with torch.cuda.stream(side):
        layer()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=side):
        layer()
    for _ in range(2):
        new_inputs()
        out.fill_(float("nan"))
        graph.replay()
        torch.cuda.synchronize()
        replayed = out.clone()
        layer()
        torch.cuda.synchronize()
        assert torch.equal(replayed, out)
        assert not torch.isnan(out).any()
