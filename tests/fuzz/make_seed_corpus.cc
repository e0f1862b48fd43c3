// Writes the fuzzers' seed corpora under <corpus root>/<fuzzer>/: schedule traces sampled from
// the fixed workloads' search spaces (and the legacy sketches), workload canonical texts (the
// fixed workloads and those planned from the test models), the small test models, and RPC
// scripts that submit a model, lease, report, query and cancel.
// Usage: fuzz_make_seed_corpus <tests/data dir> <corpus root>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "common/kernels/registry.h"
#include "common/onnx/model_analysis.h"
#include "common/schedule/sketch.h"
#include "common/schedule/space.h"
#include "gtco/v1/gtco.pb.h"
#include "tests/fuzz/fuzz_workloads.h"
#include "tests/fuzz/rpc_script.h"

namespace gtco::fuzz {
namespace {

/// The test models small enough to be seeds (every other one of tests/data too, except the
/// 200 KB transformer block, whose size would slow every mutation down).
const char* const kSeedModels[] = {
    "mlp.onnx",        "dynamic_mlp.onnx",    "external_data.onnx",          "matmul_bf16.onnx",
    "matmul_f16.onnx", "matmul_integer.onnx", "matmul_integer_per_row.onnx", "unsupported_op.onnx",
    "patch_vit.onnx",  "vit_tiny.onnx"};

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "cannot read %s\n", path.c_str());
    std::exit(1);
  }
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out << bytes;
  if (!out) {
    std::fprintf(stderr, "cannot write %s\n", path.c_str());
    std::exit(1);
  }
}

void WriteTraces(const std::string& dir) {
  std::mt19937_64 rng(7);
  int count = 0;
  for (const ir::Workload& workload : FixedWorkloads()) {
    auto spaces = kernels::CreateMappingSpaces(workload, FuzzMachine());
    if (spaces.ok()) {
      for (const schedule::SearchSpace& space : *spaces) {
        WriteFile(dir + "/trace_" + std::to_string(count++), space.DefaultTrace().ToString());
        WriteFile(dir + "/trace_" + std::to_string(count++), space.Sample(rng).ToString());
      }
    }
    // The replay-only sketch as well: its stored traces must still replay.
    const schedule::Sketch* tiled = kernels::SketchByName("mm_tiled/v1");
    if (tiled != nullptr && tiled->AppliesTo(workload)) {
      schedule::Trace trace;
      trace.sketch = tiled->Name();
      for (const schedule::Knob& knob : tiled->Knobs(workload, FuzzMachine())) {
        trace.decisions.emplace_back(knob.name, knob.values.back());
      }
      WriteFile(dir + "/trace_" + std::to_string(count++), trace.ToString());
    }
  }
}

void WriteWorkloads(const std::string& data_dir, const std::string& dir) {
  int count = 0;
  for (const ir::Workload& workload : FixedWorkloads()) {
    WriteFile(dir + "/workload_" + std::to_string(count++), workload.CanonicalString());
  }
  for (const char* model : {"mlp.onnx", "matmul_integer.onnx", "patch_vit.onnx"}) {
    auto analysis = onnx::AnalyzeOnnxModel(ReadFile(data_dir + "/" + model), {});
    if (!analysis.ok()) continue;
    for (const onnx::ModelTask& task : analysis->tasks) {
      WriteFile(dir + "/workload_" + std::to_string(count++), task.workload.CanonicalString());
    }
  }
}

template <typename Message>
RpcCall Call(RpcOp op, const Message& message, uint8_t flags = 0) {
  return RpcCall{op, flags, message.SerializeAsString()};
}

RpcCall Simple(RpcOp op, uint8_t flags = 0) { return RpcCall{op, flags, ""}; }

/// Header chunk + one data chunk + kSubmit (or kQueryModel).
std::vector<RpcCall> SendModel(const std::string& model, int64_t budget, RpcOp end) {
  v1::ModelChunk header;
  header.mutable_header()->set_model_name("seed.onnx");
  header.mutable_header()->set_target("cpu");
  header.mutable_header()->set_budget(budget);
  header.mutable_header()->set_team("fuzz");
  header.mutable_header()->set_rounds(2);
  v1::ModelChunk data;
  data.set_data(model);
  return {Call(RpcOp::kModelChunk, header), Call(RpcOp::kModelChunk, data), Simple(end)};
}

RpcCall RegisterCpuWorker() {
  v1::RegisterRequest request;
  request.set_hostname("fuzz-host");
  v1::Hardware* hardware = request.mutable_hardware();
  hardware->set_target("cpu");
  hardware->set_cpu_model("fuzz cpu");
  for (const char* feature : {"avx2", "fma", "avx512f", "avx512_bf16", "avx512_vnni"}) {
    hardware->add_cpu_features(feature);
  }
  hardware->set_cores(4);
  return Call(RpcOp::kRegister, request);
}

RpcCall LeaseKnownWorker(int max_candidates) {
  v1::LeaseRequest request;
  request.set_max_candidates(max_candidates);
  return Call(RpcOp::kLease, request, kUseKnownId);
}

/// Results for `count` known candidates (flags pick known ids): ok ones, or failures.
RpcCall ReportKnownCandidates(int count, bool ok) {
  v1::ReportRequest request;
  for (int index = 0; index < count; ++index) {
    v1::MeasureResult* result = request.add_results();
    result->set_ok(ok);
    result->set_verified(ok);
    result->set_median_seconds(ok ? 1e-4 * (index + 1) : 0);
    result->set_min_seconds(ok ? 0.9e-4 : 0);
    result->set_max_seconds(ok ? 2e-4 : 0);
    result->set_repeats(ok ? 5 : 0);
    if (!ok) {
      result->set_error_kind(v1::ERROR_KIND_WRONG_RESULT);
      result->set_error("max error 3.5 at index 7");
    }
  }
  return Call(RpcOp::kReport, request, kUseKnownId | kUseKnownNested);
}

RpcCall WithKnownJob(RpcOp op) {
  v1::GetJobRequest request;  // GetJob, WatchJob and CancelJob requests share the wire form
  request.set_job_id("j0");
  return Call(op, request, kUseKnownId);
}

void WriteRpcScripts(const std::string& data_dir, const std::string& dir) {
  const std::string mlp = ReadFile(data_dir + "/mlp.onnx");
  const std::string integer = ReadFile(data_dir + "/matmul_integer.onnx");
  std::vector<std::pair<std::string, std::vector<RpcCall>>> scripts;

  std::vector<RpcCall> tune = SendModel(mlp, 6, RpcOp::kSubmit);
  tune.push_back(WithKnownJob(RpcOp::kGetJob));
  tune.push_back(RegisterCpuWorker());
  tune.push_back(LeaseKnownWorker(3));
  tune.push_back(ReportKnownCandidates(3, /*ok=*/true));
  tune.push_back(LeaseKnownWorker(3));
  tune.push_back(ReportKnownCandidates(2, /*ok=*/false));
  tune.push_back(WithKnownJob(RpcOp::kWatchJob));
  v1::QueryWorkloadRequest query;
  query.set_target("cpu");
  query.set_limit(3);
  tune.push_back(Call(RpcOp::kQueryWorkload, query, kUseKnownId));
  tune.push_back(Simple(RpcOp::kTick));
  tune.push_back(WithKnownJob(RpcOp::kCancelJob));
  tune.push_back(Call(RpcOp::kListJobs, v1::ListJobsRequest()));
  scripts.emplace_back("rpc_submit_lease_report", tune);

  std::vector<RpcCall> query_model = SendModel(mlp, 1, RpcOp::kQueryModel);
  v1::QueryWorkloadRequest unknown;
  unknown.set_workload_key("matmul-00000000000000000000000000000000");
  unknown.set_target("cpu");
  query_model.push_back(Call(RpcOp::kQueryWorkload, unknown));
  scripts.emplace_back("rpc_query_model", query_model);

  std::vector<RpcCall> lowp = SendModel(integer, 2, RpcOp::kSubmit);
  lowp.push_back(RegisterCpuWorker());
  lowp.push_back(LeaseKnownWorker(2));
  v1::HeartbeatRequest heartbeat;
  heartbeat.add_candidate_ids("c0");
  heartbeat.add_candidate_ids("c1");
  lowp.push_back(Call(RpcOp::kHeartbeat, heartbeat, kUseKnownId | kUseKnownNested));
  lowp.push_back(ReportKnownCandidates(2, /*ok=*/true));
  lowp.push_back(WithKnownJob(RpcOp::kGetJob));
  lowp.push_back(Simple(RpcOp::kTick));
  scripts.emplace_back("rpc_lowp_job", lowp);

  std::vector<RpcCall> errors = SendModel(mlp, 0, RpcOp::kSubmit);  // budget 0
  v1::ModelChunk cuda;
  cuda.mutable_header()->set_target("cuda");
  cuda.mutable_header()->set_budget(5);
  errors.push_back(Call(RpcOp::kModelChunk, cuda));
  errors.push_back(RpcCall{RpcOp::kModelData, 0, mlp.substr(0, 200)});
  errors.push_back(Simple(RpcOp::kSubmit));
  errors.push_back(WithKnownJob(RpcOp::kCancelJob));
  errors.push_back(LeaseKnownWorker(1));
  v1::ListJobsRequest list;
  list.set_team("fuzz");
  list.set_state("running");
  errors.push_back(Call(RpcOp::kListJobs, list));
  scripts.emplace_back("rpc_errors", errors);

  // Regression seeds of bugs the fuzzer found: a budget near INT64_MAX, and a shape override
  // too large for any workload.
  std::vector<RpcCall> huge_budget =
      SendModel(mlp, std::numeric_limits<int64_t>::max(), RpcOp::kSubmit);
  scripts.emplace_back("rpc_regression_huge_budget", huge_budget);
  const std::string dynamic_mlp = ReadFile(data_dir + "/dynamic_mlp.onnx");
  std::vector<RpcCall> huge_shape = SendModel(dynamic_mlp, 4, RpcOp::kSubmit);
  v1::ModelChunk with_shape;
  with_shape.ParseFromString(huge_shape[0].payload);
  v1::ShapeOverride* override_shape = with_shape.mutable_header()->add_shapes();
  override_shape->set_input("input");
  override_shape->add_dims(int64_t{1} << 41);
  override_shape->add_dims(32);
  huge_shape[0] = Call(RpcOp::kModelChunk, with_shape);
  scripts.emplace_back("rpc_regression_huge_shape_override", huge_shape);

  for (const auto& [name, calls] : scripts) WriteFile(dir + "/" + name, SerializeRpcScript(calls));
}

}  // namespace
}  // namespace gtco::fuzz

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s <tests/data dir> <corpus root>\n", argv[0]);
    return 2;
  }
  const std::string data_dir = argv[1], root = argv[2];
  gtco::fuzz::WriteTraces(root + "/fuzz_schedule_trace");
  gtco::fuzz::WriteWorkloads(data_dir, root + "/fuzz_workload_text");
  for (const char* model : gtco::fuzz::kSeedModels) {
    gtco::fuzz::WriteFile(root + "/fuzz_onnx_import/" + model,
                          gtco::fuzz::ReadFile(data_dir + "/" + model));
  }
  gtco::fuzz::WriteRpcScripts(data_dir, root + "/fuzz_rpc_requests");
  return 0;
}
