// Memory shared with the application: Tensor::from_blob (host memory used in place, its deleter
// called once kiln is done with it), Tensor::native_memory (the device's own allocation),
// Tensor::from_native (a tensor over one the application made), kiln::native_device and
// kiln::synchronize.

#include <catch2/catch.hpp>

#include <kiln/kiln.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "runtime/device.h"
#include "runtime/registry.h"

using namespace kiln;
using Catch::Matchers::Contains;

TEST_CASE("from_blob reads host memory in place and calls its deleter once", "[memory][cpu]") {
  std::vector<float> host = {1, 2, 3, 4, 5, 6};
  int deleted = 0;
  void* deleted_pointer = nullptr;
  {
    const Tensor x = Tensor::from_blob(
        host.data(), {2, 3}, dtypes::float32,
        [&](void* pointer) {
          ++deleted;
          deleted_pointer = pointer;
        },
        "CPU");
    CHECK(x.shape() == Shape{2, 3});
    CHECK((x * 2).sum().item<float>() == 42);
    // The tensor is the memory: a change made between realizes is read by the next one.
    host[0] = 100;
    CHECK(x.sum().item<float>() == 120);
    // Its allocation is the host pointer itself.
    const Tensor::NativeMemory memory = x.native_memory();
    CHECK(memory.handle == host.data());
    CHECK(memory.offset == 0);
    CHECK(memory.nbytes == 6 * sizeof(float));
    // A graph that still reads it keeps it: no deleter yet.
    const Tensor later = x + 1;
    CHECK(deleted == 0);
    CHECK(later.to_vector<float>()[0] == 101);
  }
  CHECK(deleted == 1);
  CHECK(deleted_pointer == host.data());
  // Without a deleter the memory simply stays the application's.
  std::vector<int16_t> shorts = {7, -8};
  CHECK(Tensor::from_blob(shorts.data(), {2}, dtypes::int16, {}, "CPU").to_vector<int16_t>() ==
        shorts);
}

TEST_CASE("from_blob refuses what it cannot wrap, naming it", "[memory][errors]") {
  std::vector<float> host(8, 1.0f);
  CHECK_THROWS_WITH(Tensor::from_blob(nullptr, {2}, dtypes::float32, {}, "CPU"),
                    Contains("[from_blob] float32(2,): the pointer is null"));
  CHECK_THROWS_WITH(
      Tensor::from_blob(reinterpret_cast<char*>(host.data()) + 2, {2}, dtypes::float32, {}, "CPU"),
      Contains("not aligned to the dtype's 4 bytes"));
  CHECK_THROWS_AS(Tensor::from_blob(host.data(), {-1}, dtypes::float32, {}, "CPU"), ShapeError);
  // A device that cannot use host memory in place says so; nothing is made (the deleter is not
  // called, the memory stays the application's).
  int deleted = 0;
  for (const std::string& device : kiln::devices()) {
    Allocator& driver = open_device(device)->allocator().driver();
    try {
      if (DeviceMemory wrapped = driver.wrap_host(host.data(), 32)) {
        driver.release_wrapped(wrapped);
        continue;
      }
    } catch (const DeviceError&) {
      continue;  // it can, at another alignment
    }
    INFO(device);
    CHECK_THROWS_WITH(Tensor::from_blob(
                          host.data(), {8}, dtypes::float32, [&](void*) { ++deleted; }, device),
                      Contains("cannot use host memory in place"));
  }
  CHECK(deleted == 0);
}

TEST_CASE("from_blob shares host memory with every device that can use it in place", "[memory]") {
  for (const std::string& device : kiln::devices()) {
    if (device.rfind("CUDA", 0) == 0) continue;  // no zero-copy host memory there yet
    INFO(device);
    // A device with memory of its own (NVIDIA's OpenCL) refuses (the test above); the CPU, PoCL,
    // lavapipe and every Vulkan driver with VK_EXT_external_memory_host take it.
    Allocator& driver = open_device(device)->allocator().driver();
    std::unique_ptr<float, decltype(&std::free)> page(
        static_cast<float*>(std::aligned_alloc(4096, 4096)), &std::free);
    DeviceMemory probe{};
    try {
      probe = driver.wrap_host(page.get(), 4096);
    } catch (const DeviceError& error) {
      FAIL_CHECK(device << " refused a page-aligned page: " << error.what());
      continue;
    }
    if (!probe) {
      CHECK(device.rfind("CL", 0) == 0);
      continue;
    }
    driver.release_wrapped(probe);
    // Odd sizes, the pointer inside a page at the least alignment the device binds at.
    const size_t alignment = std::max<size_t>(16, driver.subregion_alignment());
    const size_t skip = alignment / sizeof(float);
    std::unique_ptr<float, decltype(&std::free)> storage(
        static_cast<float*>(std::aligned_alloc(4096, 4096 * 2)), &std::free);
    std::fill(storage.get(), storage.get() + 2048, 0.0f);
    float* const host = storage.get() + skip;
    for (int element = 0; element < 1003; ++element) host[element] = static_cast<float>(element);
    int deleted = 0;
    {
      Tensor x = Tensor::from_blob(
          host, {17, 59}, dtypes::float32, [&](void*) { ++deleted; }, device);
      CHECK(x.sum().item<float>() == 1003.0f * 1002 / 2);
      // Changed between realizes (after synchronize): the next realize reads the change.
      kiln::synchronize(device);
      host[0] = 5000;
      CHECK(x.sum().item<float>() == 1003.0f * 1002 / 2 + 5000);
      // kiln's writes land in the application's memory, seen there once the device is done.
      const Tensor::NativeMemory before = x.native_memory();
      x.assign(x * 2 + 1);
      kiln::synchronize(device);
      CHECK(host[0] == 10001);
      CHECK(host[1002] == 2005);
      CHECK(host[-1] == 0);    // nothing before the tensor's first byte
      CHECK(host[1003] == 0);  // nor after its last
      CHECK(x.native_memory().handle == before.handle);
      // A copy of a part of it reads the same memory.
      CHECK(x.slice(1, 3, 4).contiguous().to_vector<float>()[0] == 7);
      CHECK(deleted == 0);
    }
    kiln::synchronize(device);
    CHECK(deleted == 1);
    // One element, and none.
    alignas(256) float one = 3;
    CHECK(Tensor::from_blob(&one, {1}, dtypes::float32, {}, device).item<float>() == 3);
    CHECK(Tensor::from_blob(&one, {0}, dtypes::float32, {}, device).sum().item<float>() == 0);
  }
}

TEST_CASE("native_memory gives the device's own allocation of a buffer", "[memory]") {
  for (const std::string& device : kiln::devices()) {
    INFO(device);
    const Tensor x = (Tensor::arange(10, dtypes::float32, device) * 3).contiguous();
    const Tensor::NativeMemory memory = x.native_memory();
    CHECK(memory.handle != nullptr);
    CHECK(memory.nbytes == 40);
    // A view is not a buffer of its own.
    CHECK_THROWS_WITH(x.slice(0, 2, 5).native_memory(), Contains("take contiguous()"));
  }
}

TEST_CASE("from_native makes a tensor over the device API's own allocation", "[memory]") {
  for (const std::string& device : kiln::devices()) {
    INFO(device);
    // An allocation of the device's: here one of kiln's, which must outlive what is made on it.
    const Tensor owner = Tensor::arange(2048, dtypes::float32, device).contiguous();
    const Tensor::NativeMemory memory = owner.native_memory();
    int released = 0;
    {
      Tensor whole = Tensor::from_native(
          memory, {8, 256}, dtypes::float32, [&] { ++released; }, device);
      CHECK(whole.sum(1).to_vector<float>()[7] == 256 * 1792 + 255 * 128);
      // Written in place: the allocation's other tensor sees it.
      whole.assign(whole * -1);
      kiln::synchronize(device);
      CHECK(owner.to_vector<float>()[2047] == -2047);
      // At an offset (4096 bytes: a multiple of any device's buffer alignment), fewer elements.
      const Tensor::NativeMemory tail{memory.handle, memory.offset + 4096, memory.nbytes - 4096};
      const Tensor part = Tensor::from_native(tail, {1024}, dtypes::float32, {}, device);
      CHECK(part.to_vector<float>()[0] == -1024);
      CHECK(part.to_vector<float>()[1023] == -2047);
      CHECK(released == 0);
    }
    kiln::synchronize(device);
    CHECK(released == 1);

    // Bad input names from_native and makes nothing.
    CHECK_THROWS_WITH(Tensor::from_native({}, {4}, dtypes::float32, {}, device),
                      Contains("[from_native] float32(4,): the handle is null"));
    CHECK_THROWS_WITH(Tensor::from_native(memory, {2049}, dtypes::float32, {}, device),
                      Contains("needs 8196 bytes; the allocation holds 8192"));
    CHECK_THROWS_WITH(Tensor::from_native({memory.handle, 2, 64}, {4}, dtypes::float32, {}, device),
                      Contains("is not aligned to the dtype's 4 bytes"));
    const size_t alignment = open_device(device)->allocator().driver().subregion_alignment();
    const bool vulkan = device.rfind("VULKAN", 0) == 0;
    if (vulkan && alignment > 4) {
      // Host memory is bound at multiples of minStorageBufferOffsetAlignment (lavapipe: 16).
      alignas(256) float floats[64] = {};
      CHECK_THROWS_WITH(Tensor::from_blob(floats + 1, {4}, dtypes::float32, {}, device),
                        Contains("minStorageBufferOffsetAlignment"));
    }
    if ((vulkan || device.rfind("CL", 0) == 0) && alignment > 4) {
      const Tensor::NativeMemory odd{memory.handle, memory.offset + 4, memory.nbytes - 4};
      CHECK_THROWS_AS(Tensor::from_native(odd, {4}, dtypes::float32, {}, device), DeviceError);
    }
  }
}

TEST_CASE("native_device gives the device API's objects, synchronize waits for the device",
          "[memory]") {
  for (const std::string& device : kiln::devices()) {
    INFO(device);
    const NativeDevice native = kiln::native_device(device);
    if (device.rfind("CPU", 0) == 0) {
      CHECK(native.device == nullptr);
      CHECK(native.queue == nullptr);
    } else {
      CHECK(native.queue != nullptr);
    }
    if (device.rfind("CL", 0) == 0) {
      CHECK(native.platform != nullptr);
      CHECK(native.context != nullptr);
      CHECK(native.device != nullptr);
    }
    if (device.rfind("VULKAN", 0) == 0) {
      CHECK(native.instance != nullptr);
      CHECK(native.physical_device != nullptr);
      CHECK(native.device != nullptr);
    }
    const Tensor queued = (Tensor::arange(1000, device) * 2).realize();
    kiln::synchronize(device);
    CHECK(queued.to_vector<int32_t>()[999] == 1998);
  }
  CHECK_THROWS_AS(kiln::synchronize("NO_SUCH_DEVICE"), DeviceError);
  CHECK_THROWS_AS(kiln::native_device("NO_SUCH_DEVICE"), DeviceError);
}
