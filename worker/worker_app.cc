// gtco-worker: the lease / measure / report loop.
#include "worker/worker_app.h"

#include <grpcpp/grpcpp.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <iostream>
#include <mutex>
#include <set>
#include <thread>

#include "common/target/target.h"
#include "common/util/flags.h"
#include "common/util/logging.h"
#include "gtco/v1/gtco.grpc.pb.h"
#include "worker/runner.h"

namespace gtco::worker {
namespace {

constexpr const char* kUsage =
    "usage: gtco-worker --server HOST:PORT --target cpu [--threads N] [--batch N]\n"
    "                   [--candidate-timeout SECONDS] [--verbose]\n"
    "  --server   the gtco-server address (or GTCO_SERVER)\n"
    "  --target   what this worker measures: cpu (cuda needs a CUDA build)\n";

std::atomic<bool> g_stop{false};
void OnSignal(int) { g_stop = true; }

std::string SelfExecutable() {
  char path[4096];
  ssize_t size = ::readlink("/proc/self/exe", path, sizeof(path) - 1);
  if (size <= 0) return "gtco-worker";
  path[size] = '\0';
  return path;
}

gtco::v1::Hardware HardwareProto(const target::HardwareInfo& info) {
  gtco::v1::Hardware proto;
  proto.set_target(info.target);
  proto.set_cpu_model(info.cpu_model);
  for (const std::string& feature : info.cpu_features) proto.add_cpu_features(feature);
  proto.set_cores(info.cores);
  proto.set_l1d_bytes(info.l1d_bytes);
  proto.set_l2_bytes(info.l2_bytes);
  proto.set_l3_bytes(info.l3_bytes);
  proto.set_memory_bytes(info.memory_bytes);
  return proto;
}

/// The worker's connection to the server and its state; one measuring thread plus a heartbeat.
class WorkerLoop {
 public:
  WorkerLoop(std::shared_ptr<grpc::Channel> channel, target::HardwareInfo hardware, int threads,
             int batch, double timeout_seconds)
      : stub_(gtco::v1::WorkerService::NewStub(channel)),
        hardware_(std::move(hardware)),
        runner_(SelfExecutable(), threads),
        batch_(batch),
        timeout_seconds_(timeout_seconds) {}

  int Run() {
    std::thread heartbeat([this] { HeartbeatLoop(); });
    while (!g_stop) {
      if (worker_id().empty() && !Register()) {
        Backoff();
        continue;
      }
      FlushResults();
      gtco::v1::LeaseReply leased;
      grpc::Status status = Lease(&leased);
      if (!status.ok()) {
        HandleError("lease", status);
        continue;
      }
      backoff_ms_ = 0;
      for (const gtco::v1::Candidate& candidate : leased.candidates()) {
        gtco::v1::MeasureResult result = runner_.Run(candidate, timeout_seconds_);
        GTCO_LOG(kDebug, candidate.candidate_id() << ": " << (result.ok() ? "ok " : "failed ")
                                                  << result.median_seconds() << " s "
                                                  << result.error());
        std::lock_guard<std::mutex> lock(mutex_);
        outbox_.push_back(std::move(result));
        in_hand_.erase(candidate.candidate_id());
      }
      FlushResults();
    }
    FlushResults();
    heartbeat_stop_ = true;
    heartbeat.join();
    return 0;
  }

 private:
  std::string worker_id() {
    std::lock_guard<std::mutex> lock(mutex_);
    return worker_id_;
  }

  bool Register() {
    gtco::v1::RegisterRequest request;
    char host[256] = {0};
    ::gethostname(host, sizeof(host) - 1);
    request.set_hostname(host);
    *request.mutable_hardware() = HardwareProto(hardware_);
    request.set_worker_id(previous_id_);
    gtco::v1::RegisterReply reply;
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    grpc::Status status = stub_->Register(&context, request, &reply);
    if (!status.ok()) {
      GTCO_LOG(kWarning, "cannot register with the server: " << status.error_message());
      return false;
    }
    std::lock_guard<std::mutex> lock(mutex_);
    worker_id_ = previous_id_ = reply.worker_id();
    heartbeat_seconds_ = std::max(1, reply.heartbeat_seconds());
    GTCO_LOG(kInfo, "registered as " << worker_id_ << " (" << hardware_.Summary() << ")");
    return true;
  }

  grpc::Status Lease(gtco::v1::LeaseReply* reply) {
    gtco::v1::LeaseRequest request;
    request.set_worker_id(worker_id());
    request.set_max_candidates(batch_);
    request.set_wait_ms(5000);
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    grpc::Status status = stub_->Lease(&context, request, reply);
    if (status.ok()) {
      std::lock_guard<std::mutex> lock(mutex_);
      for (const auto& candidate : reply->candidates()) in_hand_.insert(candidate.candidate_id());
    }
    return status;
  }

  /// Reports everything in the outbox; on failure the results stay for the next attempt.
  void FlushResults() {
    gtco::v1::ReportRequest request;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (outbox_.empty() || worker_id_.empty()) return;
      request.set_worker_id(worker_id_);
      for (const auto& result : outbox_) *request.add_results() = result;
    }
    for (int attempt = 0; attempt < 100 && !worker_id().empty(); ++attempt) {
      request.set_worker_id(worker_id());
      gtco::v1::ReportReply reply;
      grpc::ClientContext context;
      context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
      grpc::Status status = stub_->Report(&context, request, &reply);
      if (status.ok()) {
        std::lock_guard<std::mutex> lock(mutex_);
        outbox_.erase(outbox_.begin(), outbox_.begin() + request.results_size());
        return;
      }
      HandleError("report", status);
      if (g_stop && attempt > 5) break;
      if (worker_id().empty() && !Register()) Backoff();
    }
  }

  void HandleError(const char* what, const grpc::Status& status) {
    if (status.error_code() == grpc::StatusCode::NOT_FOUND) {
      // The server does not know us (it restarted): register again, keeping our id.
      std::lock_guard<std::mutex> lock(mutex_);
      worker_id_.clear();
      return;
    }
    GTCO_LOG(kWarning, what << " failed: " << status.error_message() << " (retrying)");
    Backoff();
  }

  void Backoff() {
    backoff_ms_ = std::min(5000, backoff_ms_ == 0 ? 200 : backoff_ms_ * 2);
    std::this_thread::sleep_for(std::chrono::milliseconds(backoff_ms_));
  }

  void HeartbeatLoop() {
    while (!heartbeat_stop_) {
      int seconds;
      gtco::v1::HeartbeatRequest request;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        seconds = heartbeat_seconds_;
        request.set_worker_id(worker_id_);
        for (const std::string& id : in_hand_) request.add_candidate_ids(id);
      }
      for (int tick = 0; tick < seconds * 10 && !heartbeat_stop_; ++tick) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
      if (request.worker_id().empty() || heartbeat_stop_) continue;
      gtco::v1::HeartbeatReply reply;
      grpc::ClientContext context;
      context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
      (void)stub_->Heartbeat(&context, request, &reply);
    }
  }

  std::unique_ptr<gtco::v1::WorkerService::Stub> stub_;
  target::HardwareInfo hardware_;
  RunnerProcess runner_;
  int batch_;
  double timeout_seconds_;
  int backoff_ms_ = 0;
  std::atomic<bool> heartbeat_stop_{false};
  std::mutex mutex_;
  std::string worker_id_;    ///< empty while unregistered
  std::string previous_id_;  ///< kept across re-registration
  int heartbeat_seconds_ = 5;
  std::set<std::string> in_hand_;
  std::vector<gtco::v1::MeasureResult> outbox_;
};

}  // namespace

int RunWorkerApp(int argc, char** argv) {
  util::FlagSpec spec{{"server", "target", "threads", "batch", "candidate-timeout"},
                      {"runner", "verbose", "help"}};
  auto args = util::ParsedArgs::Parse(std::vector<std::string>(argv + 1, argv + argc), spec);
  if (!args.ok() || args->Has("help") || !args->positional().empty()) {
    if (!args.ok()) std::cerr << "gtco-worker: " << args.status().message() << "\n";
    std::cerr << kUsage;
    return args.ok() && args->Has("help") ? 0 : 2;
  }
  auto threads = args->GetInt("threads", 0);
  auto batch = args->GetInt("batch", 2);
  auto timeout = args->GetInt("candidate-timeout", 60);
  for (const auto* value : {&threads, &batch, &timeout}) {
    if (!value->ok()) {
      std::cerr << "gtco-worker: " << value->status().message() << "\n" << kUsage;
      return 2;
    }
  }
  util::InitLogging(args->Has("runner") ? "runner" : "worker",
                    args->Has("verbose") ? util::LogLevel::kDebug : util::LogLevel::kInfo);
  if (args->Has("runner")) return RunRunnerLoop(static_cast<int>(*threads));

  std::string server = args->Get("server");
  if (server.empty() && std::getenv("GTCO_SERVER")) server = std::getenv("GTCO_SERVER");
  if (server.empty()) {
    std::cerr << "gtco-worker: no server address: pass --server HOST:PORT or set GTCO_SERVER\n"
              << kUsage;
    return 2;
  }
  std::string target_name = args->Get("target", "cpu");
  if (target_name == "cuda") {
    std::cerr << "gtco-worker: this build has no CUDA support (built without GTCO_WITH_CUDA); "
                 "use --target cpu\n";
    return 2;
  }
  if (target_name != "cpu") {
    std::cerr << "gtco-worker: unknown target '" << target_name << "'; expected cpu or cuda\n";
    return 2;
  }
  target::HardwareInfo hardware = target::DetectHostCpu();
  if (*threads > 0) hardware.cores = static_cast<int>(*threads);
  std::signal(SIGINT, OnSignal);
  std::signal(SIGTERM, OnSignal);
  grpc::ChannelArguments channel_args;
  channel_args.SetMaxReceiveMessageSize(64 * 1024 * 1024);
  auto channel =
      grpc::CreateCustomChannel(server, grpc::InsecureChannelCredentials(), channel_args);
  GTCO_LOG(kInfo, "worker for target cpu on " << hardware.Summary() << ", server " << server);
  WorkerLoop loop(channel, hardware, static_cast<int>(hardware.cores),
                  static_cast<int>(std::max<int64_t>(1, *batch)), static_cast<double>(*timeout));
  return loop.Run();
}

}  // namespace gtco::worker
