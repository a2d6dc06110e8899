#pragma once
// Running a test's child process. Settings read once per process (KILN_PLUGIN_PATH, KILN_CC,
// KILN_CACHE_DIR, KILN_DEVICE) are tested from outside, in a fresh process with its own
// environment.

#include <catch2/catch.hpp>

#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

namespace kiln::test {

struct ChildResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
};

// Runs `command` through the shell with extra environment assignments (as `env` takes them) in
// front.
inline ChildResult run_child(const std::string& environment, const std::string& command) {
  const std::string line = "env " + environment + " " + command + " 2>&1";
  ChildResult result;
  FILE* pipe = popen(line.c_str(), "r");
  REQUIRE(pipe != nullptr);
  char chunk[4096];
  size_t count = 0;
  while ((count = std::fread(chunk, 1, sizeof(chunk), pipe)) > 0)
    result.output.append(chunk, count);
  const int status = pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

// A new empty folder under the temporary directory, removed with everything in it at the end of
// the scope.
class ScratchFolder {
 public:
  explicit ScratchFolder(const std::string& purpose) {
    std::string pattern =
        (std::filesystem::temp_directory_path() / ("kiln-" + purpose + "-XXXXXX")).string();
    REQUIRE(mkdtemp(pattern.data()) != nullptr);
    path_ = pattern;
  }
  ~ScratchFolder() {
    std::error_code error;
    std::filesystem::remove_all(path_, error);
  }
  ScratchFolder(const ScratchFolder&) = delete;
  ScratchFolder& operator=(const ScratchFolder&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::string string() const { return path_.string(); }

 private:
  std::filesystem::path path_;
};

}  // namespace kiln::test
