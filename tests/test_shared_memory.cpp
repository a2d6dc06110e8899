// Memory shared with the application: Tensor::from_blob (host memory used in place, its deleter
// called once kiln is done with it) and Tensor::native_memory (the device's own allocation).

#include <catch2/catch.hpp>

#include <kiln/kiln.h>

#include <cstdint>
#include <cstring>
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
  CHECK_THROWS_WITH(Tensor::from_blob(reinterpret_cast<char*>(host.data()) + 2, {2},
                                      dtypes::float32, {}, "CPU"),
                    Contains("not aligned to the dtype's 4 bytes"));
  CHECK_THROWS_AS(Tensor::from_blob(host.data(), {-1}, dtypes::float32, {}, "CPU"), ShapeError);
  // A device that cannot use host memory in place says so; nothing is made (the deleter is not
  // called, the memory stays the application's).
  int deleted = 0;
  for (const std::string& device : kiln::devices()) {
    if (open_device(device)->allocator().driver().wrap_host(host.data(), 32)) continue;
    INFO(device);
    CHECK_THROWS_WITH(
        Tensor::from_blob(host.data(), {8}, dtypes::float32, [&](void*) { ++deleted; }, device),
        Contains("cannot use host memory in place"));
  }
  CHECK(deleted == 0);
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
