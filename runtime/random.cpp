// The Generator and Threefry-2x32-20 as tensor expressions (kiln/random.h); the draws built on
// them are in runtime/random_draws.cpp.

#include <kiln/random.h>

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/graph_build.h"
#include "runtime/random_internal.h"
#include "runtime/tensor_internal.h"

namespace kiln {
namespace {

constexpr uint32_t kParity = 0x1BD11BDAu;  // Threefry's key-schedule constant
constexpr int kRotations[8] = {13, 15, 26, 6, 17, 29, 16, 24};
constexpr uint64_t kMaxOffset = uint64_t{1} << 32;

void check_offset(uint64_t offset) {
  if (offset >= kMaxOffset)
    throw ValueError("[Generator::set_offset] offset " + std::to_string(offset) +
                     " is past the generator's 2^32 draws; give an offset below 4294967296");
}

// Threefry-2x32 with 20 rounds over words of any type with wrapping 32-bit +, ^ and rotation.
template <typename Word, typename Rotate, typename Constant>
void threefry_rounds(const Word& key0, const Word& key1, Word& x0, Word& x1, const Rotate& rotate,
                     const Constant& constant) {
  const Word schedule[3] = {key0, key1, key0 ^ key1 ^ constant(kParity)};
  x0 = x0 + schedule[0];
  x1 = x1 + schedule[1];
  for (int round = 0; round < 20; ++round) {
    x0 = x0 + x1;
    x1 = rotate(x1, kRotations[round % 8]);
    x1 = x1 ^ x0;
    if (round % 4 == 3) {
      const int injection = round / 4 + 1;
      x0 = x0 + schedule[injection % 3];
      x1 = x1 + schedule[(injection + 1) % 3] + constant(static_cast<uint32_t>(injection));
    }
  }
}

// A uint32 graph node with the arithmetic the rounds use (operands of one shape).
struct Word {
  UOpRef node;
};
Word operator+(const Word& a, const Word& b) {
  return {alu_node(Op::Add, dtypes::uint32, {a.node, b.node})};
}
Word operator^(const Word& a, const Word& b) {
  return {alu_node(Op::Xor, dtypes::uint32, {a.node, b.node})};
}

struct DefaultGenerators {
  std::mutex mutex;
  uint64_t seed = 0;
  std::map<std::string, std::unique_ptr<Generator>> by_device;
};

// Lives for the process, as the device registry does: the generators hold device buffers, which
// a static destructor would free after the drivers have torn themselves down at exit.
DefaultGenerators& default_generators() {
  static DefaultGenerators* const generators = new DefaultGenerators();
  return *generators;
}

}  // namespace

Tensor generator_state(uint64_t seed, uint64_t offset, const std::string& device) {
  const std::vector<uint32_t> words = {static_cast<uint32_t>(seed),
                                       static_cast<uint32_t>(seed >> 32),
                                       static_cast<uint32_t>(offset)};
  return Tensor::from_vector(words, {3}, device);
}

struct Generator::Shared {
  std::mutex mutex;
  std::string device;
  uint64_t seed;
  Tensor state;
};

Generator::Generator(uint64_t seed, const std::string& device)
    : shared_(std::make_shared<Shared>()) {
  shared_->device = resolve_device(device);
  shared_->seed = seed;
  shared_->state = generator_state(seed, 0, shared_->device);
}

uint64_t Generator::seed() const {
  std::lock_guard<std::mutex> lock(shared_->mutex);
  return shared_->seed;
}

uint64_t Generator::offset() const {
  std::lock_guard<std::mutex> lock(shared_->mutex);
  return shared_->state.to_vector<uint32_t>()[2];
}

void Generator::set_offset(uint64_t offset) {
  check_offset(offset);
  std::lock_guard<std::mutex> lock(shared_->mutex);
  shared_->state.assign(generator_state(shared_->seed, offset, shared_->device));
}

void Generator::manual_seed(uint64_t seed) {
  std::lock_guard<std::mutex> lock(shared_->mutex);
  shared_->state.assign(generator_state(seed, 0, shared_->device));
  shared_->seed = seed;
}

const std::string& Generator::device() const {
  return shared_->device;
}

void Generator::draw(const std::function<void(const Tensor& state)>& read) {
  std::lock_guard<std::mutex> lock(shared_->mutex);
  // The offset word plus one, the seed words plus zero (one compiled kernel per device), into a
  // buffer of the draw's own, then written back into the state. The draw reads only its own
  // buffer: a draw another thread realizes later, or an unrealized one, never reads the state
  // while a later draw writes it, and the write needs no copy aside for them. In a captured step
  // both kernels replay, so each replay draws at the next offset.
  const Tensor step =
      (Tensor::arange(0, 3, 1, dtypes::uint32, shared_->device) == 2.0).cast(dtypes::uint32);
  const Tensor next = (shared_->state + step).realize();
  shared_->state.assign(next);
  read(next);
}

Generator& default_generator(const std::string& device) {
  const std::string name = resolve_device(device);
  DefaultGenerators& generators = default_generators();
  std::lock_guard<std::mutex> lock(generators.mutex);
  std::unique_ptr<Generator>& generator = generators.by_device[name];
  if (!generator) generator = std::make_unique<Generator>(generators.seed, name);
  return *generator;
}

void manual_seed(uint64_t seed) {
  DefaultGenerators& generators = default_generators();
  std::lock_guard<std::mutex> lock(generators.mutex);
  generators.seed = seed;
  for (auto& entry : generators.by_device) entry.second->manual_seed(seed);
}

namespace random {

void threefry2x32(const uint32_t key[2], const uint32_t counter[2], uint32_t out[2]) {
  uint32_t x0 = counter[0], x1 = counter[1];
  threefry_rounds(
      key[0], key[1], x0, x1, [](uint32_t x, int bits) { return (x << bits) | (x >> (32 - bits)); },
      [](uint32_t value) { return value; });
  out[0] = x0;
  out[1] = x1;
}

}  // namespace random

Dim draw_count(const DimShape& shape, const char* op) {
  Dim count(1);
  for (const Dim& size : shape) {
    if (size.value() < 0)
      throw ShapeError(std::string("[") + op + "] sizes must be non-negative, got " +
                       size.to_string());
    count = count * size;
  }
  return count;
}

RandomWords threefry_words(const Tensor& state, const DimShape& shape, const char* op,
                           uint32_t offset_back) {
  const Dim count = draw_count(shape, op);
  const std::string& device = state.device();
  auto word = [&](int64_t at) {
    return state.shrink(std::vector<std::pair<int64_t, int64_t>>{{at, at + 1}}).reshape(Shape{});
  };
  Tensor index, key1 = word(1);
  // A variable size counts at its largest, so that every value runs one kernel.
  if (count.sym().vmax() <= static_cast<int64_t>(kMaxOffset)) {
    index = Tensor::arange(count, dtypes::uint32, device).reshape(shape);
  } else {
    // Past 2^32 elements the index's high word goes into the key (kiln/random.h).
    const Tensor wide = Tensor::arange(count, dtypes::int64, device).reshape(shape);
    index = wide.cast(dtypes::uint32);
    key1 = key1 + (wide >> 32).cast(dtypes::uint32);
  }
  // The rounds are built as graph nodes directly: a few hundred of them, where tensor
  // operations (each checking and broadcasting its operands) would cost a draw ~0.3 ms.
  Tensor offset = word(2);
  if (offset_back > 0) offset = offset - Tensor::full({}, offset_back, dtypes::uint32, device);
  Word x0{node_of(index)}, x1{node_of(offset.expand(shape))};
  const Word key0{node_of(word(0).expand(shape))}, key1_word{node_of(key1.expand(shape))};
  std::map<uint32_t, Word> constants;
  auto constant = [&](uint32_t value) {
    auto found = constants.find(value);
    if (found == constants.end())
      found = constants.emplace(value, Word{const_like(value, dtypes::uint32, x0.node)}).first;
    return found->second;
  };
  auto rotate = [&](const Word& x, int bits) {
    const UOpRef high = alu_node(Op::Shl, dtypes::uint32, {x.node, constant(bits).node});
    const UOpRef low = alu_node(Op::Shr, dtypes::uint32, {x.node, constant(32 - bits).node});
    return Word{alu_node(Op::Or, dtypes::uint32, {high, low})};
  };
  threefry_rounds(key0, key1_word, x0, x1, rotate, constant);
  return {make_tensor(x0.node, device), make_tensor(x1.node, device)};
}

RandomWords draw_words(Generator& generator, const DimShape& shape, const char* op) {
  draw_count(shape, op);  // a bad shape draws nothing
  RandomWords words;
  generator.draw([&](const Tensor& state) { words = threefry_words(state, shape, op, 1); });
  return words;
}

void check_generator_device(const Generator& generator, const Tensor& x, const char* op) {
  if (x.device() != generator.device())
    throw DeviceError(std::string("[") + op + "] the generator is on " + generator.device() +
                      " but " + describe(x) + "; draw with a generator on " + x.device() +
                      " (kiln::Generator(seed, \"" + x.device() +
                      "\") or kiln::default_generator(\"" + x.device() + "\"))");
}

}  // namespace kiln
