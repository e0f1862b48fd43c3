// The CUDA driver loaded with dlopen/dlsym; every CUresult becomes an absl::Status here.
#include "runtime/cuda_driver.h"

#include <cuda.h>
#include <dlfcn.h>

#include <array>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/util/status.h"

namespace gtco::runtime {

// The driver entry points, by the versioned names libcuda.so.1 exports (<cuda.h> maps the
// unversioned names of its prototypes onto these): X(member, exported symbol).
#define GTCO_CUDA_DRIVER_FUNCTIONS(X)                  \
  X(init, cuInit)                                      \
  X(driver_get_version, cuDriverGetVersion)            \
  X(device_get_count, cuDeviceGetCount)                \
  X(device_get, cuDeviceGet)                           \
  X(device_get_name, cuDeviceGetName)                  \
  X(device_get_attribute, cuDeviceGetAttribute)        \
  X(device_total_mem, cuDeviceTotalMem_v2)             \
  X(primary_ctx_retain, cuDevicePrimaryCtxRetain)      \
  X(primary_ctx_release, cuDevicePrimaryCtxRelease_v2) \
  X(ctx_set_current, cuCtxSetCurrent)                  \
  X(ctx_synchronize, cuCtxSynchronize)                 \
  X(mem_alloc, cuMemAlloc_v2)                          \
  X(mem_free, cuMemFree_v2)                            \
  X(memcpy_htod, cuMemcpyHtoD_v2)                      \
  X(memcpy_dtoh, cuMemcpyDtoH_v2)                      \
  X(memset_d8, cuMemsetD8_v2)                          \
  X(module_load_data, cuModuleLoadData)                \
  X(module_unload, cuModuleUnload)                     \
  X(module_get_function, cuModuleGetFunction)          \
  X(func_set_attribute, cuFuncSetAttribute)            \
  X(launch_kernel, cuLaunchKernel)                     \
  X(event_create, cuEventCreate)                       \
  X(event_destroy, cuEventDestroy_v2)                  \
  X(event_record, cuEventRecord)                       \
  X(event_synchronize, cuEventSynchronize)             \
  X(get_error_name, cuGetErrorName)                    \
  X(get_error_string, cuGetErrorString)                \
  X(stream_create, cuStreamCreate)                     \
  X(stream_destroy, cuStreamDestroy_v2)                \
  X(stream_synchronize, cuStreamSynchronize)           \
  X(memcpy_htod_async, cuMemcpyHtoDAsync_v2)           \
  X(memcpy_dtoh_async, cuMemcpyDtoHAsync_v2)           \
  X(memset_d8_async, cuMemsetD8Async)                  \
  X(stream_begin_capture, cuStreamBeginCapture_v2)     \
  X(stream_end_capture, cuStreamEndCapture)            \
  X(graph_instantiate, cuGraphInstantiateWithFlags)    \
  X(graph_launch, cuGraphLaunch)                       \
  X(graph_exec_destroy, cuGraphExecDestroy)            \
  X(graph_destroy, cuGraphDestroy)

struct CudaDriverApi {
#define GTCO_DECLARE_MEMBER(member, symbol) decltype(&::symbol) member = nullptr;
  GTCO_CUDA_DRIVER_FUNCTIONS(GTCO_DECLARE_MEMBER)
#undef GTCO_DECLARE_MEMBER
  /// cuEventElapsedTime_v2 (drivers of CUDA 12.8 and later), else cuEventElapsedTime: the same
  /// prototype.
  decltype(&::cuEventElapsedTime_v2) event_elapsed_time = nullptr;
};

namespace {

/// The library and its entry points, loaded once per process and never unloaded.
struct LoadedDriver {
  bool library_loaded = false;
  absl::Status status;
  CudaDriverApi* api = nullptr;
};

/// Error names for when the driver's own cuGetErrorName is not at hand (no driver loaded).
constexpr std::pair<CUresult, const char*> kErrorNames[] = {
#define GTCO_ERROR_NAME(code) \
  { code, #code }
    GTCO_ERROR_NAME(CUDA_SUCCESS),
    GTCO_ERROR_NAME(CUDA_ERROR_INVALID_VALUE),
    GTCO_ERROR_NAME(CUDA_ERROR_OUT_OF_MEMORY),
    GTCO_ERROR_NAME(CUDA_ERROR_NOT_INITIALIZED),
    GTCO_ERROR_NAME(CUDA_ERROR_DEINITIALIZED),
    GTCO_ERROR_NAME(CUDA_ERROR_STUB_LIBRARY),
    GTCO_ERROR_NAME(CUDA_ERROR_DEVICE_UNAVAILABLE),
    GTCO_ERROR_NAME(CUDA_ERROR_NO_DEVICE),
    GTCO_ERROR_NAME(CUDA_ERROR_INVALID_DEVICE),
    GTCO_ERROR_NAME(CUDA_ERROR_DEVICE_NOT_LICENSED),
    GTCO_ERROR_NAME(CUDA_ERROR_INVALID_IMAGE),
    GTCO_ERROR_NAME(CUDA_ERROR_INVALID_CONTEXT),
    GTCO_ERROR_NAME(CUDA_ERROR_NO_BINARY_FOR_GPU),
    GTCO_ERROR_NAME(CUDA_ERROR_ECC_UNCORRECTABLE),
    GTCO_ERROR_NAME(CUDA_ERROR_INVALID_PTX),
    GTCO_ERROR_NAME(CUDA_ERROR_NVLINK_UNCORRECTABLE),
    GTCO_ERROR_NAME(CUDA_ERROR_UNSUPPORTED_PTX_VERSION),
    GTCO_ERROR_NAME(CUDA_ERROR_INVALID_HANDLE),
    GTCO_ERROR_NAME(CUDA_ERROR_NOT_FOUND),
    GTCO_ERROR_NAME(CUDA_ERROR_NOT_READY),
    GTCO_ERROR_NAME(CUDA_ERROR_ILLEGAL_ADDRESS),
    GTCO_ERROR_NAME(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES),
    GTCO_ERROR_NAME(CUDA_ERROR_LAUNCH_TIMEOUT),
    GTCO_ERROR_NAME(CUDA_ERROR_CONTEXT_IS_DESTROYED),
    GTCO_ERROR_NAME(CUDA_ERROR_ASSERT),
    GTCO_ERROR_NAME(CUDA_ERROR_HARDWARE_STACK_ERROR),
    GTCO_ERROR_NAME(CUDA_ERROR_ILLEGAL_INSTRUCTION),
    GTCO_ERROR_NAME(CUDA_ERROR_MISALIGNED_ADDRESS),
    GTCO_ERROR_NAME(CUDA_ERROR_INVALID_ADDRESS_SPACE),
    GTCO_ERROR_NAME(CUDA_ERROR_INVALID_PC),
    GTCO_ERROR_NAME(CUDA_ERROR_LAUNCH_FAILED),
    GTCO_ERROR_NAME(CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE),
    GTCO_ERROR_NAME(CUDA_ERROR_NOT_PERMITTED),
    GTCO_ERROR_NAME(CUDA_ERROR_NOT_SUPPORTED),
    GTCO_ERROR_NAME(CUDA_ERROR_SYSTEM_NOT_READY),
    GTCO_ERROR_NAME(CUDA_ERROR_SYSTEM_DRIVER_MISMATCH),
    GTCO_ERROR_NAME(CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE),
    GTCO_ERROR_NAME(CUDA_ERROR_UNKNOWN),
#undef GTCO_ERROR_NAME
};

LoadedDriver LoadDriver() {
  LoadedDriver loaded;
  // RTLD_NODELETE: entry points stay valid for the process; the driver is never unloaded.
  void* library = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  if (library == nullptr) {
    const char* reason = ::dlerror();
    loaded.status = absl::UnavailableError(absl::StrCat("libcuda.so.1 could not be loaded (",
                                                        reason ? reason : "unknown reason", ")"));
    return loaded;
  }
  loaded.library_loaded = true;
  auto api = std::make_unique<CudaDriverApi>();
  std::string missing;
  const auto resolve = [&](const char* symbol) -> void* {
    void* address = ::dlsym(library, symbol);
    if (address == nullptr) absl::StrAppend(&missing, missing.empty() ? "" : ", ", symbol);
    return address;
  };
#define GTCO_RESOLVE_MEMBER(member, symbol) \
  api->member = reinterpret_cast<decltype(api->member)>(resolve(#symbol));
  GTCO_CUDA_DRIVER_FUNCTIONS(GTCO_RESOLVE_MEMBER)
#undef GTCO_RESOLVE_MEMBER
  void* elapsed = ::dlsym(library, "cuEventElapsedTime_v2");
  if (elapsed == nullptr) elapsed = resolve("cuEventElapsedTime");
  api->event_elapsed_time = reinterpret_cast<decltype(api->event_elapsed_time)>(elapsed);
  if (!missing.empty()) {
    loaded.status = absl::UnavailableError(
        absl::StrCat("libcuda.so.1 lacks ", missing,
                     ": the NVIDIA driver is too old (update it to one for CUDA 12 or newer)"));
    return loaded;
  }
  loaded.api = api.release();
  return loaded;
}

const LoadedDriver& Driver() {
  static const LoadedDriver* const loaded = new LoadedDriver(LoadDriver());
  return *loaded;
}

std::string ErrorName(CUresult result) {
  const CudaDriverApi* api = Driver().api;
  const char* name = nullptr;
  if (api != nullptr && api->get_error_name(result, &name) == CUDA_SUCCESS && name != nullptr) {
    return name;
  }
  for (const auto& [code, known] : kErrorNames) {
    if (code == result) return known;
  }
  return absl::StrCat("CUresult ", static_cast<int>(result));
}

std::string ErrorDescription(CUresult result) {
  const CudaDriverApi* api = Driver().api;
  const char* description = nullptr;
  if (api != nullptr && api->get_error_string(result, &description) == CUDA_SUCCESS &&
      description != nullptr) {
    return description;
  }
  return "";
}

absl::StatusCode StatusCodeOf(CUresult result) {
  switch (result) {
    case CUDA_ERROR_OUT_OF_MEMORY:
    case CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES:
      return absl::StatusCode::kResourceExhausted;
    case CUDA_ERROR_NOT_INITIALIZED:
    case CUDA_ERROR_DEINITIALIZED:
    case CUDA_ERROR_STUB_LIBRARY:
    case CUDA_ERROR_DEVICE_UNAVAILABLE:
    case CUDA_ERROR_NO_DEVICE:
    case CUDA_ERROR_INVALID_DEVICE:
    case CUDA_ERROR_DEVICE_NOT_LICENSED:
    case CUDA_ERROR_SYSTEM_NOT_READY:
    case CUDA_ERROR_SYSTEM_DRIVER_MISMATCH:
    case CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE:
      return absl::StatusCode::kUnavailable;
    case CUDA_ERROR_INVALID_VALUE:
    case CUDA_ERROR_INVALID_IMAGE:
    case CUDA_ERROR_NO_BINARY_FOR_GPU:
    case CUDA_ERROR_INVALID_PTX:
    case CUDA_ERROR_UNSUPPORTED_PTX_VERSION:
    case CUDA_ERROR_INVALID_HANDLE:
    case CUDA_ERROR_NOT_FOUND:
    case CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE:
      return absl::StatusCode::kInvalidArgument;
    default:
      return absl::StatusCode::kInternal;
  }
}

}  // namespace

absl::Status CudaResultToStatus(int result, absl::string_view what) {
  const auto code = static_cast<CUresult>(result);
  if (code == CUDA_SUCCESS) return absl::OkStatus();
  std::string message = absl::StrCat(what, ": ", ErrorName(code));
  const std::string description = ErrorDescription(code);
  if (!description.empty()) absl::StrAppend(&message, " (", description, ")");
  if (CudaResultLosesContext(result)) {
    absl::StrAppend(&message, "; the CUDA context is lost");
  }
  return absl::Status(StatusCodeOf(code), message);
}

bool CudaResultLosesContext(int result) {
  switch (static_cast<CUresult>(result)) {
    case CUDA_ERROR_ILLEGAL_ADDRESS:
    case CUDA_ERROR_LAUNCH_TIMEOUT:
    case CUDA_ERROR_ASSERT:
    case CUDA_ERROR_HARDWARE_STACK_ERROR:
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_MISALIGNED_ADDRESS:
    case CUDA_ERROR_INVALID_ADDRESS_SPACE:
    case CUDA_ERROR_INVALID_PC:
    case CUDA_ERROR_LAUNCH_FAILED:
    case CUDA_ERROR_ECC_UNCORRECTABLE:
    case CUDA_ERROR_NVLINK_UNCORRECTABLE:
    case CUDA_ERROR_CONTEXT_IS_DESTROYED:
    case CUDA_ERROR_UNKNOWN:
      return true;
    default:
      return false;
  }
}

bool CudaDriver::LibraryLoads() { return Driver().library_loaded; }

CudaDriver::CudaDriver(const CudaDriverApi* api, int device) : api_(api), device_(device) {}

absl::StatusOr<std::unique_ptr<CudaDriver>> CudaDriver::Open(int ordinal) {
  const LoadedDriver& loaded = Driver();
  if (!loaded.status.ok()) return loaded.status;
  const CudaDriverApi* api = loaded.api;
  int version = 0;
  std::string driver = "the NVIDIA driver";
  if (api->driver_get_version(&version) == CUDA_SUCCESS && version > 0) {
    absl::StrAppend(&driver, " (CUDA ", version / 1000, ".", (version % 1000) / 10, ")");
  }
  absl::Status initialized = CudaResultToStatus(api->init(0), "cuInit");
  if (!initialized.ok()) {
    return absl::UnavailableError(
        absl::StrCat(driver, " found no usable GPU: ", initialized.message()));
  }
  int count = 0;
  GTCO_RETURN_IF_ERROR(CudaResultToStatus(api->device_get_count(&count), "cuDeviceGetCount"));
  if (count == 0) return absl::UnavailableError(absl::StrCat(driver, " sees no GPU"));
  if (ordinal < 0 || ordinal >= count) {
    return absl::UnavailableError(absl::StrCat("GPU ", ordinal, " was asked for but ", driver,
                                               " sees ", count, " device(s); pass --device 0..",
                                               count - 1, " or adjust CUDA_VISIBLE_DEVICES"));
  }
  CUdevice device = 0;
  GTCO_RETURN_IF_ERROR(CudaResultToStatus(api->device_get(&device, ordinal), "cuDeviceGet"));
  return std::unique_ptr<CudaDriver>(new CudaDriver(api, device));
}

CudaDriver::~CudaDriver() {
  if (context_retained_) (void)api_->primary_ctx_release(device_);
}

absl::Status CudaDriver::Check(int result, absl::string_view what) {
  if (CudaResultLosesContext(result)) context_lost_ = true;
  return CudaResultToStatus(result, what);
}

std::string CudaDriver::DriverVersion() const {
  int version = 0;
  if (api_->driver_get_version(&version) != CUDA_SUCCESS) return "unknown";
  return absl::StrCat(version / 1000, ".", (version % 1000) / 10);
}

absl::StatusOr<CudaDeviceFacts> CudaDriver::ReadDevice() const {
  CudaDeviceFacts info;
  std::array<char, 256> name{};
  GTCO_RETURN_IF_ERROR(CudaResultToStatus(
      api_->device_get_name(name.data(), static_cast<int>(name.size()) - 1, device_),
      "cuDeviceGetName"));
  info.name = name.data();
  const auto attribute = [this](CUdevice_attribute which, const char* label,
                                auto* value) -> absl::Status {
    int raw = 0;
    GTCO_RETURN_IF_ERROR(CudaResultToStatus(api_->device_get_attribute(&raw, which, device_),
                                            absl::StrCat("cuDeviceGetAttribute(", label, ")")));
    *value = raw;
    return absl::OkStatus();
  };
#define GTCO_READ_ATTRIBUTE(which, field) \
  GTCO_RETURN_IF_ERROR(attribute(CU_DEVICE_ATTRIBUTE_##which, #which, &info.field))
  GTCO_READ_ATTRIBUTE(COMPUTE_CAPABILITY_MAJOR, sm_major);
  GTCO_READ_ATTRIBUTE(COMPUTE_CAPABILITY_MINOR, sm_minor);
  GTCO_READ_ATTRIBUTE(MULTIPROCESSOR_COUNT, sm_count);
  GTCO_READ_ATTRIBUTE(MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, shared_bytes_per_block);
  GTCO_READ_ATTRIBUTE(MAX_SHARED_MEMORY_PER_MULTIPROCESSOR, shared_bytes_per_sm);
  GTCO_READ_ATTRIBUTE(MAX_REGISTERS_PER_BLOCK, registers_per_block);
  GTCO_READ_ATTRIBUTE(MAX_REGISTERS_PER_MULTIPROCESSOR, registers_per_sm);
  GTCO_READ_ATTRIBUTE(MAX_THREADS_PER_BLOCK, max_threads_per_block);
  GTCO_READ_ATTRIBUTE(MAX_THREADS_PER_MULTIPROCESSOR, max_threads_per_sm);
  GTCO_READ_ATTRIBUTE(MAX_BLOCKS_PER_MULTIPROCESSOR, max_blocks_per_sm);
  GTCO_READ_ATTRIBUTE(L2_CACHE_SIZE, l2_bytes);
#undef GTCO_READ_ATTRIBUTE
  size_t memory = 0;
  GTCO_RETURN_IF_ERROR(
      CudaResultToStatus(api_->device_total_mem(&memory, device_), "cuDeviceTotalMem"));
  info.memory_bytes = static_cast<int64_t>(memory);
  return info;
}

absl::Status CudaDriver::Activate() {
  if (!context_retained_) {
    CUcontext context = nullptr;
    GTCO_RETURN_IF_ERROR(
        Check(api_->primary_ctx_retain(&context, device_), "cuDevicePrimaryCtxRetain"));
    context_retained_ = true;
    context_ = context;
  }
  return Check(api_->ctx_set_current(static_cast<CUcontext>(context_)), "cuCtxSetCurrent");
}

absl::StatusOr<DevicePtr> CudaDriver::Alloc(size_t bytes) {
  CUdeviceptr pointer = 0;
  GTCO_RETURN_IF_ERROR(Check(api_->mem_alloc(&pointer, bytes == 0 ? 1 : bytes),
                             absl::StrCat("cuMemAlloc(", bytes, " bytes)")));
  return static_cast<DevicePtr>(pointer);
}

void CudaDriver::Free(DevicePtr pointer) {
  if (pointer != 0) (void)api_->mem_free(static_cast<CUdeviceptr>(pointer));
}

absl::Status CudaDriver::CopyToDevice(DevicePtr destination, const void* source, size_t bytes) {
  return Check(api_->memcpy_htod(static_cast<CUdeviceptr>(destination), source, bytes),
               "cuMemcpyHtoD");
}

absl::Status CudaDriver::CopyToHost(void* destination, DevicePtr source, size_t bytes) {
  return Check(api_->memcpy_dtoh(destination, static_cast<CUdeviceptr>(source), bytes),
               "cuMemcpyDtoH");
}

absl::Status CudaDriver::Fill(DevicePtr destination, uint8_t value, size_t bytes) {
  return Check(api_->memset_d8(static_cast<CUdeviceptr>(destination), value, bytes), "cuMemsetD8");
}

absl::StatusOr<CudaModule> CudaDriver::LoadModule(const std::string& image) {
  CUmodule module = nullptr;
  GTCO_RETURN_IF_ERROR(Check(api_->module_load_data(&module, image.data()), "cuModuleLoadData"));
  return module;
}

void CudaDriver::UnloadModule(CudaModule module) {
  if (module != nullptr) (void)api_->module_unload(module);
}

absl::StatusOr<CudaFunction> CudaDriver::GetFunction(CudaModule module, const std::string& name) {
  CUfunction function = nullptr;
  GTCO_RETURN_IF_ERROR(Check(api_->module_get_function(&function, module, name.c_str()),
                             absl::StrCat("cuModuleGetFunction('", name, "')")));
  return function;
}

absl::Status CudaDriver::SetMaxDynamicSharedBytes(CudaFunction function, int64_t bytes) {
  return Check(api_->func_set_attribute(function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                        static_cast<int>(bytes)),
               absl::StrCat("cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES, ", bytes, ")"));
}

absl::Status CudaDriver::Launch(CudaFunction function, const CudaLaunchDims& dims, void** params,
                                CudaStream stream) {
  return Check(api_->launch_kernel(
                   function, static_cast<unsigned>(dims.grid_x), static_cast<unsigned>(dims.grid_y),
                   static_cast<unsigned>(dims.grid_z), static_cast<unsigned>(dims.block_x),
                   static_cast<unsigned>(dims.block_y), static_cast<unsigned>(dims.block_z),
                   static_cast<unsigned>(dims.dynamic_shared_bytes), stream, params, nullptr),
               "cuLaunchKernel");
}

absl::StatusOr<CudaStream> CudaDriver::CreateStream() {
  CUstream stream = nullptr;
  GTCO_RETURN_IF_ERROR(
      Check(api_->stream_create(&stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate"));
  return stream;
}

void CudaDriver::DestroyStream(CudaStream stream) {
  if (stream != nullptr) (void)api_->stream_destroy(stream);
}

absl::Status CudaDriver::CopyToDeviceAsync(DevicePtr destination, const void* source, size_t bytes,
                                           CudaStream stream) {
  return Check(
      api_->memcpy_htod_async(static_cast<CUdeviceptr>(destination), source, bytes, stream),
      "cuMemcpyHtoDAsync");
}

absl::Status CudaDriver::CopyToHostAsync(void* destination, DevicePtr source, size_t bytes,
                                         CudaStream stream) {
  return Check(
      api_->memcpy_dtoh_async(destination, static_cast<CUdeviceptr>(source), bytes, stream),
      "cuMemcpyDtoHAsync");
}

absl::Status CudaDriver::FillAsync(DevicePtr destination, uint8_t value, size_t bytes,
                                   CudaStream stream) {
  return Check(api_->memset_d8_async(static_cast<CUdeviceptr>(destination), value, bytes, stream),
               "cuMemsetD8Async");
}

absl::Status CudaDriver::SynchronizeStream(CudaStream stream) {
  return Check(api_->stream_synchronize(stream), "cuStreamSynchronize");
}

absl::Status CudaDriver::BeginCapture(CudaStream stream) {
  return Check(api_->stream_begin_capture(stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL),
               "cuStreamBeginCapture");
}

absl::StatusOr<CudaGraphExec> CudaDriver::EndCapture(CudaStream stream) {
  CUgraph graph = nullptr;
  GTCO_RETURN_IF_ERROR(Check(api_->stream_end_capture(stream, &graph), "cuStreamEndCapture"));
  CUgraphExec exec = nullptr;
  const absl::Status instantiated =
      Check(api_->graph_instantiate(&exec, graph, 0), "cuGraphInstantiateWithFlags");
  (void)api_->graph_destroy(graph);
  GTCO_RETURN_IF_ERROR(instantiated);
  return exec;
}

absl::Status CudaDriver::LaunchGraph(CudaGraphExec graph, CudaStream stream) {
  return Check(api_->graph_launch(graph, stream), "cuGraphLaunch");
}

void CudaDriver::DestroyGraph(CudaGraphExec graph) {
  if (graph != nullptr) (void)api_->graph_exec_destroy(graph);
}

absl::Status CudaDriver::Synchronize() {
  return Check(api_->ctx_synchronize(), "cuCtxSynchronize");
}

absl::StatusOr<CudaEvent> CudaDriver::CreateEvent() {
  CUevent event = nullptr;
  GTCO_RETURN_IF_ERROR(Check(api_->event_create(&event, CU_EVENT_DEFAULT), "cuEventCreate"));
  return event;
}

void CudaDriver::DestroyEvent(CudaEvent event) {
  if (event != nullptr) (void)api_->event_destroy(event);
}

absl::Status CudaDriver::Record(CudaEvent event) {
  return Check(api_->event_record(event, nullptr), "cuEventRecord");
}

absl::StatusOr<double> CudaDriver::ElapsedSeconds(CudaEvent start, CudaEvent end) {
  GTCO_RETURN_IF_ERROR(Check(api_->event_synchronize(end), "cuEventSynchronize"));
  float milliseconds = 0;
  GTCO_RETURN_IF_ERROR(
      Check(api_->event_elapsed_time(&milliseconds, start, end), "cuEventElapsedTime"));
  return milliseconds * 1e-3;
}

absl::StatusOr<DeviceBuffer> DeviceBuffer::Allocate(CudaDriver* driver, size_t bytes) {
  GTCO_ASSIGN_OR_RETURN(DevicePtr pointer, driver->Alloc(bytes));
  DeviceBuffer buffer;
  buffer.driver_ = driver;
  buffer.pointer_ = pointer;
  buffer.bytes_ = bytes;
  return buffer;
}

DeviceBuffer::~DeviceBuffer() {
  if (driver_ != nullptr) driver_->Free(pointer_);
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
    : driver_(std::exchange(other.driver_, nullptr)),
      pointer_(std::exchange(other.pointer_, 0)),
      bytes_(std::exchange(other.bytes_, 0)) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    if (driver_ != nullptr) driver_->Free(pointer_);
    driver_ = std::exchange(other.driver_, nullptr);
    pointer_ = std::exchange(other.pointer_, 0);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

}  // namespace gtco::runtime
