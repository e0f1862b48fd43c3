// The worker's view of the CUDA driver (runtime/cuda_driver.h, shared with the runtime of exported
// CUDA artifacts): its names in gtco::worker, and the device described as farm hardware.
#pragma once

#include "absl/status/statusor.h"
#include "common/target/target.h"
#include "runtime/cuda_driver.h"

namespace gtco::worker {

using runtime::CudaDriver;
using runtime::CudaEvent;
using runtime::CudaFunction;
using runtime::CudaLaunchDims;
using runtime::CudaModule;
using runtime::CudaResultLosesContext;
using runtime::CudaResultToStatus;
using runtime::DeviceBuffer;
using runtime::DevicePtr;

/// The device's facts as the farm describes hardware: target "cuda", its name in cpu_model,
/// compute capability, SMs, shared memory, registers, thread and block limits, L2 and memory.
absl::StatusOr<target::HardwareInfo> ReadHardware(const CudaDriver& driver);

}  // namespace gtco::worker
