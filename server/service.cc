// gRPC handlers: translation only; all logic lives in FarmCore.
#include "server/service.h"

#include <optional>

#include "absl/strings/str_cat.h"
#include "common/db/states.h"
#include "server/proto_convert.h"
#include "server/rpc_status.h"

namespace gtco::server {
namespace {

using auth::Role;

/// Evaluates `authorized` (a StatusOr<Principal>) into `principal`, or returns its error.
#define GTCO_AUTHORIZE(principal, authorized)                             \
  auto principal##_or = (authorized);                                     \
  if (!principal##_or.ok()) return ToGrpcStatus(principal##_or.status()); \
  const auth::Principal& principal = *principal##_or

/// Translates a StatusOr's core value into `reply` or returns its error as a grpc::Status.
template <typename T, typename Proto>
grpc::Status Reply(absl::StatusOr<T> result, Proto* reply) {
  if (!result.ok()) return ToGrpcStatus(result.status());
  *reply = ToProto(*result);
  return grpc::Status::OK;
}

}  // namespace

grpc::Status ClientServiceImpl::ReadModel(
    const std::function<bool(gtco::v1::ModelChunk*)>& read, gtco::v1::SubmitHeader* header,
    std::string* bytes) {
  gtco::v1::ModelChunk chunk;
  bool have_header = false;
  while (read(&chunk)) {
    if (chunk.has_header()) {
      if (have_header) {
        return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "two headers in one model stream");
      }
      *header = chunk.header();
      have_header = true;
    } else {
      if (!have_header) {
        return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                            "the model stream must start with a header chunk");
      }
      if (static_cast<int64_t>(bytes->size() + chunk.data().size()) > max_model_bytes_) {
        return grpc::Status(
            grpc::StatusCode::RESOURCE_EXHAUSTED,
            absl::StrCat("model larger than the server's limit of ", max_model_bytes_, " bytes"));
      }
      bytes->append(chunk.data());
    }
  }
  if (!have_header) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "no model was sent");
  }
  return grpc::Status::OK;
}

grpc::Status ClientServiceImpl::Submit(grpc::ServerContext* context,
                                       grpc::ServerReader<gtco::v1::ModelChunk>* reader,
                                       gtco::v1::SubmitReply* reply) {
  GTCO_AUTHORIZE(principal, gate_->Authorize(*context, {Role::kSubmitter, Role::kAdmin}));
  gtco::v1::SubmitHeader header;
  std::string bytes;
  grpc::Status read = ReadModel(reader, &header, &bytes);
  if (!read.ok()) return read;
  // A submitter's jobs belong to its token's team, whatever the request says.
  if (principal.role == Role::kSubmitter) header.set_team(principal.team);
  absl::StatusOr<JobSpec> spec = JobSpecFromProto(header);
  if (!spec.ok()) return ToGrpcStatus(spec.status());
  return Reply(core_->Submit(*spec, bytes), reply->mutable_job());
}

absl::StatusOr<JobInfo> ClientServiceImpl::VisibleJob(const auth::Principal& principal,
                                                      const std::string& job_id) {
  return VisibleTo(principal, job_id, core_->GetJob(job_id));
}

grpc::Status ClientServiceImpl::GetJob(grpc::ServerContext* context,
                                       const gtco::v1::GetJobRequest* request,
                                       gtco::v1::JobStatus* reply) {
  GTCO_AUTHORIZE(principal, gate_->Authorize(*context, {Role::kSubmitter, Role::kAdmin}));
  return Reply(VisibleJob(principal, request->job_id()), reply);
}

grpc::Status ClientServiceImpl::WatchJob(grpc::ServerContext* context,
                                         const gtco::v1::WatchJobRequest* request,
                                         grpc::ServerWriter<gtco::v1::JobStatus>* writer) {
  GTCO_AUTHORIZE(principal, gate_->Authorize(*context, {Role::kSubmitter, Role::kAdmin}));
  absl::StatusOr<JobInfo> visible = VisibleJob(principal, request->job_id());
  if (!visible.ok()) return ToGrpcStatus(visible.status());
  int64_t version = -1;
  while (!context->IsCancelled()) {
    absl::StatusOr<JobInfo> status = core_->WaitForJobChange(request->job_id(), &version, 1000);
    if (!status.ok()) return ToGrpcStatus(status.status());
    if (!writer->Write(ToProto(*status))) break;
    if (db::IsTerminal(status->state)) break;
  }
  return grpc::Status::OK;
}

grpc::Status ClientServiceImpl::ListJobs(grpc::ServerContext* context,
                                         const gtco::v1::ListJobsRequest* request,
                                         gtco::v1::ListJobsReply* reply) {
  GTCO_AUTHORIZE(principal, gate_->Authorize(*context, {Role::kSubmitter, Role::kAdmin}));
  const std::string team = ListedTeam(principal, request->team());
  std::optional<db::JobState> state;
  if (!request->state().empty()) {
    absl::StatusOr<db::JobState> parsed = db::ParseJobState(request->state());
    if (!parsed.ok()) return ToGrpcStatus(parsed.status());
    state = *parsed;
  }
  absl::StatusOr<std::vector<JobInfo>> jobs = core_->ListJobs(team, state);
  if (!jobs.ok()) return ToGrpcStatus(jobs.status());
  for (const JobInfo& job : *jobs) *reply->add_jobs() = ToProto(job);
  return grpc::Status::OK;
}

grpc::Status ClientServiceImpl::CancelJob(grpc::ServerContext* context,
                                          const gtco::v1::CancelJobRequest* request,
                                          gtco::v1::JobStatus* reply) {
  GTCO_AUTHORIZE(principal, gate_->Authorize(*context, {Role::kSubmitter, Role::kAdmin}));
  absl::StatusOr<JobInfo> visible = VisibleJob(principal, request->job_id());
  if (!visible.ok()) return ToGrpcStatus(visible.status());
  return Reply(core_->CancelJob(request->job_id()), reply);
}

grpc::Status ClientServiceImpl::QueryModel(grpc::ServerContext* context,
                                           grpc::ServerReader<gtco::v1::ModelChunk>* reader,
                                           gtco::v1::QueryReply* reply) {
  // Tuned schedules are shared by every team of the farm (they name no model or job).
  // Any submitter or admin (no principal needed past the check).
  if (auto authorized = gate_->Authorize(*context, {Role::kSubmitter, Role::kAdmin});
      !authorized.ok()) {
    return ToGrpcStatus(authorized.status());
  }
  gtco::v1::SubmitHeader header;
  std::string bytes;
  grpc::Status read = ReadModel(reader, &header, &bytes);
  if (!read.ok()) return read;
  absl::StatusOr<JobSpec> spec = JobSpecFromProto(header);
  if (!spec.ok()) return ToGrpcStatus(spec.status());
  return Reply(core_->QueryModel(*spec, bytes), reply);
}

grpc::Status ClientServiceImpl::Export(
    grpc::ServerContext* context,
    grpc::ServerReaderWriter<gtco::v1::ExportReply, gtco::v1::ModelChunk>* stream) {
  // Records are shared by every team; an export reads them and tunes nothing.
  if (auto authorized = gate_->Authorize(*context, {Role::kSubmitter, Role::kAdmin});
      !authorized.ok()) {
    return ToGrpcStatus(authorized.status());
  }
  gtco::v1::SubmitHeader header;
  std::string bytes;
  grpc::Status read = ReadModel(
      [stream](gtco::v1::ModelChunk* chunk) { return stream->Read(chunk); }, &header, &bytes);
  if (!read.ok()) return read;
  absl::StatusOr<JobSpec> spec = JobSpecFromProto(header);
  if (!spec.ok()) return ToGrpcStatus(spec.status());
  const gtco::v1::ExportSpec& wanted = header.export_spec();
  ExportTarget export_target;
  export_target.cpu_features.assign(wanted.cpu_features().begin(), wanted.cpu_features().end());
  export_target.cpu_model = wanted.cpu_model();
  export_target.cores = wanted.cores();
  export_target.isa = wanted.isa();
  export_target.require_tuned = wanted.require_tuned();
  export_target.cuda_arch = wanted.cuda_arch();
  export_target.verify = !wanted.no_verify();
  for (const gtco::v1::NamedArray& array : wanted.verify_inputs()) {
    export_target.verify_inputs.emplace_back(array.name(), array.npy());
  }
  absl::StatusOr<ExportOutcome> outcome = core_->ExportModel(
      *spec, export_target, bytes, [stream](const std::string& line) {
        gtco::v1::ExportReply reply;
        reply.set_progress(line);
        stream->Write(reply);
      });
  if (!outcome.ok()) return ToGrpcStatus(outcome.status());
  gtco::v1::ExportReply summary;
  gtco::v1::ExportSummary* fields = summary.mutable_summary();
  fields->set_kernels(outcome->kernels);
  fields->set_tuned(outcome->tuned);
  for (const std::string& warning : outcome->warnings) fields->add_warnings(warning);
  fields->set_cpu(outcome->cpu);
  fields->set_tune_cpu(outcome->tune_cpu);
  fields->set_artifact_bytes(static_cast<int64_t>(outcome->artifact.size()));
  fields->set_estimated_latency_seconds(outcome->estimated_latency_seconds);
  const runtime::VerificationSpec& check = outcome->verification;
  gtco::v1::Verification* verification = fields->mutable_verification();
  verification->set_status(check.status);
  verification->set_reason(check.reason);
  verification->set_seed(check.seed);
  verification->set_input_sets(check.input_sets);
  verification->set_rule(check.rule);
  for (const runtime::VerificationSpec::Output& output : check.outputs) {
    gtco::v1::Verification::Output* entry = verification->add_outputs();
    entry->set_name(output.name);
    entry->set_max_error(output.max_error);
    entry->set_tolerance(output.tolerance);
  }
  for (const ExportedFallback& fallback : outcome->fallbacks) {
    gtco::v1::FallbackStep* entry = fields->add_fallbacks();
    entry->set_op_type(fallback.op_type);
    entry->set_node(fallback.node);
    entry->set_reason(fallback.reason);
    entry->set_seconds(fallback.seconds);
  }
  fields->set_run_seconds(outcome->run_seconds);
  if (!stream->Write(summary)) return grpc::Status(grpc::StatusCode::CANCELLED, "client left");
  constexpr size_t kChunk = 1 << 20;
  for (size_t at = 0; at < outcome->artifact.size(); at += kChunk) {
    gtco::v1::ExportReply chunk;
    chunk.set_artifact(outcome->artifact.substr(at, kChunk));
    if (!stream->Write(chunk)) return grpc::Status(grpc::StatusCode::CANCELLED, "client left");
  }
  return grpc::Status::OK;
}

grpc::Status ClientServiceImpl::QueryWorkload(grpc::ServerContext* context,
                                              const gtco::v1::QueryWorkloadRequest* request,
                                              gtco::v1::QueryReply* reply) {
  // Any submitter or admin (no principal needed past the check).
  if (auto authorized = gate_->Authorize(*context, {Role::kSubmitter, Role::kAdmin});
      !authorized.ok()) {
    return ToGrpcStatus(authorized.status());
  }
  absl::StatusOr<target::Target> target = target::ParseTarget(request->target());
  if (!target.ok()) return ToGrpcStatus(target.status());
  return Reply(core_->QueryWorkload(request->workload_key(), *target, request->limit()), reply);
}

grpc::Status ClientServiceImpl::ExportRecords(grpc::ServerContext* context,
                                              const gtco::v1::ExportRecordsRequest* request,
                                              grpc::ServerWriter<gtco::v1::RecordBatch>* writer) {
  // Records are shared by every team: any submitter or admin may read them all.
  if (auto authorized = gate_->Authorize(*context, {Role::kSubmitter, Role::kAdmin});
      !authorized.ok()) {
    return ToGrpcStatus(authorized.status());
  }
  db::RecordFilter filter;
  if (!request->target().empty()) {
    absl::StatusOr<target::Target> target = target::ParseTarget(request->target());
    if (!target.ok()) return ToGrpcStatus(target.status());
    filter.target = *target;
  }
  filter.workload_key = request->workload_key();
  filter.include_failed = request->include_failed();
  bool client_left = false;
  absl::Status exported =
      core_->ExportRecords(filter, 500, [&](std::vector<PortableRecord> records) {
        gtco::v1::RecordBatch batch;
        for (const PortableRecord& record : records) *batch.add_records() = ToProto(record);
        client_left = !writer->Write(batch);
        return !client_left;
      });
  if (!exported.ok()) return ToGrpcStatus(exported);
  if (client_left) return grpc::Status(grpc::StatusCode::CANCELLED, "client left");
  return grpc::Status::OK;
}

grpc::Status ClientServiceImpl::ImportRecords(grpc::ServerContext* context,
                                              grpc::ServerReader<gtco::v1::RecordBatch>* reader,
                                              gtco::v1::ImportRecordsReply* reply) {
  // Imported records steer every team's exports: only an admin may add them.
  GTCO_AUTHORIZE(principal, gate_->Authorize(*context, {Role::kAdmin}));
  constexpr size_t kMaxRecords = 5'000'000;
  std::vector<PortableRecord> records;
  gtco::v1::RecordBatch batch;
  while (reader->Read(&batch)) {
    for (const gtco::v1::StoredRecord& record : batch.records()) {
      if (records.size() >= kMaxRecords) {
        return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                            "more than 5,000,000 records in one import: split the file");
      }
      absl::StatusOr<PortableRecord> parsed = PortableRecordFromProto(record);
      if (!parsed.ok()) {
        return ToGrpcStatus(absl::InvalidArgumentError(
            absl::StrCat("record ", records.size() + 1, ": ", parsed.status().message())));
      }
      records.push_back(*std::move(parsed));
    }
  }
  const std::string importer =
      principal.token_id.empty() ? "admin" : absl::StrCat("token ", principal.token_id);
  return Reply(core_->ImportRecords(std::move(records), importer), reply);
}

grpc::Status WorkerServiceImpl::Register(grpc::ServerContext* context,
                                         const gtco::v1::RegisterRequest* request,
                                         gtco::v1::RegisterReply* reply) {
  grpc::Status authorized = Authorize(*context);
  if (!authorized.ok()) return authorized;
  absl::StatusOr<WorkerHello> hello = WorkerHelloFromProto(*request);
  if (!hello.ok()) return ToGrpcStatus(hello.status());
  return Reply(core_->Register(*hello), reply);
}

grpc::Status WorkerServiceImpl::Lease(grpc::ServerContext* context,
                                      const gtco::v1::LeaseRequest* request,
                                      gtco::v1::LeaseReply* reply) {
  grpc::Status authorized = Authorize(*context);
  if (!authorized.ok()) return authorized;
  absl::StatusOr<std::vector<LeasedCandidate>> leased =
      core_->Lease(request->worker_id(), request->max_candidates(), request->wait_ms());
  if (!leased.ok()) return ToGrpcStatus(leased.status());
  for (LeasedCandidate& candidate : *leased)
    *reply->add_candidates() = ToProto(std::move(candidate));
  return grpc::Status::OK;
}

grpc::Status WorkerServiceImpl::Report(grpc::ServerContext* context,
                                       const gtco::v1::ReportRequest* request,
                                       gtco::v1::ReportReply* reply) {
  grpc::Status authorized = Authorize(*context);
  if (!authorized.ok()) return authorized;
  return Reply(core_->Report(request->worker_id(), TrialResultsFromProto(*request)), reply);
}

grpc::Status WorkerServiceImpl::Heartbeat(grpc::ServerContext* context,
                                          const gtco::v1::HeartbeatRequest* request,
                                          gtco::v1::HeartbeatReply* reply) {
  grpc::Status authorized = Authorize(*context);
  if (!authorized.ok()) return authorized;
  return ToGrpcStatus(core_->Heartbeat(
      request->worker_id(),
      std::vector<std::string>(request->candidate_ids().begin(), request->candidate_ids().end())));
}

grpc::Status WorkerServiceImpl::Authorize(const grpc::ServerContext& context) const {
  return ToGrpcStatus(gate_->Authorize(context, {Role::kWorker, Role::kAdmin}).status());
}

}  // namespace gtco::server
