#pragma once
// The on-disk cache of compiled kernels, shared by processes.
//
// Entries live in KILN_CACHE_DIR (default $XDG_CACHE_HOME/kiln, else ~/.cache/kiln), one file per
// key. A file holds a header (magic, a hash of the key, payload size, payload checksum) and the
// binary; a file that fails the check, another key's entry included, is treated as missing and
// rewritten. Writers write a private temporary file
// and rename it into place, so readers never see a partial entry and two processes compiling the
// same kernel both end with a valid file. A folder that cannot be written is reported once (a
// warning at the default log level) and otherwise ignored: kernels are then compiled every time.

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kiln {

class DiskCache {
 public:
  static DiskCache& instance();
  explicit DiskCache(std::string directory);
  DiskCache(const DiskCache&) = delete;
  DiskCache& operator=(const DiskCache&) = delete;

  std::optional<std::vector<uint8_t>> load(const std::string& key) const;
  void store(const std::string& key, const std::vector<uint8_t>& binary) const;
  const std::string& directory() const { return directory_; }
  std::string path_of(const std::string& key) const;

 private:
  void warn_unwritable(const std::string& reason) const;

  std::string directory_;
  mutable std::atomic<bool> warned_unwritable_{false};
};

// A key for (compiler identity, source): 128 bits of hash as hex.
std::string kernel_cache_key(const std::string& compiler_identity, const std::string& source);

}  // namespace kiln
