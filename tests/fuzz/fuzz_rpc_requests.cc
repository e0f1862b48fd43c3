// Fuzz target: the server's RPC requests, driven through FarmCore (the logic behind every
// handler) on an in-memory SQLite database. An input is a script of calls (rpc_script.h): each
// payload is parsed into its request message exactly as gRPC would hand it to the handler, and
// ids the server made (jobs, workers, candidates, workload keys) can be reused from earlier
// replies, so that scripts reach deep states: submit a model, lease candidates, report results,
// cancel, query. Oracles: no crash or sanitizer report; every error is one a client can be given
// (INVALID_ARGUMENT, NOT_FOUND, FAILED_PRECONDITION, UNIMPLEMENTED, RESOURCE_EXHAUSTED, never
// INTERNAL/UNKNOWN/DATA_LOSS); every leased candidate carries a valid workload and trace.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/db/database.h"
#include "common/ir/workload.h"
#include "common/metrics/registry.h"
#include "common/schedule/trace.h"
#include "common/util/logging.h"
#include "google/protobuf/stubs/logging.h"
#include "gtco/v1/gtco.pb.h"
#include "server/farm_core.h"
#include "server/farm_metrics.h"
#include "server/proto_convert.h"
#include "tests/fuzz/fuzz_check.h"
#include "tests/fuzz/rpc_script.h"

namespace {

using gtco::fuzz::RpcCall;
using gtco::fuzz::RpcOp;
namespace v1 = gtco::v1;

constexpr size_t kMaxScriptBytes = size_t{1} << 18;
constexpr size_t kMaxCalls = 64;
/// The server hands out up to 64 candidates per lease; fewer keeps an execution fast while
/// exercising the same code.
constexpr int kMaxLeaseCandidates = 4;
constexpr size_t kMaxKnownIds = 64;

bool ClientFacingCode(absl::StatusCode code) {
  switch (code) {
    case absl::StatusCode::kOk:
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kNotFound:
    case absl::StatusCode::kFailedPrecondition:
    case absl::StatusCode::kUnimplemented:
    case absl::StatusCode::kResourceExhausted:
      return true;
    default:
      return false;
  }
}

void Remember(std::vector<std::string>& ids, const std::string& id) {
  if (id.empty() || ids.size() >= kMaxKnownIds) return;
  if (std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(id);
}

/// One farm per input, and the ids its replies revealed so far.
class FarmDriver {
 public:
  FarmDriver() : metrics_(registry_) {
    absl::StatusOr<std::unique_ptr<gtco::db::Database>> database =
        gtco::db::OpenSqliteDatabase(":memory:");
    FUZZ_CHECK(database.ok(), "open: %s", database.status().ToString().c_str());
    gtco::server::FarmOptions options;
    options.seed = 1;
    absl::StatusOr<std::unique_ptr<gtco::server::FarmCore>> core =
        gtco::server::FarmCore::Create(std::move(*database), options, &metrics_);
    FUZZ_CHECK(core.ok(), "create: %s", core.status().ToString().c_str());
    core_ = std::move(*core);
  }
  ~FarmDriver() { core_->Shutdown(); }

  void Run(const RpcCall& call);

 private:
  /// The id to use: a known one when `flags` asks and one is known, else `own`.
  static std::string Pick(const std::vector<std::string>& known, uint8_t flags, uint8_t bit,
                          const std::string& own, size_t offset = 0) {
    if (!(flags & bit) || known.empty()) return own;
    return known[(static_cast<size_t>(flags >> 2) + offset) % known.size()];
  }
  static void Check(const absl::Status& status, const char* rpc) {
    static const bool verbose = std::getenv("GTCO_FUZZ_VERBOSE") != nullptr;
    if (verbose) std::fprintf(stderr, "%s: %s\n", rpc, status.ToString().c_str());
    FUZZ_CHECK(ClientFacingCode(status.code()), "%s answered %s", rpc,
               status.ToString().c_str());
  }
  void ObserveJob(const v1::JobStatus& job) {
    Remember(job_ids_, job.job_id());
    for (const v1::TaskStatus& task : job.tasks()) Remember(workload_keys_, task.workload_key());
  }
  void EndModelStream(bool submit);
  void RunLease(const RpcCall& call);
  void RunReport(const RpcCall& call);
  void RunHeartbeat(const RpcCall& call);

  gtco::metrics::Registry registry_;
  gtco::server::FarmMetrics metrics_;
  std::unique_ptr<gtco::server::FarmCore> core_;
  std::vector<v1::ModelChunk> stream_;
  std::vector<std::string> job_ids_, workload_keys_, worker_ids_, candidate_ids_;
};

/// Assembles the chunks as the Submit/QueryModel handlers do, then calls the core.
void FarmDriver::EndModelStream(bool submit) {
  std::vector<v1::ModelChunk> chunks;
  chunks.swap(stream_);
  v1::SubmitHeader header;
  std::string model_bytes;
  bool have_header = false;
  for (const v1::ModelChunk& chunk : chunks) {
    if (chunk.has_header()) {
      if (have_header) return;  // INVALID_ARGUMENT in the handler
      header = chunk.header();
      have_header = true;
    } else {
      if (!have_header) return;  // INVALID_ARGUMENT in the handler
      model_bytes += chunk.data();
    }
  }
  if (!have_header) return;
  absl::StatusOr<gtco::server::JobSpec> spec = gtco::server::JobSpecFromProto(header);
  Check(spec.status(), submit ? "Submit" : "QueryModel");
  if (!spec.ok()) return;
  if (submit) {
    absl::StatusOr<gtco::server::JobInfo> job = core_->Submit(*spec, model_bytes);
    Check(job.status(), "Submit");
    if (job.ok()) ObserveJob(gtco::server::ToProto(*job));
    return;
  }
  absl::StatusOr<gtco::server::QueryResult> reply = core_->QueryModel(*spec, model_bytes);
  Check(reply.status(), "QueryModel");
  if (!reply.ok()) return;
  for (const gtco::server::ScheduleRecordInfo& record : reply->records) {
    Remember(workload_keys_, record.workload_key);
  }
}

void FarmDriver::RunLease(const RpcCall& call) {
  v1::LeaseRequest request;
  if (!request.ParseFromString(call.payload)) return;
  request.set_worker_id(Pick(worker_ids_, call.flags, gtco::fuzz::kUseKnownId,
                             request.worker_id()));
  request.set_max_candidates(std::min(request.max_candidates(), kMaxLeaseCandidates));
  request.set_wait_ms(0);
  absl::StatusOr<std::vector<gtco::server::LeasedCandidate>> leased =
      core_->Lease(request.worker_id(), request.max_candidates(), request.wait_ms());
  Check(leased.status(), "Lease");
  if (!leased.ok()) return;
  Check(absl::OkStatus(), absl::StrCat("Lease: ", leased->size(), " candidates").c_str());
  for (gtco::server::LeasedCandidate& leased_candidate : *leased) {
    const v1::Candidate candidate = gtco::server::ToProto(std::move(leased_candidate));
    Remember(candidate_ids_, candidate.candidate_id());
    absl::StatusOr<gtco::ir::Workload> workload = gtco::ir::ParseWorkload(candidate.workload());
    FUZZ_CHECK(workload.ok() && workload->Validate().ok() &&
                   workload->Key() == candidate.workload_key(),
               "candidate %s carries a bad workload", candidate.candidate_id().c_str());
    FUZZ_CHECK(gtco::schedule::Trace::Parse(candidate.trace()).ok() &&
                   (!candidate.program().empty() || candidate.language() == "trace"),
               "candidate %s carries a bad trace or no program", candidate.candidate_id().c_str());
  }
}

void FarmDriver::RunReport(const RpcCall& call) {
  v1::ReportRequest request;
  if (!request.ParseFromString(call.payload)) return;
  request.set_worker_id(Pick(worker_ids_, call.flags, gtco::fuzz::kUseKnownId,
                             request.worker_id()));
  for (int index = 0; index < request.results_size(); ++index) {
    v1::MeasureResult* result = request.mutable_results(index);
    result->set_candidate_id(Pick(candidate_ids_, call.flags, gtco::fuzz::kUseKnownNested,
                                  result->candidate_id(), index));
  }
  Check(core_->Report(request.worker_id(), gtco::server::TrialResultsFromProto(request)).status(),
        "Report");
}

void FarmDriver::RunHeartbeat(const RpcCall& call) {
  v1::HeartbeatRequest request;
  if (!request.ParseFromString(call.payload)) return;
  request.set_worker_id(Pick(worker_ids_, call.flags, gtco::fuzz::kUseKnownId,
                             request.worker_id()));
  for (int index = 0; index < request.candidate_ids_size(); ++index) {
    request.set_candidate_ids(index, Pick(candidate_ids_, call.flags,
                                          gtco::fuzz::kUseKnownNested,
                                          request.candidate_ids(index), index));
  }
  Check(core_->Heartbeat(request.worker_id(),
                         std::vector<std::string>(request.candidate_ids().begin(),
                                                  request.candidate_ids().end())),
        "Heartbeat");
}

void FarmDriver::Run(const RpcCall& call) {
  const uint8_t flags = call.flags;
  constexpr uint8_t kId = gtco::fuzz::kUseKnownId;
  switch (call.op) {
    case RpcOp::kModelChunk: {
      v1::ModelChunk chunk;
      if (chunk.ParseFromString(call.payload)) stream_.push_back(std::move(chunk));
      return;
    }
    case RpcOp::kModelData:
      stream_.emplace_back().set_data(call.payload);
      return;
    case RpcOp::kSubmit:
      return EndModelStream(/*submit=*/true);
    case RpcOp::kQueryModel:
      return EndModelStream(/*submit=*/false);
    case RpcOp::kGetJob: {
      v1::GetJobRequest request;
      if (!request.ParseFromString(call.payload)) return;
      absl::StatusOr<gtco::server::JobInfo> job =
          core_->GetJob(Pick(job_ids_, flags, kId, request.job_id()));
      Check(job.status(), "GetJob");
      if (job.ok()) ObserveJob(gtco::server::ToProto(*job));
      return;
    }
    case RpcOp::kWatchJob: {
      v1::WatchJobRequest request;
      if (!request.ParseFromString(call.payload)) return;
      int64_t version = -1;
      Check(core_->WaitForJobChange(Pick(job_ids_, flags, kId, request.job_id()), &version, 0)
                .status(),
            "WatchJob");
      return;
    }
    case RpcOp::kListJobs: {
      v1::ListJobsRequest request;
      if (!request.ParseFromString(call.payload)) return;
      std::optional<gtco::db::JobState> state;
      if (!request.state().empty()) {
        absl::StatusOr<gtco::db::JobState> parsed = gtco::db::ParseJobState(request.state());
        Check(parsed.status(), "ListJobs");
        if (!parsed.ok()) return;
        state = *parsed;
      }
      absl::StatusOr<std::vector<gtco::server::JobInfo>> jobs =
          core_->ListJobs(request.team(), state);
      Check(jobs.status(), "ListJobs");
      if (jobs.ok()) {
        for (const gtco::server::JobInfo& job : *jobs) ObserveJob(gtco::server::ToProto(job));
      }
      return;
    }
    case RpcOp::kCancelJob: {
      v1::CancelJobRequest request;
      if (!request.ParseFromString(call.payload)) return;
      Check(core_->CancelJob(Pick(job_ids_, flags, kId, request.job_id())).status(),
            "CancelJob");
      return;
    }
    case RpcOp::kQueryWorkload: {
      v1::QueryWorkloadRequest request;
      if (!request.ParseFromString(call.payload)) return;
      absl::StatusOr<gtco::target::Target> target = gtco::target::ParseTarget(request.target());
      Check(target.status(), "QueryWorkload");
      if (!target.ok()) return;
      Check(core_->QueryWorkload(Pick(workload_keys_, flags, kId, request.workload_key()),
                                 *target, request.limit())
                .status(),
            "QueryWorkload");
      return;
    }
    case RpcOp::kRegister: {
      v1::RegisterRequest request;
      if (!request.ParseFromString(call.payload)) return;
      request.set_worker_id(Pick(worker_ids_, flags, kId, request.worker_id()));
      absl::StatusOr<gtco::server::WorkerHello> hello = gtco::server::WorkerHelloFromProto(request);
      Check(hello.status(), "Register");
      if (!hello.ok()) return;
      absl::StatusOr<gtco::server::WorkerTerms> terms = core_->Register(*hello);
      Check(terms.status(), "Register");
      if (terms.ok()) Remember(worker_ids_, terms->worker_id);
      return;
    }
    case RpcOp::kLease:
      return RunLease(call);
    case RpcOp::kReport:
      return RunReport(call);
    case RpcOp::kHeartbeat:
      return RunHeartbeat(call);
    case RpcOp::kTick:
    case RpcOp::kNumOps:
      core_->Tick();
      return;
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  gtco::util::InitLogging("fuzz", gtco::util::LogLevel::kError);
  google::protobuf::SetLogHandler(nullptr);  // invalid UTF-8 in string fields is logged
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > kMaxScriptBytes) return 0;
  std::vector<RpcCall> calls =
      gtco::fuzz::ParseRpcScript(std::string_view(reinterpret_cast<const char*>(data), size));
  if (calls.size() > kMaxCalls) calls.resize(kMaxCalls);
  FarmDriver driver;
  for (const RpcCall& call : calls) driver.Run(call);
  return 0;
}
