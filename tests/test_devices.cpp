// End-to-end checks that run on every device that is available here (kiln::devices()), not on a
// fixed list: each computes a few kernels and compares them with a reference computed on the
// host in double precision. Kept to a modest number of distinct kernels, since a driver such as
// PoCL spends a good part of a second compiling each one the first time.

#include <catch2/catch.hpp>

#include <kiln/kiln.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "runtime/registry.h"
#include "tests/child_process.h"
#include "tests/test_support.h"

using namespace kiln;

namespace {

std::vector<float> wave(size_t count, float scale, float shift) {
  std::vector<float> values(count);
  for (size_t index = 0; index < count; ++index) {
    values[index] = scale * std::sin(0.37f * static_cast<float>(index) + 0.1f) + shift;
  }
  return values;
}

void check_close(const std::vector<float>& actual, const std::vector<double>& expected,
                 double relative, double absolute) {
  REQUIRE(actual.size() == expected.size());
  for (size_t index = 0; index < actual.size(); ++index) {
    const double error = std::abs(static_cast<double>(actual[index]) - expected[index]);
    INFO("element " << index << ": got " << actual[index] << ", expected " << expected[index]);
    CHECK(error <= absolute + relative * std::abs(expected[index]));
  }
}

bool device_supports(const std::string& device, DType dtype) {
  return open_device(device)->device().supports(dtype);
}

}  // namespace

TEST_CASE("every listed device opens and there is at least the CPU", "[devices]") {
  const std::vector<std::string> names = devices();
  REQUIRE_FALSE(names.empty());
  CHECK(std::find(names.begin(), names.end(), "CPU") != names.end());
  for (const std::string& name : names) {
    INFO("device " << name);
    CHECK(open_device(name)->name() == name);
  }
}

TEST_CASE("a kernel that does not compile is a CompileError with the log and the source",
          "[devices]") {
  const std::string source = "this is not a kernel {";
  for (const std::string& device : devices()) {
    DYNAMIC_SECTION("on " << device) {
      Compiler& compiler = open_device(device)->device().compiler();
      try {
        compiler.compile(source, "broken_kernel");
        FAIL("compiling nonsense succeeded");
      } catch (const CompileError& error) {
        CHECK_FALSE(error.log().empty());
        CHECK(error.source() == source);
        CHECK_THAT(error.what(), Catch::Contains("broken_kernel"));
      }
    }
  }
}

TEST_CASE("a subregion aliases its allocation at the offset", "[devices]") {
  for (const std::string& device : devices()) {
    DYNAMIC_SECTION("on " << device) {
      Allocator& driver = open_device(device)->device().allocator();
      const size_t alignment = driver.subregion_alignment();
      if (alignment == 0) {
        CHECK_THROWS_AS(driver.subregion(nullptr, 0, 1), DeviceError);
        continue;
      }
      const size_t whole_size = 3 * alignment + 10, offset = 2 * alignment, size = 7;
      std::vector<uint8_t> bytes(whole_size, 0x11);
      DeviceMemory whole = driver.alloc(whole_size);
      driver.copy_in(whole, bytes.data(), whole_size);
      DeviceMemory region = driver.subregion(whole, offset, size);
      const std::vector<uint8_t> written = {1, 2, 3, 4, 5, 6, 7};
      driver.copy_in(region, written.data(), size);
      std::vector<uint8_t> read_back(size);
      driver.copy_out(read_back.data(), region, size);
      CHECK(read_back == written);
      driver.copy_out(bytes.data(), whole, whole_size);
      for (size_t index = 0; index < whole_size; ++index) {
        const bool inside = index >= offset && index < offset + size;
        INFO("byte " << index);
        CHECK(bytes[index] == (inside ? written[index - offset] : 0x11));
      }
      if (alignment > 1) CHECK_THROWS_AS(driver.subregion(whole, alignment / 2, size), DeviceError);
      driver.release_subregion(region);
      driver.free(whole, whole_size);
    }
  }
}

TEST_CASE("fused elementwise ops match a double reference", "[devices]") {
  const size_t count = 1000;
  const std::vector<float> x = wave(count, 2.0f, 0.0f), y = wave(count, 1.5f, 2.0f);  // y > 0
  std::vector<double> expected(count);
  for (size_t i = 0; i < count; ++i) {
    const double a = x[i], b = y[i];
    expected[i] = (a > 0 ? std::exp(a) * b : std::sqrt(b) - a) + std::max(a, b) / (b + 1.0);
  }
  for (const std::string& device : devices()) {
    DYNAMIC_SECTION("on " << device) {
      const Tensor a = Tensor::from_vector(x, {static_cast<int64_t>(count)}, device);
      const Tensor b = Tensor::from_vector(y, {static_cast<int64_t>(count)}, device);
      const Tensor out = where(a > 0, a.exp() * b, b.sqrt() - a) + maximum(a, b) / (b + 1.0);
      check_close(out.to_vector<float>(), expected, 1e-5, 1e-6);
    }
  }
}

TEST_CASE("integer division and modulo follow C, by zero gives 0", "[devices]") {
  const std::vector<int32_t> x = {7, -7, 7, -7, 5, std::numeric_limits<int32_t>::min(), 9, -9};
  const std::vector<int32_t> y = {2, 2, -2, -2, 0, -1, 4, 0};
  std::vector<double> expected(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const int64_t quotient =
        y[i] == 0 ? 0 : (y[i] == -1 ? -static_cast<int64_t>(x[i]) : x[i] / y[i]);
    const int64_t remainder = (y[i] == 0 || y[i] == -1) ? 0 : x[i] % y[i];
    // The quotient wraps as int32 (MIN / -1 is MIN); scale keeps both parts apart.
    expected[i] = static_cast<double>(static_cast<int32_t>(static_cast<uint32_t>(quotient))) * 100 +
                  remainder;
  }
  for (const std::string& device : devices()) {
    DYNAMIC_SECTION("on " << device) {
      const Tensor a = Tensor::from_vector(x, {static_cast<int64_t>(x.size())}, device);
      const Tensor b = Tensor::from_vector(y, {static_cast<int64_t>(y.size())}, device);
      const std::vector<int64_t> got =
          ((a / b).cast(dtypes::int64) * 100 + (a % b).cast(dtypes::int64)).to_vector<int64_t>();
      for (size_t i = 0; i < x.size(); ++i) {
        INFO(x[i] << " and " << y[i]);
        CHECK(static_cast<double>(got[i]) == expected[i]);
      }
    }
  }
}

TEST_CASE("reductions, softmax and matmul match a double reference", "[devices]") {
  const int64_t rows = 37, columns = 53;
  const std::vector<float> x = wave(rows * columns, 3.0f, 0.5f);
  std::vector<double> row_sums(rows, 0.0), column_max(columns, -INFINITY), softmax(rows * columns);
  for (int64_t r = 0; r < rows; ++r) {
    double largest = -INFINITY, total = 0;
    for (int64_t c = 0; c < columns; ++c) {
      const double value = x[r * columns + c];
      row_sums[r] += value;
      column_max[c] = std::max(column_max[c], value);
      largest = std::max(largest, value);
    }
    for (int64_t c = 0; c < columns; ++c) total += std::exp(x[r * columns + c] - largest);
    for (int64_t c = 0; c < columns; ++c)
      softmax[r * columns + c] = std::exp(x[r * columns + c] - largest) / total;
  }
  const int64_t inner = 29;
  const std::vector<float> w = wave(columns * inner, 1.0f, -0.25f);
  std::vector<double> product(rows * inner, 0.0);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t k = 0; k < columns; ++k) {
      for (int64_t c = 0; c < inner; ++c)
        product[r * inner + c] += static_cast<double>(x[r * columns + k]) * w[k * inner + c];
    }
  }
  for (const std::string& device : devices()) {
    DYNAMIC_SECTION("on " << device) {
      const Tensor a = Tensor::from_vector(x, {rows, columns}, device);
      check_close(a.sum({1}).to_vector<float>(), row_sums, 1e-5, 1e-5);
      check_close(a.max({0}).to_vector<float>(), column_max, 0, 0);
      check_close(a.softmax(-1).to_vector<float>(), softmax, 1e-5, 1e-7);
      const Tensor b = Tensor::from_vector(w, {columns, inner}, device);
      check_close(a.matmul(b).to_vector<float>(), product, 1e-5, 1e-5);
    }
  }
}

// GCC 12 -O2 once compiled this kernel (a 4-term float32 sum of float64 terms cast down, the
// reduce loop under `omp simd reduction`) with an aligned store to a misaligned stack slot: the
// CPU kernel died. A small gradient of einsum (3x4 weights of float64) was what met it.
TEST_CASE("a four-term float32 sum of float64 terms cast down runs and matches", "[devices]") {
  const std::vector<double> w = {0.5,  -1.25, 2.0, 3.5,   -0.75, 1.0,
                                 0.25, -2.0,  1.5, 0.125, -3.0,  4.0};
  const std::vector<float> b = wave(24, 2.0f, 0.5f);
  std::vector<double> expected(18, 0.0);
  for (int64_t i = 0; i < 3; ++i) {
    for (int64_t j = 0; j < 6; ++j) {
      for (int64_t r = 0; r < 4; ++r)
        expected[i * 6 + j] += static_cast<double>(static_cast<float>(w[i * 4 + r])) * b[r * 6 + j];
    }
  }
  for (const std::string& device : devices()) {
    if (!device_supports(device, dtypes::float64)) continue;
    DYNAMIC_SECTION("on " << device) {
      const Tensor weights = Tensor::from_vector(w, {3, 4}, device);
      const Tensor values = Tensor::from_vector(b, {4, 6}, device);
      const Tensor out =
          (weights.cast(dtypes::float32).reshape({3, 4, 1}) * values.reshape({1, 4, 6})).sum({1});
      check_close(out.to_vector<float>(), expected, 1e-6, 1e-6);
    }
  }
}

TEST_CASE("movement ops and pad index like the explicit computation", "[devices]") {
  std::vector<float> base(42);
  for (size_t i = 0; i < base.size(); ++i) base[i] = static_cast<float>(i);
  // (6, 7) -> permute -> (7, 6) -> pad rows (1, 2), columns (0, 3) with 1.5 -> (10, 9) -> flip
  // rows.
  std::vector<double> expected(10 * 9);
  for (int64_t row = 0; row < 10; ++row) {
    for (int64_t column = 0; column < 9; ++column) {
      const int64_t padded_row = 9 - row;  // flipped
      const int64_t r = padded_row - 1, c = column;
      const bool inside = r >= 0 && r < 7 && c < 6;
      expected[row * 9 + column] = (inside ? base[c * 7 + r] : 1.5) * 2;
    }
  }
  for (const std::string& device : devices()) {
    DYNAMIC_SECTION("on " << device) {
      const Tensor a = Tensor::from_vector(base, {42}, device);
      const Tensor moved =
          a.reshape({6, 7}).permute({1, 0}).pad({{1, 2}, {0, 3}}, 1.5).flip({0}) * 2;
      REQUIRE(moved.shape() == Shape{10, 9});
      check_close(moved.to_vector<float>(), expected, 0, 0);
    }
  }
}

TEST_CASE("casts saturate, round to nearest even, and unsupported dtypes are refused",
          "[devices]") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> x = {-3e9f,  -2.7f, -0.5f, 0.0f,          0.5f,    2.7f,
                                300.0f, 3e9f,  nan,   1.0009765625f, 65519.0f};
  for (const std::string& device : devices()) {
    DYNAMIC_SECTION("on " << device) {
      const Tensor a = Tensor::from_vector(x, {static_cast<int64_t>(x.size())}, device);
      const std::vector<int32_t> as_int = a.cast(dtypes::int32).to_vector<int32_t>();
      const std::vector<int32_t> int_expected = {
          std::numeric_limits<int32_t>::min(), -2, 0, 0,    0, 2, 300,
          std::numeric_limits<int32_t>::max(), 0,  1, 65519};
      CHECK(as_int == int_expected);
      const std::vector<uint8_t> as_byte = a.cast(dtypes::uint8).to_vector<uint8_t>();
      CHECK(as_byte == std::vector<uint8_t>{0, 0, 0, 0, 0, 2, 255, 255, 0, 1, 255});

      // bfloat16 everywhere (storage emulated with integer ops where the device has no type).
      const std::vector<float> bf_round_trip =
          a.cast(dtypes::bfloat16).cast(dtypes::float32).to_vector<float>();
      for (size_t i = 0; i < x.size(); ++i) {
        const float reference = static_cast<float>(kiln::bfloat16(x[i]));
        INFO("bfloat16 of " << x[i]);
        CHECK(
            (std::isnan(reference) ? std::isnan(bf_round_trip[i]) : bf_round_trip[i] == reference));
      }

      for (DType wide_or_half : {dtypes::float16, dtypes::float64}) {
        INFO(wide_or_half.name());
        const Tensor converted = a.cast(wide_or_half).cast(dtypes::float32);
        if (!device_supports(device, wide_or_half)) {
          // Never silently computed in another precision: the device refuses the dtype.
          CHECK_THROWS_AS(converted.realize(), DTypeError);
          CHECK_THROWS_WITH(converted.realize(), Catch::Contains("does not support") &&
                                                     Catch::Contains(wide_or_half.name()));
          continue;
        }
        const std::vector<float> got = converted.to_vector<float>();
        for (size_t i = 0; i < x.size(); ++i) {
          const float reference =
              wide_or_half == dtypes::float16 ? static_cast<float>(kiln::half(x[i])) : x[i];
          INFO("value " << x[i]);
          CHECK((std::isnan(reference) ? std::isnan(got[i]) : got[i] == reference));
        }
      }
    }
  }
}

TEST_CASE("tensors move between devices and mixing devices is an error", "[devices]") {
  const std::vector<std::string> names = devices();
  // 320 = 5 x 64: on CL a launch of whole groups, without the bounds check (the others have it).
  const std::vector<float> x = wave(320, 4.0f, 1.0f);
  std::vector<double> expected(x.size());
  for (size_t i = 0; i < x.size(); ++i) expected[i] = static_cast<double>(x[i]) * 3 + 1;
  for (const std::string& from : names) {
    for (const std::string& to : names) {
      DYNAMIC_SECTION(from << " -> " << to) {
        const Tensor a = Tensor::from_vector(x, {320}, from);
        const Tensor moved = a.to(to);
        CHECK(moved.device() == to);
        const Tensor back = (moved * 3 + 1).to(from);
        CHECK(back.device() == from);
        check_close(back.to_vector<float>(), expected, 1e-6, 1e-6);
        // Integers and bools survive the trip bit for bit.
        const std::vector<int64_t> big = {std::numeric_limits<int64_t>::min(), -1, 0, 1,
                                          std::numeric_limits<int64_t>::max()};
        CHECK(Tensor::from_vector(big, {5}, from).to(to).to(from).to_vector<int64_t>() == big);
        if (from != to) {
          CHECK_THROWS_AS(a + moved, DeviceError);
          CHECK_THROWS_WITH(a + moved, Catch::Contains(from) && Catch::Contains(to));
        }
      }
    }
  }
  if (names.size() < 2) testing::skip_part("moves between devices: only one device here");
}

TEST_CASE("processes starting cold on OpenCL at once all succeed", "[devices][opencl]") {
  // PoCL's own kernel cache, shared and cold, once aborted 1 or 2 of 8 such processes inside
  // PoCL (pocl_binary.c: Assertion 'len > 0'); kiln turns it off for its process. Each child has
  // its own empty kiln cache and all share one empty PoCL cache folder, as they would share
  // ~/.cache/pocl.
  testing::device_or_skip("CL");
  const kiln::test::ScratchFolder scratch("cold-cl");
  const std::string root = scratch.string();
  const std::string command =
      "sh -c 'for i in 1 2 3 4 5 6 7 8; do mkdir -p " + root + "/$i; env -u POCL_KERNEL_CACHE " +
      "KILN_DEVICE=CL KILN_CACHE_DIR=" + root + "/$i XDG_CACHE_HOME=" + root + "/$i " +
      "POCL_CACHE_DIR=" + root + "/pocl " + KILN_TEST_OPEN_DEVICE + " > " + root +
      "/$i.out 2>&1 & done; wait; cat " + root + "/*.out'";
  const kiln::test::ChildResult result = kiln::test::run_child("", command);
  INFO(result.output);
  size_t computed = 0;
  for (size_t at = result.output.find("computed on CL: 12"); at != std::string::npos;
       at = result.output.find("computed on CL: 12", at + 1))
    ++computed;
  CHECK(computed == 8);
}
