// The test binary's main: Catch2's, and the test cases it skipped listed at the end
// (tests/test_support.h).

#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include "tests/test_support.h"

namespace {

struct SkipListener : Catch::TestEventListenerBase {
  using TestEventListenerBase::TestEventListenerBase;

  void testCaseStarting(const Catch::TestCaseInfo& info) override {
    kiln::testing::skips::test_case_starting(info.name);
  }

  void testCaseEnded(const Catch::TestCaseStats& stats) override {
    kiln::testing::skips::test_case_ended(!stats.totals.assertions.allOk());
  }
};

}  // namespace

CATCH_REGISTER_LISTENER(SkipListener)

int main(int argc, char* argv[]) {
  const int result = Catch::Session().run(argc, argv);
  return kiln::testing::skips::finish_run(result);
}
