#include "runtime/device_context.h"

#include <kiln/memory.h>

#include <chrono>
#include <iterator>

#include "runtime/debug.h"
#include "runtime/kernel_cache.h"

namespace kiln {

DeviceContext::DeviceContext(std::unique_ptr<Device> device)
    : device_(std::move(device)),
      allocator_(std::make_unique<CachingAllocator>(
          device_->allocator(), default_cache_limit(device_->properties().memory_bytes))) {}

DeviceContext::~DeviceContext() {
  programs_.clear();
  recent_.clear();
  allocator_.reset();  // cached blocks go back to the driver before the driver goes
}

std::shared_ptr<Program> DeviceContext::program(const std::string& source,
                                                const std::string& kernel_name) {
  // Declared before the lock, so destroyed after it: a Vulkan program waits for its last launch.
  std::list<CachedProgram> dropped;
  std::lock_guard<std::mutex> lock(mutex_);
  auto found = programs_.find(source);
  if (found != programs_.end()) {
    stats_.memory_hits++;
    recent_.splice(recent_.begin(), recent_, found->second);
    return found->second->program;
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
  std::shared_ptr<Program> result = std::move(loaded);
  recent_.push_front(CachedProgram{source, result});
  programs_.emplace(source, recent_.begin());
  trim_programs(dropped);
  return result;
}

size_t DeviceContext::program_count() {
  std::lock_guard<std::mutex> lock(mutex_);
  return programs_.size();
}

void DeviceContext::clear_programs() {
  std::list<CachedProgram> dropped;  // destroyed after the lock, as in program()
  std::lock_guard<std::mutex> lock(mutex_);
  programs_.clear();
  dropped.swap(recent_);
}

void DeviceContext::trim_programs(std::list<CachedProgram>& dropped) {
  const size_t limit = kernel_cache_limit();
  while (recent_.size() > limit) {
    programs_.erase(recent_.back().source);
    dropped.splice(dropped.end(), recent_, std::prev(recent_.end()));
  }
}

void DeviceContext::trim_programs() {
  std::list<CachedProgram> dropped;
  std::lock_guard<std::mutex> lock(mutex_);
  trim_programs(dropped);
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
