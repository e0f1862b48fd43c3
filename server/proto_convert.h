// Translation between the gtco.v1 protos and the farm core's types (farm_types.h): the only code
// below the gRPC handlers that knows both. Requests parse into core types (INVALID_ARGUMENT for
// a value the contract does not allow); replies are built from core types.
#pragma once

#include <vector>

#include "absl/status/statusor.h"
#include "gtco/v1/gtco.pb.h"
#include "server/farm_types.h"

namespace gtco::server {

/// The job (or query) a model stream's header asks for; INVALID_ARGUMENT for an unknown target.
absl::StatusOr<JobSpec> JobSpecFromProto(const gtco::v1::SubmitHeader& header);
/// A worker's registration; INVALID_ARGUMENT for an unknown target.
absl::StatusOr<WorkerHello> WorkerHelloFromProto(const gtco::v1::RegisterRequest& request);
TrialResult TrialResultFromProto(const gtco::v1::MeasureResult& result);
std::vector<TrialResult> TrialResultsFromProto(const gtco::v1::ReportRequest& request);

/// A record to import; INVALID_ARGUMENT for an unknown target (the rest is checked by FarmCore).
absl::StatusOr<PortableRecord> PortableRecordFromProto(const gtco::v1::StoredRecord& record);

gtco::v1::StoredRecord ToProto(const PortableRecord& record);
gtco::v1::ImportRecordsReply ToProto(const ImportSummary& summary);
gtco::v1::JobStatus ToProto(const JobInfo& job);
gtco::v1::TaskStatus ToProto(const TaskInfo& task);
gtco::v1::QueryReply ToProto(const QueryResult& result);
gtco::v1::RegisterReply ToProto(const WorkerTerms& terms);
/// Moves the program (it can be large) into the proto.
gtco::v1::Candidate ToProto(LeasedCandidate&& candidate);
gtco::v1::ReportReply ToProto(const ReportTally& tally);

}  // namespace gtco::server
