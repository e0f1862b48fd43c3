// The farm's metric families.
#include "server/farm_metrics.h"

namespace gtco::server {
namespace {
constexpr db::JobState kJobStates[] = {db::JobState::kRunning, db::JobState::kDone,
                                       db::JobState::kFailed, db::JobState::kCancelled};
}  // namespace

FarmMetrics::FarmMetrics(metrics::Registry& registry)
    : jobs_(registry.AddGauge("gtco_jobs", "Jobs known to this server, by state.")),
      trials_(registry.AddCounter("gtco_trials_total",
                                  "Measured candidates recorded, by target and outcome.")),
      rejected_results_(registry.AddCounter("gtco_rejected_results_total",
                                            "Reported results not stored, by reason.")),
      queue_depth_(registry.AddGauge(
          "gtco_queue_depth", "Trials waiting to be measured (pending + not yet proposed).")),
      connected_workers_(registry.AddGauge("gtco_connected_workers",
                                           "Workers seen within three heartbeat periods.")),
      measurement_seconds_(registry.AddHistogram(
          "gtco_measurement_seconds", "Wall time from lease to report of a candidate.",
          {0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60})),
      database_seconds_(registry.AddHistogram(
          "gtco_database_statement_seconds",
          "Wall time of one schedule-database statement (or transaction begin/commit).",
          {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.1, 1})),
      database_statement_seconds_(database_seconds_.Add({})),
      database_errors_(registry.AddCounter(
          "gtco_database_errors_total",
          "Schedule-database statements that failed, by status code (UNAVAILABLE: the database "
          "was unreachable, full or failing).")),
      leases_granted_(registry.AddCounter("gtco_leases_granted_total",
                                          "Candidates handed to workers under a lease, by target.")),
      leases_expired_(registry.AddCounter(
          "gtco_leases_expired_total",
          "Leases that ran out before their result came, by target (measured again).")),
      leases_outstanding_(registry.AddGauge(
          "gtco_leases_outstanding", "Candidates leased to workers and not yet reported.")),
      team_trials_(registry.AddCounter("gtco_team_trials_total",
                                       "Trials measured for each team's jobs.")),
      worker_info_(registry.AddGauge(
          "gtco_worker_info", "Registered workers (value 1), labelled with their hardware.")) {
  for (db::JobState state : kJobStates) jobs_.Add({{"state", db::JobStateName(state)}});
  database_errors_.Add({{"code", "UNAVAILABLE"}});
}

void FarmMetrics::SetJobsByState(const std::map<db::JobState, int64_t>& counts) {
  for (db::JobState state : kJobStates) {
    auto found = counts.find(state);
    jobs_.Add({{"state", db::JobStateName(state)}}).Set(found == counts.end() ? 0 : found->second);
  }
}

void FarmMetrics::CountTrial(target::Target target, const std::string& outcome) {
  trials_.Add({{"target", target::TargetName(target)}, {"outcome", outcome}}).Increment();
}

void FarmMetrics::CountRejectedResult(const std::string& reason) {
  rejected_results_.Add({{"reason", reason}}).Increment();
}

void FarmMetrics::SetQueueDepth(target::Target target, int64_t depth) {
  queue_depth_.Add({{"target", target::TargetName(target)}}).Set(static_cast<double>(depth));
}

void FarmMetrics::SetConnectedWorkers(target::Target target, int64_t workers) {
  connected_workers_.Add({{"target", target::TargetName(target)}})
      .Set(static_cast<double>(workers));
}

void FarmMetrics::ObserveMeasurementSeconds(target::Target target, double seconds) {
  measurement_seconds_.Add({{"target", target::TargetName(target)}}).Observe(seconds);
}

void FarmMetrics::ObserveDatabaseStatement(double seconds, absl::StatusCode code) {
  database_statement_seconds_.Observe(seconds);
  if (code != absl::StatusCode::kOk) {
    database_errors_.Add({{"code", absl::StatusCodeToString(code)}}).Increment();
  }
}

void FarmMetrics::CountLeasesGranted(target::Target target, int64_t count) {
  leases_granted_.Add({{"target", target::TargetName(target)}})
      .Increment(static_cast<double>(count));
}

void FarmMetrics::CountLeaseExpired(target::Target target) {
  leases_expired_.Add({{"target", target::TargetName(target)}}).Increment();
}

void FarmMetrics::SetLeasesOutstanding(target::Target target, int64_t leases) {
  leases_outstanding_.Add({{"target", target::TargetName(target)}})
      .Set(static_cast<double>(leases));
}

void FarmMetrics::CountTeamTrial(const std::string& team) {
  team_trials_.Add({{"team", team}}).Increment();
}

void FarmMetrics::SetWorkerInfo(const std::string& worker_id, const std::string& hostname,
                                target::Target target, const std::string& hardware) {
  worker_info_
      .Add({{"worker", worker_id},
            {"hostname", hostname},
            {"target", target::TargetName(target)},
            {"hardware", hardware}})
      .Set(1);
}

}  // namespace gtco::server
