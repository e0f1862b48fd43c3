// A fake libcuda.so.1 for testing the CUDA worker without a GPU: the driver entry points the
// worker resolves, over host memory, "running" a kernel by its name (the cubin NVRTC built is
// accepted and ignored). Kernels: gtco_probe (the measurer's self-test), fake_add_one
// (out = in + 1, one thread per element), fake_copy (out = in: a wrong result), fake_fault (an
// illegal address: every later call fails, like a lost context), fake_hang (never returns).
// Launches with more than 48 KiB of dynamic shared memory fail unless the function opted in.
// Streams are synchronous (their copies happen at the call); graph capture is not supported, as on
// a driver that refuses a recording, so the runtime launches step by step.
#include <cuda.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

CUresult g_sticky = CUDA_SUCCESS;  ///< a "kernel fault" that every later call reports

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

struct CUmod_st {
  int unused;
};
struct CUevent_st {
  double seconds;
};
struct CUctx_st {
  int unused;
};
struct CUfunc_st {
  std::string name;
  int max_dynamic_shared = 48 * 1024;
};

extern "C" {

CUresult cuInit(unsigned int) { return CUDA_SUCCESS; }
// NVRTC loads libcuda.so.1 itself and asks for the driver's private export tables: none here.
CUresult cuGetExportTable(const void** table, const CUuuid*) {
  *table = nullptr;
  return CUDA_ERROR_NOT_SUPPORTED;
}
CUresult cuDriverGetVersion(int* version) {
  *version = 12040;
  return CUDA_SUCCESS;
}
CUresult cuDeviceGetCount(int* count) {
  *count = 1;
  return CUDA_SUCCESS;
}
CUresult cuDeviceGet(CUdevice* device, int ordinal) {
  if (ordinal != 0) return CUDA_ERROR_INVALID_DEVICE;
  *device = 0;
  return CUDA_SUCCESS;
}
CUresult cuDeviceGetName(char* name, int length, CUdevice) {
  std::strncpy(name, "GTCO Fake GPU", static_cast<size_t>(length));
  return CUDA_SUCCESS;
}
CUresult cuDeviceGetAttribute(int* value, CUdevice_attribute attribute, CUdevice) {
  switch (attribute) {
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
      *value = 9;
      break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR:
      *value = 0;
      break;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT:
      *value = 4;
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN:
      *value = 227 * 1024;
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR:
      *value = 228 * 1024;
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK:
      *value = 65536;
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR:
      *value = 65536;
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
      *value = 1024;
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR:
      *value = 2048;
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR:
      *value = 32;
      break;
    case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE:
      *value = 2 * 1024 * 1024;
      break;
    default:
      return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}
CUresult cuDeviceTotalMem(size_t* bytes, CUdevice) {
  *bytes = size_t{16} << 30;
  return CUDA_SUCCESS;
}
CUresult cuDevicePrimaryCtxRetain(CUcontext* context, CUdevice) {
  static CUctx_st primary;
  *context = &primary;
  return CUDA_SUCCESS;
}
CUresult cuDevicePrimaryCtxRelease(CUdevice) { return CUDA_SUCCESS; }
CUresult cuCtxSetCurrent(CUcontext) { return g_sticky; }
CUresult cuCtxSynchronize() { return g_sticky; }

CUresult cuMemAlloc(CUdeviceptr* pointer, size_t bytes) {
  if (g_sticky != CUDA_SUCCESS) return g_sticky;
  void* memory = std::malloc(bytes);
  if (memory == nullptr) return CUDA_ERROR_OUT_OF_MEMORY;
  *pointer = reinterpret_cast<CUdeviceptr>(memory);
  return CUDA_SUCCESS;
}
CUresult cuMemFree(CUdeviceptr pointer) {
  std::free(reinterpret_cast<void*>(pointer));
  return g_sticky;
}
CUresult cuMemcpyHtoD(CUdeviceptr destination, const void* source, size_t bytes) {
  if (g_sticky != CUDA_SUCCESS) return g_sticky;
  std::memcpy(reinterpret_cast<void*>(destination), source, bytes);
  return CUDA_SUCCESS;
}
CUresult cuMemcpyDtoH(void* destination, CUdeviceptr source, size_t bytes) {
  if (g_sticky != CUDA_SUCCESS) return g_sticky;
  std::memcpy(destination, reinterpret_cast<const void*>(source), bytes);
  return CUDA_SUCCESS;
}
CUresult cuMemsetD8(CUdeviceptr destination, unsigned char value, size_t bytes) {
  if (g_sticky != CUDA_SUCCESS) return g_sticky;
  std::memset(reinterpret_cast<void*>(destination), value, bytes);
  return CUDA_SUCCESS;
}

CUresult cuModuleLoadData(CUmodule* module, const void* image) {
  if (g_sticky != CUDA_SUCCESS) return g_sticky;
  // A cubin is an ELF file.
  if (std::memcmp(image,
                  "\x7f"
                  "ELF",
                  4) != 0)
    return CUDA_ERROR_INVALID_IMAGE;
  *module = new CUmod_st{};
  return CUDA_SUCCESS;
}
CUresult cuModuleUnload(CUmodule module) {
  delete module;
  return CUDA_SUCCESS;
}
CUresult cuModuleGetFunction(CUfunction* function, CUmodule, const char* name) {
  if (g_sticky != CUDA_SUCCESS) return g_sticky;
  auto* fake = new CUfunc_st;  // leaked with the module, as a test double may
  fake->name = name;
  *function = fake;
  return CUDA_SUCCESS;
}
CUresult cuFuncSetAttribute(CUfunction function, CUfunction_attribute attribute, int value) {
  if (attribute != CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES) return CUDA_ERROR_INVALID_VALUE;
  if (value > 227 * 1024) return CUDA_ERROR_INVALID_VALUE;
  function->max_dynamic_shared = value;
  return g_sticky;
}

CUresult cuLaunchKernel(CUfunction function, unsigned grid_x, unsigned grid_y, unsigned grid_z,
                        unsigned block_x, unsigned block_y, unsigned block_z, unsigned shared,
                        CUstream, void** params, void**) {
  if (g_sticky != CUDA_SUCCESS) return g_sticky;
  if (static_cast<int>(shared) > function->max_dynamic_shared) return CUDA_ERROR_INVALID_VALUE;
  if (block_x * block_y * block_z > 1024) return CUDA_ERROR_INVALID_VALUE;
  const size_t threads = size_t{grid_x} * grid_y * grid_z * block_x * block_y * block_z;
  const std::string& name = function->name;
  if (name == "gtco_probe") {
    int* out = *static_cast<int**>(params[0]);
    for (size_t idx = 0; idx < threads; ++idx) out[idx] = 3 * static_cast<int>(idx) + 1;
  } else if (name == "fake_add_one" || name == "fake_copy") {
    const float* in = *static_cast<const float**>(params[0]);
    float* out = *static_cast<float**>(params[1]);
    const float add = name == "fake_add_one" ? 1.0f : 0.0f;
    for (size_t idx = 0; idx < threads; ++idx) out[idx] = in[idx] + add;
  } else if (name == "fake_fault") {
    g_sticky = CUDA_ERROR_ILLEGAL_ADDRESS;  // reported by the next synchronizing call
  } else if (name == "fake_hang") {
    while (true) ::pause();
  } else {
    return CUDA_ERROR_NOT_FOUND;
  }
  return CUDA_SUCCESS;
}

CUresult cuStreamCreate(CUstream* stream, unsigned int) {
  static int dummy = 0;
  *stream = reinterpret_cast<CUstream>(&dummy);
  return g_sticky;
}
CUresult cuStreamDestroy(CUstream) { return CUDA_SUCCESS; }
CUresult cuStreamSynchronize(CUstream) { return g_sticky; }
CUresult cuMemcpyHtoDAsync(CUdeviceptr destination, const void* source, size_t bytes, CUstream) {
  return cuMemcpyHtoD(destination, source, bytes);
}
CUresult cuMemcpyDtoHAsync(void* destination, CUdeviceptr source, size_t bytes, CUstream) {
  return cuMemcpyDtoH(destination, source, bytes);
}
CUresult cuMemsetD8Async(CUdeviceptr destination, unsigned char value, size_t bytes, CUstream) {
  return cuMemsetD8(destination, value, bytes);
}
CUresult cuStreamBeginCapture(CUstream, CUstreamCaptureMode) { return CUDA_ERROR_NOT_SUPPORTED; }
CUresult cuStreamEndCapture(CUstream, CUgraph*) { return CUDA_ERROR_NOT_SUPPORTED; }
CUresult cuGraphInstantiateWithFlags(CUgraphExec*, CUgraph, unsigned long long) {
  return CUDA_ERROR_NOT_SUPPORTED;
}
CUresult cuGraphLaunch(CUgraphExec, CUstream) { return CUDA_ERROR_NOT_SUPPORTED; }
CUresult cuGraphExecDestroy(CUgraphExec) { return CUDA_SUCCESS; }
CUresult cuGraphDestroy(CUgraph) { return CUDA_SUCCESS; }

CUresult cuEventCreate(CUevent* event, unsigned int) {
  *event = new CUevent_st{0.0};
  return CUDA_SUCCESS;
}
CUresult cuEventDestroy(CUevent event) {
  delete event;
  return CUDA_SUCCESS;
}
CUresult cuEventRecord(CUevent event, CUstream) {
  if (g_sticky != CUDA_SUCCESS) return g_sticky;
  event->seconds = Now();
  return CUDA_SUCCESS;
}
CUresult cuEventSynchronize(CUevent) { return g_sticky; }
CUresult cuEventElapsedTime(float* milliseconds, CUevent start, CUevent end) {
  if (g_sticky != CUDA_SUCCESS) return g_sticky;
  *milliseconds = static_cast<float>((end->seconds - start->seconds) * 1e3);
  return CUDA_SUCCESS;
}

CUresult cuGetErrorName(CUresult error, const char** name) {
  switch (error) {
    case CUDA_ERROR_ILLEGAL_ADDRESS:
      *name = "CUDA_ERROR_ILLEGAL_ADDRESS";
      break;
    case CUDA_ERROR_INVALID_VALUE:
      *name = "CUDA_ERROR_INVALID_VALUE";
      break;
    default:
      return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}
CUresult cuGetErrorString(CUresult error, const char** description) {
  switch (error) {
    case CUDA_ERROR_ILLEGAL_ADDRESS:
      *description = "an illegal memory access was encountered";
      break;
    case CUDA_ERROR_INVALID_VALUE:
      *description = "invalid argument";
      break;
    default:
      return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

}  // extern "C"
