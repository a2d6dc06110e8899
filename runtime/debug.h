#pragma once
// KILN_DEBUG levels and the logger every part of the runtime writes through.
//   1: one line per realize (kernels, compiles, time)
//   2: one line per kernel (name, global size, time, GFLOP/s, GB/s)
//   3: the schedule
//   4: each kernel's source
//   5: the IR after each pass (graph, linear program)

#include <spdlog/spdlog.h>

namespace kiln {

int debug_level();
spdlog::logger& logger();

}  // namespace kiln
