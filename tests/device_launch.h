#pragma once
// Launching a lowered program on a device by hand, as realize would (its loads and stores
// vectorized for the device's dialect, scratch parameters zero-filled and kept between launches):
// for tests that choose a kernel's opts themselves.

#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>
#include <vector>

#include "codegen/decompose.h"
#include "codegen/linear.h"
#include "codegen/render.h"
#include "codegen/vectorize.h"
#include "runtime/device_context.h"

namespace kiln::testing {

// The output's bytes after each of `times` launches over `inputs` (each input parameter's bytes,
// in order), rendered in the device's dialect or `rendered_as` (a variant of it).
inline std::vector<std::vector<uint8_t>> launch_program(
    DeviceContext& context, const LinearProgram& program,
    const std::vector<std::vector<uint8_t>>& inputs, int times = 1,
    const Dialect* rendered_as = nullptr) {
  const Dialect& dialect = rendered_as ? *rendered_as : context.device().dialect();
  const std::string source = render_kernel(
      decompose_semantics(vectorize_stores(vectorize_loads(program, dialect), dialect), dialect),
      dialect);
  INFO(source);
  const std::shared_ptr<Program> compiled = context.program(source, program.name);
  Allocator& memory = context.allocator().driver();
  LaunchRequest request;
  std::vector<size_t> sizes;
  size_t input = 0;
  for (size_t param = 0; param < program.params.size(); ++param) {
    const KernelParam& info = program.params[param];
    sizes.push_back(static_cast<size_t>(info.numel) * info.dtype.itemsize());
    request.buffers.push_back(memory.alloc(sizes.back()));
    if (info.scratch) {
      const std::vector<uint8_t> zeros(sizes.back(), 0);
      memory.copy_in(request.buffers.back(), zeros.data(), zeros.size());
    } else if (param > 0) {
      REQUIRE(input < inputs.size());
      REQUIRE(inputs[input].size() == sizes.back());
      memory.copy_in(request.buffers.back(), inputs[input].data(), sizes.back());
      ++input;
    }
  }
  int64_t global[3], local[3];
  dispatch_sizes(program, {}, global, local);
  request.global = {global[0], global[1], global[2]};
  request.local = {local[0], local[1], local[2]};
  request.wait = true;
  std::vector<std::vector<uint8_t>> outputs;
  for (int launch = 0; launch < times; ++launch) {
    compiled->launch(request);
    outputs.emplace_back(sizes[0]);
    memory.copy_out(outputs.back().data(), request.buffers[0], sizes[0]);
  }
  for (size_t param = 0; param < sizes.size(); ++param)
    memory.free(request.buffers[param], sizes[param]);
  return outputs;
}

template <typename T>
std::vector<uint8_t> bytes_of(const std::vector<T>& values) {
  std::vector<uint8_t> bytes(values.size() * sizeof(T));
  std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

template <typename T>
std::vector<T> values_of(const std::vector<uint8_t>& bytes) {
  std::vector<T> values(bytes.size() / sizeof(T));
  std::memcpy(values.data(), bytes.data(), values.size() * sizeof(T));
  return values;
}

}  // namespace kiln::testing
