#include "progress_bar.hpp"

#include <unistd.h>

#include <algorithm>

namespace fp4moe::cli {

std::string clock_text(double seconds) {
  const long s = static_cast<long>(std::max(0.0, seconds) + 0.5);
  char buf[32];
  if (s >= 3600)
    std::snprintf(buf, sizeof buf, "%ld:%02ld:%02ld", s / 3600, s / 60 % 60, s % 60);
  else
    std::snprintf(buf, sizeof buf, "%ld:%02ld", s / 60, s % 60);
  return buf;
}

ProgressBar::ProgressBar(std::FILE* out) : out_(out), tty_(::isatty(::fileno(out)) == 1) {}

void ProgressBar::update(const TuneProgress& p) {
  const auto now = std::chrono::steady_clock::now();
  const bool new_shape = p.shape_index != last_shape_;
  if (!new_shape && now - last_draw_ < std::chrono::milliseconds(100) && p.tactic_index < p.tactics) return;
  last_shape_ = p.shape_index;
  last_draw_ = now;
  const double done = (double(p.shape_index) + (p.tactics ? double(p.tactic_index) / double(p.tactics) : 0.0)) /
                      double(std::max<std::size_t>(p.shapes, 1));
  const std::string eta = done > 0 ? clock_text(p.elapsed_s * (1 - done) / done) : std::string("?");
  std::string what = p.shape ? p.shape->describe() : std::string();
  if (what.size() > 48) what = what.substr(0, 45) + "...";
  if (!tty_) {
    if (new_shape)
      std::fprintf(out_, "tune [%zu/%zu] %s (%zu tactics) | %s elapsed, ETA %s\n", p.shape_index + 1, p.shapes, what.c_str(),
                   p.tactics, clock_text(p.elapsed_s).c_str(), eta.c_str());
    std::fflush(out_);
    return;
  }
  constexpr int kWidth = 24;
  const int filled = static_cast<int>(done * kWidth + 0.5);
  std::string bar(static_cast<std::size_t>(kWidth), '.');
  std::fill(bar.begin(), bar.begin() + std::clamp(filled, 0, kWidth), '#');
  std::fprintf(out_, "\r[%s] %3.0f%% | shape %zu/%zu, tactic %zu/%zu | %-48s | %s elapsed, ETA %s \033[K", bar.c_str(),
               100 * done, p.shape_index + 1, p.shapes, p.tactic_index, p.tactics, what.c_str(),
               clock_text(p.elapsed_s).c_str(), eta.c_str());
  std::fflush(out_);
  drawn_ = true;
}

void ProgressBar::finish() {
  if (tty_ && drawn_) std::fprintf(out_, "\n");
  drawn_ = false;
}

}  // namespace fp4moe::cli
