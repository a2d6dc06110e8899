#include "runtime/device_context.h"

#include <chrono>

#include "runtime/debug.h"
#include "runtime/kernel_cache.h"

namespace kiln {

DeviceContext::DeviceContext(std::unique_ptr<Device> device)
    : device_(std::move(device)),
      allocator_(std::make_unique<CachingAllocator>(device_->allocator())) {}

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
  Compiler& compiler = device_->compiler();
  const std::string key = kernel_cache_key(compiler.identity(), source);
  std::optional<std::vector<uint8_t>> binary = DiskCache::instance().load(key);
  if (binary) {
    stats_.disk_hits++;
  } else {
    const auto start = std::chrono::steady_clock::now();
    binary = compiler.compile(source, kernel_name);
    const auto elapsed = std::chrono::steady_clock::now() - start;
    stats_.compiles++;
    stats_.compile_microseconds +=
        std::chrono::duration_cast<std::chrono::microseconds>(elapsed).count();
    DiskCache::instance().store(key, *binary);
  }
  std::unique_ptr<Program> loaded = device_->load_program(*binary, kernel_name);
  Program& result = *loaded;
  programs_.emplace(source, std::move(loaded));
  return result;
}

}  // namespace kiln
