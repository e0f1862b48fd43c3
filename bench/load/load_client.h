// One simulated user of the farm: its own channel, looping over a weighted mix of RPCs.
#pragma once

#include <grpcpp/grpcpp.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "bench/load/load_stats.h"
#include "gtco/v1/gtco.grpc.pb.h"

namespace gtco::bench {

/// What a client does next; each maps to one or two RPC kinds.
enum class LoadOp { kSubmit, kWatch, kStatus, kList, kQuery };
inline constexpr int kLoadOpCount = 5;

/// Relative weights of the ops, parsed from "submit=1,watch=2,query=5,status=4,list=1".
class OpMix {
 public:
  /// INVALID_ARGUMENT for an unknown op name, a weight that is not a non-negative integer, or
  /// all weights zero. Ops not named get weight 0.
  static absl::StatusOr<OpMix> Parse(const std::string& text);
  LoadOp Pick(std::mt19937_64& rng) const;
  std::string ToString() const;

 private:
  std::array<int, kLoadOpCount> weights_{};
};

/// Settings shared by every client of a run.
struct LoadConfig {
  std::string address;
  std::string token;  ///< sent as "authorization: Bearer <token>"; "" sends none
  std::string target = "cpu";
  std::string model_name;    ///< shown in job listings
  std::string model_bytes;   ///< the ONNX model every Submit and QueryModel uploads
  int64_t budget = 2;        ///< trials per submitted job
  int watch_seconds = 3;     ///< a WatchJob stream is followed at most this long
  int timeout_seconds = 30;  ///< deadline of every other call
  int think_ms = 0;          ///< pause between a client's calls
  OpMix mix;
};

/// Workload keys known to have a measurement on the target (thread-safe): what QueryWorkload
/// asks for, so that NOT_FOUND would be a real error.
class TunedKeys {
 public:
  void AddFrom(const gtco::v1::JobStatus& job);
  /// "" when none is known yet.
  std::string Pick(std::mt19937_64& rng) const;

 private:
  mutable std::mutex mutex_;
  std::vector<std::string> keys_;
  std::set<std::string> known_;
};

/// Not thread-safe: each client runs on one thread. Holds its channel for its whole life.
class LoadClient {
 public:
  /// `index` names the client's team ("load-<index>") and seeds its random choices;
  /// `background_job_id`: a long-running job to watch when the client's own jobs are done
  /// ("" for none). `tuned_keys` outlives the client.
  LoadClient(const LoadConfig& config, int index, std::string background_job_id,
             TunedKeys* tuned_keys);

  /// Waits for the channel's connection; false if it is not ready by `deadline`.
  bool Connect(std::chrono::system_clock::time_point deadline);
  /// Starts ops from the mix until `end` (the op in flight then finishes, a watch included).
  void Run(std::chrono::steady_clock::time_point end);

  /// Submits the model with `budget` (recorded); the job on success.
  absl::StatusOr<gtco::v1::JobStatus> Submit(const std::string& model_name,
                                             const std::string& model_bytes, int64_t budget);
  /// Follows the job until it ends or `seconds` passed (recorded); its last status.
  absl::StatusOr<gtco::v1::JobStatus> Watch(const std::string& job_id, int seconds);
  /// Cancels a job (not recorded); its final status.
  absl::StatusOr<gtco::v1::JobStatus> Cancel(const std::string& job_id);

  const LoadStats& stats() const { return stats_; }
  /// Forgets what was recorded (after a warm-up).
  void ClearStats() { stats_ = LoadStats(); }

 private:
  void Prepare(grpc::ClientContext* context, int seconds) const;
  void RunOp(LoadOp op);
  void GetJob();
  void ListJobs();
  void Query();

  const LoadConfig& config_;
  std::string team_;
  std::string background_job_id_;
  TunedKeys* tuned_keys_;
  std::mt19937_64 rng_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<gtco::v1::ClientService::Stub> stub_;
  std::string last_job_id_;
  bool last_job_terminal_ = false;
  bool query_model_next_ = true;
  LoadStats stats_;
};

}  // namespace gtco::bench
