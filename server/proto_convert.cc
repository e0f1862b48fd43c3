// gtco.v1 protos <-> farm core types.
#include "server/proto_convert.h"

#include <google/protobuf/util/json_util.h>

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/util/status.h"

namespace gtco::server {
namespace {

target::HardwareInfo HardwareFrom(const gtco::v1::Hardware& proto, target::Target target) {
  target::HardwareInfo info;
  info.target = target;
  info.cpu_model = proto.cpu_model();
  info.cpu_features.assign(proto.cpu_features().begin(), proto.cpu_features().end());
  info.cores = std::max(1, proto.cores());
  if (proto.l1d_bytes() > 0) info.l1d_bytes = proto.l1d_bytes();
  if (proto.l2_bytes() > 0) info.l2_bytes = proto.l2_bytes();
  if (proto.l3_bytes() > 0) info.l3_bytes = proto.l3_bytes();
  info.memory_bytes = proto.memory_bytes();
  info.sm_major = proto.sm_major();
  info.sm_minor = proto.sm_minor();
  info.sm_count = proto.sm_count();
  info.shared_bytes_per_block = proto.shared_bytes_per_block();
  info.shared_bytes_per_sm = proto.shared_bytes_per_sm();
  info.registers_per_block = proto.registers_per_block();
  info.registers_per_sm = proto.registers_per_sm();
  info.max_threads_per_block = proto.max_threads_per_block();
  info.max_threads_per_sm = proto.max_threads_per_sm();
  info.max_blocks_per_sm = proto.max_blocks_per_sm();
  return info;
}

TrialError TrialErrorFromProto(gtco::v1::ErrorKind kind) {
  switch (kind) {
    case gtco::v1::ERROR_KIND_COMPILE:
      return TrialError::kCompile;
    case gtco::v1::ERROR_KIND_RUNTIME:
      return TrialError::kRuntime;
    case gtco::v1::ERROR_KIND_TIMEOUT:
      return TrialError::kTimeout;
    case gtco::v1::ERROR_KIND_WRONG_RESULT:
      return TrialError::kWrongResult;
    case gtco::v1::ERROR_KIND_CRASH:
      return TrialError::kCrash;
    default:
      return TrialError::kNone;
  }
}

}  // namespace

absl::StatusOr<JobSpec> JobSpecFromProto(const gtco::v1::SubmitHeader& header) {
  JobSpec spec;
  GTCO_ASSIGN_OR_RETURN(spec.target, target::ParseTarget(header.target()));
  spec.model_name = header.model_name();
  spec.budget = header.budget();
  spec.team = header.team();
  for (const gtco::v1::ShapeOverride& shape : header.shapes()) {
    spec.shapes[shape.input()] = std::vector<int64_t>(shape.dims().begin(), shape.dims().end());
  }
  spec.rounds = header.rounds();
  spec.scheduler = header.scheduler();
  return spec;
}

absl::StatusOr<WorkerHello> WorkerHelloFromProto(const gtco::v1::RegisterRequest& request) {
  absl::StatusOr<target::Target> target = target::ParseTarget(request.hardware().target());
  if (!target.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("worker registration: ", target.status().message()));
  }
  WorkerHello hello;
  hello.hostname = request.hostname();
  hello.worker_id = request.worker_id();
  hello.languages.assign(request.languages().begin(), request.languages().end());
  hello.hardware = HardwareFrom(request.hardware(), *target);
  (void)google::protobuf::util::MessageToJsonString(request.hardware(), &hello.hardware_text);
  return hello;
}

TrialResult TrialResultFromProto(const gtco::v1::MeasureResult& result) {
  TrialResult trial;
  trial.candidate_id = result.candidate_id();
  trial.ok = result.ok();
  trial.error_kind = TrialErrorFromProto(result.error_kind());
  trial.error = result.error();
  trial.median_seconds = result.median_seconds();
  trial.min_seconds = result.min_seconds();
  trial.max_seconds = result.max_seconds();
  trial.stddev_seconds = result.stddev_seconds();
  trial.repeats = result.repeats();
  trial.compile_seconds = result.compile_seconds();
  trial.verified = result.verified();
  return trial;
}

std::vector<TrialResult> TrialResultsFromProto(const gtco::v1::ReportRequest& request) {
  std::vector<TrialResult> results;
  results.reserve(request.results_size());
  for (const gtco::v1::MeasureResult& result : request.results()) {
    results.push_back(TrialResultFromProto(result));
  }
  return results;
}

gtco::v1::TaskStatus ToProto(const TaskInfo& task) {
  gtco::v1::TaskStatus status;
  status.set_task_id(task.task_id);
  status.set_workload_key(task.workload_key);
  status.set_kind(task.kind);
  status.set_description(task.description);
  status.set_weight(task.weight);
  status.set_trials_allotted(task.trials_allotted);
  status.set_trials_done(task.trials_done);
  status.set_trials_failed(task.trials_failed);
  status.set_best_seconds(task.best_seconds);
  status.set_eta_seconds(task.eta_seconds);
  status.set_state(db::TaskStateName(task.state));
  status.set_gflops(task.gflops);
  status.set_expected_gain_seconds(task.expected_gain_seconds);
  for (const MappingInfo& mapping : task.mappings) {
    gtco::v1::MappingStatus& out = *status.add_mappings();
    out.set_name(mapping.name);
    out.set_hardware(mapping.hardware);
    out.set_applies(mapping.applies);
    out.set_reason(mapping.reason);
    out.set_trials(mapping.trials);
    out.set_in_flight(mapping.in_flight);
    out.set_best_seconds(mapping.best_seconds);
    out.set_considered(mapping.considered);
    out.set_admitted(mapping.admitted);
    for (const auto& [rule, count] : mapping.pruned_by_rule) {
      gtco::v1::PrunedRule& pruned = *out.add_pruned();
      pruned.set_rule(rule);
      pruned.set_count(count);
    }
  }
  status.set_pruned(task.pruned);
  status.set_runs(task.runs);
  return status;
}

gtco::v1::JobStatus ToProto(const JobInfo& job) {
  gtco::v1::JobStatus status;
  status.set_job_id(job.job_id);
  status.set_team(job.team);
  status.set_model_name(job.model_name);
  status.set_target(target::TargetName(job.target));
  status.set_state(db::JobStateName(job.state));
  status.set_error(job.error);
  status.set_budget(job.budget);
  status.set_trials_done(job.trials_done);
  status.set_trials_failed(job.trials_failed);
  status.set_created_unix_seconds(job.created_unix_seconds);
  status.set_updated_unix_seconds(job.updated_unix_seconds);
  status.set_eta_seconds(job.eta_seconds);
  status.set_estimated_latency_seconds(job.estimated_latency_seconds);
  for (const TaskInfo& task : job.tasks) *status.add_tasks() = ToProto(task);
  status.set_scheduler(job.scheduler);
  status.set_round_size(job.round_size);
  for (const std::string& decision : job.decisions) status.add_decisions(decision);
  status.set_graph_check(job.graph_check);
  for (const graph::FallbackNode& node : job.fallbacks) {
    gtco::v1::FallbackStep& out = *status.add_fallbacks();
    out.set_op_type(node.op_type);
    out.set_node(node.node);
    out.set_reason(node.reason);
  }
  for (const PlanChoiceInfo& choice : job.plan) {
    gtco::v1::PlanChoice& out = *status.add_plan();
    out.set_description(choice.description);
    out.set_instances(choice.instances);
    for (const PlanChoiceInfo::Alternative& alternative : choice.alternatives) {
      gtco::v1::PlanAlternative& alt = *out.add_alternatives();
      alt.set_name(alternative.name);
      alt.set_seconds(alternative.seconds);
      alt.set_measured(alternative.measured);
      alt.set_chosen(alternative.chosen);
      alt.set_left_behind(alternative.left_behind);
      for (const auto& [task_id, count] : alternative.tasks) {
        gtco::v1::PlanTask& task = *alt.add_tasks();
        task.set_task_id(task_id);
        task.set_count(count);
      }
    }
  }
  return status;
}

gtco::v1::QueryReply ToProto(const QueryResult& result) {
  gtco::v1::QueryReply reply;
  for (const ScheduleRecordInfo& record : result.records) {
    gtco::v1::ScheduleRecord& out = *reply.add_records();
    out.set_workload_key(record.workload_key);
    out.set_description(record.description);
    out.set_target(target::TargetName(record.target));
    out.set_trace(record.trace);
    out.set_program_hash(record.program_hash);
    out.set_median_seconds(record.median_seconds);
    out.set_min_seconds(record.min_seconds);
    out.set_max_seconds(record.max_seconds);
    out.set_stddev_seconds(record.stddev_seconds);
    out.set_repeats(record.repeats);
    out.set_measurements(record.measurements);
    out.set_gflops(record.gflops);
    out.set_worker_id(record.worker_id);
    out.set_hardware(record.hardware);
    out.set_measured_unix_seconds(record.measured_unix_seconds);
    out.set_weight(record.weight);
    out.set_tuned(record.tuned);
  }
  reply.set_estimated_latency_seconds(result.estimated_latency_seconds);
  return reply;
}

gtco::v1::RegisterReply ToProto(const WorkerTerms& terms) {
  gtco::v1::RegisterReply reply;
  reply.set_worker_id(terms.worker_id);
  reply.set_lease_seconds(terms.lease_seconds);
  reply.set_heartbeat_seconds(terms.heartbeat_seconds);
  return reply;
}

gtco::v1::Candidate ToProto(LeasedCandidate&& candidate) {
  gtco::v1::Candidate out;
  out.set_candidate_id(candidate.candidate_id);
  out.set_task_id(candidate.task_id);
  out.set_workload_key(candidate.workload_key);
  out.set_workload(candidate.workload);
  out.set_trace(candidate.trace);
  out.set_program(std::move(candidate.program));
  out.set_entry(candidate.entry);
  out.set_program_hash(candidate.program_hash);
  out.set_lease_deadline_unix_ms(candidate.lease_deadline_unix_ms);
  out.set_language(candidate.language);
  if (candidate.target == target::Target::kCuda) {
    gtco::v1::CudaLaunch& launch = *out.mutable_launch();
    launch.set_grid_x(candidate.launch.grid_x);
    launch.set_grid_y(candidate.launch.grid_y);
    launch.set_grid_z(candidate.launch.grid_z);
    launch.set_block_x(candidate.launch.block_x);
    launch.set_block_y(candidate.launch.block_y);
    launch.set_block_z(candidate.launch.block_z);
    launch.set_dynamic_shared_bytes(candidate.launch.dynamic_shared_bytes);
    launch.set_arch(candidate.launch.arch);
  }
  return out;
}

gtco::v1::ReportReply ToProto(const ReportTally& tally) {
  gtco::v1::ReportReply reply;
  reply.set_stored(tally.stored);
  reply.set_duplicates(tally.duplicates);
  reply.set_rejected(tally.rejected);
  return reply;
}

absl::StatusOr<PortableRecord> PortableRecordFromProto(const gtco::v1::StoredRecord& record) {
  PortableRecord out;
  out.workload.key = record.workload_key();
  out.workload.kind = record.workload_kind();
  out.workload.canonical = record.workload_canonical();
  out.workload.description = record.description();
  out.workload.flops = record.flops();
  db::MeasurementRow& m = out.measurement;
  m.candidate_id = record.candidate_id();
  m.workload_key = record.workload_key();
  absl::StatusOr<target::Target> target = target::ParseTarget(record.target());
  if (!target.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("record '", record.candidate_id(),
                                                   "': ", target.status().message()));
  }
  m.target = *target;
  m.trace = record.trace();
  m.program_hash = record.program_hash();
  m.ok = record.ok();
  m.error_kind = record.error_kind();
  m.error = record.error();
  m.median_seconds = record.median_seconds();
  m.min_seconds = record.min_seconds();
  m.max_seconds = record.max_seconds();
  m.stddev_seconds = record.stddev_seconds();
  m.repeats = record.repeats();
  m.compile_seconds = record.compile_seconds();
  m.worker_id = record.worker_id();
  m.hardware = record.hardware();
  m.measured_unix_ms = record.measured_unix_ms();
  return out;
}

gtco::v1::StoredRecord ToProto(const PortableRecord& record) {
  gtco::v1::StoredRecord out;
  const db::MeasurementRow& m = record.measurement;
  out.set_candidate_id(m.candidate_id);
  out.set_workload_key(m.workload_key);
  out.set_workload_kind(record.workload.kind);
  out.set_workload_canonical(record.workload.canonical);
  out.set_description(record.workload.description);
  out.set_flops(record.workload.flops);
  out.set_target(target::TargetName(m.target));
  out.set_trace(m.trace);
  out.set_program_hash(m.program_hash);
  out.set_ok(m.ok);
  out.set_error_kind(m.error_kind);
  out.set_error(m.error);
  out.set_median_seconds(m.median_seconds);
  out.set_min_seconds(m.min_seconds);
  out.set_max_seconds(m.max_seconds);
  out.set_stddev_seconds(m.stddev_seconds);
  out.set_repeats(m.repeats);
  out.set_compile_seconds(m.compile_seconds);
  out.set_worker_id(m.worker_id);
  out.set_hardware(m.hardware);
  out.set_measured_unix_ms(m.measured_unix_ms);
  return out;
}

gtco::v1::ImportRecordsReply ToProto(const ImportSummary& summary) {
  gtco::v1::ImportRecordsReply out;
  out.set_received(summary.received);
  out.set_added(summary.added);
  out.set_already_present(summary.already_present);
  for (const std::string& id : summary.job_ids) out.add_job_ids(id);
  return out;
}

}  // namespace gtco::server
