// The `kiln` tool's command line (CLI11) and the conformance report it writes (nlohmann-json),
// run as a user runs them: the binary in a child process.

#include <catch2/catch.hpp>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/child_process.h"
#include "tests/test_support.h"

#ifdef KILN_TOOL_PATH
namespace kiln {

using testing::contains;

namespace {

test::ChildResult kiln_tool(const std::string& arguments) {
  return test::run_child("", std::string(KILN_TOOL_PATH) + " " + arguments);
}

struct Subcommand {
  const char* name;
  std::vector<const char*> options;  // every option --help must list
};

const Subcommand kSubcommands[] = {
    {"devices", {"--verbose"}},
    {"bench", {"--device", "--repeat", "--quick"}},
    {"conformance",
     {"--device", "--filter", "--list", "--json", "--failures", "--fuzz", "--opts", "--seed",
      "--verbose", "--compile-only", "--arch", "--jobs", "--case-timeout"}},
    {"render", {"--dialect", "--target", "--arch", "--opts", "--dtype", "--passes"}},
};

}  // namespace

TEST_CASE("kiln --help lists the subcommands, no or an unknown subcommand is a usage error",
          "[tool]") {
  const test::ChildResult help = kiln_tool("--help");
  INFO(help.output);
  CHECK(help.exit_code == 0);
  for (const Subcommand& subcommand : kSubcommands) CHECK(contains(help.output, subcommand.name));

  const test::ChildResult none = kiln_tool("");
  CHECK(none.exit_code == 2);
  CHECK(contains(none.output, "conformance"));
  const test::ChildResult unknown = kiln_tool("frobnicate");
  INFO(unknown.output);
  CHECK(unknown.exit_code == 2);
  CHECK(contains(unknown.output, "frobnicate"));
}

TEST_CASE("each kiln subcommand's --help lists its options, an unknown option is a usage error",
          "[tool]") {
  for (const Subcommand& subcommand : kSubcommands) {
    const test::ChildResult help = kiln_tool(std::string(subcommand.name) + " --help");
    INFO(subcommand.name << ": " << help.output);
    CHECK(help.exit_code == 0);
    CHECK(contains(help.output, std::string("kiln ") + subcommand.name));
    for (const char* option : subcommand.options) CHECK(contains(help.output, option));
    // Internal options stay out of the help.
    CHECK_FALSE(contains(help.output, "--worker"));

    const test::ChildResult unknown = kiln_tool(std::string(subcommand.name) + " --bogus");
    INFO(unknown.output);
    CHECK(unknown.exit_code == 2);
    CHECK(contains(unknown.output, "--bogus"));
    CHECK(contains(unknown.output, std::string("kiln ") + subcommand.name + " --help"));
  }
}

TEST_CASE("kiln's options reject bad values and bad combinations with the option's name",
          "[tool]") {
  const std::pair<const char*, const char*> cases[] = {
      {"bench --repeat 0", "--repeat needs a whole number from 1 to 100000, not '0'"},
      {"bench --device ''", "needs a device name"},
      {"bench --device", "--device"},
      {"conformance --opts fast", "--opts takes default, none, random or gpu, not 'fast'"},
      {"conformance --seed -1", "--seed needs a whole number from 0 to 2^64 - 1"},
      {"conformance --arch sm_90", "--arch goes with --compile-only"},
      {"conformance --compile-only --device CUDA", "--compile-only needs --arch ARCH"},
      {"conformance --list extra", "extra"},
  };
  for (const auto& [arguments, message] : cases) {
    const test::ChildResult result = kiln_tool(arguments);
    INFO(arguments << ": " << result.output);
    CHECK(result.exit_code == 2);
    CHECK(contains(result.output, message));
  }
}

TEST_CASE("kiln conformance takes --option=value, a repeated --device, and the last of a repeat",
          "[tool]") {
  const test::ChildResult result = kiln_tool(
      "conformance --list --filter=nothing --filter '^unary.exact/neg/float32/' --device CPU "
      "--device CPU --jobs=1");
  INFO(result.output);
  CHECK(result.exit_code == 0);
  CHECK(contains(result.output, "unary.exact/neg/float32/"));
  CHECK_FALSE(contains(result.output, " 0 case(s)"));
}

TEST_CASE("kiln conformance --json writes every case with its result", "[tool]") {
  const test::ScratchFolder folder("tool-json");
  const std::string path = folder.string() + "/report.json";
  const test::ChildResult result = test::run_child(
      "KILN_CACHE_DIR=" + folder.string() + "/cache",
      std::string(KILN_TOOL_PATH) +
          " conformance --device CPU --jobs 1 --filter '^unary.exact/neg/float32/' --json " + path);
  INFO(result.output);
  REQUIRE(result.exit_code == 0);
  std::ifstream file(path);
  const nlohmann::json report = nlohmann::json::parse(file);
  CHECK(report.at("tolerances").is_array());
  REQUIRE(report.at("devices").size() == 1);
  const nlohmann::json& device = report["devices"][0];
  CHECK(device.at("device") == "CPU");
  CHECK(device.at("guards").is_boolean());
  CHECK(device.at("kernels_compiled").is_number_integer());
  const nlohmann::json& cases = device.at("cases");
  REQUIRE(!cases.empty());
  CHECK(device.at("summary").at("cases") == cases.size());
  CHECK(device.at("summary").at("pass") == cases.size());
  for (const nlohmann::json& item : cases) {
    CHECK(item.at("name").get<std::string>().rfind("unary.exact/neg/float32/", 0) == 0);
    CHECK(item.at("family") == "unary.exact");
    CHECK(item.at("op") == "neg");
    CHECK(item.at("dtype") == "float32");
    CHECK(item.at("shape").is_array());
    CHECK(item.at("layout").is_string());
    CHECK(item.at("tolerance").is_string());
    CHECK(item.at("status") == "pass");
    CHECK(item.at("seconds").is_number());
  }
}

TEST_CASE("KILN_TRACE writes a Chrome trace that parses as JSON", "[tool]") {
  const test::ScratchFolder folder("tool-trace");
  const std::string path = folder.string() + "/trace.json";
  const test::ChildResult result = test::run_child(
      "KILN_TRACE=" + path + " KILN_CACHE_DIR=" + folder.string() + "/cache",
      std::string(KILN_TOOL_PATH) +
          " conformance --device CPU --jobs 1 --filter '^unary.exact/neg/float32/'");
  INFO(result.output);
  REQUIRE(result.exit_code == 0);
  std::ifstream file(path);
  const nlohmann::json trace = nlohmann::json::parse(file);
  const nlohmann::json& events = trace.at("traceEvents");
  REQUIRE(!events.empty());
  for (const nlohmann::json& event : events) {
    CHECK(event.at("name").is_string());
    CHECK(event.at("ph") == "X");
    CHECK(event.at("dur").is_number());
    CHECK(event.at("args").at("detail").is_string());
  }
}

}  // namespace kiln
#endif
