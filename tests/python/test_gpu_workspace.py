"""fp4moe.workspace_bytes / release_workspace on the GPU: a split-K call's
buffer is measured and freed, the next call grows it again with the same
result, and a stream under capture is refused."""

import pytest

torch = pytest.importorskip("torch")

import fp4moe  # noqa: E402
import fp4_reference as ref  # noqa: E402
from split_k_case import split_k_case  # noqa: E402

pytestmark = pytest.mark.gpu


def test_release_frees_the_stream_buffer_and_the_next_call_grows_it_again(rng):
    a, b, tactic = split_k_case(rng, fp4moe.NVFP4)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    fp4moe.release_workspace(side)  # torch reuses stream handles: start from none
    assert fp4moe.workspace_bytes(side) == 0
    with torch.cuda.stream(side):
        first = fp4moe.fp4_gemm_nt(a, b, out_dtype=torch.float32, tactic=tactic)
        held = fp4moe.workspace_bytes()  # the current stream: side
    assert held >= 4 * 16 * 256 * 4, "at least the four slices' partials"
    assert fp4moe.release_workspace(side) == held
    assert fp4moe.workspace_bytes(side) == 0
    with torch.cuda.stream(side):
        again = fp4moe.fp4_gemm_nt(a, b, out_dtype=torch.float32, tactic=tactic)
    side.synchronize()
    assert torch.equal(first, again), "the same bits after the buffer was made again"
    assert fp4moe.workspace_bytes(side) == held
    ref.assert_close(again, ref.gemm_nt(ref.decode(a)[0], ref.decode(b)[0]), torch.float32)
    fp4moe.release_workspace(side)


def test_release_is_refused_while_the_stream_captures(rng):
    a, b, tactic = split_k_case(rng, fp4moe.NVFP4)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    fp4moe.release_workspace(side)
    out = torch.empty(16, 256, dtype=torch.float32, device="cuda")
    with torch.cuda.stream(side):
        fp4moe.fp4_gemm_nt(a, b, out=out, tactic=tactic)  # the buffer, before the capture
    held = fp4moe.workspace_bytes(side)
    assert held > 0
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=side):
        fp4moe.fp4_gemm_nt(a, b, out=out, tactic=tactic)
        with pytest.raises(fp4moe.InvalidArgumentError, match="^release_workspace: argument 'stream': is capturing"):
            fp4moe.release_workspace(side)
    assert fp4moe.workspace_bytes(side) == held
    assert fp4moe.release_workspace(side) == 0, "the graph's buffer stays allocated"
    assert fp4moe.workspace_bytes(side) == 0
