#include "runtime/debug.h"

#include <spdlog/sinks/stdout_color_sinks.h>

#include <cstdlib>

namespace kiln {

int debug_level() {
  static const int level = [] {
    const char* value = std::getenv("KILN_DEBUG");
    return value ? std::atoi(value) : 0;
  }();
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
