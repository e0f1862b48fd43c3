// The web dashboard's JSON documents (nlohmann::json stays inside this file).
#include "server/dashboard_views.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>
#include <unordered_map>

#include "absl/strings/str_cat.h"
#include "common/db/states.h"
#include "common/kernels/registry.h"

namespace gtco::server {
namespace {

using Json = nlohmann::json;

/// Text that came from users or workers may hold invalid UTF-8: replaced, never a throw.
std::string Dump(const Json& json) {
  return json.dump(-1, ' ', false, Json::error_handler_t::replace);
}

/// Unknown ETAs and latencies stay negative or 0 in the core; JSON carries null for "unknown".
Json SecondsOrNull(double seconds, bool known) { return known ? Json(seconds) : Json(nullptr); }
/// A time that is unknown until positive (best latencies before the first success).
Json PositiveOrNull(double seconds) { return SecondsOrNull(seconds, seconds > 0); }

Json PairsJson(const std::vector<std::pair<int64_t, double>>& pairs) {
  Json list = Json::array();
  for (const auto& [trial, seconds] : pairs) list.push_back(Json::array({trial, seconds}));
  return list;
}

Json SeriesJson(const CurveSeries& series) {
  return Json{{"name", series.name},
              {"trials", series.trials},
              {"failed", series.failed},
              {"best_seconds", PositiveOrNull(series.best_seconds)},
              {"points", PairsJson(series.points)},
              {"best", PairsJson(series.best)}};
}

/// Adds one measurement (trial number `trial`) to `series`.
void AddTrial(CurveSeries& series, int64_t trial, const db::MeasurementRow& row) {
  ++series.trials;
  if (!row.ok || row.median_seconds <= 0) {
    ++series.failed;
    return;
  }
  series.points.emplace_back(trial, row.median_seconds);
  if (series.best_seconds == 0 || row.median_seconds < series.best_seconds) {
    series.best_seconds = row.median_seconds;
    series.best.emplace_back(trial, row.median_seconds);
  }
}

/// Ends the step line at `last_trial` and thins the points to kMaxCurvePoints, evenly.
void FinishSeries(CurveSeries& series, int64_t last_trial) {
  if (!series.best.empty() && series.best.back().first != last_trial) {
    series.best.emplace_back(last_trial, series.best_seconds);
  }
  if (series.points.size() <= kMaxCurvePoints) return;
  std::vector<std::pair<int64_t, double>> thinned;
  const double stride = static_cast<double>(series.points.size()) / kMaxCurvePoints;
  for (size_t slot = 0; slot < kMaxCurvePoints; ++slot) {
    thinned.push_back(series.points[static_cast<size_t>(slot * stride)]);
  }
  series.points = std::move(thinned);
}

Json MappingJson(const MappingInfo& mapping) {
  Json pruned = Json::object();
  for (const auto& [rule, count] : mapping.pruned_by_rule) pruned[rule] = count;
  return Json{{"name", mapping.name},
              {"hardware", mapping.hardware},
              {"applies", mapping.applies},
              {"reason", mapping.reason},
              {"trials", mapping.trials},
              {"in_flight", mapping.in_flight},
              {"best_seconds", PositiveOrNull(mapping.best_seconds)},
              {"considered", mapping.considered},
              {"admitted", mapping.admitted},
              {"pruned", pruned}};
}

Json TaskJson(const TaskInfo& task) {
  Json mappings = Json::array();
  for (const MappingInfo& mapping : task.mappings) mappings.push_back(MappingJson(mapping));
  return Json{{"task_id", task.task_id},
              {"workload_key", task.workload_key},
              {"kind", task.kind},
              {"description", task.description},
              {"weight", task.weight},
              {"state", db::TaskStateName(task.state)},
              {"trials_allotted", task.trials_allotted},
              {"trials_done", task.trials_done},
              {"trials_failed", task.trials_failed},
              {"best_seconds", PositiveOrNull(task.best_seconds)},
              {"gflops", task.gflops},
              {"eta_seconds", SecondsOrNull(task.eta_seconds, task.eta_seconds >= 0)},
              {"expected_gain_seconds", task.expected_gain_seconds},
              {"pruned", task.pruned},
              {"mappings", mappings}};
}

/// A job's fields shared by the listing and the job page.
Json JobSummaryJson(const JobInfo& job) {
  int64_t tasks_finished = 0;
  for (const TaskInfo& task : job.tasks) tasks_finished += db::IsFinished(task.state) ? 1 : 0;
  return Json{{"job_id", job.job_id},
              {"team", job.team},
              {"model_name", job.model_name},
              {"target", target::TargetName(job.target)},
              {"state", db::JobStateName(job.state)},
              {"error", job.error},
              {"budget", job.budget},
              {"trials_done", job.trials_done},
              {"trials_failed", job.trials_failed},
              {"created_unix_seconds", job.created_unix_seconds},
              {"updated_unix_seconds", job.updated_unix_seconds},
              {"eta_seconds", SecondsOrNull(job.eta_seconds, job.eta_seconds >= 0)},
              {"estimated_latency_seconds",
               PositiveOrNull(job.estimated_latency_seconds)},
              {"tasks_total", job.tasks.size()},
              {"tasks_finished", tasks_finished}};
}

Json HardwareJson(const target::HardwareInfo& hardware) {
  Json json{{"summary", hardware.Summary()},
            {"model", hardware.cpu_model},
            {"cores", hardware.cores},
            {"memory_bytes", hardware.memory_bytes}};
  if (hardware.target == target::Target::kCuda) {
    json["compute_capability"] = absl::StrCat(hardware.sm_major, ".", hardware.sm_minor);
    json["sm_count"] = hardware.sm_count;
    json["shared_bytes_per_block"] = hardware.shared_bytes_per_block;
  } else {
    json["features"] = hardware.cpu_features;
    json["l1d_bytes"] = hardware.l1d_bytes;
    json["l2_bytes"] = hardware.l2_bytes;
    json["l3_bytes"] = hardware.l3_bytes;
  }
  return json;
}

}  // namespace

std::string MappingOfTrace(const std::string& trace) {
  const std::string sketch = trace.substr(0, trace.find(';'));
  static const auto* const kMappingOfSketch = [] {
    auto* by_sketch = new std::unordered_map<std::string, std::string>();
    for (const schedule::MappingSketch* mapping : kernels::MappingRegistry()) {
      by_sketch->emplace(mapping->sketch().Name(), mapping->Name());
    }
    return by_sketch;
  }();
  auto found = kMappingOfSketch->find(sketch);
  return found != kMappingOfSketch->end() ? found->second : sketch;
}

TaskCurves BuildTaskCurves(const std::string& task_id,
                           const std::vector<db::MeasurementRow>& measurements) {
  TaskCurves curves;
  curves.task_id = task_id;
  curves.overall.name = "best";
  // A task measured by several hardware classes has one space per class and mapping.
  std::set<std::string> hardware;
  for (const db::MeasurementRow& row : measurements) hardware.insert(row.hardware);
  std::map<std::string, size_t> series_of_name;
  int64_t trial = 0;
  for (const db::MeasurementRow& row : measurements) {
    ++trial;
    std::string name = MappingOfTrace(row.trace);
    if (hardware.size() > 1) absl::StrAppend(&name, " @ ", row.hardware);
    auto [found, added] = series_of_name.emplace(name, curves.mappings.size());
    if (added) {
      curves.mappings.emplace_back();
      curves.mappings.back().name = name;
    }
    AddTrial(curves.mappings[found->second], trial, row);
    AddTrial(curves.overall, trial, row);
  }
  FinishSeries(curves.overall, trial);
  for (CurveSeries& series : curves.mappings) FinishSeries(series, trial);
  return curves;
}

int64_t AllocationRound::Total() const {
  int64_t total = 0;
  for (const auto& [mapping, count] : per_mapping) total += count;
  return total;
}

std::vector<AllocationRound> BuildAllocation(const std::vector<db::CandidateRow>& candidates) {
  std::map<std::pair<int64_t, std::string>, AllocationRound> rounds;
  for (const db::CandidateRow& candidate : candidates) {
    AllocationRound& round = rounds[{candidate.created_unix_ms, candidate.task_id}];
    round.created_unix_ms = candidate.created_unix_ms;
    round.task_id = candidate.task_id;
    ++round.per_mapping[MappingOfTrace(candidate.trace)];
  }
  std::vector<AllocationRound> ordered;
  for (auto& [key, round] : rounds) ordered.push_back(std::move(round));
  return ordered;
}

std::string ErrorJson(const absl::Status& status) {
  return Dump(Json{{"error", std::string(status.message())},
                   {"code", absl::StatusCodeToString(status.code())}});
}

std::string SessionJson(bool auth_enabled, const std::string& role, const std::string& team) {
  return Dump(Json{{"auth", auth_enabled}, {"role", role}, {"team", team}});
}

std::string JobListJson(const std::vector<JobInfo>& jobs) {
  Json list = Json::array();
  for (const JobInfo& job : jobs) list.push_back(JobSummaryJson(job));
  return Dump(Json{{"jobs", list}});
}

std::string JobJson(const JobInfo& job) {
  Json json = JobSummaryJson(job);
  json["scheduler"] = job.scheduler;
  json["round_size"] = job.round_size;
  json["decisions"] = job.decisions;
  Json tasks = Json::array();
  for (const TaskInfo& task : job.tasks) tasks.push_back(TaskJson(task));
  json["tasks"] = tasks;
  return Dump(json);
}

std::string CurvesJson(const JobInfo& job, const std::vector<TaskHistory>& history) {
  Json tasks = Json::array();
  for (const TaskHistory& entry : history) {
    TaskCurves curves = BuildTaskCurves(entry.task.task_id, entry.measurements);
    Json mappings = Json::array();
    for (const CurveSeries& series : curves.mappings) mappings.push_back(SeriesJson(series));
    tasks.push_back(Json{{"task_id", entry.task.task_id},
                         {"description", entry.workload ? entry.workload->description : ""},
                         {"state", db::TaskStateName(entry.task.state)},
                         {"overall", SeriesJson(curves.overall)},
                         {"mappings", mappings}});
  }
  return Dump(Json{{"job_id", job.job_id}, {"tasks", tasks}});
}

std::string AllocationJson(const JobInfo& job, const std::vector<TaskHistory>& history) {
  std::vector<db::CandidateRow> candidates;
  Json task_ids = Json::array();
  for (const TaskHistory& entry : history) {
    task_ids.push_back(entry.task.task_id);
    candidates.insert(candidates.end(), entry.candidates.begin(), entry.candidates.end());
  }
  std::set<std::string> mappings;
  Json rounds = Json::array();
  int64_t ordinal = 0;
  for (const AllocationRound& round : BuildAllocation(candidates)) {
    Json per_mapping = Json::object();
    for (const auto& [mapping, count] : round.per_mapping) {
      per_mapping[mapping] = count;
      mappings.insert(mapping);
    }
    rounds.push_back(Json{{"round", ++ordinal},
                          {"created_unix_seconds", round.created_unix_ms / 1000.0},
                          {"task_id", round.task_id},
                          {"trials", round.Total()},
                          {"per_mapping", per_mapping}});
  }
  return Dump(Json{{"job_id", job.job_id},
                   {"tasks", task_ids},
                   {"mappings", Json(std::vector<std::string>(mappings.begin(), mappings.end()))},
                   {"rounds", rounds}});
}

std::string PlanJson(const JobInfo& job, const std::vector<TaskHistory>& history) {
  std::map<std::string, const TaskInfo*> task_info;
  for (const TaskInfo& task : job.tasks) task_info[task.task_id] = &task;
  Json subgraphs = Json::array();
  int64_t total_flops = 0;
  for (const TaskHistory& entry : history) {
    const TaskInfo* info =
        task_info.count(entry.task.task_id) ? task_info[entry.task.task_id] : nullptr;
    const double best = info != nullptr ? info->best_seconds : 0;
    // Runs in the chosen plan: a plan alternative not chosen runs 0 times.
    const int64_t runs = info != nullptr ? info->runs : entry.task.weight;
    const double latency = runs * best;
    const int64_t flops = entry.workload ? entry.workload->flops : 0;
    total_flops += flops * runs;
    subgraphs.push_back(Json{{"task_id", entry.task.task_id},
                             {"ordinal", entry.task.ordinal},
                             {"workload_key", entry.task.workload_key},
                             {"kind", entry.workload ? entry.workload->kind : ""},
                             {"description", entry.workload ? entry.workload->description : ""},
                             {"canonical", entry.workload ? entry.workload->canonical : ""},
                             {"flops", flops},
                             {"weight", entry.task.weight},
                             {"runs", runs},
                             {"state", db::TaskStateName(entry.task.state)},
                             {"best_seconds", PositiveOrNull(best)},
                             {"latency_share", job.estimated_latency_seconds > 0
                                                   ? Json(latency / job.estimated_latency_seconds)
                                                   : Json(nullptr)}});
  }
  Json choices = Json::array();
  for (const PlanChoiceInfo& choice : job.plan) {
    Json alternatives = Json::array();
    for (const PlanChoiceInfo::Alternative& alternative : choice.alternatives) {
      Json tasks = Json::array();
      for (const auto& [task_id, count] : alternative.tasks) {
        tasks.push_back(Json{{"task_id", task_id}, {"count", count}});
      }
      alternatives.push_back(
          Json{{"name", alternative.name},
               {"seconds", alternative.measured ? Json(alternative.seconds) : Json(nullptr)},
               {"chosen", alternative.chosen},
               {"left_behind", alternative.left_behind},
               {"tasks", tasks}});
    }
    choices.push_back(Json{{"description", choice.description},
                           {"instances", choice.instances},
                           {"alternatives", alternatives}});
  }
  Json fallbacks = Json::array();
  for (const graph::FallbackNode& node : job.fallbacks) {
    fallbacks.push_back(Json{{"op_type", node.op_type}, {"node", node.node}, {"reason", node.reason}});
  }
  return Dump(Json{{"job_id", job.job_id},
                   {"model_name", job.model_name},
                   {"target", target::TargetName(job.target)},
                   {"choices", choices},
                   {"fallbacks", fallbacks},
                   {"total_flops", total_flops},
                   {"estimated_latency_seconds", PositiveOrNull(job.estimated_latency_seconds)},
                   {"subgraphs", subgraphs}});
}

std::string WorkersJson(const std::vector<WorkerSnapshot>& workers,
                        const std::vector<WorkerLease>& leases, int64_t now_unix_ms) {
  std::map<std::string, Json> leases_of;
  for (const WorkerLease& lease : leases) {
    Json& list = leases_of[lease.worker_id];
    if (list.is_null()) list = Json::array();
    // Another team's lease shows only that the worker is busy and until when.
    list.push_back(Json{{"candidate_id", lease.visible ? lease.candidate_id : ""},
                        {"task_id", lease.visible ? lease.task_id : ""},
                        {"job_id", lease.visible ? lease.job_id : ""},
                        {"visible", lease.visible},
                        {"deadline_in_seconds", (lease.deadline_unix_ms - now_unix_ms) / 1000.0}});
  }
  Json list = Json::array();
  for (const WorkerSnapshot& snapshot : workers) {
    const RegisteredWorker& worker = *snapshot.worker;
    auto leased = leases_of.find(worker.row.worker_id);
    list.push_back(Json{{"worker_id", worker.row.worker_id},
                        {"hostname", worker.row.hostname},
                        {"target", target::TargetName(worker.row.target)},
                        {"hardware_class", worker.hardware_class},
                        {"hardware", HardwareJson(worker.hardware)},
                        {"alive", snapshot.alive},
                        {"registered_unix_seconds", worker.row.registered_unix_ms / 1000.0},
                        {"seen_seconds_ago", (now_unix_ms - snapshot.last_seen_ms) / 1000.0},
                        {"results", snapshot.results},
                        {"trials_per_minute", snapshot.results_last_minute},
                        {"leases", leased != leases_of.end() ? leased->second : Json::array()}});
  }
  return Dump(Json{{"workers", list}});
}

std::string RecordsJson(const std::string& workload_key, const std::string& target,
                        const QueryResult& result) {
  Json records = Json::array();
  std::string description;
  for (const ScheduleRecordInfo& record : result.records) {
    description = record.description;
    records.push_back(Json{{"trace", record.trace},
                           {"program_hash", record.program_hash},
                           {"median_seconds", record.median_seconds},
                           {"min_seconds", record.min_seconds},
                           {"max_seconds", record.max_seconds},
                           {"stddev_seconds", record.stddev_seconds},
                           {"repeats", record.repeats},
                           {"gflops", record.gflops},
                           {"mapping", MappingOfTrace(record.trace)},
                           {"worker_id", record.worker_id},
                           {"hardware", record.hardware},
                           {"measured_unix_seconds", record.measured_unix_seconds}});
  }
  return Dump(Json{{"workload_key", workload_key},
                   {"target", target},
                   {"description", description},
                   {"records", records}});
}

}  // namespace gtco::server
