// The shape-list file of `fp4moe tune --shapes FILE`: one problem per line.
//
//   # comment (anything after '#')
//   <op> <format> <out> key=value ...
//     op      dense | contiguous | masked | moe_fc2 | moe_fc1
//     format  nvfp4 | mxfp4
//     out     bf16 | fp32 | nvfp4 (moe_fc1 only)
//     m=M          one bucket (the one holding M)
//     m=LO-HI      every bucket from the one holding LO to the one holding HI
//     m=all        every bucket up to the maximum (--max-m)
//     n=N k=K      N: rows of B per group (moe_fc1: 2I); K (moe_fc2: optional, E·W)
//     groups=G     contiguous/masked: G; MoE: E (also spelled experts=E)
//     width=W      moe_fc2: W
//     top_k=T      moe_fc2: the routing used while tuning (0: dense alpha)
//
// Example:
//   dense   nvfp4 bf16 m=64 n=2112 k=7168
//   masked  mxfp4 bf16 groups=8 m=1-64 n=4096 k=7168
//   moe_fc2 nvfp4 bf16 experts=256 width=256 m=32-384 n=7168 top_k=8
#pragma once

#include <string>
#include <vector>

#include "fp4moe/tuning.hpp"

namespace fp4moe::tuning {

/// Parses `text` (named `name` in errors) into shapes, one per bucket, each
/// checked by the tuner's rules. Throws Error("<name>:<line>: <what>").
std::vector<TuneShape> parse_shape_list(const std::string& text, const std::string& name, const TuneOptions& options);

/// Reads and parses a file.
std::vector<TuneShape> read_shape_list(const std::string& path, const TuneOptions& options);

}  // namespace fp4moe::tuning
