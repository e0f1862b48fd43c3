// gRPC handlers: translation only; all logic lives in FarmCore.
#include "server/service.h"

#include "absl/strings/str_cat.h"
#include "server/rpc_status.h"

namespace gtco::server {
namespace {

using auth::Role;

/// Evaluates `authorized` (a StatusOr<Principal>) into `principal`, or returns its error.
#define GTCO_AUTHORIZE(principal, authorized)                      \
  auto principal##_or = (authorized);                              \
  if (!principal##_or.ok()) return ToGrpcStatus(principal##_or.status()); \
  const auth::Principal& principal = *principal##_or

/// Copies a StatusOr's value into `reply` or returns its error as a grpc::Status.
template <typename T>
grpc::Status Reply(absl::StatusOr<T> result, T* reply) {
  if (!result.ok()) return ToGrpcStatus(result.status());
  *reply = std::move(*result);
  return grpc::Status::OK;
}

}  // namespace

grpc::Status ClientServiceImpl::ReadModel(grpc::ServerReader<gtco::v1::ModelChunk>* reader,
                                          gtco::v1::SubmitHeader* header, std::string* bytes) {
  gtco::v1::ModelChunk chunk;
  bool have_header = false;
  while (reader->Read(&chunk)) {
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
        return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                            absl::StrCat("model larger than the server's limit of ",
                                         max_model_bytes_, " bytes"));
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
  return Reply(core_->Submit(header, bytes), reply->mutable_job());
}

absl::StatusOr<gtco::v1::JobStatus> ClientServiceImpl::VisibleJob(
    const auth::Principal& principal, const std::string& job_id) {
  absl::StatusOr<gtco::v1::JobStatus> status = core_->GetJob(job_id);
  if (status.ok() && HiddenFrom(principal, status->team())) {
    return absl::NotFoundError(absl::StrCat("job '", job_id, "' not found"));
  }
  return status;
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
  absl::StatusOr<gtco::v1::JobStatus> visible = VisibleJob(principal, request->job_id());
  if (!visible.ok()) return ToGrpcStatus(visible.status());
  int64_t version = -1;
  while (!context->IsCancelled()) {
    absl::StatusOr<gtco::v1::JobStatus> status =
        core_->WaitForJobChange(request->job_id(), &version, 1000);
    if (!status.ok()) return ToGrpcStatus(status.status());
    if (!writer->Write(*status)) break;
    const std::string& state = status->state();
    if (state == "done" || state == "failed" || state == "cancelled") break;
  }
  return grpc::Status::OK;
}

grpc::Status ClientServiceImpl::ListJobs(grpc::ServerContext* context,
                                         const gtco::v1::ListJobsRequest* request,
                                         gtco::v1::ListJobsReply* reply) {
  GTCO_AUTHORIZE(principal, gate_->Authorize(*context, {Role::kSubmitter, Role::kAdmin}));
  const std::string& team =
      principal.role == Role::kSubmitter ? principal.team : request->team();
  return Reply(core_->ListJobs(team, request->state()), reply);
}

grpc::Status ClientServiceImpl::CancelJob(grpc::ServerContext* context,
                                          const gtco::v1::CancelJobRequest* request,
                                          gtco::v1::JobStatus* reply) {
  GTCO_AUTHORIZE(principal, gate_->Authorize(*context, {Role::kSubmitter, Role::kAdmin}));
  absl::StatusOr<gtco::v1::JobStatus> visible = VisibleJob(principal, request->job_id());
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
  return Reply(core_->QueryModel(header, bytes), reply);
}

grpc::Status ClientServiceImpl::QueryWorkload(grpc::ServerContext* context,
                                              const gtco::v1::QueryWorkloadRequest* request,
                                              gtco::v1::QueryReply* reply) {
  // Any submitter or admin (no principal needed past the check).
  if (auto authorized = gate_->Authorize(*context, {Role::kSubmitter, Role::kAdmin});
      !authorized.ok()) {
    return ToGrpcStatus(authorized.status());
  }
  return Reply(core_->QueryWorkload(request->workload_key(), request->target(), request->limit()),
               reply);
}

grpc::Status WorkerServiceImpl::Register(grpc::ServerContext* context,
                                         const gtco::v1::RegisterRequest* request,
                                         gtco::v1::RegisterReply* reply) {
  grpc::Status authorized = Authorize(*context);
  if (!authorized.ok()) return authorized;
  return Reply(core_->Register(*request), reply);
}

grpc::Status WorkerServiceImpl::Lease(grpc::ServerContext* context,
                                      const gtco::v1::LeaseRequest* request,
                                      gtco::v1::LeaseReply* reply) {
  grpc::Status authorized = Authorize(*context);
  if (!authorized.ok()) return authorized;
  return Reply(core_->Lease(*request), reply);
}

grpc::Status WorkerServiceImpl::Report(grpc::ServerContext* context,
                                       const gtco::v1::ReportRequest* request,
                                       gtco::v1::ReportReply* reply) {
  grpc::Status authorized = Authorize(*context);
  if (!authorized.ok()) return authorized;
  return Reply(core_->Report(*request), reply);
}

grpc::Status WorkerServiceImpl::Heartbeat(grpc::ServerContext* context,
                                          const gtco::v1::HeartbeatRequest* request,
                                          gtco::v1::HeartbeatReply* reply) {
  grpc::Status authorized = Authorize(*context);
  if (!authorized.ok()) return authorized;
  return ToGrpcStatus(core_->Heartbeat(*request));
}

grpc::Status WorkerServiceImpl::Authorize(const grpc::ServerContext& context) const {
  return ToGrpcStatus(gate_->Authorize(context, {Role::kWorker, Role::kAdmin}).status());
}

}  // namespace gtco::server
