// The dialect hooks: the same kernels (elementwise ops of every dtype, a grouped reduction, a
// tiled matmul) render as CUDA C++ and GLSL compute shaders and compile with the real compilers
// where they are on the machine: NVRTC (to an sm_90 cubin) and glslang to SPIR-V. Running
// them is the CUDA and Vulkan devices' business.

#include <catch2/catch.hpp>

#include <kiln/error.h>
#include <kiln/kiln.h>

#include <algorithm>

#include <fstream>
#include <functional>
#include <iterator>
#include <thread>
#include <vector>

#include "codegen/decompose.h"
#include "codegen/index_text.h"
#include "codegen/render.h"
#include "codegen/vectorize.h"
#include "runtime/registry.h"
#include "tests/child_process.h"
#include "tests/codegen_helpers.h"
#include "tests/test_support.h"

using namespace kiln;
using namespace kiln::testing;

namespace {

// Every kernel of these programs, lowered for a GPU with the heuristics' opts and with none.
std::vector<LinearProgram> kernels_of(const std::vector<Tensor>& programs) {
  std::vector<LinearProgram> kernels;
  for (const Tensor& program : programs) {
    for (const ScheduleItem& item : schedule_of(program).items) {
      if (item.kind != ScheduleItem::Kind::Kernel) continue;
      kernels.push_back(lowered(item, gpu_target()));
      kernels.push_back(lower_with(item, {}, gpu_target()));
    }
  }
  for (size_t index = 0; index < kernels.size(); ++index)
    kernels[index].name = "kernel" + std::to_string(index);
  return kernels;
}

// Elementwise ops, casts and reductions of one dtype; combinations the frontend refuses for it
// (a DTypeError) are left out.
std::vector<Tensor> programs_of(DType dtype) {
  const Tensor a = (input({37, 5}, 1) * 20 - 10).cast(dtype).realize();
  const Tensor b = (input({37, 5}, 2) * 20 - 10).cast(dtype).realize();
  std::vector<std::function<Tensor()>> builders = {
      [&] { return a + b; },
      [&] { return a - b; },
      [&] { return a * b; },
      [&] { return a / b; },
      [&] { return a % b; },
      [&] { return maximum(a, b); },
      [&] { return minimum(a, b); },
      [&] { return where(a < b, a, b) + (a <= b).cast(dtype); },
      [&] { return (a > b) | (a >= b) | (a == b) | (a != b); },
      [&] { return (a & b) ^ (a | b); },
      [&] { return -a; },
      [&] { return a.abs(); },
      [&] { return a.logical_not(); },
      [&] { return a.sum({1}); },
      [&] { return a.prod({0}); },
      [&] { return a.max({1}); },
      [&] { return a.min(); },
      [&] { return a.sqrt() + a.exp() + a.log() + a.sin() + a.cos(); },
      [&] { return a.tan() + a.tanh() + a.erf() + a.reciprocal(); },
      [&] { return a.floor() + a.ceil() + a.round() + a.trunc(); },
      [&] { return pow(a, b); },
  };
  for (DType to : dtypes::all) builders.push_back([&, to] { return a.cast(to); });
  std::vector<Tensor> programs;
  for (const auto& build : builders) {
    try {
      programs.push_back(build());
    } catch (const DTypeError&) {
    }
  }
  return programs;
}

// Renders every kernel; a kernel the dialect cannot express for its dtypes (a float64 function
// in `missing_float64_math`) must say so with a DTypeError that names the dialect.
std::vector<std::string> render_all(const std::vector<LinearProgram>& kernels,
                                    const Dialect& dialect, int* refused) {
  std::vector<std::string> sources;
  for (const LinearProgram& kernel : kernels) {
    try {
      sources.push_back(render_kernel(decompose_semantics(kernel, dialect), dialect));
    } catch (const DTypeError& error) {
      INFO(error.what());
      CHECK(contains(error.what(), "the " + dialect.name + " dialect does not support float64"));
      ++*refused;
    }
  }
  return sources;
}

// The source realize renders: the program with its vector loads and stores marked.
std::string render_vectorized(const LinearProgram& program, const Dialect& dialect) {
  return render_kernel(
      decompose_semantics(vectorize_stores(vectorize_loads(program, dialect), dialect), dialect),
      dialect);
}

std::string tool_path(const std::string& name, const std::string& fallback) {
  const test::ChildResult found = test::run_child("", "command -v " + name);
  if (found.exit_code == 0) return found.output.substr(0, found.output.find('\n'));
  return std::ifstream(fallback).good() ? fallback : "";
}

void write_file(const std::filesystem::path& path, const std::string& text) {
  std::ofstream(path) << text;
}

// Compiles CUDA sources as one translation unit (the prelude once) to a cubin for sm_90 (the
// H100), with the CUDA device's own compiler: NVRTC, whose cubin step runs ptxas.
void check_cuda_compiles(const std::vector<std::string>& sources) {
  const std::shared_ptr<DeviceContext> context =
      device_or_skip_part("CUDA@sm_90", "the CUDA sources compiled by NVRTC");
  if (!context) return;
  const std::string& prelude = cuda_dialect().prelude;
  std::string unit = prelude;
  for (const std::string& source : sources) {
    REQUIRE(source.compare(0, prelude.size(), prelude) == 0);
    unit += source.substr(prelude.size());
  }
  try {
    CHECK_FALSE(context->device().compiler().compile(unit, "kiln_dialect_test").empty());
  } catch (const CompileError& error) {
    INFO(unit);
    FAIL(error.what() << "\n" << error.log());
  }
}

// Compiles each GLSL source to SPIR-V with glslang (installed by scripts/setup.sh).
void check_glsl_compiles(const std::vector<std::string>& sources) {
  const std::string glslang = tool_path("glslangValidator", "/usr/bin/glslangValidator");
  INFO("glslangValidator missing: scripts/setup.sh installs Debian's glslang-tools");
  REQUIRE_FALSE(glslang.empty());
  test::ScratchFolder folder("glsl");
  std::string files;
  for (size_t index = 0; index < sources.size(); ++index) {
    const std::filesystem::path path = folder.path() / ("kernel" + std::to_string(index) + ".comp");
    write_file(path, sources[index]);
    files += " " + path.string();
  }
  // One shader per file and per glslang run (a run links its files into one program), as many
  // at once as there are cores.
  const test::ChildResult compiled = test::run_child(
      "", "sh -c 'for file in" + files + "; do echo \"$file\"; done | xargs -P " +
              std::to_string(std::max(1u, std::thread::hardware_concurrency())) +
              " -I FILE sh -c \"" + glslang +
              " -V --target-env vulkan1.2 -o FILE.spv FILE >FILE.log || echo FILE\"'");
  REQUIRE(compiled.exit_code == 0);
  for (size_t index = 0; index < sources.size() && !compiled.output.empty(); ++index) {
    const std::string file =
        (folder.path() / ("kernel" + std::to_string(index) + ".comp")).string();
    if (!contains(compiled.output, file + "\n")) continue;
    std::ifstream log(file + ".log");
    const std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
    INFO(sources[index]);
    INFO(text);
    FAIL("glslang refused " << file);
  }
}

}  // namespace

TEST_CASE("the CUDA and GLSL dialects render kiln's spellings", "[dialects]") {
  const Tensor a = input({64, 40}, 1), b = input({64, 40}, 2);
  const std::vector<LinearProgram> kernels =
      kernels_of({(a.cast(dtypes::int8) / b.cast(dtypes::int8)) > b.cast(dtypes::int8), a.sum({1}),
                  (a % b).erf()});
  const std::string cuda =
      render_kernel(decompose_semantics(kernels[0], cuda_dialect()), cuda_dialect());
  CHECK(contains(cuda, "extern \"C\" __global__ void __launch_bounds__("));
  CHECK(contains(cuda, "const float* __restrict__ data1"));
  CHECK(contains(cuda, "blockIdx.x * blockDim.x + threadIdx.x"));
  const std::string glsl =
      render_kernel(decompose_semantics(kernels[0], glsl_dialect()), glsl_dialect());
  CHECK(glsl.rfind("#version 450", 0) == 0);
  CHECK(contains(glsl, "layout(local_size_x = "));
  CHECK(contains(glsl, "layout(std430, binding = 1) restrict readonly buffer KilnBuffer1"));
  CHECK(contains(glsl, "int8_t(0)"));  // casts are constructors
  CHECK(contains(glsl, "data0[gidx0] = "));
  CHECK(contains(glsl, "? uint8_t(1) : uint8_t(0)"));  // bools are stored as bytes
  CHECK_FALSE(contains(glsl.substr(glsl_dialect().prelude.size()), "const "));
  const std::string glsl_erf =
      render_kernel(decompose_semantics(kernels[4], glsl_dialect()), glsl_dialect());
  CHECK(contains(glsl_erf, "kiln_fmod("));  // helpers for what GLSL lacks
  CHECK(contains(glsl_erf, "kiln_erf("));
  // The C dialect keeps the CPU kernel ABI.
  const std::string c = render_kernel(
      decompose_semantics(lower_with(schedule_of(a + b).items[0], {}, cpu_target()), c_dialect()),
      c_dialect());
  CHECK(contains(c,
                 "(void** restrict buffers, const long long* restrict variables, long long "
                 "begin, long long end) {"));
}

TEST_CASE("GLSL computes an index in 64 bits where a step of it passes 2^31", "[dialects]") {
  // A cumsum of 100,000 elements indexed (gidx0 * 13107 + r0 * 115 + r1) % 65535 with gidx0 up
  // to 327674: the product alone passes 2^31 (a 32-bit int wrapped it, and 78,525 sums were wrong).
  const Sym gidx = Sym::var("gidx0", 0, 327674), r0 = Sym::var("r0", 0, 113),
            r1 = Sym::var("r1", 0, 114);
  const Sym wide = mod(gidx * 13107 + r0 * 115 + r1, Sym(65535));
  const std::string glsl = sym_text(wide, glsl_dialect());
  CHECK(glsl.rfind("int(", 0) == 0);
  CHECK(contains(glsl, "int64_t(gidx0)"));
  CHECK_FALSE(contains(sym_text(wide, c_dialect()), "int64_t"));  // long long already
  // Within 32 bits the index is left as it was.
  const Sym narrow = mod(r0 * 115 + r1, Sym(65535));
  CHECK_FALSE(contains(sym_text(narrow, glsl_dialect()), "int64_t"));
}

TEST_CASE("every dtype's ops render and compile as CUDA C++ and GLSL", "[dialects]") {
  for (DType dtype : dtypes::all) {
    DYNAMIC_SECTION(dtype.name()) {
      const std::vector<LinearProgram> kernels = kernels_of(programs_of(dtype));
      REQUIRE(kernels.size() > 10);
      int cuda_refused = 0, glsl_refused = 0;
      check_cuda_compiles(render_all(kernels, cuda_dialect(), &cuda_refused));
      CHECK(cuda_refused == 0);
      // glslang takes a process per shader: the kernels with the GPU heuristics' opts only (the
      // CUDA unit above has those without opts too).
      std::vector<LinearProgram> optimised;
      for (size_t index = 0; index < kernels.size(); index += 2)
        optimised.push_back(kernels[index]);
      check_glsl_compiles(render_all(optimised, glsl_dialect(), &glsl_refused));
      CHECK(glsl_refused == 0);  // float64 math from the dialect's own library
      // A dialect without a float64 function refuses it by name.
      if (dtype == dtypes::float64) {
        Dialect without_exp = glsl_dialect();
        without_exp.missing_float64_math = {"exp"};
        int refused = 0;
        render_all(kernels, without_exp, &refused);
        CHECK(refused > 0);
      }
    }
  }
}

TEST_CASE("tiled matmuls render and compile as CUDA C++ and GLSL", "[dialects]") {
  const Tensor a = input({128, 96}, 1), b = input({96, 64}, 2);
  const std::vector<LinearProgram> kernels =
      kernels_of({matmul(a, b), matmul(a.cast(dtypes::float16), b.cast(dtypes::float16)),
                  matmul(a.cast(dtypes::float64), b.cast(dtypes::float64)).relu(),
                  matmul(a.reshape({2, 64, 96}), b.reshape({1, 96, 64}).expand({2, 96, 64}))});
  int tiled = 0;
  for (const LinearProgram& kernel : kernels) tiled += has_opt(kernel.opts, OptKind::Tile);
  CHECK(tiled == 4);  // the GPU heuristics tile every one of them
  int refused = 0;
  const std::vector<std::string> cuda = render_all(kernels, cuda_dialect(), &refused);
  CHECK(contains(cuda[0], "__syncthreads();"));
  check_cuda_compiles(cuda);
  check_glsl_compiles(render_all(kernels, glsl_dialect(), &refused));
  CHECK(refused == 0);
}

TEST_CASE("grouped reductions render and compile as CUDA C++ and GLSL", "[dialects]") {
  const Tensor rows = input({3, 5000}, 3);
  const ScheduleItem full_sum = schedule_of(input({4000}, 1).sum()).items[0];
  std::vector<LinearProgram> kernels = kernels_of({rows.sum({1}), rows.max({1}), rows.softmax(1)});
  kernels.push_back(lower_with(full_sum, {{OptKind::Group, 0, 256}}, gpu_target()));
  kernels.back().name = "grouped_sum";
  bool grouped = false;
  for (const LinearProgram& kernel : kernels) grouped |= has_opt(kernel.opts, OptKind::Group);
  CHECK(grouped);
  int refused = 0;
  const std::vector<std::string> cuda = render_all(kernels, cuda_dialect(), &refused);
  CHECK(contains(cuda.back(), "__shared__ float local"));
  CHECK(contains(cuda.back(), "__syncthreads();"));
  check_cuda_compiles(cuda);
  const std::vector<std::string> glsl = render_all(kernels, glsl_dialect(), &refused);
  CHECK(contains(glsl.back(), "shared float local"));
  CHECK(contains(glsl.back(), "barrier();"));
  check_glsl_compiles(glsl);
  CHECK(refused == 0);
}

TEST_CASE("neighbouring loads render as vector loads where the dialect has vectors", "[dialects]") {
  // A row sum with 8 partial sums reads 8 neighbouring elements per step.
  const ScheduleItem row_sum = schedule_of(input({64, 64}, 1).sum({1})).items.at(0);
  const LinearProgram partials = lower_with(row_sum, {{OptKind::Upcast, 1, 8}}, gpu_target());
  CHECK(contains(render_vectorized(partials, opencl_dialect(true, true)), "vload8(0, data1 + "));
  const std::string cuda = render_vectorized(partials, cuda_dialect());
  CHECK(contains(cuda, "(*(const float4*)(data1 + "));
  CHECK(contains(cuda, "_vector.w;"));
  CHECK_FALSE(contains(render_vectorized(partials, c_dialect()), "_vector"));
  CHECK_FALSE(contains(render_vectorized(partials, glsl_dialect()), "_vector"));
  check_cuda_compiles({cuda});

  // A view that starts one element in: OpenCL's vload needs no alignment, CUDA's float4 does.
  const ScheduleItem shifted =
      schedule_of(input({64, 65}, 2).shrink({{0, 64}, {1, 65}}).sum({1})).items.at(0);
  const LinearProgram unaligned = lower_with(shifted, {{OptKind::Upcast, 1, 8}}, gpu_target());
  CHECK(contains(render_vectorized(unaligned, opencl_dialect(true, true)), "vload8"));
  CHECK_FALSE(contains(render_vectorized(unaligned, opencl_dialect(true)), "vload8"));  // PoCL
  CHECK_FALSE(contains(render_vectorized(unaligned, cuda_dialect()), "float4"));
  // Masked (padded) lanes stay scalar; the lanes between them, never masked, are one vector.
  const ScheduleItem padded =
      schedule_of(input({64, 60}, 3).pad({{0, 0}, {2, 2}}).sum({1})).items.at(0);
  const std::string masked = render_vectorized(
      lower_with(padded, {{OptKind::Upcast, 1, 8}}, gpu_target()), opencl_dialect(true, true));
  CHECK(contains(masked, "? data1["));
  CHECK(contains(masked, "vload4(0, data1 + "));
}

TEST_CASE("neighbouring stores render as vector stores where the dialect has vectors",
          "[dialects]") {
  // A tile of 4x8 outputs per work item stores rows of 8 neighbouring elements.
  const ScheduleItem product =
      schedule_of(input({64, 32}, 1).matmul(input({32, 64}, 2))).items.at(0);
  const LinearProgram tiled =
      lower_with(product, {{OptKind::Upcast, 1, 8}, {OptKind::Upcast, 0, 4}}, gpu_target());
  const std::string opencl = render_vectorized(tiled, opencl_dialect(true, true));
  CHECK(contains(opencl, "vstore8((float8)("));
  const std::string cuda = render_vectorized(tiled, cuda_dialect());
  CHECK(contains(cuda, "*(float4*)(data0 + "));
  CHECK(contains(cuda, " = make_float4("));
  CHECK_FALSE(contains(render_vectorized(tiled, opencl_dialect(true)), "vstore"));  // PoCL
  CHECK_FALSE(contains(render_vectorized(tiled, glsl_dialect()), "vstore"));
  check_cuda_compiles({cuda});
  // Outputs that start one element in a row of 65 are not aligned for CUDA's float4.
  const ScheduleItem odd = schedule_of(input({64, 65}, 3) * 2.0f).items.at(0);
  const LinearProgram rows = lower_with(odd, {{OptKind::Upcast, 1, 5}}, gpu_target());
  CHECK_FALSE(contains(render_vectorized(rows, cuda_dialect()), "make_float"));
  // 16-bit elements go two to a 32-bit word: 8 float16 outputs are one uint4 in two stores of
  // CUDA's widest vector (uint2), whose loads read the input's words alike.
  const ScheduleItem half =
      schedule_of(input({64, 64}, 4).cast(dtypes::float16).realize() * 2.0f).items.at(0);
  const std::string halves =
      render_vectorized(lower_with(half, {{OptKind::Upcast, 1, 8}}, gpu_target()), cuda_dialect());
  CHECK(contains(halves, "*(uint2*)(((unsigned int*)data0) + "));
  CHECK(contains(halves, " = make_uint2("));
  CHECK(contains(halves, "const uint2 v"));
  // Each element its own statements (decompose_semantics): a word's lane, its high half.
  CHECK(contains(halves, "_vector.y;"));
  CHECK(contains(halves, " >> ((unsigned int)16u));"));
  check_cuda_compiles({halves});
}

// Equal outputs, where a half type's NaNs are equal whatever their payloads (OpenCL's
// vstore_half and kiln's own conversion, which vectors of halves use, quiet them differently).
bool same_values(DType dtype, const std::vector<uint8_t>& a, const std::vector<uint8_t>& b) {
  if (!dtype.is_half() || a.size() != b.size()) return a == b;
  const uint16_t exponent = dtype == dtypes::float16 ? 0x7c00 : 0x7f80;
  auto is_nan = [exponent](uint16_t bits) {
    return (bits & exponent) == exponent && (bits & 0x7fff) != exponent;
  };
  for (size_t at = 0; at + 1 < a.size(); at += 2) {
    const uint16_t x = static_cast<uint16_t>(a[at] | (a[at + 1] << 8));
    const uint16_t y = static_cast<uint16_t>(b[at] | (b[at + 1] << 8));
    if (x != y && !(is_nan(x) && is_nan(y))) {
      UNSCOPED_INFO("element " << at / 2 << ": " << x << " vs " << y);
      return false;
    }
  }
  return true;
}

TEST_CASE("OpenCL vector loads and stores compute what scalar ones compute", "[dialects]") {
  // PoCL's dialect has no vector loads (they slow it down); a GPU's has. Both run here.
  const std::shared_ptr<DeviceContext> context = device_or_skip("CL");
  const Dialect with_vectors = opencl_dialect(context->device().supports(dtypes::float64), true);
  const Dialect without = opencl_dialect(context->device().supports(dtypes::float64), false);
  Allocator& memory = context->allocator().driver();
  struct VectorCase {
    Tensor tensor;
    std::vector<Opt> opts;
  };
  const Tensor a = input({64, 72}, 1), b = input({72, 48}, 2), rows = input({16, 256}, 3);
  const Tensor bf16 = a.cast(dtypes::bfloat16).realize(), f16 = a.cast(dtypes::float16).realize();
  const Tensor i16 = (a * 1000).cast(dtypes::int16).realize();
  const std::vector<VectorCase> programs = {
      // 16-bit elements, two to a 32-bit word: widths 4, 8 and 2.
      {bf16 * 2.0f + bf16.flip({1}), {{OptKind::Upcast, 1, 4}}},
      {(f16 + 1.0f) * f16, {{OptKind::Upcast, 1, 8}}},
      {i16 * 3 + 1, {{OptKind::Upcast, 1, 2}}},
      {f16.sum({1}), {{OptKind::Upcast, 1, 8}}},
      {a.sum({1}), {{OptKind::Upcast, 1, 8}}},
      {a.shrink({{0, 64}, {1, 71}}).max({1}), {{OptKind::Upcast, 1, 2}}},
      {a.matmul(b), {{OptKind::Upcast, 1, 16}, {OptKind::Upcast, 0, 4}}},
      {(a.cast(dtypes::int32) * 3).sum({1}), {{OptKind::Upcast, 1, 4}}},
      // A GROUP whose work items read 4 neighbours per step (the UPCAST before it).
      {rows.sum({1}), {{OptKind::Upcast, 1, 4}, {OptKind::Group, 1, 16}, {OptKind::Upcast, 1, 2}}},
      {rows.max({1}), {{OptKind::Upcast, 1, 4}, {OptKind::Group, 1, 32}}},
  };
  for (const VectorCase& case_ : programs) {
    INFO(opts_to_string(case_.opts) << " for " << case_.tensor.dtype().name());
    const ScheduleItem item = schedule_of(case_.tensor).items.at(0);
    LinearProgram program = lower_with(item, case_.opts, cl_target());
    std::vector<std::vector<uint8_t>> outputs;
    for (const Dialect* dialect : {&with_vectors, &without}) {
      program.name = std::string("vectors_") + (dialect == &with_vectors ? "on" : "off");
      const std::string source = render_vectorized(program, *dialect);
      INFO(source);
      // vload_half is OpenCL's scalar float16 load; a pair of 16-bit elements is one uint.
      const bool vectors = contains(source, "vload2(") || contains(source, "vload4(") ||
                           contains(source, "vload8(") || contains(source, "__global uint*)");
      CHECK(vectors == (dialect == &with_vectors));
      if (case_.tensor.ndim() == 2 && case_.opts.size() == 2)  // the matmul tile
        CHECK(contains(source, "vstore") == (dialect == &with_vectors));
      const std::shared_ptr<Program> compiled = context->program(source, program.name);
      LaunchRequest request;
      std::vector<size_t> sizes;
      for (size_t param = 0; param < program.params.size(); ++param) {
        const KernelParam& info = program.params[param];
        sizes.push_back(static_cast<size_t>(info.numel) * info.dtype.itemsize());
        request.buffers.push_back(memory.alloc(sizes.back()));
        std::vector<uint8_t> bytes(sizes.back());
        for (size_t at = 0; at < bytes.size(); ++at) bytes[at] = static_cast<uint8_t>(at * 7 + 3);
        if (param > 0) memory.copy_in(request.buffers.back(), bytes.data(), bytes.size());
      }
      int64_t global[3], local[3];
      dispatch_sizes(program, {}, global, local);
      request.global = {global[0], global[1], global[2]};
      request.local = {local[0], local[1], local[2]};
      request.wait = true;
      compiled->launch(request);
      outputs.emplace_back(sizes[0]);
      memory.copy_out(outputs.back().data(), request.buffers[0], sizes[0]);
      for (size_t param = 0; param < sizes.size(); ++param)
        memory.free(request.buffers[param], sizes[param]);
    }
    CHECK(same_values(case_.tensor.dtype(), outputs[0], outputs[1]));
  }
}
