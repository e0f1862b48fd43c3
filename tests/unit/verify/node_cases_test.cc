// The reference interpreter (common/verify, runtime/reference_ops) on the ONNX backend node test
// cases: each case's model imported as the exporter imports it, run on the case's inputs, and
// every output compared with the expected one the onnx package ships (its rtol 1e-3, atol 1e-7,
// as the backend tests use). The interpreter is the net under every export, so it must agree
// with ONNX itself wherever it runs an op at all.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/onnx/onnx_import.h"
#include "common/onnx/tensor_proto.h"
#include "common/verify/reference_interpreter.h"
#include "onnx/onnx_pb.h"

namespace gtco::verify {
namespace {

namespace fs = std::filesystem;

std::string ReadBytes(const fs::path& path) {
  std::ifstream file(path, std::ios::binary);
  std::stringstream buffer;
  buffer << file.rdbuf();
  return buffer.str();
}

/// The value stored in a TensorProto file; false when it is not a tensor GTCO holds.
bool ReadValue(const fs::path& path, Value* value, std::string* name) {
  ::onnx::TensorProto proto;
  if (!proto.ParseFromString(ReadBytes(path))) return false;
  absl::StatusOr<graph::Tensor> tensor = onnx::TensorFromProto(proto, "");
  if (!tensor.ok()) return false;
  absl::StatusOr<Value> converted = ConstantValue(*tensor);
  if (!converted.ok()) return false;
  *value = std::move(*converted);
  *name = proto.name();
  return true;
}

bool Close(const Value& got, const Value& want, std::string* why) {
  if (got.shape != want.shape) {
    *why = absl::StrCat("shape [", absl::StrJoin(got.shape, ","), "] vs [",
                        absl::StrJoin(want.shape, ","), "]");
    return false;
  }
  if (got.dtype != want.dtype) {
    *why = absl::StrCat("dtype ", runtime::ElemTypeName(got.dtype), " vs ",
                        runtime::ElemTypeName(want.dtype));
    return false;
  }
  for (size_t i = 0; i < want.data.size(); ++i) {
    const double a = got.data[i], b = want.data[i];
    if (std::isnan(a) && std::isnan(b)) continue;
    if (a == b) continue;
    if (std::fabs(a - b) > 1e-7 + 1e-3 * std::fabs(b) || std::isnan(a) != std::isnan(b)) {
      *why = absl::StrCat("element ", i, ": ", a, " vs ", b);
      return false;
    }
  }
  return true;
}

enum class Outcome { kPassed, kFailed, kNotImported, kNotRun };

/// Runs one case directory; `detail` says why it did not pass.
Outcome RunCase(const fs::path& dir, std::string* op_type, std::string* detail) {
  const std::string model_bytes = ReadBytes(dir / "model.onnx");
  ::onnx::ModelProto model;
  if (model.ParseFromString(model_bytes) && model.graph().node_size() > 0) {
    *op_type = model.graph().node(model.graph().node_size() - 1).op_type();
  }
  absl::StatusOr<graph::Graph> graph = onnx::ImportOnnx(model_bytes, {});
  if (!graph.ok()) {
    *detail = std::string(graph.status().message());
    return Outcome::kNotImported;
  }
  const fs::path data = dir / "test_data_set_0";
  ValueMap inputs;
  for (size_t i = 0; i < graph->inputs.size(); ++i) {
    Value value;
    std::string name;
    if (!ReadValue(data / absl::StrCat("input_", i, ".pb"), &value, &name)) {
      *detail = "an input GTCO does not hold";
      return Outcome::kNotImported;
    }
    inputs[graph->inputs[i]] = std::move(value);
  }
  absl::StatusOr<ValueMap> outputs = Interpret(*graph, inputs, /*keep_all=*/false);
  if (!outputs.ok()) {
    *detail = std::string(outputs.status().message());
    return outputs.status().code() == absl::StatusCode::kUnimplemented ? Outcome::kNotRun
                                                                       : Outcome::kFailed;
  }
  for (size_t i = 0; i < graph->outputs.size(); ++i) {
    Value want;
    std::string name;
    if (!ReadValue(data / absl::StrCat("output_", i, ".pb"), &want, &name)) {
      *detail = "an output GTCO does not hold";
      return Outcome::kNotImported;
    }
    std::string why;
    if (!Close(outputs->at(graph->outputs[i]), want, &why)) {
      *detail = absl::StrCat("output ", graph->outputs[i], ": ", why);
      return Outcome::kFailed;
    }
  }
  return Outcome::kPassed;
}

TEST(ReferenceNodeCasesTest, AgreesWithOnnxOnEveryCaseItRuns) {
  const fs::path root = fs::path(GTCO_SOURCE_DIR) / ".deps" / "onnx-node";
  if (!fs::exists(root)) {
    GTEST_FAIL() << root << " is missing: scripts/setup.sh --tests extracts the ONNX node cases";
  }
  std::vector<fs::path> cases;
  for (const auto& entry : fs::directory_iterator(root)) {
    if (fs::exists(entry.path() / "model.onnx")) cases.push_back(entry.path());
  }
  std::sort(cases.begin(), cases.end());
  int passed = 0, not_imported = 0, not_run = 0;
  std::vector<std::string> failures;
  std::set<std::string> passed_ops;
  std::map<std::string, std::string> why_not;  // op -> why a case of it did not run
  for (const fs::path& dir : cases) {
    std::string op_type, detail;
    const Outcome outcome = RunCase(dir, &op_type, &detail);
    if (outcome == Outcome::kNotImported || outcome == Outcome::kNotRun) {
      why_not.emplace(op_type, absl::StrCat(dir.filename().string(), ": ", detail));
    }
    switch (outcome) {
      case Outcome::kPassed:
        ++passed;
        passed_ops.insert(op_type);
        break;
      case Outcome::kFailed:
        failures.push_back(absl::StrCat(dir.filename().string(), ": ", detail));
        break;
      case Outcome::kNotImported:
        ++not_imported;
        break;
      case Outcome::kNotRun:
        ++not_run;
        break;
    }
  }
  std::cout << "[ node cases ] " << cases.size() << " cases: " << passed << " agree, "
            << failures.size() << " disagree, " << not_run << " use an op or attribute the "
            << "reference does not run, " << not_imported << " are not imported (types or "
            << "forms GTCO does not hold)\n";
  EXPECT_TRUE(failures.empty()) << failures.size() << " cases disagree with ONNX:\n"
                                << absl::StrJoin(failures, "\n");
  // The ops common models bring that have no kernel family: each must be checked here.
  for (const char* op : {"Pad",
                         "Resize",
                         "HardSwish",
                         "HardSigmoid",
                         "ReduceMean",
                         "ReduceSum",
                         "ReduceMax",
                         "InstanceNormalization",
                         "Log",
                         "Not",
                         "Where",
                         "Less",
                         "Conv",
                         "MatMul",
                         "Gemm",
                         "Softmax",
                         "LayerNormalization",
                         "Gather",
                         "Slice",
                         "Transpose",
                         "Reshape",
                         "Concat",
                         "Expand"}) {
    EXPECT_TRUE(passed_ops.count(op))
        << "no node case of " << op << " agrees with ONNX (" << why_not[op] << ")";
  }
  EXPECT_GE(passed, 640);  // 655 with onnx 1.12's cases
}

}  // namespace
}  // namespace gtco::verify
