// Tensor::bitcast on every device: known bit patterns, signed zeros and specials, fused into the
// ops around it and read through a non-contiguous view, and typed errors.

#include <catch2/catch.hpp>

#include <kiln/kiln.h>

#include <cmath>
#include <limits>
#include <vector>

using namespace kiln;

TEST_CASE("bitcast reads the bits as another dtype of the same size", "[bitcast]") {
  const float inf = std::numeric_limits<float>::infinity();
  for (const std::string& device : kiln::devices()) {
    INFO(device);
    const Tensor floats = Tensor::from_vector<float>({1.0f, -0.0f, inf, -2.5f}, {4}, device);
    CHECK(floats.bitcast(dtypes::uint32).to_vector<uint32_t>() ==
          std::vector<uint32_t>{0x3f800000u, 0x80000000u, 0x7f800000u, 0xc0200000u});
    CHECK(floats.bitcast(dtypes::int32).to_vector<int32_t>()[1] ==
          std::numeric_limits<int32_t>::min());
    // The exponent field, fused: one kernel reads the floats and writes the integers.
    const Tensor exponent =
        (floats.bitcast(dtypes::int32) >> 23) & Tensor::full({}, 255, dtypes::int32, device);
    CHECK(exponent.to_vector<int32_t>() == std::vector<int32_t>{127, 0, 255, 128});
    const std::vector<float> back =
        Tensor::from_vector<uint32_t>({0x7fc00000u, 0x00000001u, 0xff800000u}, {3}, device)
            .bitcast(dtypes::float32)
            .to_vector<float>();
    CHECK(std::isnan(back[0]));
    CHECK(back[1] == std::numeric_limits<float>::denorm_min());
    CHECK(back[2] == -inf);

    const Tensor doubles = Tensor::from_vector<double>({1.0, -0.0}, {2}, device);
    CHECK(doubles.bitcast(dtypes::uint64).to_vector<uint64_t>() ==
          std::vector<uint64_t>{0x3ff0000000000000ull, 0x8000000000000000ull});
    CHECK(Tensor::from_vector<int64_t>({0x4000000000000000ll}, {1}, device)
              .bitcast(dtypes::float64)
              .item<double>() == 2.0);

    const Tensor halves = Tensor::from_vector<half>({half(1.0f), half(-2.0f)}, {2}, device);
    CHECK(halves.bitcast(dtypes::uint16).to_vector<uint16_t>() ==
          std::vector<uint16_t>{0x3c00, 0xc000});
    // float16's 1.0 read as bfloat16: 0x3c00 is 2^-7.
    CHECK(static_cast<float>(halves.bitcast(dtypes::bfloat16).to_vector<bfloat16>()[0]) ==
          0.0078125f);
    CHECK(Tensor::from_vector<int16_t>({0x3f80}, {1}, device)
              .bitcast(dtypes::bfloat16)
              .cast(dtypes::float32)
              .item<float>() == 1.0f);
    // Integers of one size: the two's complement bits (no wider integer in the kernel).
    CHECK(Tensor::from_vector<int8_t>({-1, 5}, {2}, device)
              .bitcast(dtypes::uint8)
              .to_vector<uint8_t>() == std::vector<uint8_t>{255, 5});

    // Through a transposed view, and the result computed on.
    const Tensor grid =
        Tensor::from_vector<float>({1, 2, 4, 8, 16, 32}, {2, 3}, device).permute({1, 0});
    const std::vector<int32_t> exponents =
        ((grid.bitcast(dtypes::int32) >> 23) - 127).to_vector<int32_t>();
    CHECK(exponents == std::vector<int32_t>{0, 3, 1, 4, 2, 5});
  }
}

TEST_CASE("bitcast refuses bool and dtypes of two sizes", "[bitcast][errors]") {
  const Tensor x = Tensor::ones({3}, dtypes::float32, "CPU");
  CHECK_THROWS_WITH(x.bitcast(dtypes::float64), Catch::Contains("[bitcast]") &&
                                                    Catch::Contains("one size") &&
                                                    Catch::Contains("4 bytes here, 8 asked"));
  CHECK_THROWS_AS(Tensor::ones({3}, dtypes::bool_, "CPU").bitcast(dtypes::uint8), DTypeError);
  CHECK_THROWS_AS(Tensor::ones({3}, dtypes::uint8, "CPU").bitcast(dtypes::bool_), DTypeError);
  CHECK(x.bitcast(dtypes::float32).to_vector<float>() == x.to_vector<float>());
}
