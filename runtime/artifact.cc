// Artifact container and manifest JSON (nlohmann-json), SHA-256 from OpenSSL's libcrypto.
#include "runtime/artifact.h"

#include <openssl/evp.h>

#include <cstdint>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "runtime/reference_ops.h"

namespace gtco::runtime {
namespace {

using nlohmann::json;

constexpr char kMagic[8] = {'G', 'T', 'C', 'O', 'A', 'R', 'T', '1'};
constexpr size_t kHeaderBytes = 128;
constexpr int64_t kCodeAlign = 64, kWeightsAlign = 4096;

struct NamedType {
  ElemType type;
  const char* name;
  int64_t bytes;
};
constexpr NamedType kTypes[] = {{ElemType::kF32, "f32", 4}, {ElemType::kBF16, "bf16", 2},
                                {ElemType::kF16, "f16", 2}, {ElemType::kI8, "i8", 1},
                                {ElemType::kU8, "u8", 1},   {ElemType::kI32, "i32", 4},
                                {ElemType::kI64, "i64", 8}, {ElemType::kBool, "bool", 1}};

int64_t RoundUp(int64_t value, int64_t align) { return (value + align - 1) / align * align; }

void PutU64(std::string& out, size_t at, uint64_t value) {
  for (int byte = 0; byte < 8; ++byte) out[at + byte] = static_cast<char>(value >> (8 * byte));
}

uint64_t GetU64(std::string_view in, size_t at) {
  uint64_t value = 0;
  for (int byte = 0; byte < 8; ++byte) {
    value |= static_cast<uint64_t>(static_cast<unsigned char>(in[at + byte])) << (8 * byte);
  }
  return value;
}

std::string Sha256Raw(std::string_view bytes) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  EVP_Digest(bytes.data(), bytes.size(), digest, &length, EVP_sha256(), nullptr);
  return std::string(reinterpret_cast<const char*>(digest), length);
}

absl::Status Bad(const std::string& why) {
  return absl::InvalidArgumentError(absl::StrCat("artifact manifest: ", why));
}

/// Thrown (and caught in ManifestFromJson) for a value of the wrong kind or range.
struct FieldError {
  std::string why;
};

/// An integer in [lo, hi]; floats, strings and out-of-range numbers are errors (nlohmann's own
/// conversion of a float to int is undefined behaviour beyond the int's range).
int64_t Int(const json& value, const char* what, int64_t lo, int64_t hi) {
  if (!value.is_number_integer()) throw FieldError{absl::StrCat(what, " must be an integer")};
  const int64_t number = value.is_number_unsigned() && value.get<uint64_t>() > uint64_t{INT64_MAX}
                             ? INT64_MAX
                             : value.get<int64_t>();
  if (number < lo || number > hi) throw FieldError{absl::StrCat(what, " is out of range")};
  return number;
}

std::vector<int64_t> Ints(const json& value, const char* what, int64_t lo, int64_t hi) {
  if (!value.is_array()) throw FieldError{absl::StrCat(what, " must be a list")};
  std::vector<int64_t> numbers;
  for (const json& item : value) numbers.push_back(Int(item, what, lo, hi));
  return numbers;
}

std::vector<int> Indices(const json& value, const char* what) {
  std::vector<int> indices;
  for (int64_t index : Ints(value, what, 0, INT32_MAX)) indices.push_back(static_cast<int>(index));
  return indices;
}

constexpr int64_t kMaxBytes = int64_t{1} << 44;  ///< 16 TiB: any section, tensor or arena

/// Whether `from` broadcasts to `to` by numpy rules (right-aligned, size-1 dims stretch).
bool Broadcasts(const std::vector<int64_t>& from, const std::vector<int64_t>& to) {
  if (from.size() > to.size()) return false;
  const size_t offset = to.size() - from.size();
  for (size_t dim = 0; dim < from.size(); ++dim) {
    if (from[dim] != 1 && from[dim] != to[offset + dim]) return false;
  }
  return true;
}

/// The data-movement steps' shapes and params, as the executor relies on them.
absl::Status ValidateStep(const Manifest& m, const StepSpec& s) {
  auto bad = [&](const std::string& why) {
    return Bad(absl::StrCat("step '", s.node, "' (", s.op, "): ", why));
  };
  if (s.op == "kernel") return absl::OkStatus();
  if (s.op == "reference") {
    absl::StatusOr<reference::Node> node = reference::NodeFromJson(s.reference);
    if (!node.ok()) return bad(std::string(node.status().message()));
    if (!reference::Supports(node->domain, node->op_type)) {
      return bad(absl::StrCat("ONNX op '", node->op_type,
                              "' is not one this runtime's reference "
                              "steps run (made by a newer GTCO? use its gtco-run)"));
    }
    return absl::OkStatus();
  }
  if (s.inputs.empty()) return bad("no input");
  const TensorSpec& in = m.tensors[s.inputs[0]];
  const TensorSpec& out = m.tensors[s.outputs[0]];
  const int64_t rank = static_cast<int64_t>(in.shape.size());
  if (s.op == "expand" || s.op == "equal" || s.op == "where") {
    const size_t arity = s.op == "expand" ? 1 : s.op == "equal" ? 2 : 3;
    if (s.inputs.size() != arity) return bad("wrong number of inputs");
    for (int input : s.inputs) {
      if (!Broadcasts(m.tensors[input].shape, out.shape)) return bad("an input does not broadcast");
    }
    const size_t first_value = s.op == "where" ? 1 : 0;
    for (size_t i = first_value; i < arity; ++i) {
      if (m.tensors[s.inputs[i]].dtype != m.tensors[s.inputs[first_value]].dtype) {
        return bad("value inputs differ in type");
      }
    }
    if (s.op == "equal" && out.dtype != ElemType::kBool) return bad("equal writes bool");
    if (s.op == "where" &&
        (in.dtype != ElemType::kBool || m.tensors[s.inputs[1]].dtype != out.dtype)) {
      return bad("where needs a bool condition and values of the output's type");
    }
    if (s.op == "expand" && in.dtype != out.dtype) return bad("expand keeps its type");
    return absl::OkStatus();
  }
  if (s.op == "dynamic_quantize") {
    if (s.inputs.size() != 1 || s.outputs.size() != 3) return bad("takes 1 input and writes 3");
    const TensorSpec& scale = m.tensors[s.outputs[1]];
    const TensorSpec& zero_point = m.tensors[s.outputs[2]];
    if (in.dtype != ElemType::kF32 || out.dtype != ElemType::kU8 ||
        in.NumElements() != out.NumElements() || scale.dtype != ElemType::kF32 ||
        scale.NumElements() != 1 || zero_point.dtype != ElemType::kU8 ||
        zero_point.NumElements() != 1) {
      return bad("needs f32 data in, u8 data of its size, one f32 scale and one u8 zero point out");
    }
    return absl::OkStatus();
  }
  if (s.op == "dequantize" || s.op == "quantize" || s.op == "fake_quantize") {
    // One side is 8-bit (i32 too for a dequantize), the other f32: the data of a dequantize, the
    // output of a quantize, the signedness parameter of a fake quantization (f32 in and out).
    const bool fake = s.op == "fake_quantize";
    if (s.inputs.size() < 2 || s.inputs.size() > 3 || s.params.size() != (fake ? 2u : 1u) ||
        (fake && s.params[1] != 0 && s.params[1] != 1)) {
      return bad(fake ? "takes data, scale and an optional zero point, an axis and a signedness"
                      : "takes data, scale and an optional zero point, and an axis");
    }
    const ElemType integer = s.op == "dequantize" ? in.dtype
                             : s.op == "quantize" ? out.dtype
                             : s.params[1] == 1   ? ElemType::kI8
                                                  : ElemType::kU8;
    const bool eight_bit = integer == ElemType::kU8 || integer == ElemType::kI8;
    const bool types_ok =
        s.op == "dequantize"
            ? (eight_bit || integer == ElemType::kI32) && out.dtype == ElemType::kF32
        : s.op == "quantize" ? in.dtype == ElemType::kF32 && eight_bit
                             : in.dtype == ElemType::kF32 && out.dtype == ElemType::kF32;
    const TensorSpec& scale = m.tensors[s.inputs[1]];
    const int64_t axis = s.params[0];
    const int64_t scales = axis < 0 ? 1 : axis < rank ? in.shape[axis] : -1;
    if (!types_ok || in.NumElements() != out.NumElements() || axis >= rank ||
        scale.dtype != ElemType::kF32 || scale.NumElements() != scales ||
        (s.inputs.size() == 3 && (m.tensors[s.inputs[2]].dtype != integer ||
                                  m.tensors[s.inputs[2]].NumElements() != scales))) {
      return bad(
          s.op == "dequantize"
              ? "needs u8, i8 or i32 data, f32 scales (one, or one per entry of the axis), "
                "zero points of the data's type shaped as the scales, and f32 out"
          : s.op == "quantize"
              ? "needs f32 data, f32 scales (one, or one per entry of the axis), zero points "
                "of the output's type shaped as the scales, and u8 or i8 out"
              : "needs f32 data and out, f32 scales (one, or one per entry of the axis) and "
                "zero points of the signedness's type shaped as the scales");
    }
    return absl::OkStatus();
  }
  if (s.op == "split_bf16x3") {
    bool shaped = s.inputs.size() == 1 && rank > 0 && out.shape.size() == in.shape.size() &&
                  out.shape.back() == 3 * in.shape.back();
    for (int64_t dim = 0; shaped && dim + 1 < rank; ++dim) shaped = out.shape[dim] == in.shape[dim];
    if (!shaped || in.dtype != ElemType::kF32 || out.dtype != ElemType::kBF16) {
      return bad("needs one f32 input [..., K] and a bf16 output [..., 3K]");
    }
    return absl::OkStatus();
  }
  if (s.op == "split_bf16x3_pairs" || s.op == "cast_bf16_pairs") {
    constexpr int64_t kMaxTailPlanes = 80;  // ir::ConvPairTailPlanes: 80 pixels at most
    const int64_t parts = s.op == "cast_bf16_pairs" ? 1 : 3;
    // params: pads {top, left, bottom, right}, then strides {h, w} when the planes hold phases.
    const bool strided = s.params.size() == 6;
    bool shaped = s.inputs.size() == 1 && (s.params.size() == 4 || strided) &&
                  in.shape.size() == 4 && out.shape.size() == 4 && in.shape[1] % 2 == 0 &&
                  out.shape[0] == in.shape[0] && out.shape[1] * 2 >= parts * in.shape[1] &&
                  out.shape[1] <= parts * in.shape[1] / 2 + kMaxTailPlanes && out.shape[3] == 2;
    for (size_t i = 0; shaped && i < s.params.size(); ++i) {
      shaped = i < 4 ? s.params[i] >= 0 && s.params[i] <= (int64_t{1} << 20)
                     : s.params[i] >= 1 && s.params[i] <= 4;
    }
    if (shaped) {
      const int64_t sh = strided ? s.params[4] : 1, sw = strided ? s.params[5] : 1;
      const int64_t phase_h = (in.shape[2] + s.params[0] + s.params[2] + sh - 1) / sh;
      const int64_t phase_w = (in.shape[3] + s.params[1] + s.params[3] + sw - 1) / sw;
      shaped = out.shape[2] >= sh * sw * phase_h * phase_w;
    }
    if (!shaped || in.dtype != ElemType::kF32 || out.dtype != ElemType::kBF16) {
      return bad(absl::StrCat(
          "needs one f32 image [N, C, H, W] (C even), four pads (then two strides of 1 to 4) and "
          "a bf16 output [N, ",
          parts == 3 ? "3C/2" : "C/2",
          " + T, P, 2] (T <= 80 zero planes) "
          "whose planes P hold the padded image (as its stride phases)"));
    }
    return absl::OkStatus();
  }
  if (s.op == "copy" || s.op == "cast") {
    if (in.NumElements() != out.NumElements()) return bad("element counts differ");
    if (s.op == "copy" && in.dtype != out.dtype) return bad("a copy keeps its type");
    const bool to_f32 = out.dtype == ElemType::kF32 && in.dtype != ElemType::kF16;
    const bool to_bf16 = out.dtype == ElemType::kBF16 && in.dtype == ElemType::kF32;
    if (s.op == "cast" && in.dtype != out.dtype && !to_f32 && !to_bf16) {
      return bad(
          absl::StrCat("no cast from ", ElemTypeName(in.dtype), " to ", ElemTypeName(out.dtype)));
    }
    return absl::OkStatus();
  }
  if (in.dtype != out.dtype) return bad("input and output types differ");
  if (s.op == "transpose") {
    if (static_cast<int64_t>(s.params.size()) != rank || out.shape.size() != in.shape.size()) {
      return bad("perm does not match the rank");
    }
    std::vector<bool> seen(rank, false);
    for (int64_t dim = 0; dim < rank; ++dim) {
      const int64_t axis = s.params[dim];
      if (axis < 0 || axis >= rank || seen[axis] || out.shape[dim] != in.shape[axis]) {
        return bad("perm is not a permutation giving the output shape");
      }
      seen[axis] = true;
    }
    return absl::OkStatus();
  }
  if (s.op == "slice") {
    if (static_cast<int64_t>(s.params.size()) != 2 * rank || out.shape.size() != in.shape.size()) {
      return bad("needs a start and a step per dim");
    }
    for (int64_t dim = 0; dim < rank; ++dim) {
      const int64_t start = s.params[2 * dim], step = s.params[2 * dim + 1], count = out.shape[dim];
      if (count == 0) continue;
      // |step| and count are bounded by the input's extent, so nothing below overflows.
      if (step < -in.shape[dim] || step > in.shape[dim] || count > in.shape[dim]) {
        return bad("a window leaves the input");
      }
      const int64_t last = start + (count - 1) * step;
      if (start < 0 || start >= in.shape[dim] || last < 0 || last >= in.shape[dim]) {
        return bad("a window leaves the input");
      }
    }
    return absl::OkStatus();
  }
  if (s.op == "strided") {
    // out[i] = in[params[0] + sum_d i_d * params[1 + d]]: every element read inside the input.
    if (s.params.size() != out.shape.size() + 1) {
      return bad("needs a base and a stride per output dim");
    }
    if (out.NumElements() == 0) return absl::OkStatus();
    const int64_t limit = in.NumElements();
    int64_t lowest = s.params[0], highest = s.params[0];
    if (lowest < 0 || lowest >= limit) return bad("the view leaves the input");
    for (size_t dim = 0; dim < out.shape.size(); ++dim) {
      const int64_t stride = s.params[dim + 1];
      int64_t reach = 0;
      // A corrupt manifest's sizes may be anything: the product and the sum are checked, not
      // assumed small.
      int64_t& end = stride < 0 ? lowest : highest;
      if (stride < -limit || stride > limit ||
          __builtin_mul_overflow(out.shape[dim] - 1, stride, &reach) ||
          __builtin_add_overflow(end, reach, &end) || lowest < 0 || highest >= limit) {
        return bad("the view leaves the input");
      }
    }
    return absl::OkStatus();
  }
  if (s.op == "concat") {
    if (s.params.size() != 1 || s.params[0] < 0 || s.params[0] >= rank ||
        out.shape.size() != in.shape.size()) {
      return bad("bad axis");
    }
    int64_t total = 0;
    for (int input : s.inputs) {
      const TensorSpec& part = m.tensors[input];
      if (part.shape.size() != in.shape.size() || part.dtype != out.dtype) {
        return bad("inputs differ in rank or type");
      }
      for (int64_t dim = 0; dim < rank; ++dim) {
        if (dim != s.params[0] && part.shape[dim] != out.shape[dim]) {
          return bad("inputs differ off the axis");
        }
      }
      total += part.shape[s.params[0]];
    }
    if (total != out.shape[s.params[0]]) return bad("the output does not hold the inputs");
    return absl::OkStatus();
  }
  if (s.op == "gather") {
    if (s.inputs.size() != 2 || s.params.size() != 1 || s.params[0] < 0 || s.params[0] >= rank) {
      return bad("needs data, indices and an axis");
    }
    const TensorSpec& indices = m.tensors[s.inputs[1]];
    if (indices.dtype != ElemType::kI64 && indices.dtype != ElemType::kI32) {
      return bad("indices must be i64 or i32");
    }
    int64_t expected = indices.NumElements();
    for (int64_t dim = 0; dim < rank; ++dim) {
      if (dim != s.params[0] && __builtin_mul_overflow(expected, in.shape[dim], &expected)) {
        return bad("the output size overflows");
      }
    }
    if (expected != out.NumElements()) return bad("the output size does not fit");
    return absl::OkStatus();
  }
  return bad("unknown op");
}

}  // namespace

const char* ElemTypeName(ElemType type) {
  for (const NamedType& entry : kTypes) {
    if (entry.type == type) return entry.name;
  }
  return "?";
}

absl::StatusOr<ElemType> ParseElemType(const std::string& name) {
  for (const NamedType& entry : kTypes) {
    if (name == entry.name) return entry.type;
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown element type '", name, "'"));
}

int64_t ElemSize(ElemType type) {
  for (const NamedType& entry : kTypes) {
    if (entry.type == type) return entry.bytes;
  }
  return 1;
}

int64_t TensorSpec::NumElements() const {
  int64_t count = 1;
  for (int64_t dim : shape) count *= dim;
  return count;
}

std::string Sha256Hex(std::string_view bytes) {
  const std::string raw = Sha256Raw(bytes);
  static const char* digits = "0123456789abcdef";
  std::string hex;
  for (unsigned char byte : raw) {
    hex.push_back(digits[byte >> 4]);
    hex.push_back(digits[byte & 15]);
  }
  return hex;
}

std::string ManifestToJson(const Manifest& m) {
  json tensors = json::array();
  for (const TensorSpec& t : m.tensors) {
    json entry = {{"name", t.name}, {"dtype", ElemTypeName(t.dtype)}, {"shape", t.shape}};
    if (t.weight) {
      entry["weight_offset"] = t.weight_offset;
    } else {
      entry["storage"] = t.storage;
    }
    tensors.push_back(entry);
  }
  json storages = json::array();
  for (const StorageSpec& s : m.storages) storages.push_back({s.offset, s.bytes});
  json steps = json::array();
  for (const StepSpec& s : m.steps) {
    json entry = {{"op", s.op}, {"node", s.node}, {"inputs", s.inputs}, {"outputs", s.outputs}};
    if (s.kernel >= 0) entry["kernel"] = s.kernel;
    if (!s.params.empty()) entry["params"] = s.params;
    if (!s.reference.empty()) entry["reference"] = s.reference;
    steps.push_back(entry);
  }
  json kernels = json::array();
  for (const KernelSpec& k : m.kernels) {
    kernels.push_back({{"entry", k.entry},
                       {"workload_key", k.workload_key},
                       {"description", k.description},
                       {"mapping", k.mapping},
                       {"trace", k.trace},
                       {"tuned", k.tuned},
                       {"hardware", k.hardware},
                       {"worker", k.worker},
                       {"median_seconds", k.median_seconds},
                       {"flops", k.flops},
                       {"min_bytes", k.min_bytes}});
    if (m.target == "cuda") {
      kernels.back()["cubin"] = {k.cubin_offset, k.cubin_bytes};
      kernels.back()["grid"] = k.grid;
      kernels.back()["block"] = k.block;
      kernels.back()["shared_bytes"] = k.shared_bytes;
    }
  }
  json root = {{"format", m.format},
               {"model", m.model},
               {"target", m.target},
               {"cpu", m.cpu},
               {"features", m.features},
               {"inputs", m.inputs},
               {"outputs", m.outputs},
               {"arena_bytes", m.arena_bytes},
               {"tensors", tensors},
               {"storages", storages},
               {"steps", steps},
               {"kernels", kernels},
               {"warnings", m.warnings},
               {"code_sha256", m.code_sha256},
               {"code_bytes", m.code_bytes},
               {"weights_sha256", m.weights_sha256},
               {"weights_bytes", m.weights_bytes}};
  if (m.target == "cuda") {
    root["cuda_arch"] = m.cuda_arch;
    root["data_cubin"] = {m.data_cubin_offset, m.data_cubin_bytes};
  }
  if (!m.verification.status.empty()) {
    const VerificationSpec& v = m.verification;
    json outputs = json::array();
    for (const VerificationSpec::Output& o : v.outputs) {
      outputs.push_back({{"name", o.name}, {"max_error", o.max_error}, {"tolerance", o.tolerance}});
    }
    root["verification"] = {{"status", v.status}, {"reason", v.reason},
                            {"seed", v.seed},     {"input_sets", v.input_sets},
                            {"rule", v.rule},     {"outputs", outputs}};
  }
  return root.dump(1);
}

absl::StatusOr<Manifest> ManifestFromJson(std::string_view text) {
  json root = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded() || !root.is_object()) {
    return absl::DataLossError("artifact manifest is not valid JSON");
  }
  Manifest m;
  try {
    m.format = root.at("format").get<std::string>();
    if (m.format != "gtco-artifact/1") {
      return Bad(absl::StrCat("format '", m.format,
                              "' is not gtco-artifact/1 (made by a newer "
                              "GTCO? use its gtco-run)"));
    }
    m.model = root.at("model").get<std::string>();
    m.target = root.at("target").get<std::string>();
    if (m.target != "cpu" && m.target != "cuda") {
      return Bad(absl::StrCat("target '", m.target, "' is neither cpu nor cuda"));
    }
    m.cpu = root.at("cpu").get<std::string>();
    m.features = root.at("features").get<std::vector<std::string>>();
    m.inputs = Indices(root.at("inputs"), "inputs");
    m.outputs = Indices(root.at("outputs"), "outputs");
    m.arena_bytes = Int(root.at("arena_bytes"), "arena_bytes", 0, kMaxBytes);
    m.warnings = root.at("warnings").get<std::vector<std::string>>();
    if (root.contains("verification")) {
      const json& v = root.at("verification");
      m.verification.status = v.at("status").get<std::string>();
      m.verification.reason = v.at("reason").get<std::string>();
      m.verification.seed = v.at("seed").get<uint64_t>();
      m.verification.input_sets =
          static_cast<int>(Int(v.at("input_sets"), "input_sets", 0, 1 << 20));
      m.verification.rule = v.at("rule").get<std::string>();
      for (const json& o : v.at("outputs")) {
        m.verification.outputs.push_back({o.at("name").get<std::string>(),
                                          o.at("max_error").get<double>(),
                                          o.at("tolerance").get<double>()});
      }
    }
    m.code_sha256 = root.at("code_sha256").get<std::string>();
    m.code_bytes = Int(root.at("code_bytes"), "code_bytes", 0, kMaxBytes);
    m.weights_sha256 = root.at("weights_sha256").get<std::string>();
    m.weights_bytes = Int(root.at("weights_bytes"), "weights_bytes", 0, kMaxBytes);
    // A slice [offset, offset + bytes) of the code section.
    auto code_slice = [&m](const json& pair, const char* what, int64_t* offset, int64_t* bytes) {
      *offset = Int(pair.at(0), what, 0, kMaxBytes);
      *bytes = Int(pair.at(1), what, 1, kMaxBytes);
      if (*offset + *bytes > m.code_bytes) {
        throw FieldError{absl::StrCat(what, " lies outside the code section")};
      }
    };
    if (m.target == "cuda") {
      m.cuda_arch = root.at("cuda_arch").get<std::string>();
      code_slice(root.at("data_cubin"), "data_cubin", &m.data_cubin_offset, &m.data_cubin_bytes);
    }
    for (const json& entry : root.at("tensors")) {
      TensorSpec t;
      t.name = entry.at("name").get<std::string>();
      auto dtype = ParseElemType(entry.at("dtype").get<std::string>());
      if (!dtype.ok())
        return Bad(absl::StrCat("tensor '", t.name, "': ", dtype.status().message()));
      t.dtype = *dtype;
      t.shape = Ints(entry.at("shape"), "a tensor's shape", 0, kMaxBytes);
      int64_t elements = 1;
      for (int64_t dim : t.shape) {
        if (dim != 0 && elements > kMaxBytes / 8 / dim) {
          return Bad(absl::StrCat("tensor '", t.name, "' is larger than 2^44 bytes"));
        }
        elements *= dim;
      }
      if (entry.contains("weight_offset")) {
        t.weight = true;
        t.weight_offset = Int(entry.at("weight_offset"), "weight_offset", 0, kMaxBytes);
        if (t.weight_offset + t.Bytes() > m.weights_bytes) {
          return Bad(absl::StrCat("weight '", t.name, "' lies outside the weights section"));
        }
      } else {
        t.storage = static_cast<int>(Int(entry.at("storage"), "storage", 0, INT32_MAX));
      }
      m.tensors.push_back(std::move(t));
    }
    for (const json& entry : root.at("storages")) {
      StorageSpec s{Int(entry.at(0), "a storage's offset", 0, kMaxBytes),
                    Int(entry.at(1), "a storage's size", 0, kMaxBytes)};
      if (s.offset + s.bytes > m.arena_bytes) return Bad("a storage lies outside the arena");
      m.storages.push_back(s);
    }
    for (const json& entry : root.at("kernels")) {
      KernelSpec k;
      k.entry = entry.at("entry").get<std::string>();
      k.workload_key = entry.at("workload_key").get<std::string>();
      k.description = entry.at("description").get<std::string>();
      k.mapping = entry.at("mapping").get<std::string>();
      k.trace = entry.at("trace").get<std::string>();
      k.tuned = entry.at("tuned").get<bool>();
      k.hardware = entry.at("hardware").get<std::string>();
      k.worker = entry.at("worker").get<std::string>();
      if (!entry.at("median_seconds").is_number()) throw FieldError{"median_seconds"};
      k.median_seconds = entry.at("median_seconds").get<double>();
      // Optional: artifacts written before them lack both.
      if (entry.contains("flops")) k.flops = Int(entry.at("flops"), "flops", 0, INT64_MAX);
      if (entry.contains("min_bytes")) {
        k.min_bytes = Int(entry.at("min_bytes"), "min_bytes", 0, INT64_MAX);
      }
      if (m.target == "cuda") {
        code_slice(entry.at("cubin"), "a kernel's cubin", &k.cubin_offset, &k.cubin_bytes);
        k.grid = Ints(entry.at("grid"), "a kernel's grid", 1, kMaxBytes);
        k.block = Ints(entry.at("block"), "a kernel's block", 1, 1024);
        if (k.grid.size() != 3 || k.block.size() != 3) {
          throw FieldError{"a kernel's grid and block have 3 dimensions each"};
        }
        k.shared_bytes = Int(entry.at("shared_bytes"), "shared_bytes", 0, 1 << 20);
      }
      m.kernels.push_back(std::move(k));
    }
    for (const json& entry : root.at("steps")) {
      StepSpec s;
      s.op = entry.at("op").get<std::string>();
      s.node = entry.at("node").get<std::string>();
      // -1: an omitted optional input of a "reference" step (checked below)
      for (int64_t index : Ints(entry.at("inputs"), "a step's inputs", -1, INT32_MAX)) {
        s.inputs.push_back(static_cast<int>(index));
      }
      s.outputs = Indices(entry.at("outputs"), "a step's outputs");
      if (entry.contains("kernel")) {
        s.kernel = static_cast<int>(Int(entry.at("kernel"), "kernel", 0, INT32_MAX));
      }
      if (entry.contains("params")) {
        s.params = Ints(entry.at("params"), "a step's params", -kMaxBytes, kMaxBytes);
      }
      if (entry.contains("reference")) s.reference = entry.at("reference").get<std::string>();
      m.steps.push_back(std::move(s));
    }
  } catch (const json::exception& error) {
    return Bad(error.what());
  } catch (const FieldError& error) {
    return Bad(error.why);
  }
  const int num_tensors = static_cast<int>(m.tensors.size());
  for (const TensorSpec& t : m.tensors) {
    if (!t.weight && (t.storage < 0 || t.storage >= static_cast<int>(m.storages.size()) ||
                      t.Bytes() > m.storages[t.storage].bytes)) {
      return Bad(absl::StrCat("tensor '", t.name, "' has no storage large enough"));
    }
  }
  for (const std::vector<int>* list : {&m.inputs, &m.outputs}) {
    for (int index : *list) {
      if (index < 0 || index >= num_tensors) return Bad("an input or output index is out of range");
    }
  }
  for (int index : m.inputs) {
    if (m.tensors[index].weight) return Bad("a model input is a weight");
  }
  for (const StepSpec& s : m.steps) {
    for (const std::vector<int>* list : {&s.inputs, &s.outputs}) {
      for (int index : *list) {
        if (index == -1 && list == &s.inputs && s.op == "reference") continue;
        if (index < 0 || index >= num_tensors) {
          return Bad(absl::StrCat("step '", s.node, "' refers to tensor ", index));
        }
      }
    }
    if (s.outputs.empty()) return Bad(absl::StrCat("step '", s.node, "' has no output"));
    for (int index : s.outputs) {
      if (m.tensors[index].weight) return Bad(absl::StrCat("step '", s.node, "' writes a weight"));
    }
    if (s.op == "kernel" ? s.kernel < 0 || s.kernel >= static_cast<int>(m.kernels.size())
                         : s.kernel != -1) {
      return Bad(absl::StrCat("step '", s.node, "' refers to kernel ", s.kernel));
    }
    absl::Status valid = ValidateStep(m, s);
    if (!valid.ok()) return valid;
  }
  return m;
}

std::string WriteArtifact(Manifest manifest, std::string_view code, std::string_view weights) {
  manifest.code_sha256 = Sha256Hex(code);
  manifest.code_bytes = static_cast<int64_t>(code.size());
  manifest.weights_sha256 = Sha256Hex(weights);
  manifest.weights_bytes = static_cast<int64_t>(weights.size());
  const std::string text = ManifestToJson(manifest);
  const int64_t manifest_offset = kHeaderBytes;
  const int64_t code_offset =
      RoundUp(manifest_offset + static_cast<int64_t>(text.size()), kCodeAlign);
  const int64_t weights_offset =
      RoundUp(code_offset + static_cast<int64_t>(code.size()), kWeightsAlign);
  std::string out(weights_offset + weights.size(), '\0');
  std::memcpy(out.data(), kMagic, sizeof(kMagic));
  PutU64(out, 8, manifest_offset);
  PutU64(out, 16, text.size());
  PutU64(out, 24, code_offset);
  PutU64(out, 32, code.size());
  PutU64(out, 40, weights_offset);
  PutU64(out, 48, weights.size());
  const std::string digest = Sha256Raw(text);
  std::memcpy(out.data() + 56, digest.data(), 32);
  std::memcpy(out.data() + manifest_offset, text.data(), text.size());
  if (!code.empty()) std::memcpy(out.data() + code_offset, code.data(), code.size());
  if (!weights.empty()) std::memcpy(out.data() + weights_offset, weights.data(), weights.size());
  return out;
}

absl::StatusOr<ArtifactView> ReadArtifact(std::string_view bytes) {
  if (bytes.size() < kHeaderBytes || std::memcmp(bytes.data(), kMagic, sizeof(kMagic)) != 0) {
    if (bytes.size() >= 8 && std::memcmp(bytes.data(), kMagic, 4) == 0) {
      return absl::DataLossError("the artifact is truncated (shorter than its header)");
    }
    return absl::InvalidArgumentError(
        "not a GTCO artifact (no GTCOART1 header); export one with gtco-client export");
  }
  const uint64_t sections[3][2] = {{GetU64(bytes, 8), GetU64(bytes, 16)},
                                   {GetU64(bytes, 24), GetU64(bytes, 32)},
                                   {GetU64(bytes, 40), GetU64(bytes, 48)}};
  const char* names[3] = {"manifest", "code", "weights"};
  for (int section = 0; section < 3; ++section) {
    if (sections[section][0] > bytes.size() ||
        sections[section][1] > bytes.size() - sections[section][0]) {
      return absl::DataLossError(absl::StrCat("the artifact is truncated: its ", names[section],
                                              " section ends past the end of the file (",
                                              bytes.size(), " bytes)"));
    }
  }
  const std::string_view manifest_text = bytes.substr(sections[0][0], sections[0][1]);
  if (Sha256Raw(manifest_text) != bytes.substr(56, 32)) {
    return absl::DataLossError("the artifact is corrupt: the manifest's checksum does not match");
  }
  ArtifactView view;
  absl::StatusOr<Manifest> manifest = ManifestFromJson(manifest_text);
  if (!manifest.ok()) return manifest.status();
  view.manifest = std::move(*manifest);
  view.code = bytes.substr(sections[1][0], sections[1][1]);
  view.weights = bytes.substr(sections[2][0], sections[2][1]);
  if (static_cast<int64_t>(view.code.size()) != view.manifest.code_bytes ||
      Sha256Hex(view.code) != view.manifest.code_sha256) {
    return absl::DataLossError(
        "the artifact is corrupt: the code section's checksum does not match");
  }
  if (static_cast<int64_t>(view.weights.size()) != view.manifest.weights_bytes ||
      Sha256Hex(view.weights) != view.manifest.weights_sha256) {
    return absl::DataLossError(
        "the artifact is corrupt: the weights section's checksum does not match");
  }
  return view;
}

}  // namespace gtco::runtime
