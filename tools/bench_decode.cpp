// The `decode` workload of `kiln bench`: a decode step of the GPT-2-style block of examples/gpt2,
// captured over a Variable length, beside the same forward pass compiled for a fixed length.

#include <kiln/kiln.h>

#include <string>
#include <vector>

#include "examples/gpt2/decoder.h"
#include "tools/bench.h"
#include "tools/bench_check.h"

namespace kiln::tools::bench {
namespace {

constexpr int64_t kFirstLength = 64;
constexpr int64_t kTimedLength = 72;
// A Variable-length step may take this much longer than the step compiled for its length.
constexpr double kAllowedSlowdown = 1.5;

}  // namespace

Result bench_decode(Harness& harness) {
  using namespace gpt2;
  Result result("decode", "GPT-2 block n=" + std::to_string(kFirstLength) + ".." +
                              std::to_string(kMaxLength - 1));
  result.unit = Result::Unit::Seconds;
  const std::string& device = harness.device();
  const DeviceWeights weights = upload_weights(make_weights(/*seed=*/2024), device);
  std::vector<int32_t> sequence(static_cast<size_t>(kBatch * kMaxLength));
  Random random(7);
  for (int32_t& token : sequence) token = static_cast<int32_t>(random.next() % kVocabulary);
  const Tensor all_tokens = Tensor::from_vector(sequence, {kBatch, kMaxLength}, device);

  const Variable length("n", 1, kMaxLength);
  CapturedStep step(
      [&](const std::vector<Tensor>& inputs) { return decode_step(weights, inputs[0]); });
  auto tokens_at = [&](int64_t count) {
    return all_tokens.shrink({{Dim(0), Dim(kBatch)}, {Dim(0), length.bind(count)}});
  };
  // The forward pass compiled for one length, realized as a step realizes its outputs.
  auto fixed_forward = [&](int64_t count) {
    std::vector<Tensor> outputs =
        decode_step(weights, all_tokens.shrink({{0, kBatch}, {0, count}}));
    realize(outputs);
    return outputs;
  };

  KernelStats& stats = harness.context().stats();
  auto built = [&] { return stats.compiles.load() + stats.disk_hits.load(); };
  // Every length from the first to the last: the warm-up, the capture, then replays. Kernels
  // built by the step are counted per call, before the fixed-length forwards (which build their
  // own, and push the step's out of the kernel caches) check the logits.
  int64_t by_capture = 0, by_replays = 0;
  std::vector<std::vector<float>> logits;
  for (int64_t count = kFirstLength; count < kMaxLength; ++count) {
    const int64_t before = built();
    logits.push_back(step({tokens_at(count)})[0].to_vector<float>());
    if (count == kFirstLength + 1) by_capture = built() - before;
    if (count > kFirstLength + 1) by_replays += built() - before;
  }
  for (int64_t count = kFirstLength; count < kMaxLength; ++count) {
    const std::vector<float> want = fixed_forward(count)[0].to_vector<float>();
    result.problem = compare(
        logits[static_cast<size_t>(count - kFirstLength)],
        [&](size_t index) { return static_cast<double>(want[index]); }, 1e-4, 1e-4);
    if (!result.problem.empty()) {
      result.problem = "n=" + std::to_string(count) + ": " + result.problem;
      return result;
    }
  }
  if (by_capture + by_replays != 0) {
    result.problem = "the steps after the first built " + std::to_string(by_capture + by_replays) +
                     " kernels (the capture " + std::to_string(by_capture) + ")";
    return result;
  }
  result.kernels = static_cast<int64_t>(step.kernels());

  const Tensor timed_tokens = tokens_at(kTimedLength);
  result.timing = time_median(
      [&] {
        step({timed_tokens});
        harness.context().device().synchronize();
      },
      harness.repeat(), harness.sizes().budget_seconds);
  result.figure = result.timing.median_seconds;
  fixed_forward(kTimedLength);  // compiled above already; warm
  const double fixed = time_median(
                           [&] {
                             fixed_forward(kTimedLength);
                             harness.context().device().synchronize();
                           },
                           harness.repeat(), harness.sizes().budget_seconds)
                           .median_seconds;
  result.limit = fixed * kAllowedSlowdown;
  result.limit_name = "1.5x fixed";
  result.note = "n=" + std::to_string(kTimedLength) + "; fixed-length forward " +
                std::to_string(fixed * 1e3).substr(0, 5) +
                " ms; 0 kernels built after the first step";
  return result;
}

}  // namespace kiln::tools::bench
