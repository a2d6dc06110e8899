// Skipped test cases: recorded with their reasons, listed at the end of the run (test_support.h).

#include "tests/test_support.h"

#include <catch2/catch.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <kiln/error.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iostream>

#include "runtime/registry.h"

namespace kiln::testing {

namespace {

struct Run {
  std::string test_case;         // the one running
  std::vector<skips::Skip> now;  // its skips so far
  std::vector<skips::Skip> all;  // the run's skips, of test cases that did not fail
  int test_cases = 0;
  int skipped = 0;
};

Run& run() {
  static Run state;
  return state;
}

const std::vector<DeviceRecord>& records() {
  static const std::vector<DeviceRecord> found = device_records();
  return found;
}

const DeviceRecord* find_record(const std::string& name) {
  for (const DeviceRecord& record : records()) {
    if (record.name == name) return &record;
  }
  return nullptr;
}

void record(const std::string& reason, bool whole) {
  Run& state = run();
  for (const skips::Skip& earlier : state.now) {
    if (earlier.reason == reason && earlier.whole == whole) return;  // a SECTION's rerun
  }
  state.now.push_back({state.test_case, reason, whole});
}

// Appends the skip to the file KILN_TEST_SKIP_LOG names, one write per line (several test
// processes append to it at once).
void log_skip(const skips::Skip& skip) {
  const char* path = std::getenv("KILN_TEST_SKIP_LOG");
  if (!path || !*path) return;
  std::string line = skip.test_case + "\t" + (skip.whole ? "skipped" : "in part") + "\t";
  for (char c : skip.reason) line += c == '\n' || c == '\t' ? ' ' : c;
  line += '\n';
  const int file = ::open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (file < 0) return;
  const ssize_t written = ::write(file, line.data(), line.size());
  (void)written;
  ::close(file);
}

}  // namespace

void skip(const std::string& reason) {
  record(reason, true);
  // What REQUIRE throws after its failure is recorded: Catch ends the test case without adding one.
  throw Catch::TestFailureException();
}

void skip_part(const std::string& reason) {
  record(reason, false);
}

const DeviceRecord& plugin_or_skip(const std::string& name) {
  const DeviceRecord* record = find_record(name);
  if (!record) skip("no " + name + " plugin in this build");
  return *record;
}

std::string why_no_device(const std::string& name) {
  const std::string plugin = name.substr(0, name.find_first_of("@:"));
  if (!find_record(plugin)) return "no " + plugin + " plugin in this build";
  if (const DeviceRecord* record = find_record(name)) {
    return record->available ? "" : name + " is unavailable: " + record->reason;
  }
  try {
    open_device(name);
    return "";
  } catch (const DeviceError& error) {
    // The registry's message less its list of every device.
    std::string why = error.what();
    if (why.rfind("[device] ", 0) == 0) why.erase(0, 9);
    const size_t list = why.find("; available devices:");
    if (list != std::string::npos) why.erase(list);
    return why;
  }
}

std::shared_ptr<DeviceContext> device_or_skip(const std::string& name) {
  const std::string why = why_no_device(name);
  if (!why.empty()) skip(why);
  return open_device(name);
}

std::shared_ptr<DeviceContext> device_or_skip_part(const std::string& name,
                                                   const std::string& part) {
  const std::string why = why_no_device(name);
  if (why.empty()) return open_device(name);
  skip_part(part + ": " + why);
  return nullptr;
}

namespace skips {

void test_case_starting(const std::string& name) {
  Run& state = run();
  state.test_case = name;
  state.now.clear();
  ++state.test_cases;
}

bool test_case_ended(bool failed) {
  Run& state = run();
  bool skipped = false;
  if (!failed) {
    for (const Skip& skip : state.now) {
      skipped |= skip.whole;
      log_skip(skip);
      state.all.push_back(skip);
    }
  }
  state.now.clear();
  state.skipped += skipped;
  return skipped;
}

int finish_run(int result) {
  const Run& state = run();
  if (state.test_cases == 0) return result;  // listing the tests, or none matched
  // Catch2 v2 has no skips of its own: its counts above take a skipped test case as passed.
  for (const bool whole : {true, false}) {
    int listed = 0;
    for (const Skip& skip : state.all) {
      if (skip.whole != whole) continue;
      if (listed++ == 0) {
        std::cout << "\n"
                  << (whole ? "Skipped, not passed (" + std::to_string(state.skipped) + " of " +
                                  std::to_string(state.test_cases) + " test cases):"
                            : "Skipped in part (the rest of the test case ran):")
                  << "\n";
      }
      std::cout << "  " << skip.test_case << ": " << skip.reason << "\n";
    }
  }
  std::cout.flush();
  if (result != 0) return result == kSkippedExitCode ? kSkippedExitCode + 1 : result;
  return state.skipped == state.test_cases ? kSkippedExitCode : 0;
}

}  // namespace skips

}  // namespace kiln::testing
