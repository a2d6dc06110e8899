#include "core/hash.h"

// Inlined rather than linked: libkiln then needs no libxxhash at run time, and XXH3 is faster
// inlined.
#define XXH_INLINE_ALL
#include <xxhash.h>

// XXH3's output is frozen from 0.8.0 on: names of cache entries stay valid across upgrades.
static_assert(XXH_VERSION_NUMBER >= 800, "kiln needs xxHash 0.8.0 or later (XXH3)");

namespace kiln {

uint64_t stable_hash(const void* data, size_t size, uint64_t seed) {
  return XXH3_64bits_withSeed(data, size, seed);
}

StableHash128 stable_hash_128(std::string_view text) {
  const XXH128_hash_t hash = XXH3_128bits(text.data(), text.size());
  return {hash.high64, hash.low64};
}

}  // namespace kiln
