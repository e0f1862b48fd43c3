// gRPC services of gtco-server: translate between protobuf requests and FarmCore calls.
#pragma once

#include <functional>
#include <string>

#include "gtco/v1/gtco.grpc.pb.h"
#include "server/auth_gate.h"
#include "server/farm_core.h"

namespace gtco::server {

class ClientServiceImpl final : public gtco::v1::ClientService::Service {
 public:
  /// `core` and `gate` must outlive the service.
  ClientServiceImpl(FarmCore* core, const AuthGate* gate, int64_t max_model_bytes)
      : core_(core), gate_(gate), max_model_bytes_(max_model_bytes) {}

  grpc::Status Submit(grpc::ServerContext* context,
                      grpc::ServerReader<gtco::v1::ModelChunk>* reader,
                      gtco::v1::SubmitReply* reply) override;
  grpc::Status GetJob(grpc::ServerContext* context, const gtco::v1::GetJobRequest* request,
                      gtco::v1::JobStatus* reply) override;
  grpc::Status WatchJob(grpc::ServerContext* context, const gtco::v1::WatchJobRequest* request,
                        grpc::ServerWriter<gtco::v1::JobStatus>* writer) override;
  grpc::Status ListJobs(grpc::ServerContext* context, const gtco::v1::ListJobsRequest* request,
                        gtco::v1::ListJobsReply* reply) override;
  grpc::Status CancelJob(grpc::ServerContext* context, const gtco::v1::CancelJobRequest* request,
                         gtco::v1::JobStatus* reply) override;
  grpc::Status QueryModel(grpc::ServerContext* context,
                          grpc::ServerReader<gtco::v1::ModelChunk>* reader,
                          gtco::v1::QueryReply* reply) override;
  grpc::Status QueryWorkload(grpc::ServerContext* context,
                             const gtco::v1::QueryWorkloadRequest* request,
                             gtco::v1::QueryReply* reply) override;
  grpc::Status Export(
      grpc::ServerContext* context,
      grpc::ServerReaderWriter<gtco::v1::ExportReply, gtco::v1::ModelChunk>* stream) override;
  grpc::Status ExportRecords(grpc::ServerContext* context,
                             const gtco::v1::ExportRecordsRequest* request,
                             grpc::ServerWriter<gtco::v1::RecordBatch>* writer) override;
  grpc::Status ImportRecords(grpc::ServerContext* context,
                             grpc::ServerReader<gtco::v1::RecordBatch>* reader,
                             gtco::v1::ImportRecordsReply* reply) override;

 private:
  /// Reads a header chunk then data chunks (each from `read`, false at the end) into `bytes`,
  /// refusing more than max_model_bytes_.
  grpc::Status ReadModel(const std::function<bool(gtco::v1::ModelChunk*)>& read,
                         gtco::v1::SubmitHeader* header, std::string* bytes);
  grpc::Status ReadModel(grpc::ServerReader<gtco::v1::ModelChunk>* reader,
                         gtco::v1::SubmitHeader* header, std::string* bytes) {
    return ReadModel([reader](gtco::v1::ModelChunk* chunk) { return reader->Read(chunk); },
                     header, bytes);
  }
  /// The caller's job `job_id` (its status) when the caller may see it; NOT_FOUND, exactly as
  /// for a job that does not exist, when it belongs to another team.
  absl::StatusOr<JobInfo> VisibleJob(const auth::Principal& principal,
                                                 const std::string& job_id);

  FarmCore* core_;
  const AuthGate* gate_;
  int64_t max_model_bytes_;
};

class WorkerServiceImpl final : public gtco::v1::WorkerService::Service {
 public:
  WorkerServiceImpl(FarmCore* core, const AuthGate* gate) : core_(core), gate_(gate) {}

  grpc::Status Register(grpc::ServerContext* context, const gtco::v1::RegisterRequest* request,
                        gtco::v1::RegisterReply* reply) override;
  grpc::Status Lease(grpc::ServerContext* context, const gtco::v1::LeaseRequest* request,
                     gtco::v1::LeaseReply* reply) override;
  grpc::Status Report(grpc::ServerContext* context, const gtco::v1::ReportRequest* request,
                      gtco::v1::ReportReply* reply) override;
  grpc::Status Heartbeat(grpc::ServerContext* context, const gtco::v1::HeartbeatRequest* request,
                         gtco::v1::HeartbeatReply* reply) override;

 private:
  /// OK when the caller holds a worker (or admin) token.
  grpc::Status Authorize(const grpc::ServerContext& context) const;

  FarmCore* core_;
  const AuthGate* gate_;
};

}  // namespace gtco::server
