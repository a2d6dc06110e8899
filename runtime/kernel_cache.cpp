#include "runtime/kernel_cache.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

#include "core/hash.h"
#include "runtime/debug.h"

namespace kiln {
namespace {

// Version 2 adds the key's hash: an entry's file name is its key, but a file renamed or copied
// over another (or a hash-colliding name) must not hand one kernel's binary to another, which the
// payload checksum alone cannot tell. Version 3 hashes with XXH3 instead of FNV-1a, so a version 2
// header's hashes would not match: older entries fail the magic and are rebuilt.
constexpr char kMagic[8] = {'K', 'I', 'L', 'N', 'B', 'I', 'N', '3'};
constexpr uint64_t kHeaderBytes = 32;  // magic, key hash, payload size, payload checksum

uint64_t key_hash_of(const std::string& key) {
  return stable_hash(key);
}
// Seeded with the key's hash, so that the checksum also ties the payload to the key.
uint64_t checksum_of(const std::vector<uint8_t>& binary, uint64_t key_hash) {
  return stable_hash(binary.data(), binary.size(), key_hash);
}

std::string default_directory() {
  if (const char* explicit_dir = std::getenv("KILN_CACHE_DIR"); explicit_dir && *explicit_dir) {
    return explicit_dir;
  }
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg)
    return std::string(xdg) + "/kiln";
  if (const char* home = std::getenv("HOME"); home && *home)
    return std::string(home) + "/.cache/kiln";
  return std::filesystem::temp_directory_path().string() + "/kiln-cache";
}

// Writes all `size` bytes; false (errno set) when that fails.
bool write_all(int descriptor, const void* data, size_t size) {
  const auto* bytes = static_cast<const uint8_t*>(data);
  while (size > 0) {
    const ssize_t count = ::write(descriptor, bytes, size);
    if (count < 0 && errno == EINTR) continue;
    if (count <= 0) {
      if (count == 0) errno = ENOSPC;
      return false;
    }
    bytes += count;
    size -= static_cast<size_t>(count);
  }
  return true;
}

}  // namespace

DiskCache& DiskCache::instance() {
  static DiskCache cache(default_directory());
  return cache;
}

DiskCache::DiskCache(std::string directory) : directory_(std::move(directory)) {}

std::string DiskCache::path_of(const std::string& key) const {
  return directory_ + "/" + key + ".bin";
}

std::optional<std::vector<uint8_t>> DiskCache::load(const std::string& key) const {
  std::ifstream file(path_of(key), std::ios::binary | std::ios::ate);
  if (!file) return std::nullopt;
  // The size of the file as opened, so that a header's claim is checked before anything is
  // allocated for it: a corrupt header must not cost gigabytes on every load.
  const std::streamoff file_size = file.tellg();
  file.seekg(0);
  char magic[8];
  uint64_t key_hash = 0, size = 0, checksum = 0;
  file.read(magic, 8);
  file.read(reinterpret_cast<char*>(&key_hash), 8);
  file.read(reinterpret_cast<char*>(&size), 8);
  file.read(reinterpret_cast<char*>(&checksum), 8);
  if (!file || std::memcmp(magic, kMagic, 8) != 0) {
    if (debug_level() >= 1)
      logger().warn("cache entry {} is corrupt (bad header); rebuilding", key);
    return std::nullopt;
  }
  if (key_hash != key_hash_of(key)) {
    if (debug_level() >= 1)
      logger().warn("cache entry {} holds another kernel's binary; rebuilding", key);
    return std::nullopt;
  }
  const uint64_t payload_bytes = static_cast<uint64_t>(file_size) - kHeaderBytes;
  if (size != payload_bytes) {
    if (debug_level() >= 1) {
      logger().warn(
          "cache entry {} is corrupt (its header claims {} bytes, the file holds {}); "
          "rebuilding",
          key, size, payload_bytes);
    }
    return std::nullopt;
  }
  std::vector<uint8_t> binary(size);
  file.read(reinterpret_cast<char*>(binary.data()), static_cast<std::streamsize>(size));
  if (!file || checksum_of(binary, key_hash) != checksum) {
    if (debug_level() >= 1) logger().warn("cache entry {} is corrupt (checksum); rebuilding", key);
    return std::nullopt;
  }
  return binary;
}

void DiskCache::store(const std::string& key, const std::vector<uint8_t>& binary) const {
  std::error_code error;
  std::filesystem::create_directories(directory_, error);
  if (error) return warn_unwritable("creating the folder: " + error.message());
  std::random_device entropy;
  const std::string temporary =
      path_of(key) + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(entropy());
  const int descriptor = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (descriptor < 0) {
    const int open_error = errno;
    return warn_unwritable("creating " + temporary + ": " + std::strerror(open_error));
  }
  const uint64_t key_hash = key_hash_of(key);
  const uint64_t size = binary.size();
  const uint64_t checksum = checksum_of(binary, key_hash);
  char header[kHeaderBytes];
  std::memcpy(header, kMagic, 8);
  std::memcpy(header + 8, &key_hash, 8);
  std::memcpy(header + 16, &size, 8);
  std::memcpy(header + 24, &checksum, 8);
  bool written = write_all(descriptor, header, sizeof(header)) &&
                 write_all(descriptor, binary.data(), binary.size());
  int write_error = errno;
  if (::close(descriptor) != 0 && written) {
    written = false;
    write_error = errno;
  }
  if (!written) {
    std::filesystem::remove(temporary, error);
    return warn_unwritable("writing " + temporary + ": " + std::strerror(write_error));
  }
  std::filesystem::rename(temporary, path_of(key), error);
  if (error) {
    const std::string reason = "renaming " + temporary + ": " + error.message();
    std::filesystem::remove(temporary, error);
    warn_unwritable(reason);
  }
}

// Once per cache (the process's cache is one object): a cache that cannot be written costs a
// compile of every kernel in every process, which the user should hear about without KILN_DEBUG.
void DiskCache::warn_unwritable(const std::string& reason) const {
  if (warned_unwritable_.exchange(true)) return;
  logger().warn(
      "cannot write the kernel cache in {} ({}); kernels are compiled again in every process. Set "
      "KILN_CACHE_DIR to a writable folder.",
      directory_, reason);
}

std::string kernel_cache_key(const std::string& compiler_identity, const std::string& source) {
  const std::string material = compiler_identity + '\0' + source;
  const StableHash128 hash = stable_hash_128(material);
  char text[33];
  std::snprintf(text, sizeof(text), "%016llx%016llx", static_cast<unsigned long long>(hash.high),
                static_cast<unsigned long long>(hash.low));
  return text;
}

}  // namespace kiln
