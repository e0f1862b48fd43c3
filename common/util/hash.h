// Stable, platform-independent hashing for workload keys and program hashes.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace gtco::util {

/// 128-bit hash rendered as 32 lowercase hex digits (two independent FNV-1a lanes).
std::string HexDigest128(std::string_view data);

/// `value` as 16 lowercase hex digits.
std::string Hex64(uint64_t value);

}  // namespace gtco::util
