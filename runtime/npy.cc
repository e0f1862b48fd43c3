// .npy reading and writing.
#include "runtime/npy.h"

#include <fstream>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace gtco::runtime {
namespace {

struct Descr {
  const char* text;
  ElemType type;
};
constexpr Descr kDescrs[] = {{"<f4", ElemType::kF32}, {"<i8", ElemType::kI64},
                             {"<i4", ElemType::kI32}, {"|i1", ElemType::kI8},
                             {"|u1", ElemType::kU8},  {"|b1", ElemType::kBool}};

absl::Status Bad(const std::string& path, const std::string& why) {
  return absl::InvalidArgumentError(absl::StrCat(path, ": ", why));
}

/// The value text of `key` in a Python dict literal header.
std::string Field(const std::string& header, const std::string& key) {
  const size_t at = header.find("'" + key + "'");
  if (at == std::string::npos) return "";
  size_t begin = header.find(':', at);
  if (begin == std::string::npos) return "";
  ++begin;
  while (begin < header.size() && header[begin] == ' ') ++begin;
  if (begin < header.size() && header[begin] == '(') {
    return header.substr(begin, header.find(')', begin) - begin + 1);
  }
  size_t end = header.find_first_of(",}", begin);
  return header.substr(begin, end - begin);
}

}  // namespace

absl::StatusOr<NpyArray> ReadNpy(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) return Bad(path, "cannot open");
  std::stringstream buffer;
  buffer << file.rdbuf();
  return ParseNpy(buffer.str(), path);
}

absl::StatusOr<NpyArray> ParseNpy(const std::string& bytes, const std::string& path) {
  if (bytes.size() < 10 || bytes.compare(0, 6, "\x93NUMPY") != 0) {
    return Bad(path, "not a .npy file (numpy.save writes them)");
  }
  const int major = static_cast<unsigned char>(bytes[6]);
  size_t header_len = 0, offset = 0;
  if (major == 1) {
    header_len = static_cast<unsigned char>(bytes[8]) | static_cast<unsigned char>(bytes[9]) << 8;
    offset = 10;
  } else {
    if (bytes.size() < 12) return Bad(path, "truncated header");
    for (int i = 0; i < 4; ++i) header_len |= static_cast<size_t>(static_cast<unsigned char>(bytes[8 + i])) << (8 * i);
    offset = 12;
  }
  if (offset + header_len > bytes.size()) return Bad(path, "truncated header");
  const std::string header = bytes.substr(offset, header_len);
  NpyArray array;
  std::string descr(absl::StripSuffix(absl::StripPrefix(Field(header, "descr"), "'"), "'"));
  bool known = false;
  for (const Descr& entry : kDescrs) {
    if (descr == entry.text) {
      array.dtype = entry.type;
      known = true;
    }
  }
  if (!known) {
    return Bad(path, absl::StrCat("dtype '", descr,
                                  "' is not supported (use float32, int64, int32, int8, uint8 or "
                                  "bool, little-endian)"));
  }
  if (Field(header, "fortran_order") != "False") {
    return Bad(path, "Fortran-order arrays are not supported (save with numpy.ascontiguousarray)");
  }
  std::string shape_text = Field(header, "shape");
  shape_text = std::string(absl::StripSuffix(absl::StripPrefix(shape_text, "("), ")"));
  for (absl::string_view part : absl::StrSplit(shape_text, ',', absl::SkipWhitespace())) {
    int64_t dim = 0;
    if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(part), &dim) || dim < 0) {
      return Bad(path, absl::StrCat("bad shape '", shape_text, "'"));
    }
    array.shape.push_back(dim);
  }
  int64_t count = 1;
  for (int64_t dim : array.shape) count *= dim;
  const size_t data_bytes = static_cast<size_t>(count * ElemSize(array.dtype));
  const size_t data_begin = offset + header_len;
  if (bytes.size() - data_begin < data_bytes) {
    return Bad(path, absl::StrCat("holds ", bytes.size() - data_begin, " data bytes, its shape needs ",
                                  data_bytes));
  }
  array.data = bytes.substr(data_begin, data_bytes);
  return array;
}

absl::Status WriteNpy(const std::string& path, const NpyArray& array) {
  const char* descr = nullptr;
  for (const Descr& entry : kDescrs) {
    if (entry.type == array.dtype) descr = entry.text;
  }
  if (descr == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("cannot write ", ElemTypeName(array.dtype),
                                                   " to .npy"));
  }
  std::string shape = absl::StrJoin(array.shape, ", ");
  if (array.shape.size() == 1) shape += ",";
  std::string header = absl::StrCat("{'descr': '", descr, "', 'fortran_order': False, 'shape': (",
                                    shape, "), }");
  // Pad with spaces so that the data starts at a multiple of 64, ending the header with '\n'.
  const size_t unpadded = 10 + header.size() + 1;
  header.append((64 - unpadded % 64) % 64, ' ');
  header.push_back('\n');
  std::ofstream file(path, std::ios::binary);
  if (!file) return absl::InvalidArgumentError(absl::StrCat("cannot write '", path, "'"));
  const char magic[8] = {'\x93', 'N', 'U', 'M', 'P', 'Y', 1, 0};
  file.write(magic, 8);
  const char length[2] = {static_cast<char>(header.size() & 0xff),
                          static_cast<char>(header.size() >> 8)};
  file.write(length, 2);
  file << header;
  file.write(array.data.data(), static_cast<std::streamsize>(array.data.size()));
  if (!file) return absl::InternalError(absl::StrCat("writing '", path, "' failed"));
  return absl::OkStatus();
}

}  // namespace gtco::runtime
