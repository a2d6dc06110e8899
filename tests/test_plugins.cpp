// Plugins that cannot be used are skipped with their reason kept. The registry loads plugins
// once per process, so each check runs a child process with KILN_PLUGIN_PATH pointing at a
// temporary folder that holds deliberately broken plugins:
//   libkiln_device_broken.so    not a shared object at all
//   libkiln_device_noentry.so   a shared object without kiln_plugin_entry
//   libkiln_device_wrongabi.so  a plugin built for another ABI version
//   libkiln_device_wronglayout.so  the right version, other struct layouts
//   libkiln_device_nodevice.so  a plugin whose probe finds no device
//   libkiln_device_truncated.so  a plugin cut short, as an interrupted copy leaves it: dlopen
//                                would map segments past its end (SIGBUS on first touch)
//   libkiln_device_nullname.so, _nullprobe.so, _nullcreate.so  the right ABI with a null
//                                pointer in the table

#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "runtime/plugin.h"
#include "tests/child_process.h"

// tests/plugins/lsan_suppressions.cpp: the OpenCL driver leaks a sanitized build ignores.
extern "C" const char* __lsan_default_suppressions();

namespace {

namespace fs = std::filesystem;
using kiln::test::ChildResult;
using kiln::test::run_child;

// A temporary plugin folder with the broken plugins, removed at the end of the test.
class BrokenPluginFolder {
 public:
  BrokenPluginFolder() {
    std::string pattern = (fs::temp_directory_path() / "kiln-plugins-XXXXXX").string();
    REQUIRE(mkdtemp(pattern.data()) != nullptr);
    path_ = pattern;
    std::ofstream(path_ / "libkiln_device_broken.so") << "this is not a shared object\n";
    fs::copy_file(KILN_TEST_PLUGIN_NOENTRY, path_ / "libkiln_device_noentry.so");
    fs::copy_file(KILN_TEST_PLUGIN_WRONG_ABI, path_ / "libkiln_device_wrongabi.so");
    fs::copy_file(KILN_TEST_PLUGIN_WRONG_LAYOUT, path_ / "libkiln_device_wronglayout.so");
    fs::copy_file(KILN_TEST_PLUGIN_NO_DEVICE, path_ / "libkiln_device_nodevice.so");
    // The ELF and program headers survive (the first page); the code and data segments do not.
    const fs::path truncated = path_ / "libkiln_device_truncated.so";
    fs::copy_file(KILN_TEST_PLUGIN_NO_DEVICE, truncated);
    REQUIRE(fs::file_size(truncated) > 3 * 4096);
    fs::resize_file(truncated, 4096);
    fs::copy_file(KILN_TEST_PLUGIN_NULL_NAME, path_ / "libkiln_device_nullname.so");
    fs::copy_file(KILN_TEST_PLUGIN_NULL_PROBE, path_ / "libkiln_device_nullprobe.so");
    fs::copy_file(KILN_TEST_PLUGIN_NULL_CREATE, path_ / "libkiln_device_nullcreate.so");
    // The `kiln` tool has no suppression hook of its own; a sanitized child reads this file.
    std::ofstream(path_ / "lsan_suppressions.txt") << __lsan_default_suppressions();
  }
  ~BrokenPluginFolder() {
    std::error_code error;
    fs::remove_all(path_, error);
  }
  std::string environment(const std::string& device) const {
    std::string text = "KILN_PLUGIN_PATH='" + path_.string() + "' LSAN_OPTIONS='suppressions=" +
                       (path_ / "lsan_suppressions.txt").string() + "'";
    return device.empty() ? "-u KILN_DEVICE " + text : text + " KILN_DEVICE=" + device;
  }

 private:
  fs::path path_;
};

}  // namespace

TEST_CASE("broken plugins are skipped and the default device still works", "[plugins]") {
  BrokenPluginFolder folder;
  const ChildResult result = run_child(folder.environment("CPU"), KILN_TEST_OPEN_DEVICE);
  INFO(result.output);
  CHECK(result.exit_code == 0);
  CHECK_THAT(result.output, Catch::Contains("computed on CPU: 12"));
}

TEST_CASE("KILN_DEVICE naming an unusable plugin's device fails with the reason", "[plugins]") {
  BrokenPluginFolder folder;
  SECTION("a plugin whose probe finds no device") {
    const ChildResult result = run_child(folder.environment("NODEVICE"), KILN_TEST_OPEN_DEVICE);
    INFO(result.output);
    CHECK(result.exit_code == 3);  // a DeviceError
    CHECK_THAT(result.output, Catch::Contains("NODEVICE is unavailable") &&
                                  Catch::Contains("no NODEVICE hardware here"));
  }
  SECTION("a plugin that fails to load: the error lists it with its reason") {
    const ChildResult result = run_child(folder.environment("BROKEN"), KILN_TEST_OPEN_DEVICE);
    INFO(result.output);
    CHECK(result.exit_code == 3);
    CHECK_THAT(result.output, Catch::Contains("BROKEN is unavailable: failed to load") &&
                                  Catch::Contains("libkiln_device_broken.so") &&
                                  Catch::Contains("NOENTRY: not a kiln plugin") &&
                                  Catch::Contains("WRONGABI: plugin ABI version"));
  }
  SECTION("a truncated plugin is refused before dlopen maps it") {
    const ChildResult result = run_child(folder.environment("TRUNCATED"), KILN_TEST_OPEN_DEVICE);
    INFO(result.output);
    CHECK(result.exit_code == 3);
    CHECK_THAT(result.output, Catch::Contains("TRUNCATED is unavailable: failed to load") &&
                                  Catch::Contains("a truncated ELF file (4096 bytes"));
  }
  SECTION("a plugin whose table lacks a function is refused before it is called") {
    const ChildResult probe = run_child(folder.environment("NULLPROBE"), KILN_TEST_OPEN_DEVICE);
    INFO(probe.output);
    CHECK(probe.exit_code == 3);
    CHECK_THAT(probe.output, Catch::Contains("NULLPROBE is unavailable: unusable plugin") &&
                                 Catch::Contains("no probe function"));
    const ChildResult create = run_child(folder.environment("NULLCREATE"), KILN_TEST_OPEN_DEVICE);
    INFO(create.output);
    CHECK(create.exit_code == 3);
    CHECK_THAT(create.output, Catch::Contains("NULLCREATE is unavailable: unusable plugin") &&
                                  Catch::Contains("no create function"));
    // A table without a name is listed under its file's name.
    const ChildResult name = run_child(folder.environment("NULLNAME"), KILN_TEST_OPEN_DEVICE);
    INFO(name.output);
    CHECK(name.exit_code == 3);
    CHECK_THAT(name.output, Catch::Contains("NULLNAME is unavailable: unusable plugin") &&
                                Catch::Contains("no device name"));
  }
  SECTION("a device the plugins do not know") {
    const ChildResult result = run_child(folder.environment("NOSUCHDEVICE"), KILN_TEST_OPEN_DEVICE);
    INFO(result.output);
    CHECK(result.exit_code == 3);
    CHECK_THAT(result.output, Catch::Contains("unknown device 'NOSUCHDEVICE'") &&
                                  Catch::Contains("available devices: CPU"));
  }
}

#ifdef KILN_TOOL_PATH
TEST_CASE("kiln devices lists each broken plugin with its reason", "[plugins]") {
  BrokenPluginFolder folder;
  const ChildResult result =
      run_child(folder.environment(""), std::string(KILN_TOOL_PATH) + " devices");
  INFO(result.output);
  CHECK(result.exit_code == 0);
  CHECK_THAT(result.output, Catch::Contains("CPU"));
  CHECK_THAT(result.output, Catch::Contains("BROKEN") && Catch::Contains("failed to load"));
  CHECK_THAT(result.output,
             Catch::Contains("NOENTRY") && Catch::Contains("no kiln_plugin_entry symbol"));
  const std::string abi_reason =
      "plugin ABI version " + std::to_string(kiln::kPluginAbiVersion + 1000) +
      " does not match kiln's " + std::to_string(kiln::kPluginAbiVersion);
  CHECK_THAT(result.output, Catch::Contains("WRONGABI") && Catch::Contains(abi_reason));
  CHECK_THAT(result.output, Catch::Contains("WRONGLAYOUT") &&
                                Catch::Contains("plugin built against other kiln headers") &&
                                Catch::Contains("rebuild it"));
  CHECK_THAT(result.output,
             Catch::Contains("NODEVICE") && Catch::Contains("no NODEVICE hardware here"));
  CHECK_THAT(result.output, Catch::Contains("TRUNCATED") && Catch::Contains("truncated ELF file"));
  CHECK_THAT(result.output, Catch::Contains("NULLNAME") && Catch::Contains("no device name"));
  CHECK_THAT(result.output, Catch::Contains("NULLPROBE") && Catch::Contains("no probe function"));
  CHECK_THAT(result.output, Catch::Contains("NULLCREATE") && Catch::Contains("no create function"));
}
#endif
