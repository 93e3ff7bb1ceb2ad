// Programmatic dependent launch (PDL). A kernel launched with the
// programmatic stream serialization attribute may be scheduled before the
// kernel ahead of it in the stream has finished: it runs what touches no
// global memory (barrier set-up, shared-memory tables) alongside that
// kernel's tail and waits for it only before its first global access.
// tests/gpu/gemm/pdl_test.cu checks the wait against a kernel that writes
// the GEMM's inputs late.
#pragma once

namespace fp4moe::ptx {

/// Blocks until every grid this one depends on programmatically has
/// completed and its memory is visible; returns at once in a grid launched
/// without such a dependency.
__device__ __forceinline__ void grid_dependency_wait() { asm volatile("griddepcontrol.wait;\n" ::: "memory"); }

/// Lets the grids that depend on this one programmatically be scheduled
/// once every CTA of this grid has issued it or exited. They still wait
/// (grid_dependency_wait) for this grid to complete before touching memory,
/// so it can be issued anywhere, even first.
__device__ __forceinline__ void launch_dependents() { asm volatile("griddepcontrol.launch_dependents;\n" :::); }

}  // namespace fp4moe::ptx
