#pragma once
// Hashes of bytes that must stay the same from one process to the next (names of kernels and of
// disk-cache entries, checksums, the conformance battery's seeds), which std::hash does not
// promise. xxHash's XXH3 underneath: private to libkiln (the header is not public, and xxHash is
// compiled in, so neither an application nor libkiln at run time needs it).

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace kiln {

uint64_t stable_hash(const void* data, size_t size, uint64_t seed = 0);
inline uint64_t stable_hash(std::string_view text, uint64_t seed = 0) {
  return stable_hash(text.data(), text.size(), seed);
}

struct StableHash128 {
  uint64_t high, low;
};
// Mixes `value` into `seed`: for in-process hash tables only (not stable across builds).
inline size_t hash_combine(size_t seed, size_t value) {
  return seed ^ (value + 0x9e3779b97f4a7c15ull + (seed << 6) + (seed >> 2));
}

// 128 bits, where a name must not collide in a folder of millions of entries.
StableHash128 stable_hash_128(std::string_view text);

}  // namespace kiln
