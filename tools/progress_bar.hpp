// A one-line progress bar with an ETA on stderr for `fp4moe tune`: redrawn in
// place on a terminal, one line per shape otherwise (logs stay readable).
#pragma once

#include <chrono>
#include <cstdio>
#include <string>

#include "fp4moe/tuning.hpp"

namespace fp4moe::cli {

/// "m:ss" or "h:mm:ss".
std::string clock_text(double seconds);

class ProgressBar {
 public:
  explicit ProgressBar(std::FILE* out = stderr);
  /// Redraws (at most ten times a second, and always at a shape's start).
  void update(const TuneProgress& p);
  /// Ends the line.
  void finish();

 private:
  std::FILE* out_;
  bool tty_;
  bool drawn_ = false;
  std::size_t last_shape_ = static_cast<std::size_t>(-1);
  std::chrono::steady_clock::time_point last_draw_{};
};

}  // namespace fp4moe::cli
