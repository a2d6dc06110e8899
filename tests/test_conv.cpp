// kiln/conv.h beyond the conformance battery's values: fusion (a convolution with its bias and
// activation is one kernel), inputs without a batch axis or with a variable one, NaN in max
// pooling, empty batches, and typed errors that name the function and the rule broken.

#include <catch2/catch.hpp>

#include <kiln/kiln.h>

#include <cmath>
#include <limits>
#include <vector>

#include "runtime/device_context.h"
#include "runtime/registry.h"

using namespace kiln;

namespace {

Tensor counting(Shape shape) {
  int64_t count = 1;
  for (int64_t size : shape) count *= size;
  return Tensor::arange(0, count, 1, dtypes::float32, "CPU").reshape(std::move(shape));
}

int64_t kernels_for(const Tensor& result) {
  const std::shared_ptr<DeviceContext> context = open_device(result.device());
  const int64_t before = context->stats().launches;
  result.realize();
  return context->stats().launches - before;
}

}  // namespace

TEST_CASE("a convolution with its bias and activation is one kernel", "[conv]") {
  const Tensor x = Tensor::rand({2, 3, 8, 8}, 1, "CPU").realize();
  const Tensor w = Tensor::rand({4, 3, 3, 3}, 2, "CPU").realize();
  const Tensor b = Tensor::rand({4}, 3, "CPU").realize();
  CHECK(kernels_for(nn::conv2d(x, w, b, {.padding = 1}).relu()) == 1);
  // Pooling a computed tensor reads it in place too.
  CHECK(kernels_for(nn::max_pool2d((x * 2).exp(), {.kernel_size = {3}, .stride = {2}})) == 1);
}

TEST_CASE("inputs without a batch axis give results without one", "[conv]") {
  const Tensor x = counting({2, 5, 5});
  const Tensor w = Tensor::ones({1, 2, 3, 3}, dtypes::float32, "CPU");
  const Tensor batched = nn::conv2d(x.unsqueeze(0), w);
  const Tensor single = nn::conv2d(x, w);
  CHECK(single.shape() == Shape{1, 3, 3});
  CHECK(single.to_vector<float>() == batched.squeeze(0).to_vector<float>());
  // Sum over both channels of the top-left 3x3: (0+1+2+5+6+7+10+11+12) + that + 9 * 25.
  CHECK(single.to_vector<float>()[0] == 2 * 54 + 225);
  CHECK(nn::max_pool1d(counting({3, 6}), {.kernel_size = {2}}).shape() == Shape{3, 3});
  CHECK(nn::interpolate(counting({1, 1, 2}), {.size = {4}}).to_vector<float>() ==
        std::vector<float>{0, 0, 1, 1});
}

TEST_CASE("a variable batch axis runs one kernel for every batch size", "[conv]") {
  const Variable batch("conv_batch", 1, 8);
  const Tensor w = Tensor::rand({2, 3, 3, 3}, 4, "CPU").realize();
  const Tensor all = Tensor::rand({8, 3, 6, 6}, 5, "CPU").realize();
  const std::vector<float> whole = nn::conv2d(all, w, {}, {.padding = 1}).to_vector<float>();
  for (int64_t size : {3, 8}) {
    const Tensor part = all.shrink({{Dim(0), batch.bind(size)}});
    const std::vector<float> got = nn::conv2d(part, w, {}, {.padding = 1}).to_vector<float>();
    REQUIRE(got.size() == static_cast<size_t>(size) * 2 * 36);
    for (size_t at = 0; at < got.size(); ++at) CHECK(got[at] == Approx(whole[at]));
  }
}

TEST_CASE("max pooling propagates NaN and reports where the maximum is", "[conv]") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  const Tensor x = Tensor::from_vector<float>({1, nan, 3, 2, -inf, -inf, 5, 5}, {1, 1, 8}, "CPU");
  const auto [values, indices] = nn::max_pool1d_with_indices(x, {.kernel_size = {2}});
  const std::vector<float> got = values.to_vector<float>();
  CHECK(std::isnan(got[0]));
  CHECK(got[1] == 3);
  CHECK(got[2] == -inf);
  CHECK(got[3] == 5);
  CHECK(indices.dtype() == dtypes::int64);
  // The NaN; the first of two -inf; the first of two equal maxima.
  CHECK(indices.to_vector<int64_t>() == std::vector<int64_t>{1, 2, 4, 6});
  // Of several NaNs the last, as PyTorch's loop finds it.
  const Tensor nans = Tensor::from_vector<float>({nan, 7, nan, 1, 2, 3}, {1, 1, 6}, "CPU");
  CHECK(nn::max_pool1d_with_indices(nans, {.kernel_size = {3}}).second.to_vector<int64_t>() ==
        std::vector<int64_t>{2, 5});
  // Windows reaching into the padding still name an input element, also where all are -inf.
  const Tensor low = Tensor::full({1, 1, 3}, -inf, dtypes::float32, "CPU");
  CHECK(nn::max_pool1d_with_indices(low, {.kernel_size = {2}, .padding = {1}})
            .second.to_vector<int64_t>() == std::vector<int64_t>{0, 1});
}

TEST_CASE("empty batches and single elements", "[conv]") {
  const Tensor w = Tensor::ones({2, 3, 1, 1}, dtypes::float32, "CPU");
  const Tensor empty = Tensor::zeros({0, 3, 4, 4}, dtypes::float32, "CPU");
  CHECK(nn::conv2d(empty, w).shape() == Shape{0, 2, 4, 4});
  CHECK(nn::conv2d(empty, w).to_vector<float>().empty());
  const Tensor one = Tensor::full({1, 3, 1, 1}, 2, dtypes::float32, "CPU");
  CHECK(nn::conv2d(one, w).to_vector<float>() == std::vector<float>{6, 6});
  CHECK(nn::avg_pool2d(one, {.kernel_size = {1}}).to_vector<float>() ==
        std::vector<float>{2, 2, 2});
  CHECK(nn::adaptive_avg_pool2d(one, {3}).shape() == Shape{1, 3, 3, 3});
  // A stride past the input leaves one window; under ceil_mode a kernel past the padded input
  // too (PyTorch's sizes).
  const Tensor row = counting({1, 1, 5});
  CHECK(nn::conv1d(row, Tensor::ones({1, 1, 2}, dtypes::float32, "CPU"), {},
                   {.stride = {13}, .dilation = {2}})
            .to_vector<float>() == std::vector<float>{2});
  CHECK(nn::max_pool1d(row, {.kernel_size = {2}, .stride = {13}, .dilation = {2}})
            .to_vector<float>() == std::vector<float>{2});
  CHECK(nn::max_pool1d(counting({1, 1, 1}),
                       {.kernel_size = {4}, .stride = {2}, .padding = {1}, .ceil_mode = true})
            .to_vector<float>() == std::vector<float>{0});
  // Adaptive windows of different lengths over a long axis (work grows with its length).
  const Tensor line = Tensor::ones({1, 1, 200000}, dtypes::float32, "CPU");
  const std::vector<float> means = nn::adaptive_avg_pool1d(line, {199999}).to_vector<float>();
  CHECK(means.size() == 199999);
  CHECK(means.front() == 1);
  CHECK(means.back() == 1);
}

TEST_CASE("conv_transpose undoes the shape of a strided conv", "[conv]") {
  const Tensor x = Tensor::rand({1, 2, 7, 6}, 6, "CPU");
  const Tensor w = Tensor::rand({4, 2, 3, 3}, 7, "CPU");
  const Tensor y = nn::conv2d(x, w, {}, {.stride = {2}, .padding = 1});
  CHECK(y.shape() == Shape{1, 4, 4, 3});
  CHECK(nn::conv_transpose2d(y, w, {}, {.stride = {2}, .padding = {1}, .output_padding = {0, 1}})
            .shape() == Shape{1, 2, 7, 6});
  // The adjoint: <conv(x), y> == <x, conv_transpose(y)>.
  const Tensor probe = Tensor::rand({1, 4, 4, 3}, 8, "CPU");
  const float forward = (y * probe).sum().item<float>();
  const float backward =
      (x * nn::conv_transpose2d(probe, w, {},
                                {.stride = {2}, .padding = {1}, .output_padding = {0, 1}}))
          .sum()
          .item<float>();
  CHECK(forward == Approx(backward).epsilon(1e-5));
}

TEST_CASE("convolution and pooling refuse bad arguments, naming the function and the rule",
          "[conv][errors]") {
  const Tensor x = Tensor::rand({1, 4, 5, 5}, 1, "CPU");
  const Tensor w = Tensor::rand({2, 4, 3, 3}, 2, "CPU");
  CHECK_THROWS_WITH(nn::conv2d(x, Tensor::rand({2, 4, 7, 7}, 3, "CPU")),
                    Catch::Contains("[conv2d]") && Catch::Contains("padded input"));
  CHECK_THROWS_WITH(nn::conv2d(x, w, {}, {.stride = {0}}),
                    Catch::Contains("[conv2d]") && Catch::Contains("stride"));
  CHECK_THROWS_WITH(nn::conv2d(x, w, {}, {.stride = {1, -1}}), Catch::Contains(">= 1"));
  CHECK_THROWS_WITH(nn::conv2d(x, Tensor::rand({3, 4, 3, 3}, 3, "CPU"), {}, {.groups = 3}),
                    Catch::Contains("[conv2d]") && Catch::Contains("groups 3"));
  CHECK_THROWS_WITH(nn::conv2d(x, w, {}, {.stride = {2}, .padding = nn::ConvPadding::same()}),
                    Catch::Contains("same"));
  CHECK_THROWS_WITH(nn::conv2d(x, w, Tensor::rand({3}, 4, "CPU")), Catch::Contains("bias"));
  CHECK_THROWS_WITH(nn::conv2d(x, w, {}, {.padding = {1, 2, 3}}),
                    Catch::Contains("one per spatial axis"));
  CHECK_THROWS_AS(nn::conv2d(x, w.cast(dtypes::float64)), DTypeError);
  CHECK_THROWS_AS(nn::conv2d(x.cast(dtypes::int32), w.cast(dtypes::int32)), DTypeError);
  CHECK_THROWS_WITH(nn::conv1d(x, w),
                    Catch::Contains("[conv1d]") && Catch::Contains("(1, 4, 5, 5)"));
  const Tensor wt = Tensor::rand({4, 2, 3, 3}, 5, "CPU");
  CHECK_THROWS_WITH(nn::conv_transpose2d(x, wt, {}, {.stride = {2}, .output_padding = {2}}),
                    Catch::Contains("output_padding"));
  CHECK_THROWS_WITH(nn::conv_transpose2d(x, Tensor::rand({3, 2, 3, 3}, 3, "CPU")),
                    Catch::Contains("[conv_transpose2d]"));
  CHECK_THROWS_WITH(nn::max_pool2d(x, {.kernel_size = {2}, .padding = {2}}),
                    Catch::Contains("[max_pool2d]") && Catch::Contains("half the kernel"));
  CHECK_THROWS_WITH(nn::max_pool2d(x, {.kernel_size = {6}}), Catch::Contains("spans 6"));
  CHECK_THROWS_WITH(nn::max_pool2d(x, {}), Catch::Contains("kernel_size is required"));
  CHECK_THROWS_WITH(nn::avg_pool2d(x, {.kernel_size = {2}, .dilation = {2}}),
                    Catch::Contains("[avg_pool2d]") && Catch::Contains("dilation"));
  CHECK_THROWS_WITH(nn::adaptive_avg_pool2d(x, {0}), Catch::Contains("output_size"));
  CHECK_THROWS_WITH(nn::interpolate(x, {}), Catch::Contains("exactly one"));
  CHECK_THROWS_AS(nn::interpolate(x, {.size = {3}, .align_corners = true}), ValueError);
  CHECK_THROWS_WITH(nn::interpolate(x, {.scale_factor = {1e30}}), Catch::Contains("2^31"));
  CHECK_THROWS_WITH(nn::max_pool1d(Tensor::zeros({1, 1, 0}, dtypes::float32, "CPU"),
                                   {.kernel_size = {2}, .padding = {1}}),
                    Catch::Contains("empty spatial axis"));
  CHECK_THROWS_WITH(nn::interpolate(x, {.scale_factor = {-1.0}}), Catch::Contains("scale_factor"));
  CHECK_THROWS_WITH(nn::pad(x, {5, 0}, nn::PadMode::Reflect),
                    Catch::Contains("[pad]") && Catch::Contains("reflect"));
  CHECK_THROWS_WITH(nn::pad(x, {6, 0}, nn::PadMode::Circular), Catch::Contains("circular"));
  CHECK_THROWS_WITH(nn::pad(x, {1, 0, 1}), Catch::Contains("pairs"));
  CHECK_THROWS_WITH(nn::pad(x, {-3, -3}), Catch::Contains("crop"));
  // A bad call leaves nothing half-built: the same tensors still work.
  CHECK(nn::conv2d(x, w).shape() == Shape{1, 2, 3, 3});
}

TEST_CASE("padding modes copy edges as PyTorch does", "[conv]") {
  const Tensor x = counting({1, 4});
  CHECK(nn::pad(x, {2, 1}, nn::PadMode::Reflect).to_vector<float>() ==
        std::vector<float>{2, 1, 0, 1, 2, 3, 2});
  CHECK(nn::pad(x, {2, 1}, nn::PadMode::Replicate).to_vector<float>() ==
        std::vector<float>{0, 0, 0, 1, 2, 3, 3});
  CHECK(nn::pad(x, {2, 4}, nn::PadMode::Circular).to_vector<float>() ==
        std::vector<float>{2, 3, 0, 1, 2, 3, 0, 1, 2, 3});
  CHECK(nn::pad(x, {-1, 1}, nn::PadMode::Constant, 9).to_vector<float>() ==
        std::vector<float>{1, 2, 3, 9});
  // Integers and bool copy exactly.
  const Tensor flags = Tensor::from_vector<bool>({true, false}, {2}, "CPU");
  CHECK(nn::pad(flags, {1, 1}, nn::PadMode::Reflect).to_vector<bool>() ==
        std::vector<bool>{false, true, false, true});
}
