// Artifact container and manifest JSON (nlohmann-json), SHA-256 from OpenSSL's libcrypto.
#include "runtime/artifact.h"

#include <openssl/evp.h>

#include <cstring>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"

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
                       {"median_seconds", k.median_seconds}});
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
      return Bad(absl::StrCat("format '", m.format, "' is not gtco-artifact/1 (made by a newer "
                              "GTCO? use its gtco-run)"));
    }
    m.model = root.at("model").get<std::string>();
    m.target = root.at("target").get<std::string>();
    m.cpu = root.at("cpu").get<std::string>();
    m.features = root.at("features").get<std::vector<std::string>>();
    m.inputs = root.at("inputs").get<std::vector<int>>();
    m.outputs = root.at("outputs").get<std::vector<int>>();
    m.arena_bytes = root.at("arena_bytes").get<int64_t>();
    m.warnings = root.at("warnings").get<std::vector<std::string>>();
    m.code_sha256 = root.at("code_sha256").get<std::string>();
    m.code_bytes = root.at("code_bytes").get<int64_t>();
    m.weights_sha256 = root.at("weights_sha256").get<std::string>();
    m.weights_bytes = root.at("weights_bytes").get<int64_t>();
    for (const json& entry : root.at("tensors")) {
      TensorSpec t;
      t.name = entry.at("name").get<std::string>();
      auto dtype = ParseElemType(entry.at("dtype").get<std::string>());
      if (!dtype.ok()) return Bad(absl::StrCat("tensor '", t.name, "': ", dtype.status().message()));
      t.dtype = *dtype;
      t.shape = entry.at("shape").get<std::vector<int64_t>>();
      for (int64_t dim : t.shape) {
        if (dim < 0 || dim > (int64_t{1} << 40)) {
          return Bad(absl::StrCat("tensor '", t.name, "' has a bad dim"));
        }
      }
      if (entry.contains("weight_offset")) {
        t.weight = true;
        t.weight_offset = entry.at("weight_offset").get<int64_t>();
        if (t.weight_offset < 0 || t.weight_offset + t.Bytes() > m.weights_bytes) {
          return Bad(absl::StrCat("weight '", t.name, "' lies outside the weights section"));
        }
      } else {
        t.storage = entry.at("storage").get<int>();
      }
      m.tensors.push_back(std::move(t));
    }
    for (const json& entry : root.at("storages")) {
      StorageSpec s{entry.at(0).get<int64_t>(), entry.at(1).get<int64_t>()};
      if (s.offset < 0 || s.bytes < 0 || s.offset + s.bytes > m.arena_bytes) {
        return Bad("a storage lies outside the arena");
      }
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
      k.median_seconds = entry.at("median_seconds").get<double>();
      m.kernels.push_back(std::move(k));
    }
    for (const json& entry : root.at("steps")) {
      StepSpec s;
      s.op = entry.at("op").get<std::string>();
      s.node = entry.at("node").get<std::string>();
      s.inputs = entry.at("inputs").get<std::vector<int>>();
      s.outputs = entry.at("outputs").get<std::vector<int>>();
      if (entry.contains("kernel")) s.kernel = entry.at("kernel").get<int>();
      if (entry.contains("params")) s.params = entry.at("params").get<std::vector<int64_t>>();
      m.steps.push_back(std::move(s));
    }
  } catch (const json::exception& error) {
    return Bad(error.what());
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
  for (const StepSpec& s : m.steps) {
    for (const std::vector<int>* list : {&s.inputs, &s.outputs}) {
      for (int index : *list) {
        if (index < 0 || index >= num_tensors) {
          return Bad(absl::StrCat("step '", s.node, "' refers to tensor ", index));
        }
      }
    }
    if (s.outputs.empty()) return Bad(absl::StrCat("step '", s.node, "' has no output"));
    if (s.op == "kernel" && (s.kernel < 0 || s.kernel >= static_cast<int>(m.kernels.size()))) {
      return Bad(absl::StrCat("step '", s.node, "' refers to kernel ", s.kernel));
    }
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
  const int64_t code_offset = RoundUp(manifest_offset + static_cast<int64_t>(text.size()), kCodeAlign);
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
    return absl::DataLossError("the artifact is corrupt: the code section's checksum does not match");
  }
  if (static_cast<int64_t>(view.weights.size()) != view.manifest.weights_bytes ||
      Sha256Hex(view.weights) != view.manifest.weights_sha256) {
    return absl::DataLossError(
        "the artifact is corrupt: the weights section's checksum does not match");
  }
  return view;
}

}  // namespace gtco::runtime
