#include "runtime/device_context.h"

#include <chrono>

#include "runtime/debug.h"
#include "runtime/kernel_cache.h"

namespace kiln {

DeviceContext::DeviceContext(std::unique_ptr<Device> device)
    : device_(std::move(device)),
      allocator_(std::make_unique<CachingAllocator>(
          device_->allocator(), default_cache_limit(device_->properties().memory_bytes))) {}

DeviceContext::~DeviceContext() {
  programs_.clear();
  allocator_.reset();  // cached blocks go back to the driver before the driver goes
}

Program& DeviceContext::program(const std::string& source, const std::string& kernel_name) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto found = programs_.find(source);
  if (found != programs_.end()) {
    stats_.memory_hits++;
    return *found->second;
  }
  const std::string key = kernel_cache_key(device_->compiler().identity(), source);
  std::unique_ptr<Program> loaded;
  if (std::optional<std::vector<uint8_t>> cached = DiskCache::instance().load(key)) {
    stats_.disk_hits++;
    try {
      loaded = load(*cached, kernel_name);
    } catch (const OutOfMemoryError&) {
      throw;  // the binary is fine: a new one would not fit either
    } catch (const Error& error) {
      // The entry is intact (its checksum matched) but the driver refuses it: written by another
      // driver version that the compiler identity does not capture. Build it again.
      logger().warn("cached binary of {} rejected by the driver, recompiling: {}", kernel_name,
                    error.what());
    }
  }
  if (!loaded) loaded = load(compile_and_store(key, source, kernel_name), kernel_name);
  Program& result = *loaded;
  programs_.emplace(source, std::move(loaded));
  return result;
}

void DeviceContext::compile(const std::string& source, const std::string& kernel_name) {
  std::lock_guard<std::mutex> lock(mutex_);
  const std::string key = kernel_cache_key(device_->compiler().identity(), source);
  if (DiskCache::instance().load(key)) {
    stats_.disk_hits++;
    return;
  }
  compile_and_store(key, source, kernel_name);
}

std::unique_ptr<Program> DeviceContext::load(const std::vector<uint8_t>& binary,
                                             const std::string& kernel_name) {
  return allocator_->retry_after_release(
      [&] { return device_->load_program(binary, kernel_name); });
}

std::vector<uint8_t> DeviceContext::compile_and_store(const std::string& key,
                                                      const std::string& source,
                                                      const std::string& kernel_name) {
  const auto start = std::chrono::steady_clock::now();
  std::vector<uint8_t> binary = device_->compiler().compile(source, kernel_name);
  const auto elapsed = std::chrono::steady_clock::now() - start;
  stats_.compiles++;
  stats_.compile_microseconds +=
      std::chrono::duration_cast<std::chrono::microseconds>(elapsed).count();
  DiskCache::instance().store(key, binary);
  return binary;
}

}  // namespace kiln
