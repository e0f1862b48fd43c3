// The CUDA driver API, loaded at run time: dlopen("libcuda.so.1") and dlsym of the versioned
// entry points (cuMemAlloc_v2, ...), so neither gtco-worker nor the runtime of exported CUDA
// artifacts links libcuda: both start, and explain themselves, on machines without an NVIDIA
// driver. Part of the runtime (it needs nothing of the farm); the worker uses it too. Types and enum values come from <cuda.h> inside
// cuda_driver.cc only. The one place CUresult is converted to absl::Status.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

// Opaque driver handles, declared as <cuda.h> declares them (CUmodule is CUmod_st*, ...).
struct CUmod_st;
struct CUfunc_st;
struct CUevent_st;
struct CUstream_st;
struct CUgraphExec_st;

namespace gtco::runtime {

using DevicePtr = uint64_t;  ///< a device address (CUdeviceptr)
using CudaModule = CUmod_st*;
using CudaFunction = CUfunc_st*;
using CudaEvent = CUevent_st*;
using CudaStream = CUstream_st*;  ///< nullptr: the default (legacy) stream
using CudaGraphExec = CUgraphExec_st*;

/// The driver's entry points, resolved once per process (defined in cuda_driver.cc).
struct CudaDriverApi;

/// `result` (a CUresult) of driver call `what` as a status whose message names the call, the
/// error ("CUDA_ERROR_ILLEGAL_ADDRESS") and the driver's description: OK for CUDA_SUCCESS;
/// RESOURCE_EXHAUSTED for out of memory and launches out of resources; UNAVAILABLE when there
/// is no usable driver or device; INVALID_ARGUMENT for bad values, images and launch geometry;
/// INTERNAL for kernel faults (see CudaResultLosesContext) and anything else.
absl::Status CudaResultToStatus(int result, absl::string_view what);

/// True for the errors after which the context is unusable (a kernel's illegal address or
/// instruction, a failed assert, a hardware exception, ...): every later call fails the same
/// way and only a new process can use the GPU again.
bool CudaResultLosesContext(int result);

/// What the driver reports about a device.
struct CudaDeviceFacts {
  std::string name;
  int sm_major = 0, sm_minor = 0, sm_count = 0;
  int64_t shared_bytes_per_block = 0, shared_bytes_per_sm = 0;
  int64_t registers_per_block = 0, registers_per_sm = 0;
  int max_threads_per_block = 0, max_threads_per_sm = 0, max_blocks_per_sm = 0;
  int64_t l2_bytes = 0, memory_bytes = 0;
};

/// Grid, block and dynamic shared memory of one launch.
struct CudaLaunchDims {
  int64_t grid_x = 1, grid_y = 1, grid_z = 1;
  int block_x = 1, block_y = 1, block_z = 1;
  int64_t dynamic_shared_bytes = 0;
};

/// One CUDA device through the driver. Not thread-safe: used by one thread at a time (the
/// worker's runner process; a loaded CUDA artifact, which serializes its runs).
class CudaDriver {
 public:
  /// Loads the driver library (once per process), initializes it and selects device `ordinal`
  /// (as numbered under CUDA_VISIBLE_DEVICES). UNAVAILABLE when libcuda.so.1 cannot be loaded
  /// ("libcuda.so.1 could not be loaded (<dlerror>)"), lacks an entry point, or finds no such
  /// device. Creates no context (see Activate).
  static absl::StatusOr<std::unique_ptr<CudaDriver>> Open(int ordinal);
  /// True when libcuda.so.1 can be loaded in this process.
  static bool LibraryLoads();

  ~CudaDriver();
  CudaDriver(const CudaDriver&) = delete;
  CudaDriver& operator=(const CudaDriver&) = delete;

  /// The device's facts: its name, compute capability, SMs, shared memory, registers, thread
  /// and block limits, L2 and memory bytes.
  absl::StatusOr<CudaDeviceFacts> ReadDevice() const;
  /// The driver's CUDA version as "12.4".
  std::string DriverVersion() const;

  /// Retains the device's primary context (once) and makes it current on the calling thread;
  /// needed on each thread before any call below. Released when the driver is destroyed.
  absl::Status Activate();

  absl::StatusOr<DevicePtr> Alloc(size_t bytes);
  /// Frees an allocation of Alloc (errors are ignored: a lost context frees with the process).
  void Free(DevicePtr pointer);
  absl::Status CopyToDevice(DevicePtr destination, const void* source, size_t bytes);
  absl::Status CopyToHost(void* destination, DevicePtr source, size_t bytes);
  /// Sets `bytes` bytes at `destination` to `value` (cuMemsetD8), in stream order.
  absl::Status Fill(DevicePtr destination, uint8_t value, size_t bytes);

  /// Loads a cubin (or fatbin / PTX) image.
  absl::StatusOr<CudaModule> LoadModule(const std::string& image);
  void UnloadModule(CudaModule module);
  absl::StatusOr<CudaFunction> GetFunction(CudaModule module, const std::string& name);
  /// Allows `function` to be launched with up to `bytes` of dynamic shared memory (needed above
  /// 48 KiB).
  absl::Status SetMaxDynamicSharedBytes(CudaFunction function, int64_t bytes);
  /// Enqueues `function` on `stream` (the default stream unless given); `params` point at each
  /// kernel argument (copied at the call, also while a stream is captured).
  absl::Status Launch(CudaFunction function, const CudaLaunchDims& dims, void** params,
                      CudaStream stream = nullptr);
  /// Waits for all work; returns the first error of any of it (a faulting kernel's).
  absl::Status Synchronize();

  /// A stream that does not synchronize with the default stream.
  absl::StatusOr<CudaStream> CreateStream();
  void DestroyStream(CudaStream stream);
  /// Copies and fills in `stream` order (host memory may be pageable).
  absl::Status CopyToDeviceAsync(DevicePtr destination, const void* source, size_t bytes,
                                 CudaStream stream);
  absl::Status CopyToHostAsync(void* destination, DevicePtr source, size_t bytes,
                               CudaStream stream);
  absl::Status FillAsync(DevicePtr destination, uint8_t value, size_t bytes, CudaStream stream);
  /// Waits for `stream`'s work; the first error of it.
  absl::Status SynchronizeStream(CudaStream stream);
  /// CUDA graphs: between BeginCapture and EndCapture, this thread's launches on `stream` are
  /// recorded instead of run (thread-local capture mode); EndCapture instantiates the recording
  /// as one executable graph, which LaunchGraph replays on a stream with one call.
  absl::Status BeginCapture(CudaStream stream);
  absl::StatusOr<CudaGraphExec> EndCapture(CudaStream stream);
  absl::Status LaunchGraph(CudaGraphExec graph, CudaStream stream);
  void DestroyGraph(CudaGraphExec graph);

  absl::StatusOr<CudaEvent> CreateEvent();
  void DestroyEvent(CudaEvent event);
  /// Records `event` on the default stream.
  absl::Status Record(CudaEvent event);
  /// Seconds from `start` to `end` (both recorded), waiting for `end`.
  absl::StatusOr<double> ElapsedSeconds(CudaEvent start, CudaEvent end);

  /// True once a call failed with an error that loses the context (CudaResultLosesContext).
  bool context_lost() const { return context_lost_; }

 private:
  CudaDriver(const CudaDriverApi* api, int device);
  /// CudaResultToStatus, remembering context loss.
  absl::Status Check(int result, absl::string_view what);

  const CudaDriverApi* api_;
  int device_;  ///< CUdevice
  bool context_retained_ = false;
  void* context_ = nullptr;  ///< the retained primary context (CUcontext)
  bool context_lost_ = false;
};

/// A device allocation freed on destruction. Move-only.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  static absl::StatusOr<DeviceBuffer> Allocate(CudaDriver* driver, size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  DevicePtr pointer() const { return pointer_; }
  size_t bytes() const { return bytes_; }

 private:
  CudaDriver* driver_ = nullptr;
  DevicePtr pointer_ = 0;
  size_t bytes_ = 0;
};

}  // namespace gtco::runtime
