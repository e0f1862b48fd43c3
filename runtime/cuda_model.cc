// CUDA artifacts: modules from the code section, weights and one arena on the GPU, steps launched
// in order on one stream, replayed as a CUDA graph after the first run.
#include "runtime/cuda_model.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/util/status.h"
#include "runtime/cuda_arch.h"
#include "runtime/cuda_steps.h"
#include "runtime/model.h"
#include "runtime/strides.h"

namespace gtco::runtime {
namespace {

constexpr int kStepThreads = 256;
constexpr int64_t kMaxStepBlocks = 1 << 16;  ///< the kernels loop over the rest (grid stride)

CudaLaunchDims StepDims(int64_t work) {
  CudaLaunchDims dims;
  dims.block_x = kStepThreads;
  dims.grid_x = std::clamp<int64_t>((work + kStepThreads - 1) / kStepThreads, 1, kMaxStepBlocks);
  return dims;
}

CudaCopyParams CopyParams(const std::vector<int64_t>& shape, const std::vector<int64_t>& src,
                          const std::vector<int64_t>& dst, int64_t src_base, int64_t dst_base,
                          int64_t elem_bytes) {
  CudaCopyParams p{};
  p.rank = static_cast<int32_t>(shape.size());
  p.total = 1;
  for (size_t dim = 0; dim < shape.size(); ++dim) {
    p.shape[dim] = shape[dim];
    p.src_stride[dim] = src[dim];
    p.dst_stride[dim] = dst[dim];
    p.total *= shape[dim];
  }
  p.src_base = src_base;
  p.dst_base = dst_base;
  p.elem_bytes = static_cast<int32_t>(elem_bytes);
  return p;
}

}  // namespace

absl::StatusOr<std::unique_ptr<CudaExecutor>> CudaExecutor::Create(const Manifest& m,
                                                                   std::string_view code,
                                                                   std::string_view weights) {
  auto needs_gpu = [&m](const absl::Status& why) {
    return absl::FailedPreconditionError(absl::StrCat(
        "this artifact runs on an NVIDIA GPU (", m.cuda_arch, "): ", why.message()));
  };
  absl::StatusOr<std::unique_ptr<CudaDriver>> driver = CudaDriver::Open(0);
  if (!driver.ok()) return needs_gpu(driver.status());
  GTCO_RETURN_IF_ERROR((*driver)->Activate());
  GTCO_ASSIGN_OR_RETURN(const CudaDeviceFacts device, (*driver)->ReadDevice());
  GTCO_ASSIGN_OR_RETURN(const CudaArch arch, ParseCudaArch(m.cuda_arch));
  if (!CudaArchRunsOn(arch, device.sm_major, device.sm_minor)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "this artifact was compiled for ", m.cuda_arch, ", which the GPU here (", device.name,
        ", compute capability ", device.sm_major, ".", device.sm_minor,
        ") cannot run; export it for sm_", device.sm_major, device.sm_minor));
  }
  for (const StepSpec& step : m.steps) {
    for (int tensor : step.outputs) {
      if (m.tensors[tensor].shape.size() > static_cast<size_t>(kCudaMaxRank)) {
        return absl::InvalidArgumentError(absl::StrCat(
            "step '", step.node, "' has more than ", kCudaMaxRank, " dimensions"));
      }
    }
  }
  std::unique_ptr<CudaExecutor> executor(new CudaExecutor(m, std::move(*driver)));
  GTCO_RETURN_IF_ERROR(executor->Prepare(code, weights));
  return executor;
}

/// False when GTCO_CUDA_GRAPHS is "0": every run launches its steps one by one.
static bool GraphsEnabled() {
  const char* setting = std::getenv("GTCO_CUDA_GRAPHS");
  return setting == nullptr || std::string(setting) != "0";
}

CudaExecutor::~CudaExecutor() {
  if (driver_ == nullptr) return;
  (void)driver_->Activate();
  // A run that returned early (a launch error) may have left work queued on the stream.
  if (stream_ != nullptr) (void)driver_->SynchronizeStream(stream_);
  driver_->DestroyGraph(graph_);
  driver_->DestroyStream(stream_);
  weights_ = DeviceBuffer();
  arena_ = DeviceBuffer();
  gather_errors_ = DeviceBuffer();
  for (CudaModule module : modules_) driver_->UnloadModule(module);
}

absl::Status CudaExecutor::Prepare(std::string_view code, std::string_view weights) {
  const Manifest& m = manifest_;
  auto load = [&](int64_t offset, int64_t bytes,
                  const std::string& what) -> absl::StatusOr<CudaModule> {
    absl::StatusOr<CudaModule> module =
        driver_->LoadModule(std::string(code.substr(offset, bytes)));
    if (!module.ok()) {
      return absl::DataLossError(
          absl::StrCat("the cubin of ", what, " does not load: ", module.status().message()));
    }
    modules_.push_back(*module);
    return *module;
  };
  auto function = [&](CudaModule module, const std::string& name) -> absl::StatusOr<CudaFunction> {
    absl::StatusOr<CudaFunction> found = driver_->GetFunction(module, name);
    if (!found.ok()) {
      return absl::DataLossError(absl::StrCat("kernel '", name, "' is missing from its cubin: ",
                                              found.status().message()));
    }
    return *found;
  };
  GTCO_ASSIGN_OR_RETURN(CudaModule steps,
                        load(m.data_cubin_offset, m.data_cubin_bytes, "the data-movement steps"));
  GTCO_ASSIGN_OR_RETURN(copy_, function(steps, kCudaCopyKernel));
  GTCO_ASSIGN_OR_RETURN(gather_, function(steps, kCudaGatherKernel));
  GTCO_ASSIGN_OR_RETURN(cast_, function(steps, kCudaCastKernel));
  GTCO_ASSIGN_OR_RETURN(broadcast_, function(steps, kCudaBroadcastKernel));
  for (const KernelSpec& kernel : m.kernels) {
    GTCO_ASSIGN_OR_RETURN(CudaModule module,
                          load(kernel.cubin_offset, kernel.cubin_bytes,
                               absl::StrCat("kernel '", kernel.entry, "'")));
    GTCO_ASSIGN_OR_RETURN(CudaFunction entry, function(module, kernel.entry));
    if (kernel.shared_bytes > 48 * 1024) {
      GTCO_RETURN_IF_ERROR(driver_->SetMaxDynamicSharedBytes(entry, kernel.shared_bytes));
    }
    kernels_.push_back(entry);
  }
  GTCO_ASSIGN_OR_RETURN(stream_, driver_->CreateStream());
  GTCO_ASSIGN_OR_RETURN(weights_, DeviceBuffer::Allocate(driver_.get(), weights.size()));
  if (!weights.empty()) {
    // On the runs' stream, waited for: a copy from pageable memory on the default stream may
    // still be in flight when it returns, and the runs' stream does not wait for that one.
    GTCO_RETURN_IF_ERROR(
        driver_->CopyToDeviceAsync(weights_.pointer(), weights.data(), weights.size(), stream_));
    GTCO_RETURN_IF_ERROR(driver_->SynchronizeStream(stream_));
  }
  GTCO_ASSIGN_OR_RETURN(arena_, DeviceBuffer::Allocate(driver_.get(), m.arena_bytes));
  for (const StepSpec& step : m.steps) gathers_ += step.op == "gather" ? 1 : 0;
  GTCO_ASSIGN_OR_RETURN(gather_errors_,
                        DeviceBuffer::Allocate(driver_.get(), sizeof(int) * std::max(gathers_, 1)));
  return absl::OkStatus();
}

DevicePtr CudaExecutor::Data(int tensor) const {
  const TensorSpec& t = manifest_.tensors[tensor];
  if (t.weight) return weights_.pointer() + t.weight_offset;
  return arena_.pointer() + manifest_.storages[t.storage].offset;
}

absl::Status CudaExecutor::RunStep(const StepSpec& step, int* gather_slot) {
  const Manifest& m = manifest_;
  const TensorSpec& out = m.tensors[step.outputs[0]];
  DevicePtr out_data = Data(step.outputs[0]);
  const int64_t elem = ElemSize(out.dtype);
  auto launch = [&](CudaFunction function, int64_t work, std::vector<void*> params) {
    return driver_->Launch(function, StepDims(work), params.data(), stream_);
  };
  auto copy = [&](DevicePtr src, const CudaCopyParams& p) {
    DevicePtr dst = out_data;
    return launch(copy_, p.total, {&src, &dst, const_cast<CudaCopyParams*>(&p)});
  };
  if (step.op == "kernel") {
    const KernelSpec& kernel = m.kernels[step.kernel];
    std::vector<DevicePtr> pointers;
    for (int input : step.inputs) pointers.push_back(Data(input));
    pointers.push_back(out_data);
    std::vector<void*> params;
    for (DevicePtr& pointer : pointers) params.push_back(&pointer);
    CudaLaunchDims dims;
    dims.grid_x = kernel.grid[0];
    dims.grid_y = kernel.grid[1];
    dims.grid_z = kernel.grid[2];
    dims.block_x = static_cast<int>(kernel.block[0]);
    dims.block_y = static_cast<int>(kernel.block[1]);
    dims.block_z = static_cast<int>(kernel.block[2]);
    dims.dynamic_shared_bytes = kernel.shared_bytes;
    return driver_->Launch(kernels_[step.kernel], dims, params.data(), stream_);
  }
  if (step.op == "copy") {
    const std::vector<int64_t> flat = {out.NumElements()}, unit = {1};
    return copy(Data(step.inputs[0]), CopyParams(flat, unit, unit, 0, 0, elem));
  }
  if (step.op == "transpose") {
    return copy(Data(step.inputs[0]),
                CopyParams(out.shape, TransposeStrides(m.tensors[step.inputs[0]].shape, step.params),
                           Strides(out.shape), 0, 0, elem));
  }
  if (step.op == "slice") {
    int64_t base = 0;
    const std::vector<int64_t> strides =
        SliceStrides(m.tensors[step.inputs[0]].shape, step.params, &base);
    return copy(Data(step.inputs[0]),
                CopyParams(out.shape, strides, Strides(out.shape), base, 0, elem));
  }
  if (step.op == "strided") {
    return copy(Data(step.inputs[0]),
                CopyParams(out.shape,
                           std::vector<int64_t>(step.params.begin() + 1, step.params.end()),
                           Strides(out.shape), step.params[0], 0, elem));
  }
  if (step.op == "concat") {
    const int64_t axis = step.params.at(0);
    const std::vector<int64_t> out_strides = Strides(out.shape);
    int64_t at = 0;
    for (int input : step.inputs) {
      const std::vector<int64_t>& shape = m.tensors[input].shape;
      GTCO_RETURN_IF_ERROR(copy(Data(input), CopyParams(shape, Strides(shape), out_strides, 0,
                                                        at * out_strides[axis], elem)));
      at += shape[axis];
    }
    return absl::OkStatus();
  }
  if (step.op == "gather") {
    const TensorSpec& in = m.tensors[step.inputs[0]];
    const TensorSpec& indices = m.tensors[step.inputs[1]];
    const GatherGeometry g = GatherGeometryOf(in.shape, step.params.at(0), elem);
    CudaGatherParams p{};
    p.outer = g.outer;
    p.extent = g.extent;
    p.inner_bytes = g.inner_bytes;
    p.count = indices.NumElements();
    p.index_bytes = static_cast<int32_t>(ElemSize(indices.dtype));
    DevicePtr data = Data(step.inputs[0]), index_data = Data(step.inputs[1]);
    DevicePtr error = gather_errors_.pointer() + sizeof(int) * (*gather_slot)++;
    return launch(gather_, p.outer * p.count * p.inner_bytes,
                  {&data, &index_data, &out_data, &error, &p});
  }
  if (step.op == "cast") {
    const TensorSpec& in = m.tensors[step.inputs[0]];
    if (in.dtype == out.dtype) {
      const std::vector<int64_t> flat = {out.NumElements()}, unit = {1};
      return copy(Data(step.inputs[0]), CopyParams(flat, unit, unit, 0, 0, elem));
    }
    if (out.dtype != ElemType::kF32 && !(out.dtype == ElemType::kBF16 && in.dtype == ElemType::kF32)) {
      return absl::InternalError(absl::StrCat("step '", step.node, "': no cast from ",
                                              ElemTypeName(in.dtype), " to ",
                                              ElemTypeName(out.dtype)));
    }
    CudaCastParams p{out.NumElements(), static_cast<int32_t>(in.dtype),
                     static_cast<int32_t>(out.dtype)};
    DevicePtr src = Data(step.inputs[0]);
    return launch(cast_, p.count, {&src, &out_data, &p});
  }
  if (step.op == "expand" || step.op == "equal" || step.op == "where") {
    CudaBroadcastParams p{};
    p.rank = static_cast<int32_t>(out.shape.size());
    p.total = out.NumElements();
    p.op = step.op == "expand" ? 0 : step.op == "equal" ? 1 : 2;
    const TensorSpec& value = m.tensors[step.inputs[step.op == "where" ? 1 : 0]];
    p.value_bytes = static_cast<int32_t>(ElemSize(value.dtype));
    p.value_is_f32 = value.dtype == ElemType::kF32 ? 1 : 0;
    std::vector<DevicePtr> sources(3, Data(step.inputs[0]));
    for (size_t i = 0; i < step.inputs.size() && i < 3; ++i) {
      sources[i] = Data(step.inputs[i]);
      const std::vector<int64_t> strides = BroadcastStrides(m.tensors[step.inputs[i]].shape, out.shape);
      for (size_t dim = 0; dim < strides.size(); ++dim) p.stride[i][dim] = strides[dim];
    }
    for (size_t dim = 0; dim < out.shape.size(); ++dim) p.shape[dim] = out.shape[dim];
    return launch(broadcast_, p.total, {&sources[0], &sources[1], &sources[2], &out_data, &p});
  }
  return absl::InternalError(absl::StrCat("step '", step.node, "' has unknown op '", step.op, "'"));
}

absl::Status CudaExecutor::LaunchSteps(std::vector<StepTime>* profile) {
  int gather_slot = 0;
  for (const StepSpec& step : manifest_.steps) {
    const auto start = std::chrono::steady_clock::now();
    absl::Status launched = RunStep(step, &gather_slot);
    if (!launched.ok()) {
      return absl::Status(launched.code(),
                          absl::StrCat("step '", step.node, "': ", launched.message()));
    }
    if (profile != nullptr) {
      GTCO_RETURN_IF_ERROR(driver_->SynchronizeStream(stream_));
      const std::chrono::duration<double> seconds = std::chrono::steady_clock::now() - start;
      profile->push_back(StepTimeOf(manifest_, step, seconds.count()));
    }
  }
  return absl::OkStatus();
}

absl::Status CudaExecutor::CaptureGraph() {
  GTCO_RETURN_IF_ERROR(driver_->BeginCapture(stream_));
  const absl::Status launched = LaunchSteps(nullptr);
  // The capture is ended whatever happened, so the stream leaves capture mode.
  absl::StatusOr<CudaGraphExec> graph = driver_->EndCapture(stream_);
  if (!launched.ok()) {
    // A step refused on the host side leaves a valid, partial recording: not kept.
    if (graph.ok()) driver_->DestroyGraph(*graph);
    return launched;
  }
  GTCO_RETURN_IF_ERROR(graph.status());
  graph_ = *graph;
  return absl::OkStatus();
}

absl::Status CudaExecutor::Run(const std::vector<HostTensor>& inputs,
                               const std::vector<void*>& outputs, std::vector<StepTime>* profile) {
  std::lock_guard<std::mutex> lock(run_mutex_);
  const Manifest& m = manifest_;
  if (driver_->context_lost()) {
    return absl::FailedPreconditionError(
        "an earlier run faulted on the GPU; this process cannot use it again (load the model in "
        "a new process)");
  }
  GTCO_RETURN_IF_ERROR(driver_->Activate());
  GTCO_RETURN_IF_ERROR(
      driver_->FillAsync(gather_errors_.pointer(), 0, gather_errors_.bytes(), stream_));
  for (size_t i = 0; i < inputs.size(); ++i) {
    const TensorSpec& t = m.tensors[m.inputs[i]];
    GTCO_RETURN_IF_ERROR(
        driver_->CopyToDeviceAsync(Data(m.inputs[i]), inputs[i].data, t.Bytes(), stream_));
  }
  if (profile != nullptr) {
    GTCO_RETURN_IF_ERROR(driver_->SynchronizeStream(stream_));  // the copies stay out of step 1
    GTCO_RETURN_IF_ERROR(LaunchSteps(profile));
  } else {
    // A refused recording is not an error of the run: its steps are launched one by one. An
    // error that lost the context is, and shows at the synchronization below.
    if (!graph_tried_) {  // once per executor: GTCO_CUDA_GRAPHS is read on the first run only
      graph_tried_ = true;
      if (GraphsEnabled()) (void)CaptureGraph();
    }
    if (graph_ != nullptr) {
      GTCO_RETURN_IF_ERROR(driver_->LaunchGraph(graph_, stream_));
    } else {
      GTCO_RETURN_IF_ERROR(LaunchSteps(nullptr));
    }
  }
  GTCO_RETURN_IF_ERROR(driver_->SynchronizeStream(stream_));
  if (gathers_ > 0) {
    std::vector<int> errors(gathers_, 0);
    GTCO_RETURN_IF_ERROR(driver_->CopyToHostAsync(errors.data(), gather_errors_.pointer(),
                                                  sizeof(int) * gathers_, stream_));
    GTCO_RETURN_IF_ERROR(driver_->SynchronizeStream(stream_));
    int slot = 0;
    for (const StepSpec& step : m.steps) {
      if (step.op != "gather") continue;
      if (errors[slot] != 0) {
        const TensorSpec& indices = m.tensors[step.inputs[1]];
        return absl::InvalidArgumentError(absl::StrCat(
            "Gather at node '", step.node, "': index ", errors[slot] - 1, " of '", indices.name,
            "' is out of range [0, ", m.tensors[step.inputs[0]].shape[step.params.at(0)], ")"));
      }
      ++slot;
    }
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    const TensorSpec& t = m.tensors[m.outputs[i]];
    GTCO_RETURN_IF_ERROR(
        driver_->CopyToHostAsync(outputs[i], Data(m.outputs[i]), t.Bytes(), stream_));
  }
  return driver_->SynchronizeStream(stream_);
}

}  // namespace gtco::runtime
