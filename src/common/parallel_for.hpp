// A minimal fork-join loop for the CPU paths (reference GEMMs, CPU quantizers).
// Work is split into contiguous chunks, one per hardware thread; small loops
// run inline so tiny tests pay no thread start-up.
#pragma once

#include <algorithm>
#include <cstdint>
#include <exception>
#include <thread>
#include <vector>

namespace fp4moe::detail {

/// Calls body(i) for every i in [0, n). `min_per_thread` keeps threads from
/// being started for a handful of cheap iterations.
template <class Body>
void parallel_for(std::int64_t n, Body&& body, std::int64_t min_per_thread = 1) {
  if (n <= 0) return;
  const std::int64_t hw = std::max<std::int64_t>(1, std::thread::hardware_concurrency());
  const std::int64_t workers = std::clamp<std::int64_t>(n / std::max<std::int64_t>(1, min_per_thread), 1, hw);
  if (workers == 1) {
    for (std::int64_t i = 0; i < n; ++i) body(i);
    return;
  }
  std::vector<std::thread> threads;
  std::vector<std::exception_ptr> errors(static_cast<std::size_t>(workers));
  const std::int64_t chunk = (n + workers - 1) / workers;
  for (std::int64_t w = 0; w < workers; ++w) {
    threads.emplace_back([&, w] {
      try {
        const std::int64_t end = std::min(n, (w + 1) * chunk);
        for (std::int64_t i = w * chunk; i < end; ++i) body(i);
      } catch (...) {
        errors[static_cast<std::size_t>(w)] = std::current_exception();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
}

}  // namespace fp4moe::detail
