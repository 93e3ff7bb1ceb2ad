#include "bench/peer_rows.hpp"

#include "bench/cublaslt_peer.hpp"

namespace fp4moe::bench {

void add_peer_rows(SuiteContext& ctx, const std::string& suite, const std::string& name, std::int64_t m, std::int64_t n,
                   std::int64_t k, std::int64_t batch, const std::vector<std::size_t>& ours) {
  if (!ctx.wants(name)) return;  // (filtered out: not even built, which allocates its operands)
  for (PeerType pt : {PeerType::kBF16, PeerType::kFP8}) {
    const CublasLtGemm peer(pt, m, n, k, ctx.timer.stream(), batch);
    Row pr;
    pr.suite = suite;
    pr.name = name;
    pr.impl = pt == PeerType::kBF16 ? "cublasLt-bf16" : "cublasLt-fp8";
    pr.tactic = peer.algo();
    pr.flops = peer.flops();
    pr.bytes = peer.min_bytes();
    pr.by_regime = true;
    pr.tensor_ceiling = pt == PeerType::kBF16 ? CeilingKind::kBf16Tensor : CeilingKind::kFp8Tensor;
    const double peer_us = ctx.add(pr, [&](cudaStream_t s) { peer.run(s); }).time.median_us;
    for (std::size_t i : ours) {
      Row& o = ctx.rows[i];
      (pt == PeerType::kBF16 ? o.vs_bf16 : o.vs_fp8) = peer_us / o.time.median_us;
    }
  }
}

}  // namespace fp4moe::bench
