#include "devices/cpu/temporary_directory.h"

#include <kiln/error.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

namespace kiln::cpu {

TemporaryDirectory::TemporaryDirectory(const std::string& purpose) {
  std::error_code error;
  const std::filesystem::path parent = std::filesystem::temp_directory_path(error);
  std::string pattern =
      ((error ? std::filesystem::path("/tmp") : parent) / ("kiln-" + purpose + "-XXXXXX")).string();
  if (!mkdtemp(pattern.data())) {
    throw DeviceError("[cpu] cannot make a temporary folder " + pattern + ": " +
                      std::strerror(errno) + " (set TMPDIR to a writable folder)");
  }
  path_ = pattern;
}

TemporaryDirectory::~TemporaryDirectory() {
  std::error_code error;
  std::filesystem::remove_all(path_, error);
}

}  // namespace kiln::cpu
