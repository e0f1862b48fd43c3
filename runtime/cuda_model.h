// The executor of CUDA artifacts: the driver loaded with dlopen (runtime/cuda_driver.h), the
// kernels' cubins and the data-movement module loaded from the code section, the weights copied
// to the GPU once at load, one device arena for the runs. Built only where the CUDA headers
// were found (GTCO_RUNTIME_HAS_CUDA); elsewhere a CUDA artifact is refused at load, saying so.
#pragma once

#include <memory>
#include <mutex>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "runtime/artifact.h"
#include "runtime/cuda_driver.h"

namespace gtco::runtime {

struct HostTensor;
struct StepTime;

class CudaExecutor {
 public:
  /// Opens GPU 0 (as CUDA_VISIBLE_DEVICES numbers them) and prepares `m`'s kernels and weights.
  /// FAILED_PRECONDITION when there is no usable driver or GPU (the driver's message), or when
  /// the GPU cannot run code built for the artifact's architecture (naming both); DATA_LOSS
  /// when a cubin does not load or lacks its kernel; the driver's errors otherwise.
  static absl::StatusOr<std::unique_ptr<CudaExecutor>> Create(const Manifest& m,
                                                              std::string_view code,
                                                              std::string_view weights);
  ~CudaExecutor();
  CudaExecutor(const CudaExecutor&) = delete;
  CudaExecutor& operator=(const CudaExecutor&) = delete;

  /// One run: inputs to the GPU, every step in order on the executor's stream, outputs back.
  /// The first run without `profile` records the steps' launches as a CUDA graph, and later
  /// runs launch that graph (one call instead of one per step; the arena and weights stay put,
  /// so the recorded arguments stay valid); GTCO_CUDA_GRAPHS=0 turns this off, and a recording
  /// the driver refuses falls back to launching step by step. Profiled runs launch step by
  /// step. Runs are serialized (one device arena). `inputs` were checked against the manifest.
  /// INVALID_ARGUMENT for a gather index out of range (naming the step); INTERNAL for a kernel
  /// fault (after which the process cannot use the GPU again).
  absl::Status Run(const std::vector<HostTensor>& inputs, const std::vector<void*>& outputs,
                   std::vector<StepTime>* profile);

 private:
  CudaExecutor(const Manifest& m, std::unique_ptr<CudaDriver> driver)
      : manifest_(m), driver_(std::move(driver)) {}
  absl::Status Prepare(std::string_view code, std::string_view weights);
  DevicePtr Data(int tensor) const;
  absl::Status RunStep(const StepSpec& step, int* gather_slot);
  /// Launches every step on stream_, naming the step that fails; with `profile`, waits for each
  /// and records its time.
  absl::Status LaunchSteps(std::vector<StepTime>* profile);
  /// Records LaunchSteps as graph_; on failure graph_ stays null (and the stream usable).
  absl::Status CaptureGraph();

  const Manifest& manifest_;
  std::unique_ptr<CudaDriver> driver_;
  std::vector<CudaModule> modules_;
  std::vector<CudaFunction> kernels_;  ///< by manifest kernel index
  CudaFunction copy_ = nullptr, gather_ = nullptr, cast_ = nullptr, broadcast_ = nullptr;
  DeviceBuffer weights_, arena_, gather_errors_;
  int gathers_ = 0;  ///< gather steps: one error slot each
  CudaStream stream_ = nullptr;
  CudaGraphExec graph_ = nullptr;  ///< the recorded steps, once a run made it
  bool graph_tried_ = false;       ///< a recording was attempted (made or refused)
  std::mutex run_mutex_;
};

}  // namespace gtco::runtime
