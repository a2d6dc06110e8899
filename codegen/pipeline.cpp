#include "codegen/pipeline.h"

#include <kiln/error.h>

#include <chrono>
#include <utility>

#include "codegen/decompose.h"
#include "codegen/lower.h"
#include "codegen/render.h"
#include "codegen/vectorize.h"

namespace kiln {
namespace {

constexpr const char kInternalPrefix[] = "internal error (a kiln bug, please report it): ";

// Runs one pass: times it, reports its result, and names it in an InternalError it raises.
template <typename Run, typename Print>
auto run_pass(const char* pass, const std::string& kernel, CompiledKernel& compiled,
              const CompileOptions& options, Run&& run, Print&& print) {
  const auto start = std::chrono::steady_clock::now();
  try {
    auto result = run();
    compiled.timings.push_back(
        {pass, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                   .count()});
    if (options.report) options.report(pass, print(result));
    return result;
  } catch (const InternalError& error) {
    std::string message = error.what();
    if (message.rfind(kInternalPrefix, 0) == 0) message.erase(0, sizeof(kInternalPrefix) - 1);
    throw InternalError("pass '" + std::string(pass) + "' on kernel " + kernel + ": " + message);
  }
}

std::string print_choice(const OptChoice& choice) {
  std::string text = opts_to_string(choice.opts);
  for (const std::string& reason : choice.reasons) text += "\n  " + reason;
  return text;
}

std::string print_plan(const KernelPlan& plan) {
  std::string text =
      "axes " + plan.axes.to_string() + ", opts " + opts_to_string(plan.opts) + "\nlaunch";
  for (const LaunchAxis& dim : plan.launch) {
    text += dim.role == LaunchAxis::Role::GroupLanes ? " [group lanes"
            : dim.role == LaunchAxis::Role::Axis     ? " [axis " + std::to_string(dim.axis)
                                                     : std::string(" [flat");
    text += ", " + std::to_string(dim.local) + " per workgroup";
    if (dim.groups > 1) text += ", " + std::to_string(dim.groups) + " workgroups";
    text += "]";
  }
  if (plan.tensor_cores)
    text += "\ntensor cores: " + std::to_string(plan.tensor_cores->rows) + "x" +
            std::to_string(plan.tensor_cores->columns) + " outputs per workgroup, " +
            std::to_string(plan.tensor_cores->warps) + " warps";
  return text;
}

std::string print_program(const LinearProgram& program) {
  return program.to_string();
}

}  // namespace

CompiledKernel compile_kernel(const ScheduleItem& kernel, const OptTarget& target,
                              const Dialect& dialect, const CompileOptions& options) {
  CompiledKernel compiled;
  const KernelAxes axes = kernel_axes(kernel.ast);
  // Before lowering names it, a kernel is known by its axes and what it stores.
  const std::string kernel_text = axes.to_string() + " storing " + kernel.output->dtype().name();
  compiled.choice = run_pass(
      "choose opts", kernel_text, compiled, options,
      [&] {
        OptChoice choice;
        if (uses_heuristics(options.settings)) choice = choose_opts(kernel, axes, target);
        if (options.settings.policy == OptPolicy::Random) {
          choice.opts = random_opts(kernel, axes, target, options.settings.seed);
          choice.reasons.push_back("random (seed " + std::to_string(options.settings.seed) + ")");
        }
        return choice;
      },
      print_choice);
  compiled.plan = run_pass(
      "plan opts", kernel_text, compiled, options,
      [&] {
        return plan_opts(axes, compiled.choice.opts, target,
                         std::string("storing ") + kernel.output->dtype().name() + "[" +
                             std::to_string(kernel.output->numel()) + "]");
      },
      print_plan);
  LinearProgram program = run_pass(
      "lower", kernel_text, compiled, options,
      [&] { return lower_kernel(kernel, compiled.plan, target); }, print_program);
  const std::string name = program.name;
  program = run_pass(
      "vectorize loads", name, compiled, options,
      [&] { return vectorize_loads(std::move(program), dialect); }, print_program);
  program = run_pass(
      "vectorize stores", name, compiled, options,
      [&] { return vectorize_stores(std::move(program), dialect); }, print_program);
  if (options.check) {
    run_pass(
        "check", name, compiled, options,
        [&] {
          options.check(program);
          return true;
        },
        [](bool) { return std::string("passed"); });
  }
  program = run_pass(
      "decompose", name, compiled, options,
      [&] { return decompose_semantics(std::move(program), dialect); }, print_program);
  compiled.source = run_pass(
      "render", name, compiled, options, [&] { return render_kernel(program, dialect); },
      [](const std::string& source) { return source; });
  compiled.program = std::move(program);
  return compiled;
}

}  // namespace kiln
