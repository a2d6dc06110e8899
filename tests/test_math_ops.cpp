// The rest of elementwise math and the activations (kiln/tensor.h, kiln/activations.h): the
// semantics their headers promise at the values that define them, typed errors, one kernel for a
// chain of them, and the GLSL library of inverse functions only in kernels that call it. The
// conformance battery checks every dtype and device against double-precision references; the
// math accuracy test sweeps their ulp bounds.

#include <catch2/catch.hpp>

#include <kiln/kiln.h>

#include <cmath>
#include <limits>

#include "codegen/decompose.h"
#include "codegen/dialect.h"
#include "codegen/render.h"
#include "tests/codegen_helpers.h"

using namespace kiln;
using namespace kiln::testing;

namespace {

template <typename T>
Tensor values(const std::vector<T>& data) {
  return Tensor::from_vector<T>(data, {static_cast<int64_t>(data.size())}, "CPU");
}

bool same_bits(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return a == b && std::signbit(a) == std::signbit(b);
}

}  // namespace

TEST_CASE("floor division and remainder follow Python", "[math_ops]") {
  const Tensor a = values<int32_t>({7, -7, 7, -7, 6, 5, std::numeric_limits<int32_t>::min()});
  const Tensor b = values<int32_t>({2, 2, -2, -2, 3, 0, -1});
  CHECK(floor_divide(a, b).to_vector<int32_t>() ==
        std::vector<int32_t>{3, -4, -4, 3, 2, 0, std::numeric_limits<int32_t>::min()});
  CHECK(remainder(a, b).to_vector<int32_t>() == std::vector<int32_t>{1, 1, -1, -1, 0, 0, 0});

  const double inf = std::numeric_limits<double>::infinity();
  const Tensor x = values<double>({7.5, -7.5, 4, -4, 5, -5, 1, 1});
  const Tensor y = values<double>({2, 2, -2, 2, inf, inf, 0, 0.1});
  const std::vector<double> quotient = floor_divide(x, y).to_vector<double>();
  const std::vector<double> rest = remainder(x, y).to_vector<double>();
  // CPython: 7.5 // 2, -7.5 // 2, 4 // -2, -4 // 2, 5 // inf, -5 // inf; 1 / 0; 1 // 0.1 (9, as
  // the double 0.1 is above 1/10, where floor(1 / 0.1) would round to 10).
  const std::vector<double> want_quotient = {3, -4, -2, -2, 0, -1, inf, 9};
  const std::vector<double> want_rest = {1.5, 0.5, -0.0, 0.0, 5, inf, NAN, std::fmod(1, 0.1)};
  for (size_t index = 0; index < want_quotient.size(); ++index) {
    INFO(index);
    CHECK(same_bits(quotient[index], want_quotient[index]));
    CHECK(same_bits(rest[index], want_rest[index]));
  }
}

TEST_CASE("shifts have a result for every amount", "[math_ops]") {
  const Tensor small = values<int8_t>({1, -128, -128, 64, 5, -5});
  const Tensor by = values<int8_t>({7, 9, 1, 8, -1, 2});
  CHECK((small << by).to_vector<int8_t>() == std::vector<int8_t>{-128, 0, 0, 0, 0, -20});
  CHECK((small >> by).to_vector<int8_t>() == std::vector<int8_t>{0, -1, -64, 0, 0, -2});
  // A 16-bit value shifted into the top bit: no signed overflow in the kernel (C promotes it).
  CHECK((values<uint16_t>({65535}) << 15).to_vector<uint16_t>() == std::vector<uint16_t>{32768});
  CHECK((values<int64_t>({-1}) << 63).to_vector<int64_t>() ==
        std::vector<int64_t>{std::numeric_limits<int64_t>::min()});
  CHECK((values<uint64_t>({~uint64_t{0}}) >> 64).to_vector<uint64_t>() == std::vector<uint64_t>{0});
  CHECK((~values<uint8_t>({0, 255, 15})).to_vector<uint8_t>() == std::vector<uint8_t>{255, 0, 240});
  CHECK((~values<bool>({true, false})).to_vector<bool>() == std::vector<bool>{false, true});
}

TEST_CASE("lerp, isclose and the two-argument functions", "[math_ops]") {
  const Tensor a = values<float>({1, -3, 1e30f, 2});
  const Tensor b = values<float>({3, 5, -1e30f, 2});
  CHECK(lerp(a, b, 1.0).to_vector<float>() == b.to_vector<float>());  // exactly b at 1
  CHECK(lerp(a, b, 0.0).to_vector<float>() == a.to_vector<float>());
  CHECK(lerp(a, b, 0.25).to_vector<float>()[0] == 1.5f);

  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = INFINITY;
  const Tensor p = values<float>({1, 1, inf, inf, nan, 1e-9f});
  const Tensor q = values<float>({1 + 1e-6f, 1.1f, inf, -inf, nan, 0});
  CHECK(isclose(p, q).to_vector<bool>() ==
        std::vector<bool>{true, false, true, false, false, true});
  CHECK(isclose(p, q, 1e-5, 1e-8, true).to_vector<bool>()[4]);
  CHECK(allclose(values<int32_t>({1, 2}), values<float>({1, 2.00001f})));
  CHECK_FALSE(allclose(p, q));

  const std::vector<double> angles = atan2(values<double>({0.0, -0.0, 0.0, 1, -1, inf}),
                                           values<double>({-0.0, -0.0, 1, 0, -inf, inf}))
                                         .to_vector<double>();
  CHECK(same_bits(angles[0], M_PI));
  CHECK(same_bits(angles[1], -M_PI));
  CHECK(same_bits(angles[2], 0.0));
  CHECK(angles[3] == Approx(M_PI / 2));
  CHECK(angles[4] == Approx(-M_PI));
  CHECK(angles[5] == Approx(M_PI / 4));
  CHECK(hypot(values<float>({inf, 3}), values<float>({nan, 4})).to_vector<float>() ==
        std::vector<float>{inf, 5});
  const std::vector<float> signs =
      copysign(values<float>({1, -2, nan}), values<float>({-0.0f, 1, -1})).to_vector<float>();
  CHECK(signs[0] == -1);
  CHECK(signs[1] == 2);
  CHECK((std::isnan(signs[2]) && std::signbit(signs[2])));
  // log1p and expm1 keep the digits log(1 + x) and exp(x) - 1 lose; integers compute in float32.
  CHECK(values<float>({1e-10f}).log1p().to_vector<float>()[0] == 1e-10f);
  CHECK(values<float>({1e-10f}).expm1().to_vector<float>()[0] == 1e-10f);
  CHECK(values<int32_t>({100}).log10().dtype() == dtypes::float32);
  CHECK(values<bool>({true}).square().to_vector<int32_t>() == std::vector<int32_t>{1});
}

TEST_CASE("activations at their defining values", "[math_ops]") {
  const Tensor x = values<float>({-2, 0, 3, 10, -INFINITY, INFINITY});
  CHECK(nn::relu6(x).to_vector<float>() == std::vector<float>{0, 0, 3, 6, 0, 6});
  CHECK(nn::hardtanh(x).to_vector<float>() == std::vector<float>{-1, 0, 1, 1, -1, 1});
  CHECK(nn::hardsigmoid(x).to_vector<float>() == std::vector<float>{1.0f / 6, 0.5f, 1, 1, 0, 1});
  CHECK(nn::leaky_relu(x, 0.5).to_vector<float>()[0] == -1);
  const std::vector<float> softplus = nn::softplus(x).to_vector<float>();
  CHECK(softplus[4] == 0);  // no 0 * inf
  CHECK(softplus[5] == INFINITY);
  CHECK(softplus[1] == Approx(std::log(2.0)));
  const std::vector<float> logsigmoid =
      nn::logsigmoid(values<float>({-200, 200, INFINITY})).to_vector<float>();
  CHECK(logsigmoid == std::vector<float>{-200, 0, 0});
  CHECK(nn::elu(x).to_vector<float>()[4] == -1);
  CHECK(nn::selu(values<float>({1})).to_vector<float>()[0] == Approx(1.0507009873554805));
  CHECK(nn::gelu_tanh(values<float>({1})).to_vector<float>()[0] == Approx(0.8411919906));
  CHECK(nn::mish(values<int32_t>({1})).dtype() == dtypes::float32);
}

TEST_CASE("math ops refuse what they cannot do, naming the op", "[math_ops][errors]") {
  const Tensor floats = values<float>({1, 2});
  const Tensor ints = values<int32_t>({1, 2});
  CHECK_THROWS_WITH(floats << ints, Catch::Contains("[shift_left]") && Catch::Contains("float32"));
  CHECK_THROWS_AS(ints >> floats, DTypeError);
  CHECK_THROWS_AS(values<bool>({true}) << 1, DTypeError);
  CHECK_THROWS_WITH(~floats, Catch::Contains("[bitwise_not]"));
  CHECK_THROWS_WITH(isclose(floats, floats, -1), Catch::Contains("[isclose]"));
  CHECK_THROWS_AS(isclose(floats, floats, 1e-5, NAN), ValueError);
  CHECK_THROWS_WITH(nn::celu(floats, 0), Catch::Contains("[celu]"));
  CHECK_THROWS_AS(nn::softplus(floats, 0), ValueError);
  CHECK_THROWS_WITH(nn::hardtanh(floats, 2, 1), Catch::Contains("[hardtanh]"));
  CHECK_THROWS_AS(atan2(floats, values<float>({1, 2, 3})), ShapeError);
}

TEST_CASE("a chain of the new math ops is one kernel", "[math_ops][schedule]") {
  const Tensor x = input({16, 8}, 1);
  const Tensor chain = nn::mish(x.asin().atan()) + atan2(x, x.cosh()) * floor_divide(x, x.expm1());
  CHECK(schedule_of(chain).items.size() == 1);
}

TEST_CASE("GLSL kernels carry the inverse-function library only when they call it",
          "[math_ops][dialects]") {
  const Tensor x = input({16, 8}, 1);
  auto glsl_of = [](const Tensor& tensor) {
    const ScheduleItem item = only_kernel(tensor);
    return render_kernel(decompose_semantics(lowered(item, gpu_target()), glsl_dialect()),
                         glsl_dialect());
  };
  const std::string plain = glsl_of(x.exp());
  const std::string inverse = glsl_of(x.atanh());
  CHECK(plain.find("kiln_atan2") == std::string::npos);
  CHECK(inverse.find("float kiln_atanh(float x)") != std::string::npos);
  CHECK(inverse.find("double kiln_atanh(double x)") != std::string::npos);
}
