// Measuring one CUDA candidate inside the runner process: compile its CUDA C with NVRTC for this
// GPU, run it once on random inputs and check the output against the reference, then time it
// with CUDA events, flushing the L2 cache before every timed launch.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/ir/workload.h"
#include "common/target/target.h"
#include "gtco/v1/gtco.pb.h"
#include "worker/cuda_driver.h"
#include "worker/host_tensor.h"
#include "worker/measurer.h"

namespace gtco::worker {

/// Timing bounds for GPU kernels (microseconds to milliseconds each, plus an L2 flush per
/// launch): at least 10 repeats and 20 ms measured, at most 2000 repeats or 2 s.
MeasureOptions DefaultCudaMeasureOptions();

/// The architecture NVRTC compiles a candidate for on `hw`: `requested` (CudaLaunch.arch) when
/// its SASS runs there ("sm_86" on an sm_89 GPU; "sm_90a" only on sm_90), the GPU's own "sm_XY"
/// when `requested` is empty. INVALID_ARGUMENT when `requested` cannot run on `hw`.
absl::StatusOr<std::string> CudaArchFor(const target::HardwareInfo& hw,
                                        const std::string& requested);

/// The output tolerances for a CUDA candidate of workload `w` with schedule trace `trace`:
/// ir::DefaultTolerance (which allows one rounding step of a 16-bit output), loosened for TF32
/// Tensor Core matmuls and convolutions (sketches "cuda_mm_tf32", "cuda_conv_tf32"): TF32 keeps
/// 10 mantissa bits, so each product carries ~1e-3 relative error and the error of a k-term sum
/// grows with sqrt(k) (a conv's k is C/groups*R*S).
void CudaTolerance(const ir::Workload& w, const std::string& trace, double* rtol, double* atol);

/// Measures CUDA candidates (language "cuda-c") on one GPU. Not thread-safe; lives in the
/// runner process (gtco-worker also creates one at startup to check the GPU and read its facts).
class CudaMeasurer final : public Measurer {
 public:
  /// Opens GPU `device`, makes its primary context current and checks that a kernel NVRTC
  /// builds for it loads and runs. UNAVAILABLE without a driver or GPU (the message says which);
  /// FAILED_PRECONDITION when the driver cannot run what this NVRTC builds.
  static absl::StatusOr<std::unique_ptr<CudaMeasurer>> Create(
      int device, MeasureOptions options = DefaultCudaMeasureOptions());
  ~CudaMeasurer() override;

  /// Always returns a result. COMPILE: not CUDA C or NVRTC rejects it; RUNTIME: the launch is
  /// invalid for this GPU, the module does not load, or the kernel faults (the message is the
  /// driver's; after a fault Usable() is false); WRONG_RESULT: the output differs from the
  /// reference (never timed).
  gtco::v1::MeasureResult Measure(const gtco::v1::Candidate& candidate) override;
  bool Usable() const override { return !driver_->context_lost(); }

  /// The GPU's facts, as the driver reports them.
  const target::HardwareInfo& hardware() const { return hardware_; }
  /// The driver's CUDA version, e.g. "12.4".
  std::string DriverVersion() const { return driver_->DriverVersion(); }

 private:
  struct Kernel {
    CudaModule module = nullptr;
    CudaFunction function = nullptr;
    int64_t max_dynamic_shared_bytes = 48 * 1024;  ///< allowed without opting in
    double compile_seconds = 0;
  };
  struct ReferenceData {
    ir::Workload workload;
    std::vector<HostTensor> inputs;
    HostTensor expected;
    int64_t bytes = 0;
  };
  /// Device copies of one run's arguments: the inputs, then the output (holding a sentinel).
  struct Arguments {
    std::vector<DeviceBuffer> buffers;
    std::vector<DevicePtr> pointers;
    std::vector<void*> params;  ///< &pointers[i], for cuLaunchKernel
  };

  CudaMeasurer(std::unique_ptr<CudaDriver> driver, target::HardwareInfo hardware,
               MeasureOptions options);
  absl::Status SelfTest();
  /// The architecture and launch geometry of `candidate` on this GPU: INVALID_ARGUMENT when it
  /// is not CUDA C, FAILED_PRECONDITION when it cannot run here.
  absl::Status CheckCandidate(const gtco::v1::Candidate& candidate, std::string* arch,
                              CudaLaunchDims* dims) const;
  /// The loaded kernel of `candidate` for `arch`, compiled or cached. `*compile_error` tells a
  /// compile error (COMPILE) from a load error (RUNTIME).
  absl::StatusOr<Kernel*> LoadKernel(const gtco::v1::Candidate& candidate, const std::string& arch,
                                     bool* compile_error);
  absl::StatusOr<const ReferenceData*> Reference(const gtco::v1::Candidate& candidate);
  absl::StatusOr<Arguments> Upload(const ReferenceData& data);
  /// Launches once and compares the output with the reference: FAILED_PRECONDITION for a
  /// mismatch, the driver's error (never FAILED_PRECONDITION) for a launch or fault.
  absl::Status RunAndVerify(const Kernel& kernel, const CudaLaunchDims& dims,
                            const ReferenceData& data, Arguments* arguments, double rtol,
                            double atol);
  /// Warm-up, then timed launches each after an L2 flush; the samples in seconds.
  absl::StatusOr<std::vector<double>> Time(const Kernel& kernel, const CudaLaunchDims& dims,
                                           Arguments* arguments);

  std::unique_ptr<CudaDriver> driver_;
  target::HardwareInfo hardware_;
  MeasureOptions options_;
  uint64_t seed_;
  std::map<std::string, Kernel> kernels_;  ///< by program hash, arch and entry
  std::deque<std::string> kernel_order_;   ///< oldest first, for eviction
  std::map<std::string, std::unique_ptr<ReferenceData>> references_;  ///< by workload key
  int64_t reference_bytes_ = 0;
  DeviceBuffer flush_;             ///< 2x the L2 size, overwritten before each timed launch
  std::vector<CudaEvent> events_;  ///< start/end pairs of one batch of timed launches
};

}  // namespace gtco::worker
