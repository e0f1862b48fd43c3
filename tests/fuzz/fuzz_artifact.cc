// Fuzz target: artifact files and manifests as gtco-run reads them. The first byte picks what the
// rest is: 0 a whole artifact file (ReadArtifact), otherwise a manifest, parsed directly
// (ManifestFromJson) or, for odd selectors, wrapped in a container with correct checksums (so
// the fuzzer reaches the manifest checks behind them). Every input must give a manifest or an
// INVALID_ARGUMENT/DATA_LOSS status, and an accepted manifest must hold the invariants the
// executor relies on: every index in range, every storage inside the arena, every weight inside
// the weights section.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "runtime/artifact.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

void CheckManifest(const gtco::runtime::Manifest& m) {
  const int tensors = static_cast<int>(m.tensors.size());
  for (const gtco::runtime::TensorSpec& t : m.tensors) {
    if (t.weight) {
      FUZZ_CHECK(t.weight_offset >= 0 && t.weight_offset + t.Bytes() <= m.weights_bytes,
                 "weight %s outside the weights", t.name.c_str());
    } else {
      FUZZ_CHECK(t.storage >= 0 && t.storage < static_cast<int>(m.storages.size()),
                 "tensor %s has storage %d", t.name.c_str(), t.storage);
      FUZZ_CHECK(t.Bytes() <= m.storages[t.storage].bytes, "tensor %s overflows its storage",
                 t.name.c_str());
    }
  }
  for (const gtco::runtime::StorageSpec& s : m.storages) {
    FUZZ_CHECK(s.offset >= 0 && s.offset + s.bytes <= m.arena_bytes, "storage outside arena");
  }
  for (const gtco::runtime::StepSpec& s : m.steps) {
    FUZZ_CHECK(!s.outputs.empty(), "step %s without output", s.node.c_str());
    for (int index : s.inputs) FUZZ_CHECK(index >= 0 && index < tensors, "bad step input");
    for (int index : s.outputs) FUZZ_CHECK(index >= 0 && index < tensors, "bad step output");
    if (s.op == "kernel") {
      FUZZ_CHECK(s.kernel >= 0 && s.kernel < static_cast<int>(m.kernels.size()), "bad kernel");
    }
  }
  for (int index : m.inputs) FUZZ_CHECK(index >= 0 && index < tensors, "bad input index");
  for (int index : m.outputs) FUZZ_CHECK(index >= 0 && index < tensors, "bad output index");
}

void CheckStatus(const absl::Status& status) {
  FUZZ_CHECK(status.code() == absl::StatusCode::kInvalidArgument ||
                 status.code() == absl::StatusCode::kDataLoss,
             "unexpected status %s", status.ToString().c_str());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (data[0] == 0) {
    absl::StatusOr<gtco::runtime::ArtifactView> view = gtco::runtime::ReadArtifact(rest);
    if (!view.ok()) {
      CheckStatus(view.status());
    } else {
      CheckManifest(view->manifest);
    }
    return 0;
  }
  absl::StatusOr<gtco::runtime::Manifest> manifest = gtco::runtime::ManifestFromJson(rest);
  if (!manifest.ok()) {
    CheckStatus(manifest.status());
    return 0;
  }
  CheckManifest(*manifest);
  if (data[0] % 2 == 1) {
    // Through the container: sizes and checksums are rewritten, the manifest's checks stay.
    const std::string code(static_cast<size_t>(manifest->code_bytes % 4096), 'c');
    const std::string weights(static_cast<size_t>(manifest->weights_bytes % 65536), 'w');
    const std::string file = gtco::runtime::WriteArtifact(*manifest, code, weights);
    absl::StatusOr<gtco::runtime::ArtifactView> view = gtco::runtime::ReadArtifact(file);
    if (!view.ok()) {
      CheckStatus(view.status());
    } else {
      CheckManifest(view->manifest);
    }
  }
  return 0;
}
