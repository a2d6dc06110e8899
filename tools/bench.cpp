// kiln bench: standard workloads on one device, each checked against a host reference and then
// timed, set beside the machine's own limits (memcpy bandwidth, the best BLAS at hand) and, when
// tinygrad is installed, beside tinygrad on the same machine.

#include <kiln/error.h>
#include <kiln/tensor.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "runtime/registry.h"
#include "tools/arguments.h"
#include "tools/bench.h"
#include "tools/commands.h"

namespace kiln::tools {
namespace {

using bench::Result;

// A warm realize of a small cached graph: everywhere, and on a GPU (issue 9's target there).
constexpr double kOverheadTargetSeconds = 50e-6;
constexpr double kGpuOverheadTargetSeconds = 20e-6;
// A replayed 10-kernel step beyond its kernels' own time (issue 11's target on the CPU).
constexpr double kReplayTargetSeconds = 10e-6;
constexpr size_t kCopyBandwidthBytes = size_t{64} << 20;
constexpr size_t kDeviceCopyBytes = size_t{256} << 20;  // well past a GPU's L2
constexpr int64_t kGpuMatmulSide = 4096;

struct Options {
  std::string device;
  int repeat = 10;
  bool quick = false;
  std::vector<std::string> workloads;  // only these rows; every row when empty
};

// ---- formatting ---------------------------------------------------------------------------

std::string format(const char* pattern, double value) {
  char text[64];
  std::snprintf(text, sizeof text, pattern, value);
  return text;
}

std::string format_seconds(double seconds) {
  if (seconds < 1e-3) return format("%.1f us", seconds * 1e6);
  if (seconds < 1) return format("%.2f ms", seconds * 1e3);
  return format("%.2f s", seconds);
}

std::string format_in_unit(double value, Result::Unit unit) {
  switch (unit) {
    case Result::Unit::BytesPerSecond:
      return format("%.2f GB/s", value / 1e9);
    case Result::Unit::FlopsPerSecond:
      return format("%.1f GFLOP/s", value / 1e9);
    case Result::Unit::Seconds:
      return format_seconds(value);
  }
  return "";
}

// The first line of an error, so that a compile error's source does not flood the table.
std::string first_line(const std::string& text) {
  return text.substr(0, text.find('\n'));
}

constexpr const char* kRowFormat = "%-9s %-14s %10s %10s %5s %14s  %-22s %8s %7s  %s\n";

void print_header() {
  std::printf(kRowFormat, "workload", "size", "time", "device", "runs", "figure", "limit",
              "fraction", "kernels", "check");
}

void print_result(const Result& result) {
  const bool timed = result.timing.runs > 0;
  const std::string time = timed ? format_seconds(result.timing.median_seconds) : "-";
  const std::string device =
      result.timing.device_seconds > 0 ? format_seconds(result.timing.device_seconds) : "-";
  const std::string runs = timed ? std::to_string(result.timing.runs) : "-";
  const std::string figure = timed ? format_in_unit(result.figure, result.unit) : "-";
  std::string limit = result.limit_name;
  if (result.limit > 0) limit += " " + format_in_unit(result.limit, result.unit);
  const std::string fraction =
      timed && result.limit > 0 ? format("%.0f%%", 100 * result.figure / result.limit) : "-";
  const std::string kernels = result.kernels ? std::to_string(*result.kernels) : "-";
  std::string check =
      result.problem.empty() ? "ok" : (result.raised ? "ERROR: " : "FAIL: ") + result.problem;
  if (!result.note.empty()) check += " (" + result.note + ")";
  std::printf(kRowFormat, result.workload.c_str(), result.size.c_str(), time.c_str(),
              device.c_str(), runs.c_str(), figure.c_str(), limit.c_str(), fraction.c_str(),
              kernels.c_str(), check.c_str());
  std::fflush(stdout);  // rows come seconds apart: show each as it finishes
}

// Runs one workload; a kiln error becomes a failed row rather than the end of the benchmark.
template <typename Workload>
Result run_workload(const char* name, Workload workload) {
  try {
    return workload();
  } catch (const Error& error) {
    std::fprintf(stderr, "kiln bench: %s: %s\n", name, error.what());
    Result result(name);
    result.raised = true;
    result.problem = first_line(error.what());
    return result;
  }
}

void print_peer(const bench::PeerResult& peer, const std::vector<Result>& results,
                const bench::Sizes& sizes) {
  if (!peer.problem.empty()) {
    std::printf("\npeer: %s\n", peer.problem.c_str());
    return;
  }
  std::printf("\npeer: %s, same sizes, median of build + realize\n", peer.name.c_str());
  for (const auto& [workload, seconds] : peer.seconds) {
    // The same work counts as kiln's rows use.
    double work = 0;
    Result::Unit unit = Result::Unit::BytesPerSecond;
    if (workload == "add") work = 3.0 * 4 * sizes.elementwise;
    if (workload == "sum") work = 4.0 * sizes.elementwise;
    if (workload == "matmul") {
      work = 2.0 * sizes.matmul * sizes.matmul * sizes.matmul;
      unit = Result::Unit::FlopsPerSecond;
    }
    // A time per step (the training step): the figure is the time itself.
    if (workload == "train") work = 1, unit = Result::Unit::Seconds;
    if (work == 0) continue;
    const double figure = unit == Result::Unit::Seconds ? seconds : work / seconds;
    std::string kiln_figure = "-";
    for (const Result& result : results) {
      if (result.workload == workload && result.timing.runs > 0)
        kiln_figure = format_in_unit(result.figure, unit);
    }
    std::printf("  %-9s %10s %14s   (kiln %s)\n", workload.c_str(), format_seconds(seconds).c_str(),
                format_in_unit(figure, unit).c_str(), kiln_figure.c_str());
  }
}

int bench_main(const Options& options) {
  const std::string device =
      options.device.empty() ? default_device() : canonical_device_name(options.device);
  bench::Sizes sizes = options.quick ? bench::quick_sizes() : bench::default_sizes();
  const bool gpu = open_device(device)->device().properties().kind == DeviceKind::GPU;
  if (gpu && !options.quick) sizes.matmul = kGpuMatmulSide;  // the size a GPU is judged at
  bench::Harness harness(device, sizes, options.repeat);
  const DeviceProperties& properties = harness.context().device().properties();
  std::printf("kiln bench on %s: %s (%s)%s\n", device.c_str(), properties.description.c_str(),
              properties.driver.c_str(), options.quick ? ", quick sizes" : "");
  std::printf(
      "each workload: checked against a host reference, one warm-up, then the median of up to %d "
      "runs of build + realize + wait (time)\n",
      options.repeat);
  if (gpu) {
    std::printf(
        "on a GPU, bandwidth and FLOP figures come from the time its kernels ran on the device "
        "(device: the device's timer around each kernel, summed per run, median of as many "
        "runs), as the limits are timed; the host's share is the overhead row\n");
  }

  // A GPU's limits are its driver's copy and its vendor's GEMM, measured in this run.
  DeviceLimits limits;
  if (gpu) {
    // The driver's measurement allocates from the driver: what kiln's cache holds goes back
    // first, as kiln's own allocations would give it back when the memory runs out.
    harness.context().allocator().release_cached();
    limits = harness.context().device().measure_limits(kDeviceCopyBytes,
                                                       static_cast<int>(harness.sizes().matmul));
  }
  bench::CopyLimit copy{limits.copy_bytes_per_second, "device copy"};
  std::unique_ptr<bench::Blas> blas;
  if (copy.bytes_per_second > 0) {
    std::printf("device copy: %.2f GB/s (%zu MiB device to device, bytes read + written)\n",
                copy.bytes_per_second / 1e9, kDeviceCopyBytes >> 20);
  } else {
    copy = {bench::host_copy_bandwidth(kCopyBandwidthBytes), "memcpy"};
    std::printf(
        "host memcpy: %.2f GB/s (64 MiB, bytes read + written, best of one thread and all "
        "cores)\n",
        copy.bytes_per_second / 1e9);
  }
  if (!limits.gemm_library.empty()) {
    std::printf("GEMM: %s: SGEMM %.1f TFLOP/s, bf16 %.1f TFLOP/s at %lld^3\n",
                limits.gemm_library.c_str(), limits.gemm_float32_flops / 1e12,
                limits.gemm_bfloat16_flops / 1e12, static_cast<long long>(harness.sizes().matmul));
  } else if (!gpu) {
    blas = bench::Blas::load();
    std::printf("BLAS: %s\n", blas ? blas->library().c_str() : "no BLAS found");
  }
  if (!limits.notes.empty()) std::printf("limits: %s\n", limits.notes.c_str());
  std::printf("\n");

  print_header();
  std::vector<Result> results;
  std::vector<std::string> rows;  // every row's name, for --workload's check
  auto run = [&](const char* name, auto workload) {
    rows.push_back(name);
    if (!options.workloads.empty() && std::find(options.workloads.begin(), options.workloads.end(),
                                                name) == options.workloads.end())
      return;
    results.push_back(run_workload(name, workload));
    print_result(results.back());
  };
  run("copy", [&] { return bench::bench_copy(harness, copy); });
  run("add", [&] { return bench::bench_add(harness, copy); });
  run("sum", [&] { return bench::bench_sum(harness, copy); });
  run("fused", [&] { return bench::bench_fused(harness, copy); });
  run("softmax", [&] { return bench::bench_softmax(harness, copy); });
  run("embedding", [&] { return bench::bench_embedding(harness, copy); });
  run("embedding grad", [&] { return bench::bench_embedding_grad(harness, copy); });
  run("matmul", [&] { return bench::bench_matmul(harness, blas.get(), limits); });
  run("sort", [&] { return bench::bench_sort(harness, copy); });
  run("conv2d", [&] { return bench::bench_conv2d(harness, blas.get(), limits); });
  run("attention", [&] { return bench::bench_attention(harness, copy); });
  run("matmul n", [&] { return bench::bench_matmul_sizes(harness); });
  run("train n", [&] { return bench::bench_train_sizes(harness); });
  run("train", [&] { return bench::bench_train(harness); });
  run("decode", [&] { return bench::bench_decode(harness); });
  if (limits.gemm_bfloat16_flops > 0)
    run("matmul bf16", [&] { return bench::bench_matmul_bfloat16(harness, limits); });
  run("overhead", [&] {
    return bench::bench_overhead(harness, gpu ? kGpuOverheadTargetSeconds : kOverheadTargetSeconds);
  });
  run("replay", [&] { return bench::bench_replay(harness, kReplayTargetSeconds); });
  run("threads", [&] { return bench::bench_threads(harness); });
  // Last: its 64 sizes leave 64 sizes of blocks in the allocator's cache.
  run("softmax n", [&] { return bench::bench_softmax_sizes(harness, copy); });
  for (const std::string& wanted : options.workloads) {
    if (std::find(rows.begin(), rows.end(), wanted) == rows.end()) {
      std::string known;
      for (const std::string& row : rows) known += (known.empty() ? "" : ", ") + row;
      std::fprintf(stderr, "kiln bench: no workload '%s'; the workloads: %s\n", wanted.c_str(),
                   known.c_str());
      return 2;
    }
  }

  std::printf(
      "\nfraction: figure / limit; for overhead, the share of the target used (lower is better)\n");
  if (options.quick)
    std::printf("quick sizes fit in cache: fractions of memcpy bandwidth can pass 100%%\n");

  // The peer is tinygrad's CPU backend: a peer for kiln's CPU-side devices only.
  const bool peer_rows =
      options.workloads.empty() ||
      std::any_of(options.workloads.begin(), options.workloads.end(), [](const std::string& row) {
        return row == "add" || row == "sum" || row == "matmul" || row == "train";
      });
  if (!options.quick && !gpu && peer_rows) {
    print_peer(bench::run_tinygrad_peer({sizes.elementwise, sizes.matmul, options.repeat}), results,
               sizes);
  }

  const bool failed = std::any_of(results.begin(), results.end(),
                                  [](const Result& r) { return !r.problem.empty(); });
  if (failed) std::printf("\nkiln bench: some workloads failed (see the check column)\n");
  return failed ? 1 : 0;
}

}  // namespace

Command add_bench_command(CLI::App& kiln) {
  CLI::App* command = kiln.add_subcommand(
      "bench", "time standard workloads on a device beside the machine's limits");
  command->footer(
      "Runs standard float32 workloads on a device. Each is first checked against a host\n"
      "reference, then timed: one warm-up (which compiles), then the median of N runs of\n"
      "build graph + realize. Figures stand beside the machine's own limits: memcpy\n"
      "bandwidth, and the best BLAS found at run time for matmul. When tinygrad is\n"
      "installed, its CPU backend runs add, sum, matmul and the train step too, for\n"
      "comparison.\n\n"
      "Exit status: 0 when every workload ran and was right, 1 otherwise, 2 on bad options.");
  auto options = std::make_shared<Options>();
  command
      ->add_option("--device", options->device,
                   "device to run on (default: KILN_DEVICE, else the first GPU, else CPU)")
      ->type_name("NAME")
      ->check([](const std::string& name) {
        return name.empty() ? std::string("needs a device name") : std::string();
      });
  add_whole_number(*command, "--repeat", options->repeat, 1, 100000,
                   "timed runs per workload (default 10; a slow one stops after ~10 s)");
  command
      ->add_option("--workload", options->workloads,
                   "run only this row (repeatable), e.g. --workload train; every row by default")
      ->type_name("NAME");
  command->add_flag("--quick", options->quick,
                    "small sizes (1M elements, 1024x1024, matmul 512) for a smoke run;\n"
                    "no tinygrad");
  return {command, [options] { return bench_main(*options); }};
}

}  // namespace kiln::tools
