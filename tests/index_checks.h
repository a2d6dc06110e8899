#pragma once
// Checks the indexing tests share (tests/test_gather.cpp, tests/test_scatter.cpp): bitwise
// equality of results, and an IndexError with the parts of its message that matter.

#include <catch2/catch.hpp>

#include <kiln/error.h>

#include <cstring>
#include <string>
#include <vector>

namespace kiln::testing {

// Bitwise equality, so that NaN matches NaN (any payload) and -0 does not match 0.
template <typename T>
void check_same(const std::vector<T>& got, const std::vector<T>& want) {
  REQUIRE(got.size() == want.size());
  for (size_t at = 0; at < want.size(); ++at) {
    INFO("element " << at << ": got " << got[at] << ", want " << want[at]);
    const bool both_nan = got[at] != got[at] && want[at] != want[at];
    CHECK((both_nan || std::memcmp(&got[at], &want[at], sizeof(T)) == 0));
  }
}

// Runs `read` and checks that it raises IndexError with every part of `message` in it.
template <typename Read>
void check_index_error(Read&& read, const std::vector<std::string>& message) {
  try {
    read();
    FAIL("no IndexError");
  } catch (const IndexError& error) {
    for (const std::string& part : message)
      CHECK_THAT(error.what(), Catch::Matchers::Contains(part));
  }
}

}  // namespace kiln::testing
