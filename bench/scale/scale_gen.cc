// scale_gen: N simulated CPU workers against one gtco-server, for bench/scale/run_scale.py.
//
// Each simulated worker registers like gtco-worker (this host's CPU facts, its own connection),
// then leases one candidate at a time, spends --seconds-per-trial on it (the pace a real CPU
// worker measured in the same run) and reports a synthetic verified result whose latency is a
// hash of the trace, so the search still has a signal to follow. Nothing is compiled or run:
// what is measured is the server (proposal, lowering, lease, result, database write). This is a
// benchmark tool only; gtco-worker has no such mode. Prints one JSON document.
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <functional>
#include <iostream>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/target/target.h"
#include "common/util/flags.h"
#include "gtco/v1/gtco.grpc.pb.h"
#include "worker/worker_app.h"

namespace gtco::bench {
namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  std::string server = "127.0.0.1:7070";
  int workers = 1;
  double seconds = 30;
  double seconds_per_trial = 0.1;
};

/// What every simulated worker adds up; guarded by `mutex`.
struct Totals {
  std::mutex mutex;
  int64_t leased = 0;
  int64_t empty_leases = 0;
  int64_t stored = 0;
  int64_t duplicates = 0;
  int64_t rejected = 0;
  int64_t rpc_errors = 0;
  std::vector<double> lease_ms;  ///< latency of every Lease that returned a candidate
  std::string first_error;
};

/// A latency the search can tell apart: 50-150 µs, fixed per trace.
double SyntheticSeconds(const std::string& trace) {
  const size_t hash = std::hash<std::string>{}(trace);
  return 50e-6 * (1.0 + static_cast<double>(hash % 2000) / 1000.0);
}

void RecordError(Totals& totals, const std::string& what, const grpc::Status& status) {
  std::lock_guard<std::mutex> lock(totals.mutex);
  ++totals.rpc_errors;
  if (totals.first_error.empty()) {
    totals.first_error = absl::StrCat(what, ": ", status.error_message());
  }
}

void RunWorker(const Options& options, int index, const gtco::v1::Hardware& hardware,
               Clock::time_point deadline, Totals& totals) {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);  // a connection of its own, like a process
  auto stub = gtco::v1::WorkerService::NewStub(
      grpc::CreateCustomChannel(options.server, grpc::InsecureChannelCredentials(), args));
  gtco::v1::RegisterRequest register_request;
  register_request.set_hostname(absl::StrCat("scale-", index));
  *register_request.mutable_hardware() = hardware;
  // As a gtco-worker of this release registers: a CPU worker replays traces itself (the server
  // ignores the language for other targets).
  register_request.add_languages("trace");
  gtco::v1::RegisterReply registered;
  grpc::ClientContext register_context;
  grpc::Status status = stub->Register(&register_context, register_request, &registered);
  if (!status.ok()) return RecordError(totals, "Register", status);
  const auto pace = std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double>(options.seconds_per_trial));
  auto next_heartbeat = Clock::now() + std::chrono::seconds(registered.heartbeat_seconds());
  while (Clock::now() < deadline) {
    if (Clock::now() >= next_heartbeat) {
      gtco::v1::HeartbeatRequest heartbeat;
      heartbeat.set_worker_id(registered.worker_id());
      gtco::v1::HeartbeatReply heartbeat_reply;
      grpc::ClientContext heartbeat_context;
      stub->Heartbeat(&heartbeat_context, heartbeat, &heartbeat_reply);
      next_heartbeat = Clock::now() + std::chrono::seconds(registered.heartbeat_seconds());
    }
    gtco::v1::LeaseRequest lease;
    lease.set_worker_id(registered.worker_id());
    lease.set_max_candidates(1);
    lease.set_wait_ms(1000);
    gtco::v1::LeaseReply leased;
    grpc::ClientContext lease_context;
    lease_context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    const Clock::time_point asked = Clock::now();
    status = stub->Lease(&lease_context, lease, &leased);
    const double lease_ms =
        std::chrono::duration<double, std::milli>(Clock::now() - asked).count();
    if (!status.ok()) {
      RecordError(totals, "Lease", status);
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      continue;
    }
    if (leased.candidates().empty()) {
      std::lock_guard<std::mutex> lock(totals.mutex);
      ++totals.empty_leases;
      continue;
    }
    {
      std::lock_guard<std::mutex> lock(totals.mutex);
      totals.leased += leased.candidates_size();
      totals.lease_ms.push_back(lease_ms);
    }
    gtco::v1::ReportRequest report;
    report.set_worker_id(registered.worker_id());
    for (const gtco::v1::Candidate& candidate : leased.candidates()) {
      std::this_thread::sleep_for(pace);
      gtco::v1::MeasureResult& result = *report.add_results();
      const double seconds = SyntheticSeconds(candidate.trace());
      result.set_candidate_id(candidate.candidate_id());
      result.set_ok(true);
      result.set_verified(true);
      result.set_median_seconds(seconds);
      result.set_min_seconds(seconds * 0.98);
      result.set_max_seconds(seconds * 1.05);
      result.set_repeats(10);
    }
    gtco::v1::ReportReply reported;
    grpc::ClientContext report_context;
    status = stub->Report(&report_context, report, &reported);
    if (!status.ok()) {
      RecordError(totals, "Report", status);
      continue;
    }
    std::lock_guard<std::mutex> lock(totals.mutex);
    totals.stored += reported.stored();
    totals.duplicates += reported.duplicates();
    totals.rejected += reported.rejected();
  }
}

double Percentile(std::vector<double> values, double fraction) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const size_t index = std::min(values.size() - 1, static_cast<size_t>(fraction * values.size()));
  return values[index];
}

/// Parses a positive number (seconds may be fractional); INVALID_ARGUMENT naming the flag.
absl::StatusOr<double> PositiveNumber(const util::ParsedArgs& args, const std::string& flag,
                                      double fallback) {
  if (!args.Has(flag)) return fallback;
  double value = 0;
  if (!absl::SimpleAtod(args.Get(flag), &value) || !(value > 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--", flag, " must be a positive number (got '", args.Get(flag), "')"));
  }
  return value;
}

int Run(int argc, char** argv) {
  util::FlagSpec spec;
  spec.with_value = {"server", "workers", "seconds", "seconds-per-trial"};
  absl::StatusOr<util::ParsedArgs> args =
      util::ParsedArgs::Parse(std::vector<std::string>(argv + 1, argv + argc), spec);
  Options options;
  absl::StatusOr<double> workers = 0, seconds = 0, pace = 0;
  if (args.ok()) {
    options.server = args->Get("server", options.server);
    workers = PositiveNumber(*args, "workers", options.workers);
    seconds = PositiveNumber(*args, "seconds", options.seconds);
    pace = PositiveNumber(*args, "seconds-per-trial", options.seconds_per_trial);
  }
  for (const absl::Status& status : {args.status(), workers.status(), seconds.status(),
                                     pace.status()}) {
    if (status.ok()) continue;
    std::cerr << "scale_gen: " << status.message()
              << "\nusage: scale_gen --server HOST:PORT --workers N --seconds S "
                 "--seconds-per-trial P\n";
    return 2;
  }
  options.workers = static_cast<int>(*workers);
  options.seconds = *seconds;
  options.seconds_per_trial = *pace;
  const gtco::v1::Hardware hardware = worker::HardwareProto(target::DetectHostCpu());
  Totals totals;
  const Clock::time_point start = Clock::now();
  const Clock::time_point deadline =
      start + std::chrono::duration_cast<Clock::duration>(
                  std::chrono::duration<double>(options.seconds));
  std::vector<std::thread> threads;
  for (int index = 0; index < options.workers; ++index) {
    threads.emplace_back(RunWorker, std::cref(options), index, std::cref(hardware), deadline,
                         std::ref(totals));
  }
  for (std::thread& thread : threads) thread.join();
  const double wall = std::chrono::duration<double>(Clock::now() - start).count();
  const double offered = options.workers * options.seconds / options.seconds_per_trial;
  std::cout << absl::StrFormat(
      "{\"workers\": %d, \"seconds\": %.3f, \"wall_seconds\": %.3f, \"seconds_per_trial\": %.6f, "
      "\"offered_trials\": %.1f, \"leased\": %d, \"stored\": %d, \"duplicates\": %d, "
      "\"rejected\": %d, \"empty_leases\": %d, \"rpc_errors\": %d, \"lease_p50_ms\": %.3f, "
      "\"lease_p99_ms\": %.3f, \"first_error\": \"%s\"}\n",
      options.workers, options.seconds, wall, options.seconds_per_trial, offered, totals.leased,
      totals.stored, totals.duplicates, totals.rejected, totals.empty_leases, totals.rpc_errors,
      Percentile(totals.lease_ms, 0.5), Percentile(totals.lease_ms, 0.99),
      absl::CEscape(totals.first_error));
  return totals.rpc_errors == 0 ? 0 : 1;
}

}  // namespace
}  // namespace gtco::bench

int main(int argc, char** argv) { return gtco::bench::Run(argc, argv); }
