// The machine's own limits for `kiln bench`: memcpy bandwidth, a BLAS loaded at run time, and
// an optional peer framework. Nothing here touches kiln.

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <sstream>
#include <thread>

#include "tools/bench.h"

namespace kiln::tools::bench {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Seconds for `threads` threads to each memcpy one slice of `source` into `destination`.
double timed_parallel_copy(char* destination, const char* source, size_t bytes, unsigned threads) {
  const Clock::time_point start = Clock::now();
  if (threads <= 1) {
    std::memcpy(destination, source, bytes);
  } else {
    std::vector<std::thread> workers;
    for (unsigned index = 0; index < threads; ++index) {
      const size_t begin = bytes * index / threads, end = bytes * (index + 1) / threads;
      workers.emplace_back([=] { std::memcpy(destination + begin, source + begin, end - begin); });
    }
    for (std::thread& worker : workers) worker.join();
  }
  return seconds_since(start);
}

// The CBLAS constants (cblas.h), spelled out so that no BLAS header is needed to build.
constexpr int kCblasRowMajor = 101;
constexpr int kCblasNoTrans = 111;

// The peer script: prints "peer <version> <device>", then "<workload> <median seconds>" lines.
constexpr const char* kTinygradScript = R"PY(
import sys, time, statistics
n, side, repeat = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
from tinygrad import Tensor, Device
try:
    from importlib.metadata import version
    tinygrad_version = version("tinygrad")
except Exception:
    tinygrad_version = "?"
# The C backend: "CPU" since tinygrad 0.10.2, "CLANG" before.
device = None
for name in ("CPU", "CLANG"):
    try:
        Device[name]
        device = name
        break
    except Exception:
        pass
if device is None:
    sys.exit("no CPU device in tinygrad " + tinygrad_version)
print("peer", tinygrad_version, device, flush=True)

def bench(name, make):
    make().realize()
    Device[device].synchronize()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        make().realize()
        Device[device].synchronize()
        times.append(time.perf_counter() - start)
    print(name, statistics.median(times), flush=True)

a, b = Tensor.rand(n, device=device).realize(), Tensor.rand(n, device=device).realize()
bench("add", lambda: a + b)
bench("sum", lambda: a.sum())
x, y = Tensor.rand(side, side, device=device).realize(), Tensor.rand(side, side, device=device).realize()
bench("matmul", lambda: x @ y)

# kiln's `train` row: one AdamW step of a 784-64-10 MLP at batch 64, captured (TinyJit).
from tinygrad import TinyJit, nn
def training():  # Context(TRAINING=1) in newer tinygrad, Tensor.train() in older
    if hasattr(Tensor, "train"):
        return Tensor.train()
    from tinygrad.helpers import Context
    return Context(TRAINING=1)
l1, l2 = nn.Linear(784, 64), nn.Linear(64, 10)
for parameter in nn.state.get_parameters([l1, l2]):
    parameter.to_(device)
optimizer = nn.optim.AdamW(nn.state.get_parameters([l1, l2]), lr=1e-3, b1=0.9, b2=0.999,
                           eps=1e-8, weight_decay=0.01)
inputs = Tensor.rand(64, 784, device=device).realize()
labels = Tensor([(row * 7 + 3) % 10 for row in range(64)], device=device).realize()
@TinyJit
def train_step(x, y):
    with training():
        optimizer.zero_grad()
        loss = l2(l1(x).relu()).sparse_categorical_crossentropy(y)
        loss.backward()
        optimizer.step()
        return loss.realize()
for _ in range(3):  # run, capture, first replay
    train_step(inputs, labels)
Device[device].synchronize()
times = []
for _ in range(max(repeat, 10)):
    start = time.perf_counter()
    train_step(inputs, labels)
    Device[device].synchronize()
    times.append(time.perf_counter() - start)
print("train", statistics.median(times), flush=True)
)PY";

}  // namespace

Timing time_median(const std::function<void()>& run, int repeat, double budget_seconds,
                   int minimum) {
  std::vector<double> samples;
  const Clock::time_point begin = Clock::now();
  for (int index = 0; index < std::max(repeat, 1); ++index) {
    const Clock::time_point start = Clock::now();
    run();
    samples.push_back(seconds_since(start));
    if (static_cast<int>(samples.size()) >= minimum && seconds_since(begin) > budget_seconds) break;
  }
  std::sort(samples.begin(), samples.end());
  const size_t middle = samples.size() / 2;
  Timing timing;
  timing.runs = static_cast<int>(samples.size());
  timing.median_seconds =
      samples.size() % 2 ? samples[middle] : (samples[middle - 1] + samples[middle]) / 2;
  return timing;
}

double host_copy_bandwidth(size_t bytes) {
  // Value-initialised, so every page is touched before the clock starts.
  std::vector<char> source(bytes, 1), destination(bytes, 0);
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  double best = 1e30;
  // One thread rarely saturates the memory bus; kiln's kernels use every core, so the limit is
  // whichever of one thread and all cores copies faster.
  for (unsigned threads : {1u, cores}) {
    for (int attempt = 0; attempt < 5; ++attempt) {
      best = std::min(best, timed_parallel_copy(destination.data(), source.data(), bytes, threads));
    }
  }
  return 2.0 * static_cast<double>(bytes) / best;
}

std::unique_ptr<Blas> Blas::load() {
  // Multi-threaded and tuned first; the reference BLAS last (it answers, slowly).
  static const char* const kCandidates[] = {"libopenblas.so.0", "libopenblas.so", "libmkl_rt.so",
                                            "libmkl_rt.so.2",   "libblis.so.4",   "libcblas.so.3",
                                            "libblas.so.3"};
  for (const char* candidate : kCandidates) {
    // Never dlclose'd: OpenBLAS keeps worker threads that must not lose their code under them.
    void* handle = dlopen(candidate, RTLD_NOW | RTLD_LOCAL);
    if (!handle) continue;
    auto sgemm = reinterpret_cast<SgemmFunction>(dlsym(handle, "cblas_sgemm"));
    if (!sgemm) continue;
    std::string library = candidate;
    using ConfigFunction = const char* (*)();
    if (auto config = reinterpret_cast<ConfigFunction>(dlsym(handle, "openblas_get_config"))) {
      library += std::string(" (") + config() + ")";
    }
    return std::make_unique<Blas>(sgemm, library);
  }
  return nullptr;
}

void Blas::sgemm(int m, int n, int k, const float* a, const float* b, float* c) const {
  sgemm_(kCblasRowMajor, kCblasNoTrans, kCblasNoTrans, m, n, k, 1.0f, a, k, b, n, 0.0f, c, n);
}

PeerResult run_tinygrad_peer(const PeerSizes& sizes) {
  PeerResult result;
  result.name = "tinygrad";
  if (std::system("python3 -c 'import tinygrad' >/dev/null 2>&1") != 0) {
    result.problem = "tinygrad not installed";
    return result;
  }
  std::string path =
      (std::filesystem::temp_directory_path() / "kiln-bench-peer-XXXXXX.py").string();
  const int descriptor = mkstemps(path.data(), 3);
  if (descriptor < 0) {
    result.problem = std::string("cannot write the peer script: ") + std::strerror(errno);
    return result;
  }
  const std::string script = kTinygradScript;
  const bool written =
      ::write(descriptor, script.data(), script.size()) == static_cast<ssize_t>(script.size());
  ::close(descriptor);
  if (!written) {
    std::filesystem::remove(path);
    result.problem = "cannot write the peer script";
    return result;
  }

  std::ostringstream command;
  command << "timeout 600 python3 '" << path << "' " << sizes.elementwise << ' ' << sizes.matmul
          << ' ' << sizes.repeat << " 2>&1";
  std::string output, last_line;
  if (FILE* pipe = popen(command.str().c_str(), "r")) {
    char line[4096];
    while (std::fgets(line, sizeof line, pipe)) {
      output = line;
      if (!output.empty() && output.back() == '\n') output.pop_back();
      std::istringstream words(output);
      std::string first;
      words >> first;
      if (first == "peer") {
        std::string version, device;
        words >> version >> device;
        result.name = "tinygrad " + version + " on " + device;
      } else if (double seconds = 0;
                 (first == "add" || first == "sum" || first == "matmul" || first == "train") &&
                 (words >> seconds)) {
        result.seconds.emplace_back(first, seconds);
      }
      if (!output.empty()) last_line = output;
    }
    const int status = pclose(pipe);
    if (status != 0 && result.seconds.empty()) result.problem = "tinygrad failed: " + last_line;
  } else {
    result.problem = "cannot run python3";
  }
  std::filesystem::remove(path);
  return result;
}

}  // namespace kiln::tools::bench
