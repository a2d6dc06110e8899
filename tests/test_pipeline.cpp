// The codegen pipeline (codegen/pipeline.h): a kernel compiled to source for every dialect
// without a device, its passes named, timed and reported, and `kiln render`, its user.

#include <catch2/catch.hpp>

#include <kiln/error.h>

#include <string>
#include <vector>

#include "codegen/dialect.h"
#include "codegen/pipeline.h"
#include "tests/child_process.h"
#include "tests/codegen_helpers.h"

namespace kiln {
namespace {

using namespace kiln::testing;

std::vector<std::string> pass_names(const CompiledKernel& compiled) {
  std::vector<std::string> names;
  for (const PassTiming& timing : compiled.timings) names.push_back(timing.pass);
  return names;
}

}  // namespace

TEST_CASE("pipeline: one kernel compiles for every dialect without a device", "[pipeline]") {
  const ScheduleItem item = only_kernel(input({64, 48}, 1).sum({1}) * 2.0f);
  const Dialect opencl = opencl_dialect(true, true);
  struct Case {
    const Dialect* dialect;
    OptTarget target;
    const char* marker;  // what only this dialect's source holds
  };
  const Case cases[] = {{&c_dialect(), cpu_target(), "void"},
                        {&opencl, cl_target(), "__kernel"},
                        {&cuda_dialect(), gpu_target(), "__global__"},
                        {&glsl_dialect(), gpu_target(), "#version 450"}};
  for (const Case& each : cases) {
    INFO(each.dialect->name);
    const CompiledKernel compiled = compile_kernel(item, each.target, *each.dialect);
    CHECK_THAT(compiled.source, Catch::Contains(each.marker));
    // GLSL's entry point is main(); the others' is the kernel's name.
    if (each.dialect != &glsl_dialect())
      CHECK_THAT(compiled.source, Catch::Contains(compiled.program.name));
    CHECK(compiled.program.opts == compiled.choice.opts);
    CHECK(pass_names(compiled) == std::vector<std::string>{"choose opts", "plan opts", "lower",
                                                           "vectorize loads", "vectorize stores",
                                                           "decompose", "render"});
    for (const PassTiming& timing : compiled.timings) CHECK(timing.milliseconds >= 0);
  }
}

TEST_CASE("pipeline: each pass reports its result, the device's check runs before render",
          "[pipeline]") {
  const ScheduleItem item = only_kernel(input({1000}, 2).exp().sum());
  std::vector<std::string> reported;
  std::string lowered, source;
  CompileOptions options;
  options.check = [&](const LinearProgram& program) {
    CHECK(source.empty());  // not rendered yet
    CHECK(!program.instrs.empty());
  };
  options.report = [&](const std::string& pass, const std::string& result) {
    reported.push_back(pass);
    if (pass == "lower") lowered = result;
    if (pass == "render") source = result;
  };
  const CompiledKernel compiled = compile_kernel(item, cpu_target(), c_dialect(), options);
  CHECK(reported == std::vector<std::string>{"choose opts", "plan opts", "lower", "vectorize loads",
                                             "vectorize stores", "check", "decompose", "render"});
  CHECK_THAT(lowered, Catch::Contains("kernel " + compiled.program.name));
  CHECK(source == compiled.source);

  // The policy decides the opts: none gives none.
  options = {};
  options.settings.policy = OptPolicy::None;
  CHECK(compile_kernel(item, cl_target(), c_dialect(), options).choice.opts.empty());
}

TEST_CASE("pipeline: a refusal keeps its type, a broken invariant names the pass and kernel",
          "[pipeline]") {
  const ScheduleItem item = only_kernel(input({256}, 3).sum());
  CompileOptions options;
  options.check = [](const LinearProgram&) {
    throw UnsupportedDTypeError("[realize] no float32 here", dtypes::float32);
  };
  try {
    compile_kernel(item, cpu_target(), c_dialect(), options);
    FAIL("the check's refusal was lost");
  } catch (const UnsupportedDTypeError& error) {
    REQUIRE(error.dtype());
    CHECK(*error.dtype() == dtypes::float32);
  }
  options.check = [](const LinearProgram&) { throw InternalError("an invariant broke"); };
  try {
    compile_kernel(item, cpu_target(), c_dialect(), options);
    FAIL("no InternalError");
  } catch (const InternalError& error) {
    const std::string message = error.what();
    CHECK_THAT(message, Catch::Contains("pass 'check' on kernel "));
    CHECK_THAT(message, Catch::Contains("an invariant broke"));
    // One "internal error" prefix, not one per pass it went through.
    CHECK(message.find("internal error", 1) == std::string::npos);
  }
  // Opts that do not fit stay an OptError.
  CHECK_THROWS_AS(lower_with(item, {{OptKind::Upcast, 0, 7}}, cpu_target()), OptError);
}

#ifdef KILN_TOOL_PATH
TEST_CASE("kiln render prints a program's kernels for any dialect, without its device",
          "[pipeline][tool]") {
  const std::string tool = KILN_TOOL_PATH;
  const test::ChildResult cuda =
      test::run_child("", tool + " render --dialect CUDA matmul 64 64 64");
  INFO(cuda.output);
  CHECK(cuda.exit_code == 0);
  CHECK_THAT(cuda.output, Catch::Contains("__global__"));
  CHECK_THAT(cuda.output, Catch::Contains("for CUDA gpu sm_90"));

  const test::ChildResult glsl =
      test::run_child("", tool + " render --dialect GLSL --opts none --passes softmax 4 33");
  INFO(glsl.output);
  CHECK(glsl.exit_code == 0);
  CHECK_THAT(glsl.output, Catch::Contains("// ---- after lower ----"));
  CHECK_THAT(glsl.output, Catch::Contains("#version 450"));

  const test::ChildResult unknown = test::run_child("", tool + " render conv 3");
  CHECK(unknown.exit_code == 1);
  CHECK_THAT(unknown.output, Catch::Contains("unknown program 'conv'"));
  const test::ChildResult bad_size = test::run_child("", tool + " render sum -4");
  CHECK(bad_size.exit_code != 0);
  const test::ChildResult bad_dialect = test::run_child("", tool + " render --dialect WGSL sum 4");
  CHECK(bad_dialect.exit_code == 2);
}
#endif

}  // namespace kiln
