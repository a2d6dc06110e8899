#pragma once
// Chrome trace output: with KILN_TRACE=FILE every realize, compile and kernel is recorded and
// FILE is written (Trace Event JSON, viewable in Perfetto or chrome://tracing) when the process
// ends.

#include <chrono>
#include <string>

namespace kiln {

bool tracing_enabled();
// A complete event: `name` ran from `start` for `seconds`, in `category` ("kernel", "realize").
void trace_event(const std::string& name, const char* category,
                 std::chrono::steady_clock::time_point start, double seconds,
                 const std::string& detail = "");

}  // namespace kiln
