#pragma once
// What the random draws (runtime/random_draws.cpp) share with the generator (runtime/random.cpp).

#include <kiln/random.h>

namespace kiln {

// A generator's state (uint32 [3]: the seed's two words, the offset) on `device`.
Tensor generator_state(uint64_t seed, uint64_t offset, const std::string& device);

// The two uint32 words of Threefry-2x32 for each element of `shape` from `state` (a generator's):
// at its offset word minus `offset_back` (no advance).
struct RandomWords {
  Tensor first;
  Tensor second;
};
RandomWords threefry_words(const Tensor& state, const DimShape& shape, const char* op,
                           uint32_t offset_back);

// The two uint32 words of Threefry-2x32 for each element of `shape`, from the generator's next
// offset (which this advances). `op` names the draw in errors.
RandomWords draw_words(Generator& generator, const DimShape& shape, const char* op);

// A DeviceError naming `op` unless x is on the generator's device.
void check_generator_device(const Generator& generator, const Tensor& x, const char* op);

namespace random {
// Uniform in [0, 1) from the first word (both for float64) at `dtype`'s precision, in float64
// for float64 and float32 otherwise (exact for the half types).
Tensor unit_interval(const RandomWords& words, DType dtype);
}  // namespace random

}  // namespace kiln
