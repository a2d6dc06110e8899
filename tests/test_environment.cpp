// Settings read from the environment agree on one spelling (runtime/environment.h): a switch is
// 0 or 1, a number is decimal digits in its range, a device name follows one grammar; anything
// else is an error naming the variable and what is valid, never a silent default. Settings read
// once per process are checked in a child process with its own environment.

#include <catch2/catch.hpp>

#include <kiln/kiln.h>

#include <string>

#include "runtime/environment.h"
#include "runtime/registry.h"
#include "tests/child_process.h"
#include "tests/scoped_settings.h"
#include "tests/test_support.h"

using namespace kiln;
using Catch::Matchers::Contains;
using kiln::test::ChildResult;
using kiln::test::run_child;
using kiln::testing::ScopedEnvironment;

TEST_CASE("switches are 0 or 1 and numbers digits in range and junk names the variable",
          "[environment]") {
  const ScopedEnvironment variable("KILN_TEST_SETTING", nullptr);
  CHECK(switch_from_environment("KILN_TEST_SETTING", "off", "on") == true);
  CHECK(switch_from_environment("KILN_TEST_SETTING", "off", "on", false) == false);
  CHECK(integer_from_environment("KILN_TEST_SETTING", 0, 5, 3, "a level") == 3);
  variable.set("");
  CHECK(switch_from_environment("KILN_TEST_SETTING", "off", "on", false) == false);
  variable.set("1");
  CHECK(switch_from_environment("KILN_TEST_SETTING", "off", "on", false) == true);
  variable.set("0");
  CHECK(switch_from_environment("KILN_TEST_SETTING", "off", "on", true) == false);
  for (const char* junk : {"false", "yes", "true", "on", "2", " 1", "01"}) {
    INFO(junk);
    variable.set(junk);
    CHECK_THROWS_AS(switch_from_environment("KILN_TEST_SETTING", "off", "on"), Error);
    CHECK_THROWS_WITH(switch_from_environment("KILN_TEST_SETTING", "off", "on"),
                      Contains("[KILN_TEST_SETTING]") && Contains(std::string("'") + junk + "'") &&
                          Contains("use 0 (off) or 1 (on)"));
  }
  variable.set("4");
  CHECK(integer_from_environment("KILN_TEST_SETTING", 0, 5, 0, "a level") == 4);
  for (const char* junk : {"abc", "-1", "6", "1.5", "3x", "+2", "99999999999999999999999"}) {
    INFO(junk);
    variable.set(junk);
    CHECK_THROWS_WITH(integer_from_environment("KILN_TEST_SETTING", 0, 5, 0, "a level"),
                      Contains("[KILN_TEST_SETTING]") && Contains(std::string("'") + junk + "'") &&
                          Contains("from 0 to 5 (a level)"));
  }
}

TEST_CASE("device names follow one grammar", "[environment][runtime]") {
  CHECK(canonical_device_name("cpu") == "CPU");
  CHECK(canonical_device_name("CL:0") == "CL");
  CHECK(canonical_device_name("cl:12") == "CL:12");
  CHECK(canonical_device_name("cuda@SM_90") == "CUDA@sm_90");
  for (const char* junk : {"CL:0:0", "CL:00", "CL:01", "CUDA@", "CL:", ":1", "", "C L", "CL:-1",
                           "CL:+1", "CUDA@sm_90:1", "CUDA:1@sm_90", "1CL", "CUDA@sm-90"}) {
    INFO("'" << junk << "'");
    CHECK_THROWS_AS(canonical_device_name(junk), DeviceError);
    CHECK_THROWS_WITH(canonical_device_name(junk),
                      Contains("is not a device name") && Contains("NAME:N") &&
                          Contains("NAME@TARGET") && Contains("available devices"));
  }
}

TEST_CASE("a process's settings refuse junk at the first use", "[environment]") {
  // tests/plugins/open_device.cpp: exit 0 computed, 3 a DeviceError, 4 any other error.
  SECTION("KILN_NOOPT") {
    const ChildResult junk = run_child("KILN_DEVICE=CPU KILN_NOOPT=false", KILN_TEST_OPEN_DEVICE);
    INFO(junk.output);
    CHECK(junk.exit_code == 4);
    CHECK_THAT(junk.output, Contains("[KILN_NOOPT] 'false' is not valid") && Contains("use 0"));
    const ChildResult off = run_child("KILN_DEVICE=CPU KILN_NOOPT=0", KILN_TEST_OPEN_DEVICE);
    INFO(off.output);
    CHECK(off.exit_code == 0);
  }
  SECTION("KILN_DEBUG") {
    for (const char* junk : {"abc", "-1", "6"}) {
      const ChildResult result =
          run_child(std::string("KILN_DEVICE=CPU KILN_DEBUG=") + junk, KILN_TEST_OPEN_DEVICE);
      INFO(result.output);
      CHECK(result.exit_code == 4);
      CHECK_THAT(result.output, Contains(std::string("[KILN_DEBUG] '") + junk + "' is not valid") &&
                                    Contains("from 0 to 5"));
    }
  }
  SECTION("KILN_CPU_THREADS") {
    const ChildResult result =
        run_child("KILN_DEVICE=CPU KILN_CPU_THREADS=many", KILN_TEST_OPEN_DEVICE);
    INFO(result.output);
    CHECK(result.exit_code == 4);
    CHECK_THAT(result.output, Contains("[KILN_CPU_THREADS] 'many' is not valid"));
  }
  SECTION("KILN_DEVICE") {
    for (const char* junk : {"CL:0:0", "CL:00", "CUDA@"}) {
      const ChildResult result =
          run_child(std::string("KILN_DEVICE='") + junk + "'", KILN_TEST_OPEN_DEVICE);
      INFO(result.output);
      CHECK(result.exit_code == 3);
      CHECK_THAT(result.output, Contains(std::string("'") + junk + "' is not a device name"));
    }
  }
  SECTION("KILN_VULKAN_STAGING") {
    if (const std::string why = testing::why_no_device("VULKAN"); !why.empty()) {
      testing::skip_part("KILN_VULKAN_STAGING: " + why);
    } else {
      const ChildResult result =
          run_child("KILN_DEVICE=VULKAN KILN_VULKAN_STAGING=yes", KILN_TEST_OPEN_DEVICE);
      INFO(result.output);
      CHECK(result.exit_code == 4);
      CHECK_THAT(result.output, Contains("[KILN_VULKAN_STAGING] 'yes' is not valid"));
    }
  }
}
