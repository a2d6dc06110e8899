#pragma once
// A private folder under the temporary directory (TMPDIR, else /tmp), removed with everything in
// it when the object goes, on every path out of the scope that made it.

#include <string>

namespace kiln::cpu {

class TemporaryDirectory {
 public:
  // `purpose` goes into the folder's name ("kiln-<purpose>-XXXXXX"). Throws DeviceError when the
  // folder cannot be made.
  explicit TemporaryDirectory(const std::string& purpose);
  ~TemporaryDirectory();
  TemporaryDirectory(const TemporaryDirectory&) = delete;
  TemporaryDirectory& operator=(const TemporaryDirectory&) = delete;

  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace kiln::cpu
