#include "runtime/debug.h"

#include <spdlog/sinks/stdout_color_sinks.h>

#include "runtime/environment.h"

namespace kiln {

// Junk (KILN_DEBUG=abc, -1) is an Error at every call rather than a silent 0: a static that
// fails to initialize is tried again next time. The registry reads it first, so a program that
// uses a device fails there, at its first device.
int debug_level() {
  static const int level = static_cast<int>(integer_from_environment(
      "KILN_DEBUG", 0, 5, 0,
      "0 quiet, 1 a line per realize, 2 per kernel, 3 the schedule, 4 the sources, 5 the passes"));
  return level;
}

spdlog::logger& logger() {
  static std::shared_ptr<spdlog::logger> instance = [] {
    auto created = spdlog::stderr_color_mt("kiln");
    created->set_pattern("[kiln] %v");
    created->set_level(spdlog::level::info);
    return created;
  }();
  return *instance;
}

}  // namespace kiln
