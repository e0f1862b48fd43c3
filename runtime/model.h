// A loaded artifact and its executor: the weights stay in the mapped file, the kernels come from
// the artifact's shared object (loaded from memory), data-movement steps run in C++ here. One
// loaded Model runs from many threads at once: every Run has an arena of its own, taken from a
// pool of arenas earlier runs gave back (so a steady caller touches warm memory, not fresh pages).
#pragma once

#include <cstdlib>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "runtime/artifact.h"

namespace gtco::runtime {

/// A caller's tensor: `data` holds NumElements(shape) elements of `dtype`, row-major.
struct HostTensor {
  ElemType dtype = ElemType::kF32;
  std::vector<int64_t> shape;
  const void* data = nullptr;
};

/// A result: the bytes of an output tensor.
struct OutputTensor {
  std::string name;
  ElemType dtype = ElemType::kF32;
  std::vector<int64_t> shape;
  std::vector<char> bytes;
};

/// Seconds spent per step of one run (Run with a profile).
struct StepTime {
  std::string op, node, description;
  double seconds = 0.0;
  int64_t flops = 0, min_bytes = 0;  ///< the step's kernel's (KernelSpec); 0 for other steps
};

/// The profile entry of `step` of `m` that took `seconds`.
StepTime StepTimeOf(const Manifest& m, const StepSpec& step, double seconds);

class CudaExecutor;
namespace reference {
struct Node;
}

/// Called after each step of a CPU run with the step's index in Manifest::steps; `outputs[i]`
/// holds the step's output i (StepSpec::outputs[i]) and is valid only during the call.
using StepObserver = std::function<void(int step, const std::vector<const char*>& outputs)>;

class Model {
 public:
  /// Maps `path` and verifies it (ReadArtifact), checks that this host has every CPU feature the
  /// code needs (FAILED_PRECONDITION naming the missing ones), loads the code and resolves every
  /// kernel (DATA_LOSS when one is missing). A CUDA artifact opens the GPU instead (see
  /// CudaExecutor::Create): FAILED_PRECONDITION without a usable one, UNIMPLEMENTED in a runtime
  /// built without the CUDA headers.
  static absl::StatusOr<std::unique_ptr<Model>> Load(const std::string& path);
  ~Model();
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;

  /// The verified manifest of the artifact at `path` (mapped, not read into memory), for
  /// describing one this host cannot run. The errors of Load's mapping and verification.
  static absl::StatusOr<Manifest> ReadManifest(const std::string& path);

  const Manifest& manifest() const { return manifest_; }

  /// Runs the model on `inputs` (one per manifest input, in order). INVALID_ARGUMENT naming the
  /// input whose count, dtype or shape is wrong, or a gather index out of range. Thread-safe.
  absl::StatusOr<std::vector<OutputTensor>> Run(const std::vector<HostTensor>& inputs,
                                                std::vector<StepTime>* profile = nullptr) const;
  /// Same, writing outputs into caller buffers (one per manifest output, each of the output's
  /// size).
  absl::Status RunInto(const std::vector<HostTensor>& inputs, const std::vector<void*>& outputs,
                       std::vector<StepTime>* profile = nullptr) const;
  /// Run, calling `observer` after every step (CPU artifacts; a CUDA artifact runs without
  /// calling it): the exporter's whole-model check compares intermediate tensors this way.
  absl::StatusOr<std::vector<OutputTensor>> RunObserved(const std::vector<HostTensor>& inputs,
                                                        const StepObserver& observer) const;

 private:
  Model() = default;
  struct Mapping;
  /// Maps `path` into `mapping` and verifies it (ReadArtifact); the view points into the mapping.
  static absl::StatusOr<ArtifactView> MapArtifact(const std::string& path, Mapping* mapping);
  /// Copies the CPU weights out of the file mapping into memory of their own (CopyWeights's
  /// comment in model.cc says why) and points weights_ there; the mapping stays as it is where
  /// the allocation fails.
  void CopyWeights(std::string_view weights);
  std::unique_ptr<Mapping> mapping_;  ///< the mapped file
  Manifest manifest_;
  /// weights_copy_; inside the mapping for CUDA artifacts or where the copy was not allocated
  const char* weights_ = nullptr;
  std::unique_ptr<char, void (*)(void*)> weights_copy_{nullptr, &std::free};
  void* library_ = nullptr;           ///< dlopen handle
  /// The memfd holding the code, open while the library is loaded: its /proc/self/fd path is the
  /// library's name, which dlopen would otherwise hand to the next model loaded (same path, same
  /// handle, the first model's kernels).
  int code_fd_ = -1;
  std::vector<void (*)(void**)> entries_;
  /// Per step: the node of a "reference" (fallback) step, parsed once at load; null otherwise.
  std::vector<std::unique_ptr<reference::Node>> reference_nodes_;
  absl::Status RunSteps(const std::vector<HostTensor>& inputs, const std::vector<void*>& outputs,
                        std::vector<StepTime>* profile, const StepObserver* observer) const;
  /// RunSteps into output tensors allocated here.
  absl::StatusOr<std::vector<OutputTensor>> RunAllocating(const std::vector<HostTensor>& inputs,
                                                          std::vector<StepTime>* profile,
                                                          const StepObserver* observer) const;
  /// CUDA artifacts: runs every step on the GPU (shared_ptr: complete only where built).
  std::shared_ptr<CudaExecutor> cuda_;

  /// Arenas of finished runs, for the next ones (one per run at a time at most).
  using Arena = std::unique_ptr<char, void (*)(void*)>;
  Arena TakeArena() const;
  void GiveBack(Arena arena) const;
  mutable std::mutex arenas_mutex_;
  mutable std::vector<Arena> free_arenas_;  ///< guarded by arenas_mutex_
};

/// The CPU features of this host (cpuinfo spellings, from /proc/cpuinfo's flags); the amx_*
/// flags only when Linux grants this process the tile state (AmxTileStateUsable, asked here).
std::vector<std::string> HostCpuFeatures();

}  // namespace gtco::runtime
