// FarmCore::ExportRecords / ImportRecords: moving tuning records between schedule databases.
#include <cmath>
#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "common/kernels/registry.h"
#include "common/schedule/trace.h"
#include "common/util/hash.h"
#include "common/util/status.h"
#include "server/farm_core.h"
#include "server/job_options.h"

namespace gtco::server {
namespace {

constexpr size_t kMaxIdBytes = 256;

bool SameRecord(const db::MeasurementRow& a, const db::MeasurementRow& b) {
  return a.workload_key == b.workload_key && a.target == b.target && a.trace == b.trace &&
         a.ok == b.ok && a.median_seconds == b.median_seconds && a.hardware == b.hardware &&
         a.worker_id == b.worker_id && a.measured_unix_ms == b.measured_unix_ms;
}

/// Checks one record and completes its workload row from the canonical text (kind, description
/// and flops are recomputed, not trusted). `workloads` caches parsed workloads by key.
absl::Status CheckRecord(PortableRecord* record, std::map<std::string, ir::Workload>* workloads) {
  db::MeasurementRow& m = record->measurement;
  db::WorkloadRow& w = record->workload;
  if (m.candidate_id.empty() || m.candidate_id.size() > kMaxIdBytes) {
    return absl::InvalidArgumentError("candidate_id must be 1 to 256 bytes");
  }
  if (w.key.empty()) w.key = m.workload_key;
  if (w.key != m.workload_key) {
    return absl::InvalidArgumentError(absl::StrCat("workload key '", w.key,
                                                   "' differs from the measurement's '",
                                                   m.workload_key, "'"));
  }
  auto cached = workloads->find(w.key);
  if (cached == workloads->end()) {
    absl::StatusOr<ir::Workload> parsed = ir::ParseWorkload(w.canonical);
    if (!parsed.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("its workload does not parse: ", parsed.status().message()));
    }
    GTCO_RETURN_IF_ERROR(parsed->Validate());
    if (parsed->Key() != w.key) {
      return absl::InvalidArgumentError(
          absl::StrCat("workload key '", w.key, "' is not the key of its canonical text ('",
                       parsed->Key(), "'): the record was changed or comes from another version"));
    }
    cached = workloads->emplace(w.key, *std::move(parsed)).first;
  }
  const ir::Workload& workload = cached->second;
  w.kind = ir::AnchorKindName(workload.anchor);
  w.description = workload.Description();
  w.flops = workload.Flops();
  absl::StatusOr<schedule::Trace> trace = schedule::Trace::Parse(m.trace);
  if (!trace.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("its trace does not parse: ", trace.status().message()));
  }
  if (absl::Status resolved = kernels::ResolveTrace(workload, *trace).status(); !resolved.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("its trace does not apply to its workload: ", resolved.message()));
  }
  if (m.worker_id.empty() || m.hardware.empty() || m.measured_unix_ms <= 0) {
    return absl::InvalidArgumentError(
        "provenance missing: worker_id, hardware and measured_unix_ms are required");
  }
  if (m.ok) {
    const bool finite = std::isfinite(m.median_seconds) && std::isfinite(m.min_seconds) &&
                        std::isfinite(m.max_seconds) && std::isfinite(m.stddev_seconds);
    if (!finite || m.min_seconds <= 0 || m.min_seconds > m.median_seconds ||
        m.median_seconds > m.max_seconds || m.stddev_seconds < 0 || m.repeats < 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          "implausible timings (need 0 < min <= median <= max, stddev >= 0, repeats >= 1; got "
          "min ",
          m.min_seconds, ", median ", m.median_seconds, ", max ", m.max_seconds, ", repeats ",
          m.repeats, ")"));
    }
  } else {
    static const std::set<std::string> kKinds = {"compile", "runtime", "timeout", "wrong_result",
                                                 "crash"};
    if (!kKinds.count(m.error_kind)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "a failed record needs error_kind compile|runtime|timeout|wrong_result|crash, got '",
          m.error_kind, "'"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status FarmCore::ExportRecords(const db::RecordFilter& filter, int batch,
                                     const std::function<bool(std::vector<PortableRecord>)>& emit) {
  if (batch < 1) return absl::InvalidArgumentError("export records: batch must be >= 1");
  std::map<std::string, db::WorkloadRow> workloads;
  std::string after;
  for (;;) {
    std::vector<db::MeasurementRow> rows;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      GTCO_ASSIGN_OR_RETURN(rows, db_->ListRecords(filter, after, batch));
    }
    if (rows.empty()) return absl::OkStatus();
    std::vector<PortableRecord> records;
    records.reserve(rows.size());
    for (db::MeasurementRow& row : rows) {
      auto found = workloads.find(row.workload_key);
      if (found == workloads.end()) {
        std::optional<db::WorkloadRow> workload;
        {
          std::lock_guard<std::mutex> lock(mutex_);
          GTCO_ASSIGN_OR_RETURN(workload, db_->GetWorkload(row.workload_key));
        }
        if (!workload) {
          return absl::DataLossError(absl::StrCat("measurement '", row.candidate_id,
                                                  "' names workload '", row.workload_key,
                                                  "', which is not in the database"));
        }
        found = workloads.emplace(row.workload_key, *std::move(workload)).first;
      }
      after = row.candidate_id;
      row.task_id.clear();
      records.push_back(PortableRecord{found->second, std::move(row)});
    }
    if (!emit(std::move(records))) return absl::OkStatus();
  }
}

absl::StatusOr<ImportSummary> FarmCore::ImportRecords(std::vector<PortableRecord> records,
                                                      const std::string& importer) {
  ImportSummary summary;
  summary.received = static_cast<int64_t>(records.size());
  // Everything is checked before anything is stored.
  std::map<std::string, ir::Workload> workloads;
  std::map<std::string, size_t> first_of_id;
  std::vector<PortableRecord> unique;
  for (size_t i = 0; i < records.size(); ++i) {
    PortableRecord& record = records[i];
    if (absl::Status checked = CheckRecord(&record, &workloads); !checked.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("record ", i + 1, " (candidate '",
                                                     record.measurement.candidate_id,
                                                     "'): ", checked.message()));
    }
    auto [seen, inserted] = first_of_id.emplace(record.measurement.candidate_id, i);
    if (!inserted) {
      if (!SameRecord(records[seen->second].measurement, record.measurement)) {
        return absl::InvalidArgumentError(
            absl::StrCat("records ", seen->second + 1, " and ", i + 1, " share candidate id '",
                         record.measurement.candidate_id, "' but differ"));
      }
      continue;
    }
    unique.push_back(std::move(record));
  }
  std::vector<std::string> ids;
  ids.reserve(unique.size());
  for (const PortableRecord& record : unique) ids.push_back(record.measurement.candidate_id);

  std::lock_guard<std::mutex> lock(mutex_);
  GTCO_ASSIGN_OR_RETURN(const std::vector<std::string> existing, db_->ExistingMeasurements(ids));
  const std::set<std::string> present(existing.begin(), existing.end());
  // One finished job per target holds the new records; one task per workload in it.
  std::map<target::Target, db::JobRow> jobs;
  std::map<std::pair<target::Target, std::string>, db::TaskRow> tasks;
  std::map<target::Target, int> tasks_of_target;
  std::map<std::string, db::WorkloadRow> workload_rows;
  std::vector<db::MeasurementRow> rows;
  const int64_t now = NowMs();
  for (PortableRecord& record : unique) {
    db::MeasurementRow& m = record.measurement;
    if (present.count(m.candidate_id)) continue;
    auto job = jobs.find(m.target);
    if (job == jobs.end()) {
      db::JobRow row;
      row.job_id = NewId("import-");
      row.team = "";
      row.target = m.target;
      row.state = db::JobState::kDone;
      row.options = EncodeJobOptions(JobOptions{});
      row.created_unix_ms = row.updated_unix_ms = now;
      job = jobs.emplace(m.target, row).first;
    }
    auto task = tasks.find({m.target, m.workload_key});
    if (task == tasks.end()) {
      db::TaskRow row;
      row.job_id = job->second.job_id;
      row.ordinal = tasks_of_target[m.target]++;
      row.task_id = absl::StrCat(row.job_id, ".t", row.ordinal);
      row.workload_key = m.workload_key;
      row.target = m.target;
      row.state = db::TaskState::kDone;
      task = tasks.emplace(std::make_pair(m.target, m.workload_key), row).first;
    }
    ++task->second.trials_allotted;
    ++job->second.budget;
    m.task_id = task->second.task_id;
    workload_rows.emplace(record.workload.key, record.workload);
    rows.push_back(m);
  }
  if (rows.empty()) {
    summary.already_present = summary.received;
    return summary;
  }
  std::vector<db::JobRow> job_rows;
  for (auto& [target, job] : jobs) {
    job.model_name = absl::StrCat("records import by ", importer.empty() ? "admin" : importer,
                                  " (", job.budget, " records)");
    std::string ids_text;
    for (const db::MeasurementRow& row : rows) {
      if (row.target == target) absl::StrAppend(&ids_text, row.candidate_id, "\n");
    }
    job.model_sha = util::HexDigest128(ids_text);
    job_rows.push_back(job);
    summary.job_ids.push_back(job.job_id);
  }
  std::vector<db::TaskRow> task_rows;
  for (const auto& [key, task] : tasks) task_rows.push_back(task);
  std::vector<db::WorkloadRow> workload_list;
  for (const auto& [key, row] : workload_rows) workload_list.push_back(row);
  GTCO_ASSIGN_OR_RETURN(summary.added,
                        db_->ImportRecords(workload_list, job_rows, task_rows, rows));
  summary.already_present = summary.received - summary.added;
  return summary;
}

}  // namespace gtco::server
