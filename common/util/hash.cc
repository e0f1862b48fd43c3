// FNV-1a based stable hashes.
#include "common/util/hash.h"

#include <cstdio>

namespace gtco::util {
namespace {
constexpr uint64_t kFnvPrime = 0x100000001b3ULL;
constexpr uint64_t kFnvOffset = 0xcbf29ce484222325ULL;

uint64_t Fnv1a64Seeded(std::string_view data, uint64_t seed) {
  uint64_t hash = seed;
  for (unsigned char byte : data) {
    hash ^= byte;
    hash *= kFnvPrime;
  }
  return hash;
}
}  // namespace

std::string Hex64(uint64_t value) {
  char buffer[17];
  std::snprintf(buffer, sizeof(buffer), "%016llx", static_cast<unsigned long long>(value));
  return buffer;
}

std::string HexDigest128(std::string_view data) {
  return Hex64(Fnv1a64Seeded(data, kFnvOffset)) +
         Hex64(Fnv1a64Seeded(data, kFnvOffset ^ 0x9e3779b97f4a7c15ULL));
}

}  // namespace gtco::util
