// `gtco._runtime`, the compiled half of the `gtco` Python package (gtco/__init__.py re-exports
// it): load an exported model and run it on numpy arrays.
//
//   import gtco, numpy as np
//   model = gtco.load("model.gtco")
//   model.inputs          # [{"name": "image", "dtype": "float32", "shape": [1, 3, 224, 224]}]
//   outputs = model.run({"image": np.zeros((1, 3, 224, 224), np.float32)})  # {name: array}
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "runtime/model.h"
#include "runtime/parallel.h"

namespace py = pybind11;

namespace gtco::runtime {
namespace {

/// The numpy dtype of an artifact element type; bf16 and f16 have none numpy calls by that
/// name here (ValueError).
py::dtype NumpyDType(ElemType type) {
  switch (type) {
    case ElemType::kF32:
      return py::dtype::of<float>();
    case ElemType::kI64:
      return py::dtype::of<int64_t>();
    case ElemType::kI32:
      return py::dtype::of<int32_t>();
    case ElemType::kI8:
      return py::dtype::of<int8_t>();
    case ElemType::kU8:
      return py::dtype::of<uint8_t>();
    case ElemType::kBool:
      return py::dtype::of<bool>();
    default:
      throw py::value_error(absl::StrCat("tensors of ", ElemTypeName(type),
                                         " have no numpy dtype; use the C API"));
  }
}

[[noreturn]] void Raise(const absl::Status& status) {
  const std::string message(status.message());
  switch (status.code()) {
    case absl::StatusCode::kInvalidArgument:
      throw py::value_error(message);
    case absl::StatusCode::kNotFound:
      PyErr_SetString(PyExc_FileNotFoundError, message.c_str());
      throw py::error_already_set();
    default:
      throw std::runtime_error(message);
  }
}

std::string ShapeText(const std::vector<int64_t>& shape) {
  return absl::StrCat("[", absl::StrJoin(shape, ","), "]");
}

class PyModel {
 public:
  explicit PyModel(std::unique_ptr<Model> model) : model_(std::move(model)) {}

  py::list Describe(bool inputs) const {
    const Manifest& m = model_->manifest();
    py::list list;
    for (int index : inputs ? m.inputs : m.outputs) {
      const TensorSpec& t = m.tensors[index];
      py::dict entry;
      entry["name"] = t.name;
      // numpy's name of the dtype ("float32"); the artifact's own for bf16 and f16.
      entry["dtype"] = t.dtype == ElemType::kBF16 || t.dtype == ElemType::kF16
                           ? std::string(ElemTypeName(t.dtype))
                           : NumpyDType(t.dtype).attr("name").cast<std::string>();
      entry["shape"] = t.shape;
      list.append(entry);
    }
    return list;
  }

  py::list Kernels() const {
    py::list list;
    for (const KernelSpec& k : model_->manifest().kernels) {
      py::dict entry;
      entry["workload_key"] = k.workload_key;
      entry["description"] = k.description;
      entry["mapping"] = k.mapping;
      entry["trace"] = k.trace;
      entry["tuned"] = k.tuned;
      entry["hardware"] = k.hardware;
      entry["median_seconds"] = k.median_seconds;
      list.append(entry);
    }
    return list;
  }

  /// `feeds`: a dict name -> array, or a list in input order. Returns a dict name -> array.
  py::dict Run(const py::object& feeds) const {
    const Manifest& m = model_->manifest();
    if (py::isinstance<py::dict>(feeds)) {
      for (const auto& item : feeds.cast<py::dict>()) {
        const std::string name = py::str(item.first);
        bool known = false;
        for (int index : m.inputs) known = known || m.tensors[index].name == name;
        if (!known) {
          std::vector<std::string> names;
          for (int index : m.inputs) names.push_back(m.tensors[index].name);
          throw py::value_error(absl::StrCat("the model has no input '", name, "' (its inputs: ",
                                             absl::StrJoin(names, ", "), ")"));
        }
      }
    }
    std::vector<py::array> arrays;
    for (size_t i = 0; i < m.inputs.size(); ++i) {
      const TensorSpec& t = m.tensors[m.inputs[i]];
      py::object value;
      if (py::isinstance<py::dict>(feeds)) {
        py::dict dict = feeds.cast<py::dict>();
        if (!dict.contains(t.name.c_str())) {
          throw py::value_error(absl::StrCat("input '", t.name, "' (", ElemTypeName(t.dtype), " ",
                                             ShapeText(t.shape), ") is missing"));
        }
        value = dict[t.name.c_str()];
      } else {
        py::sequence list = feeds.cast<py::sequence>();
        if (list.size() != m.inputs.size()) {
          throw py::value_error(absl::StrCat("the model takes ", m.inputs.size(),
                                             " inputs, got ", list.size()));
        }
        value = list[i];
      }
      py::array array = py::array::ensure(value, py::array::c_style);
      if (!array) throw py::value_error(absl::StrCat("input '", t.name, "' is not an array"));
      const py::dtype expected = NumpyDType(t.dtype);
      std::vector<int64_t> shape(array.shape(), array.shape() + array.ndim());
      if (!array.dtype().equal(expected) || shape != t.shape) {
        throw py::value_error(absl::StrCat(
            "input '", t.name, "' must be ", expected.attr("name").cast<std::string>(), " ",
            ShapeText(t.shape), ", got ", array.dtype().attr("name").cast<std::string>(), " ",
            ShapeText(shape)));
      }
      arrays.push_back(array);
    }
    std::vector<HostTensor> inputs;
    for (size_t i = 0; i < arrays.size(); ++i) {
      const TensorSpec& t = m.tensors[m.inputs[i]];
      inputs.push_back({t.dtype, t.shape, arrays[i].data()});
    }
    std::vector<py::array> results;
    std::vector<void*> buffers;
    for (int index : m.outputs) {
      const TensorSpec& t = m.tensors[index];
      results.emplace_back(NumpyDType(t.dtype), t.shape);
      buffers.push_back(results.back().mutable_data());
    }
    absl::Status status;
    {
      py::gil_scoped_release release;  // other Python threads run, and may run this model too
      status = model_->RunInto(inputs, buffers);
    }
    if (!status.ok()) Raise(status);
    py::dict outputs;
    for (size_t i = 0; i < results.size(); ++i) {
      outputs[m.tensors[m.outputs[i]].name.c_str()] = results[i];
    }
    return outputs;
  }

 private:
  std::unique_ptr<Model> model_;
};

}  // namespace
}  // namespace gtco::runtime

PYBIND11_MODULE(_runtime, module) {
  using gtco::runtime::PyModel;
  module.doc() = "Run models exported by a GTCO tuning farm (.gtco artifacts).";
  py::class_<PyModel>(module, "Model")
      .def_property_readonly("inputs", [](const PyModel& m) { return m.Describe(true); })
      .def_property_readonly("outputs", [](const PyModel& m) { return m.Describe(false); })
      .def_property_readonly("kernels", &PyModel::Kernels)
      .def("run", &PyModel::Run, py::arg("inputs"),
           "Runs the model: inputs is a dict name -> numpy array (or a list in input order); "
           "returns a dict name -> numpy array.");
  module.def(
      "load",
      [](const std::string& path) {
        auto model = gtco::runtime::Model::Load(path);
        if (!model.ok()) gtco::runtime::Raise(model.status());
        return std::make_unique<PyModel>(std::move(*model));
      },
      py::arg("path"),
      "Loads an artifact: checks its checksums and that this CPU has the features it needs.");
  module.def(
      "set_threads", [](int threads) { gtco::runtime::SetParallelThreads(threads); },
      py::arg("threads"), "Threads the kernels' parallel loops use (<= 0: all cores).");
}
