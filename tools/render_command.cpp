// kiln render: the kernels of a small tensor program as source for any dialect and target,
// compiled through the codegen pipeline (codegen/pipeline.h) without opening a device. For
// reading what kiln generates for a GPU on a machine without one, and for comparing dialects.

#include <kiln/error.h>
#include <kiln/kiln.h>

#include <CLI/CLI.hpp>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "codegen/dialect.h"
#include "codegen/pipeline.h"
#include "codegen/schedule.h"
#include "runtime/opt_policy.h"
#include "tools/commands.h"

namespace kiln::tools {
namespace {

struct RenderOptions {
  std::string dialect = "C";
  std::string target;  // empty: the dialect's usual one
  std::string architecture = "sm_90";
  std::string opts = "default";
  std::string dtype = "float32";
  bool passes = false;
  std::vector<std::string> program;
};

struct RenderTarget {
  const Dialect* dialect = nullptr;
  Dialect owned;  // OpenCL's dialect is made per device
  DeviceProperties properties;
  std::string name;
};

// The devices kiln renders for, as their properties: this machine's CPU, PoCL on it, and a GPU
// like an H100 (its architecture from --arch).
DeviceProperties target_properties(const std::string& target, const std::string& architecture) {
  DeviceProperties properties;
  if (target == "cpu") return properties;
  if (target == "cl-cpu") {
    properties.max_workgroup_size = 4096;
    for (int64_t& dim : properties.max_workgroup_dims) dim = 4096;
    properties.local_memory_bytes = 65536;
    properties.compute_units = 2;
    return properties;
  }
  properties.kind = DeviceKind::GPU;
  properties.max_workgroup_size = 1024;
  properties.max_workgroup_dims[0] = properties.max_workgroup_dims[1] = 1024;
  properties.max_workgroup_dims[2] = 64;
  properties.max_workgroups[0] = (int64_t{1} << 31) - 1;
  properties.max_workgroups[1] = properties.max_workgroups[2] = 65535;
  properties.local_memory_bytes = 48 * 1024;
  properties.warp_width = 32;
  properties.compute_units = 132;
  properties.architecture = architecture;
  // Matrix units from compute capability 8.0 ("sm_80").
  properties.tensor_cores = architecture.rfind("sm_", 0) == 0 && architecture.size() > 3 &&
                            std::atoi(architecture.c_str() + 3) >= 80;
  return properties;
}

RenderTarget render_target(const RenderOptions& options) {
  RenderTarget target;
  const std::string& dialect = options.dialect;
  std::string kind = options.target;
  if (dialect == "C") {
    target.dialect = &c_dialect();
    if (kind.empty()) kind = "cpu";
  } else if (dialect == "OpenCL") {
    target.owned = opencl_dialect(/*has_fp64=*/true, /*vector_loads=*/kind == "gpu");
    target.dialect = &target.owned;
    if (kind.empty()) kind = "gpu";
  } else if (dialect == "CUDA") {
    target.dialect = &cuda_dialect();
    if (kind.empty()) kind = "gpu";
  } else {
    target.dialect = &glsl_dialect();
    if (kind.empty()) kind = "gpu";
  }
  target.properties = target_properties(kind, options.architecture);
  if (dialect == "GLSL") target.properties.max_kernel_buffers = 32;  // lavapipe's, a common one
  target.name = dialect + " " + kind + (kind == "gpu" ? " " + options.architecture : "");
  return target;
}

int64_t size_argument(const std::vector<std::string>& words, size_t at) {
  if (at >= words.size())
    throw Error("[render] program '" + words[0] + "' needs " + std::to_string(at) +
                " size(s); see 'kiln render --help'");
  try {
    size_t used = 0;
    const long long value = std::stoll(words[at], &used);
    if (used == words[at].size() && value > 0) return value;
  } catch (const std::exception&) {
  }
  throw Error("[render] size '" + words[at] + "' of '" + words[0] +
              "' is not a positive whole number");
}

// A realized buffer of `dtype` (made on the CPU, which every machine has): the program's kernels
// read it as they would read the user's data.
Tensor input(const Shape& shape, DType dtype) {
  return Tensor::rand(shape, 1, "CPU").cast(dtype).realize();
}

Tensor build_program(const std::vector<std::string>& words, DType dtype) {
  const std::string& name = words[0];
  if (name == "add") {
    const int64_t n = size_argument(words, 1);
    return input({n}, dtype) + input({n}, dtype);
  }
  if (name == "sum") return input({size_argument(words, 1)}, dtype).sum();
  if (name == "sum-rows") {
    return input({size_argument(words, 1), size_argument(words, 2)}, dtype).sum({1});
  }
  if (name == "matmul") {
    const int64_t m = size_argument(words, 1), n = size_argument(words, 2),
                  k = size_argument(words, 3);
    return input({m, k}, dtype).matmul(input({k, n}, dtype));
  }
  if (name == "softmax") {
    return input({size_argument(words, 1), size_argument(words, 2)}, dtype).softmax(1);
  }
  throw Error("[render] unknown program '" + name +
              "'; valid: add N, sum N, sum-rows R C, matmul M N K, softmax R C");
}

int render_main(const RenderOptions& options) {
  if (options.program.empty())
    throw Error("[render] name a program: add N, sum N, sum-rows R C, matmul M N K or softmax R C");
  const RenderTarget target = render_target(options);
  const DType dtype = dtype_from_name(options.dtype);
  const Tensor program = build_program(options.program, dtype);

  OptSettings settings = parse_opt_settings(options.opts, "--opts");
  const OptTarget opt_target =
      with_settings(kiln::opt_target(target.name, target.properties, *target.dialect), settings);
  const ScheduleTargetOf target_of = [&](const std::string&) {
    return ScheduleTarget{opt_target, uses_heuristics(settings)};
  };
  const Schedule schedule = create_schedule({program.node()}, "CPU", target_of, false);

  CompileOptions compile;
  compile.settings = settings;
  if (options.passes) {
    compile.report = [](const std::string& pass, const std::string& result) {
      std::printf("// ---- after %s ----\n%s\n", pass.c_str(), result.c_str());
    };
  }
  int kernels = 0;
  for (const ScheduleItem& item : schedule.items) {
    if (item.kind != ScheduleItem::Kind::Kernel) continue;
    const CompiledKernel compiled = compile_kernel(item, opt_target, *target.dialect, compile);
    std::printf("// kernel %d: %s for %s, opts %s\n", ++kernels, compiled.program.name.c_str(),
                target.name.c_str(), opts_to_string(compiled.choice.opts).c_str());
    if (!options.passes) std::printf("%s\n", compiled.source.c_str());
  }
  return 0;
}

}  // namespace

Command add_render_command(CLI::App& kiln) {
  CLI::App* command = kiln.add_subcommand(
      "render", "print the kernels of a small program as source for any dialect and target");
  command->footer(
      "Schedules the program, chooses each kernel's opts for the target and compiles it through\n"
      "the codegen pipeline to source, without opening a device: a GPU's kernels can be read on\n"
      "a machine without one.\n\n"
      "Programs: add N, sum N, sum-rows R C, matmul M N K (an MxK by KxN product), softmax R C.\n"
      "Targets: cpu (this machine's CPU), cl-cpu (PoCL on it), gpu (like an H100; --arch sets\n"
      "its architecture, and matrix units come with sm_80 and later).");
  auto options = std::make_shared<RenderOptions>();
  command->add_option("--dialect", options->dialect, "C, OpenCL, CUDA or GLSL (default C)")
      ->check(CLI::IsMember({"C", "OpenCL", "CUDA", "GLSL"}));
  command
      ->add_option("--target", options->target,
                   "cpu, cl-cpu or gpu (default: cpu for C, gpu for the others)")
      ->check(CLI::IsMember({"cpu", "cl-cpu", "gpu"}));
  command->add_option("--arch", options->architecture,
                      "the GPU target's architecture (default sm_90)");
  command->add_option("--opts", options->opts,
                      "default, none, random:<seed> or gpu, as KILN_OPTS (default: default)");
  command->add_option("--dtype", options->dtype, "the inputs' dtype (default float32)");
  command->add_flag("--passes", options->passes,
                    "print the result of every pass (opts, programs, source), not only the source");
  command->add_option("program", options->program, "the program and its sizes")->expected(0, 4);
  return {command, [options] { return render_main(*options); }};
}

}  // namespace kiln::tools
