// Compile, verify and time one CUDA candidate.
#include "worker/cuda_measure.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iterator>
#include <random>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/codegen/cuda/nvrtc.h"
#include "common/ir/conv.h"
#include "common/ir/reference.h"
#include "common/util/logging.h"
#include "common/util/status.h"
#include "runtime/cuda_arch.h"

namespace gtco::worker {
namespace {

constexpr size_t kMaxCachedKernels = 64;
constexpr int64_t kMaxReferenceBytes = int64_t{1} << 30;
constexpr int64_t kDefaultMaxDynamicShared = 48 * 1024;
constexpr int kMaxBatch = 32;            ///< timed launches between host synchronizations
constexpr double kWarmupSeconds = 0.01;  ///< GPU time spent warming up before timing
constexpr int kMaxWarmupLaunches = 100;
/// "cuda_mm_tf32/" and "cuda_mm_tf32_split/" (the same TF32 products, K split over a cluster).
constexpr const char* kTf32Sketches[] = {"cuda_mm_tf32/", "cuda_mm_tf32_split/"};
constexpr const char* kTf32ConvSketch = "cuda_conv_tf32/";

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

/// The launch geometry of `launch`, checked against `hw`'s limits (unset y and z mean 1).
absl::StatusOr<CudaLaunchDims> LaunchDimsOf(const gtco::v1::CudaLaunch& launch,
                                            const target::HardwareInfo& hw) {
  CudaLaunchDims dims;
  const auto or_one = [](int64_t value) { return value == 0 ? 1 : value; };
  dims.grid_x = launch.grid_x();
  dims.grid_y = or_one(launch.grid_y());
  dims.grid_z = or_one(launch.grid_z());
  dims.block_x = launch.block_x();
  dims.block_y = static_cast<int>(or_one(launch.block_y()));
  dims.block_z = static_cast<int>(or_one(launch.block_z()));
  dims.dynamic_shared_bytes = launch.dynamic_shared_bytes();
  const std::string geometry =
      absl::StrCat("grid (", dims.grid_x, ", ", dims.grid_y, ", ", dims.grid_z, "), block (",
                   dims.block_x, ", ", dims.block_y, ", ", dims.block_z, ")");
  if (dims.grid_x < 1 || dims.grid_y < 1 || dims.grid_z < 1 || dims.block_x < 1 ||
      dims.block_y < 1 || dims.block_z < 1 || dims.dynamic_shared_bytes < 0) {
    return absl::InvalidArgumentError(absl::StrCat("invalid launch geometry: ", geometry));
  }
  if (dims.grid_x > 0x7FFFFFFF || dims.grid_y > 65535 || dims.grid_z > 65535) {
    return absl::InvalidArgumentError(absl::StrCat("grid too large: ", geometry));
  }
  const int64_t threads = int64_t{dims.block_x} * dims.block_y * dims.block_z;
  if (hw.max_threads_per_block > 0 && threads > hw.max_threads_per_block) {
    return absl::InvalidArgumentError(absl::StrCat(geometry, " has ", threads,
                                                   " threads; this GPU allows ",
                                                   hw.max_threads_per_block, " per block"));
  }
  if (hw.shared_bytes_per_block > 0 && dims.dynamic_shared_bytes > hw.shared_bytes_per_block) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the launch asks for ", dims.dynamic_shared_bytes, " bytes of dynamic shared memory; ",
        hw.cpu_model, " allows ", hw.shared_bytes_per_block, " per block"));
  }
  return dims;
}

/// The sketch name of a trace's text ("cuda_mm_tf32/v1;bm=128;..." -> "cuda_mm_tf32/v1").
std::string SketchOf(const std::string& trace) { return trace.substr(0, trace.find(';')); }

/// A kernel that writes out[i] = 3 i + 1, to check that NVRTC's cubins run on this driver.
constexpr const char* kProbeSource = R"(
extern "C" __global__ void gtco_probe(int* out) { out[threadIdx.x] = 3 * threadIdx.x + 1; }
)";

}  // namespace

MeasureOptions DefaultCudaMeasureOptions() {
  MeasureOptions options;
  options.min_seconds = 0.02;
  options.min_repeats = 10;
  options.max_repeats = 2000;
  options.max_seconds = 2.0;
  return options;
}

absl::StatusOr<std::string> CudaArchFor(const target::HardwareInfo& hw,
                                        const std::string& requested) {
  const std::string own = absl::StrCat("sm_", hw.SmVersion());
  if (requested.empty()) return own;
  GTCO_ASSIGN_OR_RETURN(const runtime::CudaArch arch, runtime::ParseCudaArch(requested));
  if (!runtime::CudaArchRunsOn(arch, hw.sm_major, hw.sm_minor)) {
    return absl::InvalidArgumentError(absl::StrCat("the candidate is built for ", requested,
                                                   ", which does not run on ", hw.cpu_model, " (",
                                                   own, ")"));
  }
  return requested;
}

void CudaTolerance(const ir::Workload& w, const std::string& trace, double* rtol, double* atol) {
  ir::DefaultTolerance(w, rtol, atol);  // includes one rounding step of an f16/bf16 output
  // The K of the sum each output is: the matmul's, or a conv's C/groups*R*S (its implicit GEMM).
  int64_t tf32_k = 0;
  const bool tf32_matmul = std::any_of(
      std::begin(kTf32Sketches), std::end(kTf32Sketches),
      [&](const char* prefix) { return SketchOf(trace).rfind(prefix, 0) == 0; });
  if (w.anchor == ir::AnchorKind::kMatMul && tf32_matmul) {
    tf32_k = w.matmul.k;
  } else if (w.anchor == ir::AnchorKind::kConv &&
             SketchOf(trace).rfind(kTf32ConvSketch, 0) == 0) {
    tf32_k = ir::ConvGemmView(w.conv).k;
  }
  if (tf32_k > 0) {
    // Products of inputs in [-1, 1] carry ~5e-4 relative error each (inputs rounded to TF32;
    // twice that truncated), so a sum of k has an error of ~4e-4 sqrt(k) standard deviations
    // (k values of magnitude 1/3): 3e-3 sqrt(k) keeps even truncation far out in the tail over
    // millions of outputs, while a wrong kernel is off by ~sqrt(k)/3.
    const double scale = std::sqrt(static_cast<double>(tf32_k));
    *rtol = std::max(*rtol, 1e-3 * scale);
    *atol = std::max(*atol, 3e-3 * scale);
  }
}

CudaMeasurer::CudaMeasurer(std::unique_ptr<CudaDriver> driver, target::HardwareInfo hardware,
                           MeasureOptions options)
    : driver_(std::move(driver)), hardware_(std::move(hardware)), options_(options) {
  seed_ = options.seed != 0 ? options.seed : std::random_device{}();
}

absl::StatusOr<target::HardwareInfo> ReadHardware(const CudaDriver& driver) {
  GTCO_ASSIGN_OR_RETURN(const runtime::CudaDeviceFacts facts, driver.ReadDevice());
  target::HardwareInfo info;
  info.target = target::Target::kCuda;
  info.cores = 1;
  info.cpu_model = facts.name;
  info.sm_major = facts.sm_major;
  info.sm_minor = facts.sm_minor;
  info.sm_count = facts.sm_count;
  info.shared_bytes_per_block = facts.shared_bytes_per_block;
  info.shared_bytes_per_sm = facts.shared_bytes_per_sm;
  info.registers_per_block = facts.registers_per_block;
  info.registers_per_sm = facts.registers_per_sm;
  info.max_threads_per_block = facts.max_threads_per_block;
  info.max_threads_per_sm = facts.max_threads_per_sm;
  info.max_blocks_per_sm = facts.max_blocks_per_sm;
  info.l2_bytes = facts.l2_bytes;
  info.memory_bytes = facts.memory_bytes;
  return info;
}

CudaMeasurer::~CudaMeasurer() {
  for (CudaEvent event : events_) driver_->DestroyEvent(event);
  for (auto& [key, kernel] : kernels_) driver_->UnloadModule(kernel.module);
}

absl::StatusOr<std::unique_ptr<CudaMeasurer>> CudaMeasurer::Create(int device,
                                                                   MeasureOptions options) {
  GTCO_ASSIGN_OR_RETURN(std::unique_ptr<CudaDriver> driver, CudaDriver::Open(device));
  GTCO_ASSIGN_OR_RETURN(target::HardwareInfo hardware, ReadHardware(*driver));
  GTCO_RETURN_IF_ERROR(driver->Activate());
  std::unique_ptr<CudaMeasurer> measurer(
      new CudaMeasurer(std::move(driver), std::move(hardware), options));
  for (int idx = 0; idx < 2 * kMaxBatch; ++idx) {
    GTCO_ASSIGN_OR_RETURN(CudaEvent event, measurer->driver_->CreateEvent());
    measurer->events_.push_back(event);
  }
  GTCO_RETURN_IF_ERROR(measurer->SelfTest());
  return measurer;
}

absl::Status CudaMeasurer::SelfTest() {
  if (absl::Status nvrtc = codegen::NvrtcLoadStatus(); !nvrtc.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("NVRTC is needed to compile candidates: ", nvrtc.message()));
  }
  const std::string arch = absl::StrCat("sm_", hardware_.SmVersion());
  const auto failed = [&](const absl::Status& status) {
    return absl::FailedPreconditionError(absl::StrCat(
        hardware_.cpu_model, " cannot run kernels that NVRTC ", codegen::NvrtcVersion(),
        " builds for ", arch, " with the NVIDIA driver for CUDA ", driver_->DriverVersion(),
        " (update the driver): ", status.message()));
  };
  absl::StatusOr<codegen::CompiledCuda> compiled =
      codegen::CompileCuda(kProbeSource, "gtco_probe", arch);
  if (!compiled.ok()) return failed(compiled.status());
  absl::StatusOr<CudaModule> module = driver_->LoadModule(compiled->cubin);
  if (!module.ok()) return failed(module.status());
  constexpr int kThreads = 32;
  std::vector<int32_t> values(kThreads, 0);
  absl::Status status = [&]() -> absl::Status {
    GTCO_ASSIGN_OR_RETURN(CudaFunction function, driver_->GetFunction(*module, "gtco_probe"));
    GTCO_ASSIGN_OR_RETURN(DeviceBuffer out,
                          DeviceBuffer::Allocate(driver_.get(), sizeof(values[0]) * kThreads));
    DevicePtr pointer = out.pointer();
    void* params[] = {&pointer};
    CudaLaunchDims dims;
    dims.block_x = kThreads;
    GTCO_RETURN_IF_ERROR(driver_->Launch(function, dims, params));
    GTCO_RETURN_IF_ERROR(driver_->Synchronize());
    return driver_->CopyToHost(values.data(), pointer, sizeof(values[0]) * kThreads);
  }();
  driver_->UnloadModule(*module);
  if (!status.ok()) return failed(status);
  for (int idx = 0; idx < kThreads; ++idx) {
    if (values[idx] != 3 * idx + 1) {
      return failed(absl::InternalError(
          absl::StrCat("the probe kernel wrote ", values[idx], " at index ", idx)));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<CudaMeasurer::Kernel*> CudaMeasurer::LoadKernel(const gtco::v1::Candidate& candidate,
                                                               const std::string& arch,
                                                               bool* compile_error) {
  *compile_error = false;
  const std::string key = absl::StrCat(
      candidate.program_hash().empty() ? candidate.program() : candidate.program_hash(), "|", arch,
      "|", candidate.entry());
  auto found = kernels_.find(key);
  if (found != kernels_.end()) return &found->second;
  absl::StatusOr<codegen::CompiledCuda> compiled =
      codegen::CompileCuda(candidate.program(), candidate.entry(), arch);
  if (!compiled.ok()) {
    *compile_error = true;
    return compiled.status();
  }
  GTCO_LOG(kDebug, candidate.candidate_id()
                       << ": " << compiled->usage.registers << " registers, "
                       << compiled->usage.spill_store_bytes << " bytes spilled, "
                       << compiled->compile_seconds << " s to compile");
  Kernel kernel;
  kernel.compile_seconds = compiled->compile_seconds;
  GTCO_ASSIGN_OR_RETURN(kernel.module, driver_->LoadModule(compiled->cubin));
  absl::StatusOr<CudaFunction> function = driver_->GetFunction(kernel.module, candidate.entry());
  if (!function.ok()) {
    driver_->UnloadModule(kernel.module);
    return function.status();
  }
  kernel.function = *function;
  if (kernels_.size() >= kMaxCachedKernels) {
    driver_->UnloadModule(kernels_[kernel_order_.front()].module);
    kernels_.erase(kernel_order_.front());
    kernel_order_.pop_front();
  }
  kernel_order_.push_back(key);
  return &(kernels_[key] = kernel);
}

absl::StatusOr<const CudaMeasurer::ReferenceData*> CudaMeasurer::Reference(
    const gtco::v1::Candidate& candidate) {
  auto found = references_.find(candidate.workload_key());
  if (found != references_.end()) return found->second.get();
  GTCO_ASSIGN_OR_RETURN(ir::Workload workload, ir::ParseWorkload(candidate.workload()));
  auto data = std::make_unique<ReferenceData>();
  data->workload = workload;
  std::vector<std::vector<float>> values = ir::RandomInputs(workload, seed_++);
  std::vector<ir::TypedBuffer> typed_inputs;
  for (size_t input_idx = 0; input_idx < values.size(); ++input_idx) {
    const ir::DType dtype = workload.inputs[input_idx].dtype;
    RoundToDType(dtype, &values[input_idx]);
    GTCO_ASSIGN_OR_RETURN(HostTensor input, HostTensor::FromValues(dtype, values[input_idx]));
    data->inputs.push_back(std::move(input));
    typed_inputs.push_back(ir::TypedBuffer::FromValues(dtype, values[input_idx]));
  }
  if (!IsKernelDType(workload.output.dtype)) {
    return absl::InvalidArgumentError(
        absl::StrCat("GPU kernels write no ", ir::DTypeName(workload.output.dtype), " outputs"));
  }
  data->expected = HostTensor::FromTypedBuffer(ir::ComputeTypedReference(workload, typed_inputs));
  data->bytes = static_cast<int64_t>(data->expected.bytes());
  for (const HostTensor& input : data->inputs) data->bytes += static_cast<int64_t>(input.bytes());
  if (reference_bytes_ + data->bytes > kMaxReferenceBytes) {
    references_.clear();
    reference_bytes_ = 0;
  }
  reference_bytes_ += data->bytes;
  const ReferenceData* pointer = data.get();
  references_[candidate.workload_key()] = std::move(data);
  return pointer;
}

absl::StatusOr<CudaMeasurer::Arguments> CudaMeasurer::Upload(const ReferenceData& data) {
  Arguments arguments;
  for (const HostTensor& input : data.inputs) {
    GTCO_ASSIGN_OR_RETURN(DeviceBuffer buffer,
                          DeviceBuffer::Allocate(driver_.get(), input.bytes()));
    GTCO_RETURN_IF_ERROR(driver_->CopyToDevice(buffer.pointer(), input.data(), input.bytes()));
    arguments.buffers.push_back(std::move(buffer));
  }
  GTCO_ASSIGN_OR_RETURN(HostTensor sentinel,
                        HostTensor::Sentinel(data.expected.dtype(), data.expected.size()));
  GTCO_ASSIGN_OR_RETURN(DeviceBuffer output,
                        DeviceBuffer::Allocate(driver_.get(), sentinel.bytes()));
  GTCO_RETURN_IF_ERROR(driver_->CopyToDevice(output.pointer(), sentinel.data(), sentinel.bytes()));
  arguments.buffers.push_back(std::move(output));
  for (const DeviceBuffer& buffer : arguments.buffers) {
    arguments.pointers.push_back(buffer.pointer());
  }
  for (DevicePtr& pointer : arguments.pointers) arguments.params.push_back(&pointer);
  return arguments;
}

absl::Status CudaMeasurer::RunAndVerify(const Kernel& kernel, const CudaLaunchDims& dims,
                                        const ReferenceData& data, Arguments* arguments,
                                        double rtol, double atol) {
  GTCO_RETURN_IF_ERROR(driver_->Launch(kernel.function, dims, arguments->params.data()));
  GTCO_RETURN_IF_ERROR(driver_->Synchronize());
  GTCO_ASSIGN_OR_RETURN(HostTensor actual,
                        HostTensor::Zeros(data.expected.dtype(), data.expected.size()));
  GTCO_RETURN_IF_ERROR(
      driver_->CopyToHost(actual.data(), arguments->pointers.back(), actual.bytes()));
  return CompareHostTensors(data.expected, actual, rtol, atol);
}

absl::StatusOr<std::vector<double>> CudaMeasurer::Time(const Kernel& kernel,
                                                       const CudaLaunchDims& dims,
                                                       Arguments* arguments) {
  void** params = arguments->params.data();
  if (flush_.bytes() == 0) {
    const int64_t l2 = hardware_.l2_bytes > 0 ? hardware_.l2_bytes : int64_t{64} << 20;
    GTCO_ASSIGN_OR_RETURN(flush_, DeviceBuffer::Allocate(driver_.get(), 2 * l2));
  }
  // Warm-up: one timed launch sizes the rest, about kWarmupSeconds of GPU time in all.
  GTCO_RETURN_IF_ERROR(driver_->Record(events_[0]));
  GTCO_RETURN_IF_ERROR(driver_->Launch(kernel.function, dims, params));
  GTCO_RETURN_IF_ERROR(driver_->Record(events_[1]));
  GTCO_ASSIGN_OR_RETURN(double first, driver_->ElapsedSeconds(events_[0], events_[1]));
  const int warmups =
      std::clamp(static_cast<int>(kWarmupSeconds / std::max(first, 1e-6)), 1, kMaxWarmupLaunches);
  for (int launch = 0; launch < warmups; ++launch) {
    GTCO_RETURN_IF_ERROR(driver_->Launch(kernel.function, dims, params));
  }
  GTCO_RETURN_IF_ERROR(driver_->Synchronize());

  std::vector<double> samples;
  double measured = 0;
  const auto start = Clock::now();
  while (true) {
    const int done = static_cast<int>(samples.size());
    const double to_go = (options_.min_seconds - measured) / std::max(first, 1e-6);
    const int wanted =
        std::max(options_.min_repeats - done, static_cast<int>(std::clamp(to_go, 0.0, 1e6)) + 1);
    const int batch = std::clamp(std::min(wanted, options_.max_repeats - done), 1, kMaxBatch);
    for (int idx = 0; idx < batch; ++idx) {
      // A new fill value each time, so no cache or compression can keep the old contents.
      GTCO_RETURN_IF_ERROR(
          driver_->Fill(flush_.pointer(), static_cast<uint8_t>(done + idx), flush_.bytes()));
      GTCO_RETURN_IF_ERROR(driver_->Record(events_[2 * idx]));
      GTCO_RETURN_IF_ERROR(driver_->Launch(kernel.function, dims, params));
      GTCO_RETURN_IF_ERROR(driver_->Record(events_[2 * idx + 1]));
    }
    for (int idx = 0; idx < batch; ++idx) {
      GTCO_ASSIGN_OR_RETURN(double seconds,
                            driver_->ElapsedSeconds(events_[2 * idx], events_[2 * idx + 1]));
      samples.push_back(seconds);
      measured += seconds;
    }
    const int count = static_cast<int>(samples.size());
    const bool enough = measured >= options_.min_seconds && count >= options_.min_repeats;
    if (enough || count >= options_.max_repeats || SecondsSince(start) > options_.max_seconds) {
      break;
    }
  }
  GTCO_RETURN_IF_ERROR(driver_->Synchronize());
  return samples;
}

absl::Status CudaMeasurer::CheckCandidate(const gtco::v1::Candidate& candidate, std::string* arch,
                                          CudaLaunchDims* dims) const {
  if (candidate.language() != "cuda-c") {
    return absl::InvalidArgumentError(
        absl::StrCat("this CUDA worker measures CUDA C candidates (language 'cuda-c'), not '",
                     candidate.language().empty() ? "llvm-ir" : candidate.language(), "'"));
  }
  absl::StatusOr<std::string> resolved = CudaArchFor(hardware_, candidate.launch().arch());
  if (!resolved.ok()) return absl::FailedPreconditionError(resolved.status().message());
  *arch = *resolved;
  absl::StatusOr<CudaLaunchDims> checked = LaunchDimsOf(candidate.launch(), hardware_);
  if (!checked.ok()) return absl::FailedPreconditionError(checked.status().message());
  *dims = *checked;
  return absl::OkStatus();
}

gtco::v1::MeasureResult CudaMeasurer::Measure(const gtco::v1::Candidate& candidate) {
  using gtco::v1::ERROR_KIND_COMPILE;
  using gtco::v1::ERROR_KIND_RUNTIME;
  if (!Usable()) {
    return FailedResult(candidate, ERROR_KIND_RUNTIME,
                        "the CUDA context was lost to an earlier candidate's fault");
  }
  std::string arch;
  CudaLaunchDims dims;
  absl::Status checked = CheckCandidate(candidate, &arch, &dims);
  if (!checked.ok()) {
    return FailedResult(candidate,
                        absl::IsInvalidArgument(checked) ? ERROR_KIND_COMPILE : ERROR_KIND_RUNTIME,
                        std::string(checked.message()));
  }
  const auto compile_start = Clock::now();
  bool compile_error = false;
  absl::StatusOr<Kernel*> kernel = LoadKernel(candidate, arch, &compile_error);
  if (!kernel.ok()) {
    gtco::v1::MeasureResult result =
        FailedResult(candidate, compile_error ? ERROR_KIND_COMPILE : ERROR_KIND_RUNTIME,
                     absl::StrCat(compile_error ? "compile failed: " : "cannot load the kernel: ",
                                  kernel.status().message()));
    result.set_compile_seconds(SecondsSince(compile_start));
    return result;
  }
  const auto failure = [&](gtco::v1::ErrorKind kind, absl::string_view message) {
    gtco::v1::MeasureResult result = FailedResult(candidate, kind, std::string(message));
    result.set_compile_seconds((*kernel)->compile_seconds);
    return result;
  };
  if (dims.dynamic_shared_bytes > (*kernel)->max_dynamic_shared_bytes) {
    absl::Status allowed =
        driver_->SetMaxDynamicSharedBytes((*kernel)->function, dims.dynamic_shared_bytes);
    if (!allowed.ok()) return failure(ERROR_KIND_RUNTIME, allowed.message());
    (*kernel)->max_dynamic_shared_bytes = dims.dynamic_shared_bytes;
  }
  absl::StatusOr<const ReferenceData*> reference = Reference(candidate);
  if (!reference.ok()) {
    return failure(ERROR_KIND_RUNTIME,
                   absl::StrCat("bad workload: ", reference.status().message()));
  }
  double rtol = 0, atol = 0;
  CudaTolerance((*reference)->workload, candidate.trace(), &rtol, &atol);
  absl::StatusOr<Arguments> arguments = Upload(**reference);
  if (!arguments.ok()) return failure(ERROR_KIND_RUNTIME, arguments.status().message());
  absl::Status verified = RunAndVerify(**kernel, dims, **reference, &*arguments, rtol, atol);
  if (absl::IsFailedPrecondition(verified)) {
    return failure(gtco::v1::ERROR_KIND_WRONG_RESULT,
                   absl::StrCat("output differs from the reference: ", verified.message()));
  }
  if (!verified.ok()) return failure(ERROR_KIND_RUNTIME, verified.message());
  absl::StatusOr<std::vector<double>> samples = Time(**kernel, dims, &*arguments);
  if (!samples.ok()) return failure(ERROR_KIND_RUNTIME, samples.status().message());
  gtco::v1::MeasureResult result;
  result.set_candidate_id(candidate.candidate_id());
  result.set_ok(true);
  result.set_verified(true);
  result.set_compile_seconds((*kernel)->compile_seconds);
  FillStatistics(std::move(*samples), &result);
  return result;
}

}  // namespace gtco::worker
