// Running one case, and the two memory checks around it.
//
// Poisoning. kiln allocates a kernel's output itself, from the device's CachingAllocator, which
// hands back freed blocks of the same size last-in first-out. Before a case realizes, the runner
// takes a few blocks of exactly the output's size from that allocator, fills them with a poison
// byte and frees them again: the output buffer (and any same-sized intermediate) is then one of
// them. After the run the whole output buffer is read back; an element that still holds the
// poison bytes is suspect, and the case is run once more with a second poison byte: an element
// that holds the poison both times was never written by the kernel.
//
// Guard regions. Where the device can alias memory (Allocator::subregion: an address plus an
// offset on the CPU, a sub-buffer on OpenCL), the runner allocates each planted block from the
// driver with guard bytes on both sides (256, or the device's alignment if that is larger) and
// plants a subregion of the interior in the cache instead. After the run, guard bytes that changed
// mean a kernel wrote out of bounds. Once the case's tensors are gone every planted subregion is
// taken back out of the cache (it must never reach the driver's free) and released, and the real
// blocks are freed. A device without subregions gets poisoning only; the report says so.

#include "tools/conformance/runner.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <optional>
#include <set>

#include "core/uop.h"
#include "runtime/buffer.h"
#include "runtime/registry.h"
#include "tools/conformance/reference.h"
#include "tools/conformance/values.h"

namespace kiln::conformance {
namespace {

constexpr size_t kMinGuardBytes = 256;
constexpr int kPlantedBlocks = 8;
constexpr uint8_t kGuardByte = 0xC3;
constexpr uint8_t kPoison = 0xA5;
constexpr uint8_t kSecondPoison = 0x5A;

bool device_has_guards(DeviceContext& context) {
  return context.allocator().driver().subregion_alignment() > 0;
}

class OutputTrap {
 public:
  OutputTrap(DeviceContext& context, bool guards)
      : context_(context), driver_(context.allocator().driver()), guards_(guards) {
    if (guards_) {
      const size_t alignment = driver_.subregion_alignment();
      guard_bytes_ = (kMinGuardBytes + alignment - 1) / alignment * alignment;
    }
    // Planted blocks must stay cached until the output takes one and drain() takes the rest:
    // an evicted block would not be poisoned output, and an evicted subregion would reach the
    // driver's free.
    previous_cache_limit_ =
        context_.allocator().set_cache_limit(std::numeric_limits<size_t>::max());
  }
  OutputTrap(const OutputTrap&) = delete;
  OutputTrap& operator=(const OutputTrap&) = delete;
  ~OutputTrap() {
    // A subregion still in use (see drain) comes back to the cache later: keep it from eviction.
    if (drain()) context_.allocator().set_cache_limit(previous_cache_limit_);
  }

  // Call after the inputs are uploaded (they allocate too). For the self test, `short_by` makes
  // each guarded block that many bytes smaller than the size it is cached under, so a kernel that
  // writes all of `size` writes past the block's end.
  void plant(size_t size, uint8_t poison, size_t short_by = 0) {
    size_ = size;
    block_size_ = size - short_by;
    CachingAllocator& cache = context_.allocator();
    if (!guards_) {
      std::vector<DeviceMemory> blocks;
      const std::vector<uint8_t> pattern(size, poison);
      for (int index = 0; index < kPlantedBlocks; ++index) {
        blocks.push_back(cache.alloc(size));
        driver_.copy_in(blocks.back(), pattern.data(), size);
        interiors_.insert(blocks.back());
      }
      for (auto block = blocks.rbegin(); block != blocks.rend(); ++block) cache.free(*block, size);
      return;
    }
    std::vector<uint8_t> pattern(whole_size(), kGuardByte);
    std::memset(pattern.data() + guard_bytes_, poison, block_size_);
    for (int index = 0; index < kPlantedBlocks; ++index) {
      DeviceMemory whole = driver_.alloc(pattern.size());
      wholes_.push_back(whole);
      driver_.copy_in(whole, pattern.data(), pattern.size());
      DeviceMemory interior = driver_.subregion(whole, guard_bytes_, block_size_);
      interiors_.insert(interior);
      cache.free(interior, size);
    }
  }

  // Whether `memory` is one of the planted (poisoned) blocks.
  bool planted(DeviceMemory memory) const { return interiors_.count(memory) > 0; }

  // "" when every guard byte is intact, else where the damage is.
  std::string check_guards() {
    if (!guards_) return "";
    std::vector<uint8_t> bytes(whole_size());
    for (DeviceMemory whole : wholes_) {
      driver_.copy_out(bytes.data(), whole, bytes.size());
      for (size_t offset = 0; offset < guard_bytes_; ++offset) {
        if (bytes[offset] != kGuardByte) {
          return "out-of-bounds write: " + std::to_string(guard_bytes_ - offset) +
                 " byte(s) before an output block changed";
        }
        if (bytes[guard_bytes_ + block_size_ + offset] != kGuardByte) {
          return "out-of-bounds write: byte " + std::to_string(offset) + " past the end of a " +
                 std::to_string(block_size_) + "-byte output block changed";
        }
      }
    }
    return "";
  }

  // For the self test: changes the byte `offset` bytes past the end of the first planted block
  // (negative: before its start), going through the underlying allocation as a stray kernel would.
  void scribble(std::ptrdiff_t offset) {
    std::vector<uint8_t> bytes(whole_size());
    driver_.copy_out(bytes.data(), wholes_.front(), bytes.size());
    const std::ptrdiff_t at =
        offset < 0 ? static_cast<std::ptrdiff_t>(guard_bytes_) + offset
                   : static_cast<std::ptrdiff_t>(guard_bytes_ + block_size_) + offset;
    bytes[static_cast<size_t>(at)] ^= 0xFF;
    driver_.copy_in(wholes_.front(), bytes.data(), bytes.size());
  }

 private:
  size_t whole_size() const { return block_size_ + 2 * guard_bytes_; }

  // Takes every planted subregion back out of the cache. The cache hands out the blocks it holds
  // for this size first; a block that comes from the driver (cached bytes unchanged) means the
  // list is empty. False when a planted subregion is still in use and stays planted.
  bool drain() {
    if (!guards_ || wholes_.empty()) return true;
    CachingAllocator& cache = context_.allocator();
    std::vector<DeviceMemory> others, recovered;
    while (recovered.size() < interiors_.size()) {
      const size_t before = cache.cached_bytes();
      DeviceMemory block = cache.alloc(size_);
      if (cache.cached_bytes() == before) {  // fresh from the driver: nothing more is cached
        driver_.free(block, size_);
        break;
      }
      (interiors_.count(block) ? recovered : others).push_back(block);
    }
    for (auto block = others.rbegin(); block != others.rend(); ++block) cache.free(*block, size_);
    if (recovered.size() < interiors_.size()) {
      // A planted block is still held by a live buffer: freeing its real block would leave the
      // buffer dangling, and the subregion must not reach the driver's free. Keep both (leak).
      std::fprintf(
          stderr,
          "kiln conformance: internal warning: a guarded block is still in use; leaking it\n");
      return false;
    }
    for (DeviceMemory interior : recovered) driver_.release_subregion(interior);
    for (DeviceMemory whole : wholes_) driver_.free(whole, whole_size());
    wholes_.clear();
    return true;
  }

  DeviceContext& context_;
  Allocator& driver_;
  bool guards_;
  size_t guard_bytes_ = 0;
  size_t size_ = 0;        // the size the planted blocks are cached under
  size_t block_size_ = 0;  // what each really holds between its guards
  std::vector<DeviceMemory> wholes_;
  std::set<DeviceMemory> interiors_;  // the planted blocks (with guards: subregions)
  size_t previous_cache_limit_ = 0;
};

struct Outcome {
  DType dtype;
  Shape shape;
  std::vector<uint8_t> bytes;
  std::string guard_damage;
};

Outcome evaluate(DeviceContext& context, bool guards, const Case& item,
                 const std::vector<HostTensor>& sources, const std::vector<Layout>& layouts,
                 const std::string& device, uint8_t poison) {
  Outcome outcome;
  OutputTrap trap(context, guards);  // declared first: drains after every tensor below is gone
  std::vector<Tensor> inputs;
  for (size_t index = 0; index < sources.size(); ++index) {
    inputs.push_back(apply_layout(layouts[index], upload(sources[index], device)));
  }
  Tensor result = item.inputs.empty() ? item.create(device) : item.build(inputs);
  outcome.dtype = result.dtype();
  outcome.shape = result.shape();
  Tensor written = result.contiguous();
  const size_t nbytes = static_cast<size_t>(result.numel()) * result.dtype().itemsize();
  trap.plant(std::max<size_t>(nbytes, 1), poison);
  written.realize();
  const std::shared_ptr<const UOp> node = written.node();
  if (node->op() != Op::Buffer)
    throw Error("[conformance] internal: the realized result is not a buffer");
  Buffer& buffer = buffer_of(*node);
  if (buffer.nbytes() != nbytes)
    throw Error("[conformance] internal: the output buffer has an unexpected size");
  // The check rests on the caching allocator handing the output a planted block; make sure it did.
  if (nbytes > 0 && !trap.planted(buffer.memory())) {
    throw std::logic_error(
        "[conformance] internal: the output was not allocated in a poisoned block");
  }
  outcome.bytes.resize(nbytes);
  buffer.copy_out(outcome.bytes.data());
  outcome.guard_damage = trap.check_guards();
  return outcome;
}

bool all_bytes(const uint8_t* bytes, int count, uint8_t value) {
  for (int index = 0; index < count; ++index) {
    if (bytes[index] != value) return false;
  }
  return true;
}

// A case's inputs as generated on the host, each with the layout that makes it from its source.
struct CaseInputs {
  std::vector<HostTensor> sources;
  std::vector<Layout> layouts;
};

CaseInputs case_inputs(const Case& item) {
  CaseInputs inputs;
  for (size_t index = 0; index < item.inputs.size(); ++index) {
    const InputSpec& spec = item.inputs[index];
    std::optional<Layout> layout = make_layout(spec.layout, spec.shape);
    if (!layout)
      throw std::logic_error("layout " + spec.layout + " cannot make shape " +
                             shape_text(spec.shape));
    inputs.sources.push_back(
        generate(spec.dtype, layout->source, spec.values, spec.role, item.seed + index));
    inputs.layouts.push_back(std::move(*layout));
  }
  return inputs;
}

std::string first_line(const std::string& text) {
  return text.substr(0, text.find('\n'));
}

}  // namespace

// Whether `device` flushes float32 subnormals: the smallest normal float32 halved, and the
// smallest subnormal times one, computed by a kernel (the inputs are buffers, so no constant is
// folded on the host).
bool device_flushes_subnormals(const std::string& device) {
  const float smallest_normal = std::numeric_limits<float>::min();
  const float smallest_subnormal = std::numeric_limits<float>::denorm_min();
  const Tensor values =
      Tensor::from_vector<float>({smallest_normal, smallest_subnormal}, {2}, device);
  const Tensor factors = Tensor::from_vector<float>({0.5f, 1.0f}, {2}, device);
  const std::vector<float> products = (values * factors).to_vector<float>();
  return products[0] == 0 || products[1] == 0;
}

std::string guard_self_test(const std::string& device) {
  std::shared_ptr<DeviceContext> context = open_device(canonical_device_name(device));
  if (!device_has_guards(*context)) return "";
  CachingAllocator& cache = context->allocator();
  const size_t size = 100;  // not a multiple of any alignment
  std::string problem;
  {
    OutputTrap trap(*context, true);
    trap.plant(size, kPoison);
    if (!trap.check_guards().empty()) problem = "guards damaged before any write";
    DeviceMemory block = cache.alloc(size);
    if (!trap.planted(block)) problem = "the cache did not hand out a planted block";
    std::vector<uint8_t> bytes(size);
    cache.driver().copy_out(bytes.data(), block, size);
    if (!all_bytes(bytes.data(), static_cast<int>(size), kPoison))
      problem = "the planted block is not poisoned";
    // A write through the subregion lands inside the guards.
    std::vector<uint8_t> zeros(size, 0);
    cache.driver().copy_in(block, zeros.data(), size);
    if (!trap.check_guards().empty()) problem = "a write inside the block damaged a guard";
    trap.scribble(0);  // the first byte past the end
    if (trap.check_guards().find("past the end") == std::string::npos)
      problem = "a write past the end went unnoticed";
    trap.scribble(0);   // put it back
    trap.scribble(-1);  // the last byte before the start
    if (trap.check_guards().find("before an output block") == std::string::npos)
      problem = "a write before the start went unnoticed";
    cache.free(block, size);
  }
  if (!problem.empty()) return problem;
  // A real kernel: 25 float32 written into blocks that hold 24.
  {
    OutputTrap trap(*context, true);
    Tensor written = Tensor::arange(25, context->name()).cast(dtypes::float32).contiguous();
    trap.plant(size, kPoison, sizeof(float));
    written.realize();
    if (!trap.planted(buffer_of(*written.node()).memory()))
      problem = "the kernel's output was not a planted block";
    else if (trap.check_guards().find("past the end") == std::string::npos)
      problem = "a kernel writing past the end of its output went unnoticed";
  }
  return problem;
}

namespace {

// The smallest normal float32: float32 and bfloat16 values below it are subnormal.
constexpr double kSmallestNormalFloat32 = 1.1754943508222875e-38;

bool shares_float32_range(DType dtype) {
  return dtype == dtypes::float32 || dtype == dtypes::bfloat16;
}

// `value` as a device that flushes float32 subnormals to zero leaves it.
double flushed(DType dtype, double value) {
  if (shares_float32_range(dtype) && value != 0 && std::fabs(value) < kSmallestNormalFloat32)
    return std::copysign(0.0, value);
  return value;
}

// Whether `got` matches `want` (unrounded, in double) within `tolerance`; `badness` says by how
// much it misses (ulps for floats) where it does not.
bool element_matches(DType dtype, const Scalar& want, const Scalar& got, double scale,
                     const Tolerance& tolerance, bool any_zero_sign, double& badness) {
  if (!dtype.is_float()) {
    badness = want.i == got.i
                  ? 0
                  : std::fabs(int_as_double(dtype, want.i) - int_as_double(dtype, got.i)) + 1;
    return want.i == got.i;
  }
  const double rounded = round_to(dtype, want.f);
  badness = ulp_distance(dtype, rounded, got.f);
  if (std::isnan(want.f) || std::isnan(got.f)) return std::isnan(want.f) && std::isnan(got.f);
  if (badness <= tolerance.ulps) {
    if (!any_zero_sign && tolerance.signed_zero && rounded == 0 && got.f == 0 &&
        std::signbit(rounded) != std::signbit(got.f)) {
      badness = 0.5;
      return false;
    }
    return true;
  }
  if (std::isinf(rounded) || std::isinf(got.f)) return false;
  return std::fabs(got.f - want.f) <= tolerance.rtol * scale + tolerance.atol;
}

}  // namespace

HostTensor flush_subnormals(HostTensor tensor) {
  if (shares_float32_range(tensor.dtype)) {
    for (Scalar& value : tensor.data) value.f = flushed(tensor.dtype, value.f);
  }
  return tensor;
}

CaseResult compare(const Expected& expected, const HostTensor& got, const Tolerance& tolerance,
                   const Expected* flushed_inputs) {
  CaseResult result;
  result.status = Status::Pass;
  const HostTensor& want = expected.values;
  if (got.dtype != want.dtype) {
    result.status = Status::Fail;
    result.detail =
        std::string("result dtype is ") + got.dtype.name() + ", expected " + want.dtype.name();
    return result;
  }
  if (got.shape != want.shape) {
    result.status = Status::Fail;
    result.detail =
        "result shape is " + shape_text(got.shape) + ", expected " + shape_text(want.shape);
    return result;
  }
  const DType dtype = want.dtype;
  const bool may_flush =
      flushed_inputs != nullptr && flushed_inputs->values.numel() == want.numel();
  double worst = -1;
  int64_t failures = 0;
  for (int64_t index = 0; index < want.numel(); ++index) {
    auto scale_of = [index](const Expected& reference) {
      return reference.scale.empty() ? std::fabs(reference.values.data[index].f)
                                     : reference.scale[index];
    };
    double badness = 0;
    bool ok = element_matches(dtype, want.data[index], got.data[index], scale_of(expected),
                              tolerance, false, badness);
    if (!ok && may_flush) {
      // A device that flushes float32 subnormals: the result of the inputs as it sees them, or
      // either result with a subnormal output flushed (to a zero of either sign).
      double ignored = 0;
      for (const Expected* reference : {&expected, flushed_inputs}) {
        Scalar as_flushed = reference->values.data[index];
        const bool changes = dtype.is_float() && flushed(dtype, as_flushed.f) != as_flushed.f;
        ok = ok || element_matches(dtype, as_flushed, got.data[index], scale_of(*reference),
                                   tolerance, false, ignored);
        if (changes) {
          as_flushed.f = flushed(dtype, as_flushed.f);
          ok = ok || element_matches(dtype, as_flushed, got.data[index], scale_of(*reference),
                                     tolerance, true, ignored);
        }
      }
    }
    if (ok) continue;
    ++failures;
    if (badness > worst) {
      worst = badness;
      result.worst_index = index;
      result.worst_ulps = dtype.is_float() ? badness : 0;
    }
  }
  if (failures == 0) return result;
  result.status = Status::Fail;
  const int64_t index = result.worst_index;
  result.worst_at = ref::coordinates_text(index, want.shape);
  Scalar rounded = want.data[index];
  if (dtype.is_float()) rounded.f = round_to(dtype, rounded.f);
  result.expected = format_value(dtype, rounded);
  result.got = format_value(dtype, got.data[index]);
  result.detail = std::to_string(failures) + " of " + std::to_string(want.numel()) +
                  " element(s) differ; worst at " + result.worst_at + ": expected " +
                  result.expected + ", got " + result.got + " (tolerance " + tolerance.text() + ")";
  return result;
}

Runner::Runner(const std::string& device)
    : device_(canonical_device_name(device)), context_(open_device(device_)) {
  compile_only_ = context_->device().properties().compile_only;
  guards_ = !compile_only_ && device_has_guards(*context_);
}

bool Runner::flushes_subnormals() {
  // Asked the first time a comparison fails: a device that keeps subnormals never runs the probe.
  if (!flushes_subnormals_)
    flushes_subnormals_ = !compile_only_ && device_flushes_subnormals(device_);
  return *flushes_subnormals_;
}

// The case's result checked against the reference, and where that fails on a device that
// flushes subnormals, against what such a device computes too.
CaseResult Runner::check(const Case& item, const std::vector<HostTensor>& inputs,
                         const HostTensor& got) {
  const Expected expected = item.reference(inputs);
  CaseResult result = compare(expected, got, item.tolerance);
  if (result.status != Status::Fail || !flushes_subnormals()) return result;
  const std::unique_ptr<Expected> flushed = flushed_reference(item, inputs);
  return compare(expected, got, item.tolerance, flushed.get());
}

// The reference of `inputs` with float32 subnormals flushed, where the device flushes them and
// that changes an input; null otherwise.
std::unique_ptr<Expected> Runner::flushed_reference(const Case& item,
                                                    const std::vector<HostTensor>& inputs) const {
  std::vector<HostTensor> flushed_inputs;
  bool changed = false;
  for (const HostTensor& input : inputs) {
    flushed_inputs.push_back(flush_subnormals(input));
    for (int64_t index = 0; index < input.numel() && !changed; ++index)
      changed =
          input.dtype.is_float() && flushed_inputs.back().data[index].f != input.data[index].f;
  }
  // Without a changed input the flushed reference is the reference: flushed outputs are still
  // allowed (compare), so the reference itself stands in.
  return std::make_unique<Expected>(changed ? item.reference(flushed_inputs)
                                            : item.reference(inputs));
}

CaseResult Runner::compile_case(const Case& item) {
  // The inputs are uploaded (a compile-only device keeps them in host memory) so that the graph
  // is the one a real run builds; realize then compiles its kernels and runs none.
  const CaseInputs host = case_inputs(item);
  std::vector<Tensor> inputs;
  for (size_t index = 0; index < host.sources.size(); ++index)
    inputs.push_back(apply_layout(host.layouts[index], upload(host.sources[index], device_)));
  CaseResult compiled;
  try {
    Tensor result = item.inputs.empty() ? item.create(device_) : item.build(inputs);
    result.contiguous().realize();
  } catch (const CompileOnlyError&) {
    // The case reads values back to the host (to_vector, item): nothing to compile on its own.
    compiled.status = Status::Unsupported;
    compiled.detail = "reads values back to the host, which a compile-only device cannot";
    return compiled;
  }
  compiled.status = Status::Pass;
  compiled.detail = "compiled, not run";
  return compiled;
}

// The case with its variable inputs' leading size set to `size`.
Case sized_case(const Case& item, int64_t size) {
  Case sized = item;
  for (InputSpec& spec : sized.inputs) {
    if (!spec.shape.empty() && spec.shape[0] == item.shape[0]) spec.shape[0] = size;
  }
  return sized;
}

// `source` (n rows) as the device tensor of bound shape (n, ...): its own buffer ("reshape"), or
// the first n rows of a buffer of `capacity` rows whose others hold a value no result may show.
Tensor bound_input(const HostTensor& source, const Variable& variable, const std::string& bind,
                   int64_t capacity, const std::string& device) {
  const int64_t rows = source.shape[0];
  DimShape dims{variable.bind(rows)};
  for (size_t dim = 1; dim < source.shape.size(); ++dim) dims.emplace_back(source.shape[dim]);
  if (bind == "reshape") return upload(source, device).reshape(dims);
  Shape full = source.shape;
  full[0] = capacity;
  HostTensor buffer(source.dtype, full);
  const Scalar filler = source.dtype.is_float() ? Scalar{std::nan(""), 0} : Scalar{0, 77};
  std::fill(buffer.data.begin(), buffer.data.end(), filler);
  std::copy(source.data.begin(), source.data.end(), buffer.data.begin());
  std::vector<std::pair<Dim, Dim>> bounds;
  for (size_t dim = 0; dim < dims.size(); ++dim) bounds.emplace_back(Dim(0), dims[dim]);
  return upload(buffer, device).shrink(bounds);
}

CaseResult Runner::run_symbolic(const Case& item) {
  const auto [smallest, largest] =
      std::minmax_element(item.bound_sizes.begin(), item.bound_sizes.end());
  const Variable variable("n", *smallest, *largest);
  // Kernels compiled or loaded from the disk cache; a compile-only device looks every kernel up
  // in the disk cache on each realize, so there only compiles count.
  auto kernels_built = [&] {
    return context_->stats().compiles +
           (compile_only_ ? int64_t{0} : context_->stats().disk_hits.load());
  };
  CaseResult result;
  result.status = Status::Pass;
  int64_t built = -1;
  for (int64_t size : item.bound_sizes) {
    const Case sized = sized_case(item, size);
    const CaseInputs host = case_inputs(sized);
    std::vector<Tensor> inputs;
    for (size_t index = 0; index < host.sources.size(); ++index) {
      const bool bound =
          !item.inputs[index].shape.empty() && item.inputs[index].shape[0] == item.shape[0];
      inputs.push_back(
          bound ? bound_input(host.sources[index], variable, item.bind, *largest, device_)
                : upload(host.sources[index], device_));
    }
    const Tensor written = item.build(inputs).contiguous();
    written.realize();
    if (built >= 0 && kernels_built() != built) {
      result.status = Status::Fail;
      result.detail = "n=" + std::to_string(size) + " built " +
                      std::to_string(kernels_built() - built) +
                      " kernel(s); a symbolic kernel is built once for every value";
      return result;
    }
    built = kernels_built();
    if (compile_only_) continue;
    std::vector<uint8_t> bytes(buffer_of(*written.node()).nbytes());
    if (!bytes.empty()) buffer_of(*written.node()).copy_out(bytes.data());
    const HostTensor got = decode(written.dtype(), written.shape(), bytes.data());
    CaseResult checked = check(item, host.sources, got);
    if (checked.status != Status::Pass) {
      checked.detail = "n=" + std::to_string(size) + ": " + checked.detail;
      return checked;
    }
  }
  result.detail = compile_only_ ? "compiled once, not run" : "";
  return result;
}

CaseResult Runner::run(const Case& item) {
  const auto start = std::chrono::steady_clock::now();
  CaseResult result;
  try {
    if (!item.bound_sizes.empty()) {
      result = run_symbolic(item);
      result.seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      return result;
    }
    if (compile_only_) {
      result = compile_case(item);
      result.seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      return result;
    }
    const CaseInputs host = case_inputs(item);
    const std::vector<HostTensor>& sources = host.sources;
    const std::vector<Layout>& layouts = host.layouts;
    std::vector<HostTensor> logical;
    for (size_t index = 0; index < sources.size(); ++index)
      logical.push_back(apply_layout(layouts[index], sources[index]));
    Outcome outcome = evaluate(*context_, guards_, item, sources, layouts, device_, kPoison);
    const HostTensor got = decode(outcome.dtype, outcome.shape, outcome.bytes.data());
    if (item.property) {
      const std::string problem = item.property(got);
      result.status = problem.empty() ? Status::Pass : Status::Fail;
      result.detail = problem;
    } else {
      result = check(item, logical, got);
    }
    // Elements still holding the poison: run again with another poison to tell "never written"
    // from "the right value happens to look like the poison".
    const int size = outcome.dtype.itemsize();
    std::vector<int64_t> suspects;
    for (size_t index = 0; index * size < outcome.bytes.size(); ++index) {
      if (all_bytes(outcome.bytes.data() + index * size, size, kPoison))
        suspects.push_back(static_cast<int64_t>(index));
    }
    if (!suspects.empty()) {
      const Outcome again =
          evaluate(*context_, guards_, item, sources, layouts, device_, kSecondPoison);
      int64_t unwritten = 0, first = -1;
      for (int64_t index : suspects) {
        if (again.bytes.size() == outcome.bytes.size() &&
            all_bytes(again.bytes.data() + index * size, size, kSecondPoison)) {
          if (first < 0) first = index;
          ++unwritten;
        }
      }
      if (unwritten > 0) {
        result.status = Status::Fail;
        result.detail = std::to_string(unwritten) +
                        " output element(s) never written (still poison), first at " +
                        ref::coordinates_text(first, outcome.shape) +
                        (result.detail.empty() ? "" : "; " + result.detail);
      }
    }
    if (!outcome.guard_damage.empty()) {
      result.status = Status::Fail;
      result.detail = outcome.guard_damage + (result.detail.empty() ? "" : "; " + result.detail);
    }
    result.guards_checked = guards_;
  } catch (const UnsupportedDTypeError& error) {
    result = CaseResult();
    result.status = Status::Unsupported;
    result.detail = first_line(error.what());
  } catch (const DTypeError& error) {
    result = CaseResult();
    result.status = Status::Error;
    result.detail = "DTypeError: " + first_line(error.what());
  } catch (const CompileError& error) {
    result = CaseResult();
    result.status = Status::Error;
    result.detail =
        "CompileError: " + first_line(error.what()) + "\n" + error.log().substr(0, 2000);
  } catch (const DeviceLostError& error) {
    result = CaseResult();
    result.status = Status::Error;
    result.detail = "DeviceLostError: " + first_line(error.what());
    result.device_lost = true;
  } catch (const std::exception& error) {
    result = CaseResult();
    result.status = Status::Error;
    result.detail = first_line(error.what());
  }
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

}  // namespace kiln::conformance
