// `kiln conformance`: runs the battery (or random graphs) on a device and reports what it gets
// right.

#include <unistd.h>

#include <kiln/error.h>
#include <kiln/tensor.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <regex>

#include <CLI/CLI.hpp>

#include "runtime/opt_policy.h"
#include "runtime/registry.h"
#include "tools/arguments.h"
#include "tools/commands.h"
#include "tools/conformance/battery.h"
#include "tools/conformance/fuzz.h"
#include "tools/conformance/parallel.h"
#include "tools/conformance/report.h"
#include "tools/conformance/runner.h"

namespace kiln::tools {
namespace {

// The most cases (or fuzzed graphs, or failures to print) any option asks for.
constexpr long long kMostCases = 1LL << 40;

struct Options {
  std::vector<std::string> devices;
  std::string filter;
  std::string json;
  bool list = false;
  size_t failures = 20;
  int64_t fuzz = 0;
  uint64_t seed = 1;
  std::string opts;  // empty: as the environment says
  int jobs = 0;
  int case_timeout = 300;  // seconds; 0: none
  bool verbose = false;
  bool compile_only = false;
  std::string arch;
  int worker_shard = -1, worker_count = 0;  // --worker i/N (internal: see parallel.h)
  long resume_after = -1;
};

// What no single option can check: --arch and --compile-only go together, and name the devices.
void check_together(Options& options) {
  if (!options.arch.empty() && !options.compile_only)
    throw CLI::ValidationError("--arch goes with --compile-only");
  if (options.compile_only) {
    if (options.devices.empty() || options.fuzz > 0)
      throw CLI::ValidationError("--compile-only needs --device NAME and the battery");
    // A device name takes a target after '@' (NAME@TARGET); none is not a device name.
    if (options.arch.empty())
      throw CLI::ValidationError("--compile-only needs --arch ARCH (e.g. sm_90 for CUDA)");
    // NAME@ARCH: the plugin's compile-only device.
    for (std::string& device : options.devices) {
      if (device == "all") throw CLI::ValidationError("--compile-only takes named devices");
      device = device.substr(0, device.find('@')) + "@" + options.arch;
    }
  }
}

// --worker I/N (internal): this process runs the Ith of N shards.
void set_worker(const std::string& shard, Options& options) {
  const size_t slash = shard.find('/');
  const std::optional<long long> index = parse_whole_number(shard.substr(0, slash), 0, 1023);
  const std::optional<long long> count = slash == std::string::npos
                                             ? std::nullopt
                                             : parse_whole_number(shard.substr(slash + 1), 1, 1024);
  if (!index || !count || *index >= *count)
    throw CLI::ValidationError("--worker takes I/N, 0 <= I < N (internal)");
  options.worker_shard = static_cast<int>(*index);
  options.worker_count = static_cast<int>(*count);
}

void add_options(CLI::App& command, Options& options) {
  command
      .add_option("--device", options.devices,
                  "device to test (default: KILN_DEVICE, else the default device); \"all\" tests\n"
                  "every available device; may be repeated")
      ->type_name("NAME")
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  command
      .add_option("--filter", options.filter,
                  "only cases whose name matches (names: family/op/dtype/shape/layout[/variant])")
      ->type_name("REGEX");
  command.add_flag("--list", options.list,
                   "list the selected cases and their tolerances, run nothing");
  command.add_option("--json", options.json, "write every result to FILE as JSON")
      ->type_name("FILE");
  add_whole_number(command, "--failures", options.failures, 0, kMostCases,
                   "print at most N failing cases in detail (default 20)");
  add_whole_number(command, "--fuzz", options.fuzz, 1, kMostCases,
                   "instead of the battery, check N random graphs (elementwise, reductions and\n"
                   "movement ops mixed) against the reference");
  command
      .add_option_function<std::string>(
          "--opts",
          [&options](const std::string& mode) {
            if (mode != "default" && mode != "none" && mode != "random" && mode != "gpu")
              throw CLI::ValidationError("--opts takes default, none, random or gpu, not '" + mode +
                                         "'");
            options.opts = mode;
          },
          "the kernels' optimisations: default (the heuristics' choice), none, random\n"
          "(a valid random opts list per kernel, drawn from --seed), so that every opt is\n"
          "proven on the device, or gpu (the heuristics' choice for a GPU, on a device\n"
          "with workgroups that is not one: a GPU's kernels checked on PoCL or lavapipe)\n"
          "(default: default, or KILN_OPTS / KILN_NOOPT)")
      ->type_name("MODE");
  command
      .add_option_function<std::string>(
          "--seed",
          [&options](const std::string& text) {
            const std::optional<unsigned long long> seed = parse_unsigned(text);
            if (!seed)
              throw CLI::ValidationError("--seed needs a whole number from 0 to 2^64 - 1, not '" +
                                         text + "'");
            options.seed = static_cast<uint64_t>(*seed);
          },
          "the fuzzer's first seed (default 1); graph i uses seed S + i; with\n"
          "--opts random, the opts' seed")
      ->type_name("S");
  command.add_flag("--verbose", options.verbose, "with --fuzz: print every graph as kiln C++");
  command.add_flag("--compile-only", options.compile_only,
                   "render and compile every case's kernels for the device, run nothing: a\n"
                   "case passes when its kernels compile (for a GPU this machine lacks)");
  command
      .add_option("--arch", options.arch,
                  "with --compile-only (which needs it), the target (e.g. sm_90 for CUDA); the\n"
                  "device is then NAME@ARCH")
      ->type_name("ARCH");
  add_whole_number(command, "--jobs", options.jobs, 1, 1024,
                   "run the battery in N worker processes, so N kernels compile at once\n"
                   "(default: the number of CPUs, at most 8; 1 runs everything in this process)");
  add_whole_number(command, "--case-timeout", options.case_timeout, 0, 86400,
                   "a worker process still on one case after S seconds (a kernel that never\n"
                   "ends) is stopped: the case is an error and the battery goes on (default 300;\n"
                   "0: no limit; with --jobs 1 there are no workers and no limit)")
      ->type_name("S");
  // Internal, so out of --help (an empty group hides an option): the battery's parent process
  // starts its workers with these (see parallel.h).
  command
      .add_option_function<std::string>(
          "--worker", [&options](const std::string& shard) { set_worker(shard, options); })
      ->group("");
  add_whole_number(command, "--resume-after", options.resume_after, -1, kMostCases, "")->group("");
  command.parse_complete_callback([&options] { check_together(options); });
}

std::vector<std::string> resolve_devices(const std::vector<std::string>& requested) {
  if (requested.empty()) return {default_device()};
  std::vector<std::string> names;
  for (const std::string& name : requested) {
    if (name == "all") {
      for (const std::string& device : devices()) names.push_back(device);
    } else {
      // Throws DeviceError naming what is available. The device's own name: "CUDA@" opens
      // CUDA@sm_90, say.
      names.push_back(open_device(canonical_device_name(name))->name());
    }
  }
  return names;
}

int default_jobs() {
  const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  return static_cast<int>(std::max(1L, std::min(cpus, 8L)));
}

conformance::DeviceRun run_battery(const std::string& device,
                                   const std::vector<const conformance::Case*>& cases,
                                   const Options& options) {
  using namespace conformance;
  std::shared_ptr<DeviceContext> context = open_device(device);
  Runner runner(device);
  Progress progress(cases.size(), device);
  const int jobs = std::min<int>(options.jobs > 0 ? options.jobs : default_jobs(),
                                 static_cast<int>(cases.size() / 16 + 1));
  DeviceRun run;
  if (jobs > 1) {
    WorkerPlan plan;
    plan.executable = "/proc/self/exe";
    if (!options.filter.empty()) plan.select_args = {"--filter", options.filter};
    plan.jobs = jobs;
    plan.case_timeout_seconds = options.case_timeout;
    run = run_in_workers(device, cases, plan,
                         [&](size_t done, const std::string& name, size_t failures) {
                           progress.update(done, name, failures);
                         });
  } else {
    run.device = device;
    const int64_t compiles = context->stats().compiles, disk_hits = context->stats().disk_hits;
    const auto start = std::chrono::steady_clock::now();
    size_t failures = 0;
    for (size_t index = 0; index < cases.size(); ++index) {
      progress.update(index, cases[index]->name, failures);
      run.cases.push_back(cases[index]);
      run.results.push_back(runner.run(*cases[index]));
      failures +=
          run.results.back().status == Status::Fail || run.results.back().status == Status::Error;
    }
    progress.update(cases.size(), "", failures);
    run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    run.compiles = context->stats().compiles - compiles;
    run.disk_hits = context->stats().disk_hits - disk_hits;
  }
  progress.finish();
  const DeviceProperties& properties = context->device().properties();
  run.description =
      properties.description + " (" + properties.driver + ")" +
      (jobs > 1 ? ", " + std::to_string(jobs) + " worker processes" : "") + ", opts " +
      opt_settings_to_string(opt_settings()) +
      (opt_settings().tensor_cores ? "" : " without tensor cores (KILN_TENSOR_CORES=0)") +
      (runner.flushes_subnormals()
           ? "; the device flushes float32 subnormals to zero, and results are "
             "compared as if subnormal inputs and results were zero"
           : "");
  run.guards = runner.guards();
  run.compile_only = properties.compile_only;
  return run;
}

int conformance_main(const Options& options) {
  using namespace conformance;
  if (!options.opts.empty()) {
    OptSettings settings;
    settings.policy = options.opts == "none"     ? OptPolicy::None
                      : options.opts == "random" ? OptPolicy::Random
                      : options.opts == "gpu"    ? OptPolicy::Gpu
                                                 : OptPolicy::Default;
    settings.seed = options.seed;
    set_opt_settings(settings);
    // Worker processes read it from the environment.
    setenv("KILN_OPTS", opt_settings_to_string(settings).c_str(), 1);
    unsetenv("KILN_NOOPT");
  } else {
    opt_settings();  // an invalid KILN_OPTS or KILN_TENSOR_CORES is one error here, not one per
                     // case
  }
  std::regex filter;
  try {
    filter = std::regex(options.filter.empty() ? "." : options.filter, std::regex::ECMAScript);
  } catch (const std::regex_error& error) {
    std::fprintf(stderr, "kiln conformance: bad --filter '%s': %s\n", options.filter.c_str(),
                 error.what());
    return 2;
  }
  if (options.fuzz > 0) {
    int status = 0;
    for (const std::string& device : resolve_devices(options.devices)) {
      if (run_fuzz(device, options.fuzz, options.seed, stdout, options.verbose) > 0) status = 1;
    }
    return status;
  }

  std::vector<const Case*> selected;
  for (const Case& item : battery()) {
    if (options.filter.empty() || std::regex_search(item.name, filter)) selected.push_back(&item);
  }
  if (options.worker_shard >= 0) {
    if (options.devices.size() != 1 || options.worker_count < 1) return 2;
    return worker_main(canonical_device_name(options.devices[0]), selected, options.worker_shard,
                       options.worker_count, options.resume_after);
  }
  if (options.list) {
    for (const Case* item : selected)
      std::printf("%-64s %s\n", item->name.c_str(), item->tolerance.text().c_str());
    std::printf("%zu case(s)\n", selected.size());
    return 0;
  }
  if (selected.empty()) {
    std::fprintf(stderr, "kiln conformance: no case matches --filter '%s' (see --list)\n",
                 options.filter.c_str());
    return 2;
  }

  const bool color = isatty(STDOUT_FILENO) != 0;
  std::vector<DeviceRun> runs;
  for (const std::string& device : resolve_devices(options.devices)) {
    runs.push_back(run_battery(device, selected, options));
    const DeviceRun& run = runs.back();
    std::printf("\n%s — %s\n", run.device.c_str(), run.description.c_str());
    print_table(stdout, run, color);
    std::printf("\n");
    print_failures(stdout, run, options.failures);
  }
  std::printf("\ntolerances:\n");
  for (const std::string& note : tolerance_notes()) std::printf("  %s\n", note.c_str());
  std::printf("\n");
  bool ok = true;
  for (const DeviceRun& run : runs) {
    std::printf("%s\n", summary_line(run).c_str());
    ok &= run.ok();
  }
  if (!options.json.empty()) {
    write_json(options.json, runs);
    std::printf("results written to %s\n", options.json.c_str());
  }
  return ok ? 0 : 1;
}

}  // namespace

Command add_conformance_command(CLI::App& kiln) {
  CLI::App* command = kiln.add_subcommand(
      "conformance", "check every op and dtype on a device against a reference");
  command->footer(
      "Runs kiln's conformance battery on a device: every op of the Tensor API x every dtype it\n"
      "accepts x shapes x layouts, with edge values, against an independent double-precision\n"
      "reference.\n\n"
      "Exit status: 0 when every case passed or is unsupported, 1 when any failed or errored, 2\n"
      "for bad usage.");
  auto options = std::make_shared<Options>();
  add_options(*command, *options);
  return {command, [options] { return conformance_main(*options); }};
}

}  // namespace kiln::tools
