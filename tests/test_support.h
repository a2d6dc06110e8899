#pragma once
// What every test file may share: `contains`, and skipping a test that cannot run on this machine
// (no plugin, no device, no compiler) so that the run says so instead of passing it.
//
// A skipped test case is not a passed one. At the end of a run the test binary lists the test
// cases it skipped, with their reasons, and exits with kSkippedExitCode where every test case it
// ran was skipped: ctest (one test case per test, SKIP_RETURN_CODE in tests/CMakeLists.txt)
// reports such a test as skipped. Where KILN_TEST_SKIP_LOG names a file, each skip is also
// appended to it as a line "test case<TAB>skipped|in part<TAB>reason"; scripts/setup.sh prints
// that list after each ctest run.

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace kiln {
class DeviceContext;
struct DeviceRecord;
}  // namespace kiln

namespace kiln::testing {

// Whether `text` holds `part` somewhere.
inline bool contains(std::string_view text, std::string_view part) {
  return text.find(part) != std::string_view::npos;
}

// The test binary's exit code where every test case it ran was skipped (Catch2 v3's).
constexpr int kSkippedExitCode = 4;

// Ends the running test case as skipped: `reason` says what this machine lacks. Checks before it
// still count (a test case with a failed check is failed, not skipped), so call it first.
[[noreturn]] void skip(const std::string& reason);

// Notes that a part of the running test case could not run here (`reason` says which and why);
// the rest of it goes on. Listed with the skips, as "in part".
void skip_part(const std::string& reason);

// The plugin's record for the device `name` ("CUDA"), available or not; skips the test case where
// this build has no such plugin.
const DeviceRecord& plugin_or_skip(const std::string& name);

// Why the device `name` ("VULKAN", "CUDA@sm_90") cannot be opened here, or "" where it can.
std::string why_no_device(const std::string& name);

// The device `name` opened; skips the test case where it cannot be (why_no_device).
std::shared_ptr<DeviceContext> device_or_skip(const std::string& name);

// The device `name` opened, or nullptr where it cannot be, with `part` (what the test case does
// with it) noted as skipped.
std::shared_ptr<DeviceContext> device_or_skip_part(const std::string& name,
                                                   const std::string& part);

// The test binary's side (tests/main.cpp): the run's test cases and what they skipped.
namespace skips {

struct Skip {
  std::string test_case;
  std::string reason;
  bool whole = true;  // the test case was skipped, not a part of it
};

void test_case_starting(const std::string& name);
// Returns whether the test case counts as skipped (it skipped and no check failed).
bool test_case_ended(bool failed);
// Prints the skips of the run, if any, and returns the exit code for Catch's `result`.
int finish_run(int result);

}  // namespace skips

}  // namespace kiln::testing
