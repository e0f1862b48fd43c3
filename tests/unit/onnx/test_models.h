// Helpers of the ONNX unit tests: the bytes of a model in tests/data, and the bf16 value check.
#pragma once

#include <cstdint>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

namespace gtco::onnx::testing {

/// The bytes of tests/data/`name` ("" when it cannot be read).
inline std::string ReadModel(const std::string& name) {
  std::ifstream in(std::string(GTCO_SOURCE_DIR) + "/tests/data/" + name, std::ios::binary);
  std::stringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

/// True when `value` is exactly a bf16 number (its low 16 fp32 bits are zero).
inline bool IsBf16Value(double value) {
  const float narrow = static_cast<float>(value);
  uint32_t bits;
  std::memcpy(&bits, &narrow, sizeof(bits));
  return narrow == value && (bits & 0xFFFF) == 0;
}

}  // namespace gtco::onnx::testing
