#pragma once
// Random numbers from a counter-based generator: Threefry-2x32 with 20 rounds (Salmon et al.,
// "Parallel random numbers: as easy as 1, 2, 3", the generator JAX uses), built from 32-bit
// adds, rotations and xors, so every device computes the same bits for the same seed. Each draw
// is an ordinary lazy tensor expression that fuses with its neighbours (dropout's mask never
// reaches memory).
//
//   kiln::Generator generator(/*seed=*/42);
//   kiln::Tensor noise = kiln::random::normal(generator, {4, 16});
//   kiln::Tensor mask = kiln::random::bernoulli(generator, probabilities);
//
// A Generator holds its seed and offset in a small buffer on its device (uint32 [3]: the seed's
// low and high words, then the offset). A draw reads that buffer and advances the offset by one,
// so kernels read the seed rather than compiling it in (a new seed compiles nothing), and a draw
// inside a CapturedStep (kiln/capture.h) draws new numbers at every replay, as written. Element
// i of the draw made at offset k takes its bits from the two words of
// threefry2x32(key = (seed low, seed high), counter = (i, k)) (the functions below say which);
// a generator repeats itself after 2^32 draws. In a draw of more than 2^32 numbers, element
// i >= 2^32 adds i's high word to the key's second word (so it shares its stream with a seed
// whose high word is that much larger). The numbers a draw gives depend on the seed, the offset
// and the element's row-major position only: not on the device, the fusion or the kernel that
// computes them. The advance is two small kernels (the next state, and its copy into the
// generator's buffer), run when the draw is made.
//
// Exactness: uniform, randint, bernoulli, dropout's mask and randperm are exact integer and
// power-of-two arithmetic, bit for bit the same on every device. normal and multinomial go
// through log, sqrt and cos, which each device's compiler rounds in its own way (a few units in
// the last place apart; multinomial's samples agree unless two categories' keys land that
// close).
//
// Copies of a Generator share its state (as tensors do). Threads may draw from one generator at
// once: each draw takes the next offset under the generator's lock, in the order the draws are
// made.
// Bad arguments are a ValueError (a range, a probability, a count), ShapeError (a shape) or
// DeviceError (a generator on another device than the tensor it draws for), naming the function
// and the rule; nothing is drawn (the offset stays).

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include <kiln/tensor.h>
#include <kiln/variable.h>

namespace kiln {

class Generator {
 public:
  // A generator on `device` ("" for the default device) at offset 0.
  explicit Generator(uint64_t seed = 0, const std::string& device = "");

  uint64_t seed() const;
  // Draws made since the seed was set (reads the state: waits for the draws before it).
  uint64_t offset() const;
  // Restarts the stream at draw `offset` (< 2^32) of the current seed: set_offset(k) then a draw
  // repeats the draw that was made at offset k.
  void set_offset(uint64_t offset);
  // A new seed, at offset 0.
  void manual_seed(uint64_t seed);
  const std::string& device() const;

  // Internal (the draws below): under the generator's lock, advances the offset by one and calls
  // `read` with the state as it is after (uint32 [3], a buffer of the draw's own: the draw's
  // offset is word 2 minus one).
  void draw(const std::function<void(const Tensor& state)>& read);

 private:
  struct Shared;
  std::shared_ptr<Shared> shared_;
};

// A generator per device for programs that keep none of their own (PyTorch's default
// generator): seeded 0 until manual_seed. Pass it to the draws below like any generator.
Generator& default_generator(const std::string& device = "");
// Seeds every device's default generator (made or not yet made) and rewinds it to offset 0.
void manual_seed(uint64_t seed);

namespace random {

// Uniform in [low, high) in a float dtype. [0, 1) takes the dtype's mantissa bits from word 0
// (24 for float32, 11 for float16, 8 for bfloat16; 53 from both words for float64), so every
// value of the grid k * 2^-bits is equally likely and 1 never appears; other bounds scale that
// (low + (high - low) * u, computed in float32 for the 16-bit floats) and clamp to the largest
// value below high. low < high, both finite in the dtype.
Tensor uniform(Generator& generator, const DimShape& shape, double low = 0.0, double high = 1.0,
               DType dtype = dtypes::float32);
// Normal with `mean` and standard deviation `stddev` (>= 0), by the Box-Muller transform of the
// two words as uniforms (24 bits each for float32 and the 16-bit floats, which compute in float32
// and round; 32 each for float64): the tails end at 5.8 (6.7 for float64) standard deviations.
Tensor normal(Generator& generator, const DimShape& shape, double mean = 0.0, double stddev = 1.0,
              DType dtype = dtypes::float32);
// Integers uniform in [low, high) in an integer dtype that holds both bounds' range; high - low
// <= 2^32. Each value is the high word of word 0 times high - low (Lemire's multiply-shift), so
// a range that is not a power of two is uneven by at most (high - low) / 2^32.
Tensor randint(Generator& generator, int64_t low, int64_t high, const DimShape& shape,
               DType dtype = dtypes::int64);
// 1 where a uniform of the probabilities' precision (24 bits; 53 for float64) is below the
// probability at that element, else 0, in the probabilities' dtype (a float dtype). Every
// probability must be in [0, 1]: the probabilities are realized and checked on the host (a
// ValueError names the first one outside); in a CapturedStep that check runs at the capture.
Tensor bernoulli(Generator& generator, const Tensor& probabilities);
// The same with one probability p in [0, 1] for every element of `shape`.
Tensor bernoulli(Generator& generator, const DimShape& shape, double p,
                 DType dtype = dtypes::float32);
// x with each element zeroed with probability p (0 <= p <= 1) and the rest scaled by 1 / (1 - p)
// (inverted dropout, PyTorch's): x times a mask of 0 and 1 / (1 - p), so a NaN or inf stays NaN
// where it is dropped. x itself when not `training` or p is 0 (nothing is drawn), x * 0 when p
// is 1. A float x on the generator's device.
Tensor dropout(Generator& generator, const Tensor& x, double p, bool training = true);
// A random permutation of 0 .. n - 1 (n <= 2^32): a stable argsort of 64-bit random keys.
Tensor randperm(Generator& generator, int64_t n, DType dtype = dtypes::int64);
// `samples` category indices (int64) for each row of `probabilities` ([categories] or
// [rows, categories]: weights >= 0, finite, each row's sum > 0, not necessarily 1), drawn with
// or without replacement as torch.multinomial: the Gumbel-max trick, argmax over log(weight) +
// Gumbel noise (per sample, with replacement) or its top `samples` (without; samples <= the
// row's nonzero weights). The weights are checked on the host, as bernoulli's. With replacement
// every sample evaluates a key for every category: rows * samples * categories Gumbel draws,
// fused into one argmax (no memory), which suits thousands of samples of a vocabulary.
Tensor multinomial(Generator& generator, const Tensor& probabilities, int64_t samples,
                   bool replacement = false);

// Internal, for tests and the conformance battery: Threefry-2x32-20 on the host.
void threefry2x32(const uint32_t key[2], const uint32_t counter[2], uint32_t out[2]);

}  // namespace random
}  // namespace kiln
