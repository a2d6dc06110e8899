// Cases for defects an independent check found at a device's limits (issue 26): fused nested
// reductions whose loops together pass lavapipe's 65535 iterations per work item (it stops them
// silently), and index arithmetic whose steps pass 2^31 where GLSL indexes with a 32-bit int.
// Each failed on VULKAN on the head it was found on; the battery holds every device to them.

#include <cmath>
#include <string>
#include <vector>

#include "tools/conformance/battery.h"

namespace kiln::conformance::detail {
namespace {

HostTensor host_values(DType dtype, const std::vector<double>& values) {
  HostTensor tensor(dtype, {static_cast<int64_t>(values.size())});
  for (size_t index = 0; index < values.size(); ++index)
    tensor.data[index] = make_scalar(dtype, values[index]);
  return tensor;
}

// A buffer of ones (a constant would be folded, never looped over).
Tensor ones_buffer(int64_t rows, int64_t columns, const std::string& device) {
  return Tensor::from_vector(std::vector<float>(static_cast<size_t>(rows * columns), 1.0f),
                             {rows, columns}, device);
}

// A float32 sum of `terms` positive terms: a sum's tolerance ((4 + 2 sqrt(n)) eps of the sum).
void add_sum(BatteryBuilder& builder, const std::string& op, Shape shape,
             std::function<Tensor(const std::string&)> create, double expected, double terms,
             std::string code) {
  builder.add(make_created_case(
      "regression", op, dtypes::float32, std::move(shape), std::move(create),
      [expected](const std::vector<HostTensor>&) {
        return Expected(host_values(dtypes::float32, {expected}), {expected});
      },
      std::move(code), tolerance_for(dtypes::float32, 0, 4 + 2 * std::sqrt(terms))));
}

// Two reductions fused into one kernel loop rows * (columns + 1) times per work item: near and
// past 65535 they must come out whole (the scheduler realizes the inner one where they would not
// fit), never short.
void add_nested_reduce_cases(BatteryBuilder& builder) {
  const std::vector<std::pair<int64_t, int64_t>> shapes = {
      {255, 256}, {1008, 64}, {1024, 63}, {650, 100}, {128, 511},
      {256, 256}, {7269, 8},  {3857, 16}, {66, 1000}, {64, 64}};
  for (const auto& [rows, columns] : shapes) {
    const std::string size = std::to_string(rows) + ", " + std::to_string(columns);
    const double count = static_cast<double>(rows * columns);
    add_sum(
        builder, "nested_sum_rows", {rows, columns},
        [rows, columns](const std::string& device) {
          return ones_buffer(rows, columns, device).sum({1}).sum().reshape({1});
        },
        count, count, "ones(" + size + ").sum(1).sum()");
    add_sum(
        builder, "nested_sum_columns", {rows, columns},
        [rows, columns](const std::string& device) {
          return ones_buffer(rows, columns, device).sum({0}).sum().reshape({1});
        },
        count, count, "ones(" + size + ").sum(0).sum()");
    add_sum(
        builder, "nested_max_sum", {rows, columns},
        [rows, columns](const std::string& device) {
          return ones_buffer(rows, columns, device).max({1}).sum().reshape({1});
        },
        static_cast<double>(rows), static_cast<double>(rows), "ones(" + size + ").max(1).sum()");
    add_sum(
        builder, "nested_norm_sum", {rows, columns},
        [rows, columns](const std::string& device) {
          const Tensor x = ones_buffer(rows, columns, device);
          return (x * x).sum({1}).sqrt().sum().reshape({1});
        },
        static_cast<double>(rows) * std::sqrt(static_cast<double>(columns)), count,
        "(x * x).sum(1).sqrt().sum() of ones(" + size + ")");
  }
  add_sum(
      builder, "matmul_then_sum", {256, 255},
      [](const std::string& device) {
        return ones_buffer(1, 256, device).matmul(ones_buffer(256, 255, device)).sum().reshape({1});
      },
      256.0 * 255.0, 256.0 * 255.0, "(ones(1, 256) @ ones(256, 255)).sum()");
}

// Flat indices past 2^31 inside an index expression whose result is small: a cumsum's window
// (work item * length + position, modulo a size) and a lookup comparing every position with every
// table entry.
void add_wide_index_cases(BatteryBuilder& builder) {
  for (int64_t length : {int64_t{50000}, int64_t{100000}}) {
    builder.add(make_created_case(
        "regression", "long_cumsum", dtypes::float32, {length},
        [length](const std::string& device) {
          return ones_buffer(1, length, device).reshape({length}).cumsum(0);
        },
        [length](const std::vector<HostTensor>&) {
          std::vector<double> expected(static_cast<size_t>(length));
          for (int64_t at = 0; at < length; ++at) expected[static_cast<size_t>(at)] = at + 1.0;
          return Expected(host_values(dtypes::float32, expected));
        },
        "ones(" + std::to_string(length) + ").cumsum(0)", exact_tolerance()));
  }
  constexpr int64_t kTable = 70000, kPositions = 40000;
  auto positions = [](const std::string& device) {
    std::vector<int32_t> at(kPositions);
    for (int64_t index = 0; index < kPositions; ++index)
      at[static_cast<size_t>(index)] = static_cast<int32_t>((index * 7919) % kTable);
    return Tensor::from_vector(at, {kPositions}, device);
  };
  auto expected = [](const std::vector<HostTensor>&) {
    std::vector<double> values(kPositions);
    for (int64_t index = 0; index < kPositions; ++index)
      values[static_cast<size_t>(index)] = static_cast<double>((index * 7919) % kTable);
    return Expected(host_values(dtypes::float32, values));
  };
  auto table = [](const std::string& device) {
    return Tensor::arange(0, kTable, 1, dtypes::float32, device).contiguous();
  };
  builder.add(make_created_case(
      "regression", "wide_index_select", dtypes::float32, {kPositions},
      [=](const std::string& device) { return table(device).index_select(0, positions(device)); },
      expected, "arange(70000).index_select(0, 40000 positions)", exact_tolerance()));
  builder.add(make_created_case(
      "regression", "wide_gather", dtypes::float32, {kPositions},
      [=](const std::string& device) { return table(device).gather(0, positions(device)); },
      expected, "arange(70000).gather(0, 40000 positions)", exact_tolerance()));
}

}  // namespace

void add_limit_regression_cases(BatteryBuilder& builder) {
  add_nested_reduce_cases(builder);
  add_wide_index_cases(builder);
}

}  // namespace kiln::conformance::detail
