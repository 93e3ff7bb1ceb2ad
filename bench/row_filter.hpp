// Which benchmark rows a `--filter TEXT` selects (and which tactics the
// sweep's `--tactics TEXT` times): TEXT is one or more substrings separated
// by '|' (`"M=32 N|M=64 N"`), and a row is selected when its name contains
// any of them. An empty TEXT selects every row; an
// empty alternative ("a||b", a trailing '|') selects nothing by itself.
#pragma once

#include <string_view>

namespace fp4moe::bench {

inline bool row_selected(std::string_view filter, std::string_view name) {
  if (filter.empty()) return true;
  for (;;) {
    const std::size_t bar = filter.find('|');
    const std::string_view alt = filter.substr(0, bar);
    if (!alt.empty() && name.find(alt) != std::string_view::npos) return true;
    if (bar == std::string_view::npos) return false;
    filter.remove_prefix(bar + 1);
  }
}

}  // namespace fp4moe::bench
