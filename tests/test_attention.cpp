// scaled_dot_product_attention as one Attention node: on a device with workgroups one kernel
// whose scores never reach memory (online softmax, codegen/lower_attention.cpp); on the CPU, or
// past a device's loop limit, the two products and the softmax (codegen/unfused_attention.h).
// Both against a double-precision reference, on every device, with its edge cases.

#include <catch2/catch.hpp>

#include <kiln/capture.h>
#include <kiln/kiln.h>
#include <kiln/nn.h>

#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "runtime/device_context.h"
#include "runtime/opt_policy.h"
#include "runtime/registry.h"
#include "tests/codegen_helpers.h"
#include "tests/test_support.h"

using namespace kiln;
using namespace kiln::testing;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

struct Problem {
  int64_t batch = 2, heads = 3, kv_heads = 3, length = 5, keys = 7, width = 4, value_width = 6;
};

std::vector<float> values_for(int64_t count, uint32_t seed) {
  std::vector<float> values(static_cast<size_t>(count));
  uint32_t state = seed * 2654435761u + 1;
  for (float& value : values) {
    state = state * 1664525u + 1013904223u;
    value = static_cast<float>(static_cast<int32_t>(state >> 8) % 2001) / 1000.0f - 1.0f;
  }
  return values;
}

// softmax(scale q k^T + bias) v in double precision; a row whose scores are all -inf is 0.
std::vector<double> reference(const Problem& p, const std::vector<float>& q,
                              const std::vector<float>& k, const std::vector<float>& v,
                              double scale,
                              const std::function<double(int64_t, int64_t, int64_t)>& bias) {
  std::vector<double> out(static_cast<size_t>(p.batch * p.heads * p.length * p.value_width));
  for (int64_t b = 0; b < p.batch; ++b)
    for (int64_t h = 0; h < p.heads; ++h) {
      const int64_t kh = h / (p.heads / p.kv_heads);
      for (int64_t i = 0; i < p.length; ++i) {
        std::vector<double> scores(static_cast<size_t>(p.keys));
        double peak = -kInf;
        for (int64_t j = 0; j < p.keys; ++j) {
          double dot = 0;
          for (int64_t e = 0; e < p.width; ++e)
            dot += static_cast<double>(q[((b * p.heads + h) * p.length + i) * p.width + e]) *
                   k[((b * p.kv_heads + kh) * p.keys + j) * p.width + e];
          scores[j] = dot * scale + bias(b, i, j);
          peak = std::max(peak, scores[j]);
          if (std::isnan(scores[j])) peak = scores[j];
        }
        if (std::isnan(peak)) {
          for (int64_t e = 0; e < p.value_width; ++e)
            out[((b * p.heads + h) * p.length + i) * p.value_width + e] = NAN;
          continue;
        }
        double total = 0;
        if (peak != -kInf)
          for (double& score : scores) total += (score = std::exp(score - peak));
        for (int64_t e = 0; e < p.value_width; ++e) {
          double value = 0;
          // A key of weight 0 (dropped) adds nothing, whatever its value.
          for (int64_t j = 0; j < p.keys && total > 0; ++j) {
            if (scores[j] == 0) continue;
            value +=
                scores[j] / total * v[((b * p.kv_heads + kh) * p.keys + j) * p.value_width + e];
          }
          out[((b * p.heads + h) * p.length + i) * p.value_width + e] = value;
        }
      }
    }
  return out;
}

void check_matches(const std::vector<float>& got, const std::vector<double>& want) {
  REQUIRE(got.size() == want.size());
  for (size_t at = 0; at < got.size(); ++at) {
    INFO("element " << at << ": " << got[at] << " against " << want[at]);
    if (std::isnan(want[at])) {
      CHECK(std::isnan(got[at]));
    } else {
      CHECK(std::fabs(got[at] - want[at]) <= 2e-6 + 2e-6 * std::fabs(want[at]));
    }
  }
}

// The devices that run Attention's own kernel (workgroups), among those here.
bool has_workgroups(const std::string& device) {
  return !opt_target(open_device(device)->device()).loop_launch;
}

ScheduleTargetOf workgroup_target(int64_t max_loop_iterations = 0) {
  return [=](const std::string&) {
    ScheduleTarget scheduled;
    scheduled.target.loop_launch = false;
    scheduled.target.max_workgroup_size = 256;
    scheduled.target.max_workgroup_dims[0] = 256;
    scheduled.target.max_loop_iterations = max_loop_iterations;
    return scheduled;
  };
}

}  // namespace

TEST_CASE("attention is one kernel on a device with workgroups, reductions on the CPU",
          "[attention][schedule]") {
  const Tensor q = Tensor::rand({2, 4, 64, 16}, 1, "CPU").realize();
  const Tensor k = Tensor::rand({2, 4, 96, 16}, 2, "CPU").realize();
  const Tensor v = Tensor::rand({2, 4, 96, 16}, 3, "CPU").realize();
  const Tensor out = nn::scaled_dot_product_attention(q, k, v, {}, true);
  const Schedule fused = schedule_of(out, workgroup_target());
  REQUIRE(fused.items.size() == 1);
  CHECK(fused.items[0].ast->op() == Op::Attention);
  // On the CPU: the scores (64 x 96 per head) are a buffer between the products.
  const Schedule unfused = schedule_of(out);
  CHECK(unfused.items.size() > 1);
  bool scores_stored = false;
  for (const ScheduleItem& item : unfused.items) {
    CHECK(item.ast->op() != Op::Attention);
    scores_stored = scores_stored || item.output->numel() >= 2 * 4 * 64 * 96;
  }
  CHECK(scores_stored);
  // A walk over 96 keys past a device's loop limit is split as reductions are.
  const Schedule limited = schedule_of(out, workgroup_target(4 * 32));
  for (const ScheduleItem& item : limited.items) CHECK(item.ast->op() != Op::Attention);
  // Heads wider than a kernel's registers hold, or of a variable width, are reductions too.
  const Tensor wide = Tensor::rand({1, 2, 8, 300}, 4, "CPU").realize();
  for (const ScheduleItem& item :
       schedule_of(nn::scaled_dot_product_attention(wide, wide, wide), workgroup_target()).items)
    CHECK(item.ast->op() != Op::Attention);
  const Variable width("width", 1, 16);
  const Tensor narrowed = Tensor::rand({1, 2, 8, 16}, 5, "CPU")
                              .realize()
                              .shrink(std::vector<std::pair<Dim, Dim>>{
                                  {0, 1}, {0, 2}, {0, 8}, {Dim(0), width.bind(12)}});
  for (const ScheduleItem& item :
       schedule_of(nn::scaled_dot_product_attention(narrowed, narrowed, narrowed),
                   workgroup_target())
           .items)
    CHECK(item.ast->op() != Op::Attention);
}

TEST_CASE("attention matches a double reference on every device", "[attention][devices]") {
  enum class Mask { None, Bool, Float };
  struct Variant {
    Variant(std::string what_in, Problem problem_in, bool causal_in = false,
            std::optional<double> scale_in = {}, Mask mask_in = Mask::None, bool nan_in = false)
        : what(std::move(what_in)),
          problem(problem_in),
          causal(causal_in),
          scale(scale_in),
          mask(mask_in),
          nan_row(nan_in) {}
    std::string what;
    Problem problem;
    bool causal;
    std::optional<double> scale;
    Mask mask;
    bool nan_row;
  };
  Problem gqa;
  gqa.heads = 4, gqa.kv_heads = 2;
  Problem decode;  // one query row over the keys (a decoder's step)
  decode.length = 1, decode.keys = 9;
  Problem single;
  single.batch = 1, single.heads = 1, single.kv_heads = 1, single.length = 1, single.keys = 1;
  single.width = 1, single.value_width = 1;
  Problem odd;
  odd.length = 13, odd.keys = 29, odd.width = 5, odd.value_width = 3;
  const std::vector<Variant> variants = {
      {"plain", Problem{}},
      {"causal", Problem{}, true},
      {"grouped-query heads, causal", gqa, true},
      {"scale 0.3", Problem{}, false, 0.3},
      {"bool mask, row 2 all dropped", Problem{}, false, {}, Mask::Bool},
      {"float mask with -inf, row 2 all -inf", Problem{}, false, {}, Mask::Float},
      {"one query row", decode, true},
      {"one element", single},
      {"odd sizes, causal", odd, true},
      {"a NaN in a query row", Problem{}, false, {}, Mask::None, true},
      {"inf and NaN values at keys no row keeps", Problem{}, true},
  };
  for (const std::string& device : kiln::devices()) {
    for (const Variant& variant : variants) {
      DYNAMIC_SECTION(device << ": " << variant.what) {
        const Problem& p = variant.problem;
        std::vector<float> q = values_for(p.batch * p.heads * p.length * p.width, 1);
        const std::vector<float> k = values_for(p.batch * p.kv_heads * p.keys * p.width, 2);
        std::vector<float> v = values_for(p.batch * p.kv_heads * p.keys * p.value_width, 3);
        if (variant.nan_row) q[p.width * 3 + 1] = NAN;  // batch 0, head 0, row 3
        if (variant.what.rfind("inf and NaN", 0) == 0) {
          // Keys 5 and 6 lie past every row (causal, 5 rows): like a cache's unused slots.
          v[5 * p.value_width] = INFINITY;
          v[6 * p.value_width + 1] = NAN;
        }
        // The mask (L, S): drops (or adds) by position; row 2 loses every key.
        std::vector<float> mask_values;
        std::vector<uint8_t> keep;
        for (int64_t i = 0; i < p.length; ++i)
          for (int64_t j = 0; j < p.keys; ++j) {
            const bool kept = i != 2 && (i + j) % 3 != 1;
            keep.push_back(kept);
            mask_values.push_back(kept ? 0.25f * static_cast<float>(j % 4) : -INFINITY);
          }
        const std::function<double(int64_t, int64_t, int64_t)> bias = [&](int64_t, int64_t i,
                                                                          int64_t j) {
          if (variant.causal && j > i) return -kInf;
          const size_t at = static_cast<size_t>(i * p.keys + j);
          if (variant.mask == Mask::Bool) return keep[at] ? 0.0 : -kInf;
          if (variant.mask == Mask::Float) return static_cast<double>(mask_values[at]);
          return 0.0;
        };
        const double scale = variant.scale ? *variant.scale : 1 / std::sqrt(double(p.width));
        const auto on_device = [&](const std::vector<float>& values, Shape shape) {
          return Tensor::from_vector(values, std::move(shape), "CPU").to(device).realize();
        };
        const Tensor tq = on_device(q, {p.batch, p.heads, p.length, p.width});
        const Tensor tk = on_device(k, {p.batch, p.kv_heads, p.keys, p.width});
        const Tensor tv = on_device(v, {p.batch, p.kv_heads, p.keys, p.value_width});
        std::optional<Tensor> mask;
        if (variant.mask == Mask::Bool)
          mask = on_device(std::vector<float>(keep.begin(), keep.end()), {p.length, p.keys})
                     .cast(dtypes::bool_)
                     .realize();
        if (variant.mask == Mask::Float) mask = on_device(mask_values, {p.length, p.keys});
        const auto& stats = open_device(device)->stats();
        const int64_t before = stats.launches.load();
        const Tensor out =
            nn::scaled_dot_product_attention(tq, tk, tv, mask, variant.causal, variant.scale)
                .realize();
        // One kernel where the device has workgroups: the scores never reach memory.
        if (has_workgroups(device)) CHECK(stats.launches.load() == before + 1);
        check_matches(out.to(std::string("CPU")).to_vector<float>(),
                      reference(p, q, k, v, scale, bias));
      }
    }
  }
}

TEST_CASE("attention: a key whose weight is 0 adds nothing, in any order of the keys",
          "[attention][devices]") {
  // Scores 0 and 1000: the first key's weight, exp(-1000), is 0, so its inf value adds nothing
  // (not inf * 0), whether it comes before the larger score or after it.
  for (const std::string& device : kiln::devices()) {
    for (const bool outweighed_first : {true, false}) {
      DYNAMIC_SECTION(device << (outweighed_first ? ": small score first" : ": large first")) {
        const std::vector<float> keys =
            outweighed_first ? std::vector<float>{0, 1000} : std::vector<float>{1000, 0};
        const std::vector<float> values =
            outweighed_first ? std::vector<float>{INFINITY, 3} : std::vector<float>{3, INFINITY};
        const auto on_device = [&](const std::vector<float>& data, Shape shape) {
          return Tensor::from_vector(data, std::move(shape), "CPU").to(device);
        };
        const Tensor out = nn::scaled_dot_product_attention(
            on_device({1}, {1, 1, 1}), on_device(keys, {1, 2, 1}), on_device(values, {1, 2, 1}));
        CHECK(out.to(std::string("CPU")).to_vector<float>() == std::vector<float>{3});
      }
    }
  }
}

TEST_CASE("attention over a variable number of keys: one kernel for every length",
          "[attention][variables]") {
  const Variable n("keys", 1, 64);
  Problem p;
  p.batch = 1, p.heads = 2, p.kv_heads = 2, p.length = 1, p.width = 8, p.value_width = 8;
  const std::vector<float> q = values_for(p.heads * p.width, 4);
  const std::vector<float> k_all = values_for(p.heads * 64 * p.width, 5);
  const std::vector<float> v_all = values_for(p.heads * 64 * p.width, 6);
  for (const std::string& device : kiln::devices()) {
    const Tensor tq = Tensor::from_vector(q, {1, p.heads, 1, p.width}, "CPU").to(device).realize();
    const Tensor cache_k =
        Tensor::from_vector(k_all, {1, p.heads, 64, p.width}, "CPU").to(device).realize();
    const Tensor cache_v =
        Tensor::from_vector(v_all, {1, p.heads, 64, p.width}, "CPU").to(device).realize();
    for (int64_t keys : {int64_t{1}, int64_t{5}, int64_t{64}}) {
      DYNAMIC_SECTION(device << ": " << keys << " keys") {
        const Dim length = n.bind(keys);
        const std::vector<std::pair<Dim, Dim>> used = {
            {Dim(0), Dim(1)}, {Dim(0), Dim(p.heads)}, {Dim(0), length}, {Dim(0), Dim(p.width)}};
        const Tensor k = cache_k.shrink(used);
        const Tensor v = cache_v.shrink(used);
        const Tensor out = nn::scaled_dot_product_attention(tq, k, v);
        p.keys = keys;
        std::vector<float> k_used, v_used;
        for (int64_t h = 0; h < p.heads; ++h)
          for (int64_t j = 0; j < keys; ++j)
            for (int64_t e = 0; e < p.width; ++e) {
              k_used.push_back(k_all[(h * 64 + j) * p.width + e]);
              v_used.push_back(v_all[(h * 64 + j) * p.width + e]);
            }
        check_matches(out.to(std::string("CPU")).to_vector<float>(),
                      reference(p, q, k_used, v_used, 1 / std::sqrt(8.0),
                                [](int64_t, int64_t, int64_t) { return 0.0; }));
      }
    }
  }
}

TEST_CASE("attention's errors name the op and the shapes", "[attention][errors]") {
  const Tensor q = Tensor::zeros({2, 4, 5, 8}, dtypes::float32, "CPU");
  const Tensor kv = Tensor::zeros({2, 4, 6, 8}, dtypes::float32, "CPU");
  CHECK_THROWS_WITH(
      nn::scaled_dot_product_attention(q, kv, kv, Tensor::zeros({3, 6}, dtypes::bool_, "CPU")),
      Catch::Contains("[scaled_dot_product_attention]") && Catch::Contains("must broadcast"));
  CHECK_THROWS_WITH(
      nn::scaled_dot_product_attention(q, kv, kv,
                                       Tensor::zeros({1, 2, 4, 5, 6}, dtypes::bool_, "CPU")),
      Catch::Contains("[scaled_dot_product_attention]") && Catch::Contains("more axes"));
  // A variable bound to 1 is not a broadcast 1.
  const Variable rows("rows", 1, 8);
  const Tensor one_row =
      Tensor::zeros({2, 6}, dtypes::bool_, "CPU")
          .shrink(std::vector<std::pair<Dim, Dim>>{{Dim(0), rows.bind(1)}, {Dim(0), Dim(6)}});
  CHECK_THROWS_WITH(
      nn::scaled_dot_product_attention(q, kv, kv, one_row),
      Catch::Contains("[scaled_dot_product_attention]") && Catch::Contains("must broadcast"));
  CHECK_THROWS_AS(
      nn::scaled_dot_product_attention(q, Tensor::zeros({3, 4, 6, 8}, dtypes::float32, "CPU"),
                                       Tensor::zeros({3, 4, 6, 8}, dtypes::float32, "CPU")),
      ShapeError);
}

TEST_CASE("attention in a captured step replays on new inputs", "[attention][capture]") {
  for (const std::string& device : kiln::devices()) {
    DYNAMIC_SECTION(device) {
      CapturedStep step([](const std::vector<Tensor>& in) {
        return std::vector<Tensor>{nn::scaled_dot_product_attention(in[0], in[1], in[2], {}, true)};
      });
      for (uint64_t seed = 1; seed <= 4; ++seed) {
        std::vector<Tensor> inputs;
        for (uint64_t part = 0; part < 3; ++part)
          inputs.push_back(
              Tensor::rand({2, 3, 9, 8}, seed * 10 + part, "CPU").to(device).realize());
        const std::vector<float> replayed =
            step(inputs)[0].to(std::string("CPU")).to_vector<float>();
        const std::vector<float> direct =
            nn::scaled_dot_product_attention(inputs[0], inputs[1], inputs[2], {}, true)
                .to(std::string("CPU"))
                .to_vector<float>();
        CHECK(replayed == direct);
      }
    }
  }
}
