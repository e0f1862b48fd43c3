// The C API over runtime::Model.
#include <memory>
#include <string>
#include <vector>

#include "runtime/gtco_runtime.h"
#include "runtime/model.h"
#include "runtime/parallel.h"

struct gtco_model {
  std::unique_ptr<gtco::runtime::Model> model;
};

namespace {

thread_local std::string last_error;

gtco_status Fail(const absl::Status& status) {
  last_error = std::string(status.message());
  switch (status.code()) {
    case absl::StatusCode::kOk:
      return GTCO_OK;
    case absl::StatusCode::kInvalidArgument:
      return GTCO_INVALID_ARGUMENT;
    case absl::StatusCode::kNotFound:
      return GTCO_NOT_FOUND;
    case absl::StatusCode::kFailedPrecondition:
      return GTCO_FAILED_PRECONDITION;
    case absl::StatusCode::kDataLoss:
      return GTCO_DATA_LOSS;
    default:
      return GTCO_INTERNAL;
  }
}

gtco_status Describe(const gtco_model* model, int index, bool input, gtco_tensor_info* info) {
  if (model == nullptr || info == nullptr) return Fail(absl::InvalidArgumentError("null argument"));
  const auto& m = model->model->manifest();
  const std::vector<int>& list = input ? m.inputs : m.outputs;
  if (index < 0 || index >= static_cast<int>(list.size())) {
    return Fail(absl::InvalidArgumentError("tensor index out of range"));
  }
  const auto& t = m.tensors[list[index]];
  info->name = t.name.c_str();
  info->dtype = static_cast<gtco_dtype>(t.dtype);
  info->rank = static_cast<int>(t.shape.size());
  info->shape = t.shape.data();
  last_error.clear();
  return GTCO_OK;
}

}  // namespace

extern "C" {

gtco_status gtco_model_load(const char* path, gtco_model** model) {
  if (path == nullptr || model == nullptr) return Fail(absl::InvalidArgumentError("null argument"));
  auto loaded = gtco::runtime::Model::Load(path);
  if (!loaded.ok()) return Fail(loaded.status());
  *model = new gtco_model{std::move(*loaded)};
  last_error.clear();
  return GTCO_OK;
}

void gtco_model_free(gtco_model* model) { delete model; }

int gtco_model_num_inputs(const gtco_model* model) {
  return model == nullptr ? 0 : static_cast<int>(model->model->manifest().inputs.size());
}

int gtco_model_num_outputs(const gtco_model* model) {
  return model == nullptr ? 0 : static_cast<int>(model->model->manifest().outputs.size());
}

gtco_status gtco_model_input(const gtco_model* model, int index, gtco_tensor_info* info) {
  return Describe(model, index, true, info);
}

gtco_status gtco_model_output(const gtco_model* model, int index, gtco_tensor_info* info) {
  return Describe(model, index, false, info);
}

gtco_status gtco_model_run(const gtco_model* model, const void* const* inputs,
                           void* const* outputs) {
  if (model == nullptr) return Fail(absl::InvalidArgumentError("null model"));
  const auto& m = model->model->manifest();
  if ((inputs == nullptr && !m.inputs.empty()) || (outputs == nullptr && !m.outputs.empty())) {
    return Fail(absl::InvalidArgumentError("null input or output array"));
  }
  std::vector<gtco::runtime::HostTensor> host;
  for (size_t i = 0; i < m.inputs.size(); ++i) {
    const auto& t = m.tensors[m.inputs[i]];
    host.push_back({t.dtype, t.shape, inputs[i]});
  }
  std::vector<void*> out(outputs, outputs + m.outputs.size());
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] == nullptr) return Fail(absl::InvalidArgumentError("null output buffer"));
  }
  return Fail(model->model->RunInto(host, out));
}

void gtco_set_threads(int threads) { gtco::runtime::SetParallelThreads(threads); }

const char* gtco_last_error(void) { return last_error.c_str(); }

}  // extern "C"
