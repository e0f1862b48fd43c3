// Per-RPC latency samples and outcomes of a load run, and the report they make.
#pragma once

#include <grpcpp/grpcpp.h>

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace gtco::bench {

/// The RPCs the load generator issues, one report row each.
enum class RpcKind { kSubmit, kWatchJob, kGetJob, kListJobs, kQueryModel, kQueryWorkload };
inline constexpr int kRpcKindCount = 6;

/// "Submit", "WatchJob", ... as in the proto.
const char* RpcKindName(RpcKind kind);

/// Samples of one client (not thread-safe: one per client thread, merged after the run).
class LoadStats {
 public:
  /// One finished call: its latency (for WatchJob: until the first update) and its status.
  /// A non-OK status counts as an error under its gRPC code.
  void Record(RpcKind kind, double latency_ms, const grpc::Status& status);
  /// A WatchJob stream that ended: `terminal` when the job reached done/failed/cancelled,
  /// otherwise the client stopped following it at its own deadline (not an error).
  void RecordWatchEnd(bool terminal, int64_t updates);
  void Merge(const LoadStats& other);

  struct Kind {
    std::vector<double> latency_ms;                    ///< successful calls only
    std::map<std::string, int64_t> errors;             ///< by gRPC code name
    std::map<std::string, std::string> first_message;  ///< by gRPC code name
  };
  const Kind& kind(RpcKind rpc) const { return kinds_[static_cast<int>(rpc)]; }
  int64_t watch_terminal() const { return watch_terminal_; }
  int64_t watch_cut() const { return watch_cut_; }
  int64_t watch_updates() const { return watch_updates_; }
  int64_t TotalErrors() const;

 private:
  std::array<Kind, kRpcKindCount> kinds_;
  int64_t watch_terminal_ = 0;
  int64_t watch_cut_ = 0;
  int64_t watch_updates_ = 0;
};

/// One report row: counts, throughput over the run's wall time, and latency quantiles.
struct RpcSummary {
  std::string name;
  int64_t calls = 0;  ///< successful and failed
  int64_t errors = 0;
  double per_second = 0;
  double p50_ms = 0, p90_ms = 0, p99_ms = 0, max_ms = 0;
  std::map<std::string, int64_t> errors_by_code;
};

/// Rows in RpcKind order, then a "total" row; `seconds`: the window the calls were started in.
std::vector<RpcSummary> Summarize(const LoadStats& stats, double seconds);

/// The gRPC code's name ("DEADLINE_EXCEEDED").
std::string CodeName(grpc::StatusCode code);

/// One line per RPC kind and error code: the first error message seen ("" without errors).
std::string FormatFirstErrors(const LoadStats& stats);

/// A Markdown table of `rows`.
std::string FormatTable(const std::vector<RpcSummary>& rows);

/// The run as one JSON object: settings in `settings_json` (an object's text), rows, watch ends.
std::string FormatJson(const std::vector<RpcSummary>& rows, const LoadStats& stats, double seconds,
                       const std::string& settings_json);

}  // namespace gtco::bench
