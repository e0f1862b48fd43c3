// The server's Prometheus metrics: one place that names every family the farm exports.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "absl/status/status.h"
#include "common/db/states.h"
#include "common/metrics/registry.h"
#include "common/target/target.h"

namespace gtco::server {

/// Thread-safe (the underlying metrics are).
class FarmMetrics {
 public:
  explicit FarmMetrics(metrics::Registry& registry);

  /// Sets the jobs-by-state gauges; states missing from `counts` read 0.
  void SetJobsByState(const std::map<db::JobState, int64_t>& counts);
  /// outcome: "ok" | "compile" | "runtime" | "timeout" | "wrong_result" | "crash".
  void CountTrial(target::Target target, const std::string& outcome);
  /// reason: "unknown_candidate" | "duplicate".
  void CountRejectedResult(const std::string& reason);
  void SetQueueDepth(target::Target target, int64_t depth);
  void SetConnectedWorkers(target::Target target, int64_t workers);
  /// Wall time from lease to report of one candidate.
  void ObserveMeasurementSeconds(target::Target target, double seconds);
  /// One database statement (or transaction begin/commit): its time, and its error by code.
  void ObserveDatabaseStatement(double seconds, absl::StatusCode code);
  /// Candidates handed out under a lease.
  void CountLeasesGranted(target::Target target, int64_t count);
  /// Leases that ran out before their result came (the candidate goes to another worker).
  void CountLeaseExpired(target::Target target);
  /// Candidates leased and not yet reported.
  void SetLeasesOutstanding(target::Target target, int64_t leases);
  /// One measured trial of a job of `team`.
  void CountTeamTrial(const std::string& team);
  /// A registered worker, as an info metric (value 1) labelled with what it runs on.
  void SetWorkerInfo(const std::string& worker_id, const std::string& hostname,
                     target::Target target, const std::string& hardware);

 private:
  metrics::Family<metrics::Gauge>& jobs_;
  metrics::Family<metrics::Counter>& trials_;
  metrics::Family<metrics::Counter>& rejected_results_;
  metrics::Family<metrics::Gauge>& queue_depth_;
  metrics::Family<metrics::Gauge>& connected_workers_;
  metrics::HistogramFamily& measurement_seconds_;
  metrics::HistogramFamily& database_seconds_;
  metrics::Histogram& database_statement_seconds_;  ///< its one child (no labels)
  metrics::Family<metrics::Counter>& database_errors_;
  metrics::Family<metrics::Counter>& leases_granted_;
  metrics::Family<metrics::Counter>& leases_expired_;
  metrics::Family<metrics::Gauge>& leases_outstanding_;
  metrics::Family<metrics::Counter>& team_trials_;
  metrics::Family<metrics::Gauge>& worker_info_;
};

}  // namespace gtco::server
