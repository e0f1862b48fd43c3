// gtco-worker: the lease / measure / report loop.
#include "worker/worker_app.h"

#include <grpcpp/grpcpp.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/target/target.h"
#include "common/util/flags.h"
#include "common/util/logging.h"
#include "gtco/v1/gtco.grpc.pb.h"
#include "worker/runner.h"
#ifdef GTCO_WORKER_HAS_CUDA
#include "common/codegen/cuda/nvrtc.h"
#include "worker/cuda_driver.h"
#include "worker/cuda_measure.h"
#endif

namespace gtco::worker {
namespace {

constexpr const char* kUsage =
    "usage: gtco-worker --server HOST:PORT [--target cpu|cuda] [--threads N] [--device N]\n"
    "                   [--batch N] [--candidate-timeout SECONDS] [--token TOKEN]\n"
    "                   [--tls-ca PEM [--tls-cert PEM --tls-key PEM]] [--verbose]\n"
    "  --server   the gtco-server address (or GTCO_SERVER)\n"
    "  --token    a worker token (or GTCO_TOKEN; `gtco-server admin issue-token --role worker`)\n"
    "  --tls-ca   talk TLS to the server and trust this CA's certificate; --tls-cert and\n"
    "             --tls-key add this worker's client certificate\n"
    "  --target   what this worker measures: cpu (LLVM JIT) or cuda (an NVIDIA GPU)\n"
    "  --threads  cpu: threads per candidate (default: all cores)\n"
    "  --device   cuda: the GPU's ordinal under CUDA_VISIBLE_DEVICES (default 0)\n";

/// Exit codes: 2 for a bad command line or a target this machine or build cannot serve.
constexpr int kExitUsage = 2;
/// Exit code when the server refuses this worker's credentials (like gtco-client's refusals).
constexpr int kExitRefused = 3;

#ifdef GTCO_WORKER_HAS_CPU
constexpr const char* kDefaultTarget = "cpu";
#else
constexpr const char* kDefaultTarget = "cuda";
#endif

std::atomic<bool> g_stop{false};
void OnSignal(int) { g_stop = true; }

std::string SelfExecutable() {
  char path[4096];
  ssize_t size = ::readlink("/proc/self/exe", path, sizeof(path) - 1);
  if (size <= 0) return "gtco-worker";
  path[size] = '\0';
  return path;
}

}  // namespace

gtco::v1::Hardware HardwareProto(const target::HardwareInfo& info) {
  gtco::v1::Hardware proto;
  proto.set_target(target::TargetName(info.target));
  proto.set_cpu_model(info.cpu_model);
  for (const std::string& feature : info.cpu_features) proto.add_cpu_features(feature);
  proto.set_cores(info.cores);
  proto.set_l1d_bytes(info.l1d_bytes);
  proto.set_l2_bytes(info.l2_bytes);
  proto.set_l3_bytes(info.l3_bytes);
  proto.set_memory_bytes(info.memory_bytes);
  proto.set_sm_major(info.sm_major);
  proto.set_sm_minor(info.sm_minor);
  proto.set_sm_count(info.sm_count);
  proto.set_shared_bytes_per_block(info.shared_bytes_per_block);
  proto.set_shared_bytes_per_sm(info.shared_bytes_per_sm);
  proto.set_registers_per_block(info.registers_per_block);
  proto.set_registers_per_sm(info.registers_per_sm);
  proto.set_max_threads_per_block(info.max_threads_per_block);
  proto.set_max_threads_per_sm(info.max_threads_per_sm);
  proto.set_max_blocks_per_sm(info.max_blocks_per_sm);
  return proto;
}

namespace {

/// The machine a worker for `config` measures on, as registration describes it; an error whose
/// message tells the user what to do when this machine or build cannot serve the target.
absl::StatusOr<target::HardwareInfo> DetectTarget(const RunnerConfig& config) {
  if (config.target == target::Target::kCpu) {
#ifdef GTCO_WORKER_HAS_CPU
    target::HardwareInfo hardware = target::DetectHostCpu();
    if (config.threads > 0) hardware.cores = config.threads;
    return hardware;
#else
    return absl::FailedPreconditionError(
        "--target cpu needs a gtco-worker built with LLVM (GTCO_WITH_LLVM=ON); this build "
        "measures CUDA candidates only: run it with --target cuda");
#endif
  }
  if (config.target == target::Target::kCuda) {
#ifdef GTCO_WORKER_HAS_CPU
    constexpr const char* kInstead = ". Run with --target cpu to serve as a CPU worker.";
#else
    constexpr const char* kInstead = ".";
#endif
#ifdef GTCO_WORKER_HAS_CUDA
    // The same checks a runner makes (driver, device, a probe kernel), once, up front; the
    // context is released again when `measurer` goes.
    absl::StatusOr<std::unique_ptr<CudaMeasurer>> measurer = CudaMeasurer::Create(config.device);
    if (!measurer.ok()) {
      return absl::FailedPreconditionError(
          absl::StrCat("--target cuda needs ",
                       CudaDriver::LibraryLoads() ? "an NVIDIA GPU: " : "an NVIDIA GPU driver: ",
                       measurer.status().message(), kInstead));
    }
    GTCO_LOG(kInfo, "CUDA driver " << (*measurer)->DriverVersion() << ", NVRTC "
                                   << codegen::NvrtcVersion());
    return (*measurer)->hardware();
#else
    return absl::FailedPreconditionError(
        absl::StrCat("--target cuda needs a gtco-worker built with CUDA; this one was "
                     "configured with -DGTCO_WITH_CUDA=OFF",
                     kInstead));
#endif
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown target '", target::TargetName(config.target), "'"));
}

/// The worker's connection to the server and its state; one measuring thread plus a heartbeat.
class WorkerLoop {
 public:
  /// `channels`: one per server address (the active server and its standbys, tried in turn
  /// while the one in use is unreachable).
  WorkerLoop(const std::vector<std::shared_ptr<grpc::Channel>>& channels, std::string token,
             target::HardwareInfo hardware, RunnerConfig runner, int batch, double timeout_seconds)
      : token_(std::move(token)),
        hardware_(std::move(hardware)),
        runner_(SelfExecutable(), std::move(runner)),
        batch_(batch),
        timeout_seconds_(timeout_seconds) {
    for (const auto& channel : channels)
      stubs_.push_back(gtco::v1::WorkerService::NewStub(channel));
  }

  int Run() {
    std::thread heartbeat([this] { HeartbeatLoop(); });
    while (!g_stop) {
      if (worker_id().empty() && !Register()) {
        if (refused_) break;
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
        GTCO_LOG(kDebug, candidate.candidate_id()
                             << ": " << (result.ok() ? "ok " : "failed ") << result.median_seconds()
                             << " s " << result.error());
        std::lock_guard<std::mutex> lock(mutex_);
        outbox_.push_back(std::move(result));
        in_hand_.erase(candidate.candidate_id());
      }
      FlushResults();
    }
    FlushResults();
    heartbeat_stop_ = true;
    heartbeat.join();
    return refused_ ? kExitRefused : 0;
  }

 private:
  std::string worker_id() {
    std::lock_guard<std::mutex> lock(mutex_);
    return worker_id_;
  }

  /// Sets the call's deadline and the worker's bearer token.
  void Prepare(grpc::ClientContext* context, int seconds) const {
    context->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(seconds));
    if (!token_.empty()) context->AddMetadata("authorization", "Bearer " + token_);
  }

  bool Register() {
    std::lock_guard<std::mutex> registering(register_mutex_);
    gtco::v1::RegisterRequest request;
    char host[256] = {0};
    ::gethostname(host, sizeof(host) - 1);
    request.set_hostname(host);
    *request.mutable_hardware() = HardwareProto(hardware_);
    request.set_worker_id(previous_id_);
    // A CPU worker replays traces itself: the server then sends no LLVM program.
    if (hardware_.target == target::Target::kCpu) request.add_languages("trace");
    gtco::v1::RegisterReply reply;
    grpc::ClientContext context;
    Prepare(&context, 10);
    grpc::Status status = Stub()->Register(&context, request, &reply);
    if (status.error_code() == grpc::StatusCode::UNAUTHENTICATED ||
        status.error_code() == grpc::StatusCode::PERMISSION_DENIED) {
      // Retrying cannot help: the operator must give this worker a worker token.
      std::cerr << "gtco-worker: the server refused this worker ("
                << (status.error_code() == grpc::StatusCode::UNAUTHENTICATED ? "UNAUTHENTICATED"
                                                                             : "PERMISSION_DENIED")
                << "): " << status.error_message() << "\n";
      refused_ = true;
      return false;
    }
    if (!status.ok()) {
      GTCO_LOG(kWarning, "cannot register with the server: " << status.error_message());
      if (status.error_code() == grpc::StatusCode::UNAVAILABLE) Failover();
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
    Prepare(&context, 30);
    grpc::Status status = Stub()->Lease(&context, request, reply);
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
      Prepare(&context, 30);
      grpc::Status status = Stub()->Report(&context, request, &reply);
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
    if (status.error_code() == grpc::StatusCode::UNAVAILABLE) Failover();
    Backoff();
  }

  void Backoff() {
    backoff_ms_ = std::min(5000, backoff_ms_ == 0 ? 200 : backoff_ms_ * 2);
    std::this_thread::sleep_for(std::chrono::milliseconds(backoff_ms_));
  }

  /// Renews the leases of the candidates in hand every heartbeat period (as registration set
  /// it), reading them at send time so a fresh lease is renewed within one period. A server that
  /// no longer knows this worker (it restarted, or a standby took over) gets it registered again
  /// under its id at once, so leases keep being renewed while the candidates are measured.
  void HeartbeatLoop() {
    auto last_sent = std::chrono::steady_clock::now();
    while (!heartbeat_stop_) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      gtco::v1::HeartbeatRequest request;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        if (std::chrono::steady_clock::now() - last_sent <
            std::chrono::seconds(heartbeat_seconds_)) {
          continue;
        }
        request.set_worker_id(worker_id_);
        for (const std::string& id : in_hand_) request.add_candidate_ids(id);
      }
      if (request.worker_id().empty() || heartbeat_stop_) continue;
      last_sent = std::chrono::steady_clock::now();
      gtco::v1::HeartbeatReply reply;
      grpc::ClientContext context;
      Prepare(&context, 5);
      grpc::Status status = Stub()->Heartbeat(&context, request, &reply);
      if (status.error_code() == grpc::StatusCode::NOT_FOUND) {
        GTCO_LOG(kInfo, "the server does not know this worker; registering again");
        if (Register()) {
          last_sent = std::chrono::steady_clock::time_point{};  // renew the leases right away
        }
      }
    }
  }

  /// The stub of the server in use.
  gtco::v1::WorkerService::Stub* Stub() const { return stubs_[current_ % stubs_.size()].get(); }
  /// With several servers: the next one (after the one in use became unreachable); this worker
  /// registers there again under its id.
  void Failover() {
    if (stubs_.size() < 2) return;
    ++current_;
    std::lock_guard<std::mutex> lock(mutex_);
    worker_id_.clear();
    GTCO_LOG(kWarning, "server unreachable; trying server #" << current_ % stubs_.size());
  }

  std::vector<std::unique_ptr<gtco::v1::WorkerService::Stub>> stubs_;
  std::atomic<size_t> current_{0};
  std::string token_;                 ///< bearer token sent with every call ("" sends none)
  std::atomic<bool> refused_{false};  ///< the server refused the credentials: exit
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
  std::mutex register_mutex_;  ///< one registration at a time (main and heartbeat threads)
  std::set<std::string> in_hand_;
  std::vector<gtco::v1::MeasureResult> outbox_;
};

}  // namespace

int RunWorkerApp(int argc, char** argv) {
  util::FlagSpec spec{{"server", "target", "threads", "device", "batch", "candidate-timeout",
                       "token", "tls-ca", "tls-cert", "tls-key"},
                      {"runner", "verbose", "help"}};
  auto args = util::ParsedArgs::Parse(std::vector<std::string>(argv + 1, argv + argc), spec);
  if (!args.ok() || args->Has("help") || !args->positional().empty()) {
    if (!args.ok()) std::cerr << "gtco-worker: " << args.status().message() << "\n";
    std::cerr << kUsage;
    return args.ok() && args->Has("help") ? 0 : kExitUsage;
  }
  auto threads = args->GetInt("threads", 0);
  auto device = args->GetInt("device", 0);
  auto batch = args->GetInt("batch", 2);
  auto timeout = args->GetInt("candidate-timeout", 60);
  for (const auto* value : {&threads, &device, &batch, &timeout}) {
    if (!value->ok()) {
      std::cerr << "gtco-worker: " << value->status().message() << "\n" << kUsage;
      return kExitUsage;
    }
  }
  absl::StatusOr<target::Target> target = target::ParseTarget(args->Get("target", kDefaultTarget));
  if (!target.ok()) {
    std::cerr << "gtco-worker: " << target.status().message() << "\n" << kUsage;
    return kExitUsage;
  }
  RunnerConfig runner;
  runner.target = *target;
  runner.threads = static_cast<int>(*threads);
  runner.device = static_cast<int>(*device);
  util::InitLogging(args->Has("runner") ? "runner" : "worker",
                    args->Has("verbose") ? util::LogLevel::kDebug : util::LogLevel::kInfo);
  if (args->Has("runner")) return RunRunnerLoop(runner);

  std::string server = args->Get("server");
  if (server.empty() && std::getenv("GTCO_SERVER")) server = std::getenv("GTCO_SERVER");
  if (server.empty()) {
    std::cerr << "gtco-worker: no server address: pass --server HOST:PORT or set GTCO_SERVER\n"
              << kUsage;
    return kExitUsage;
  }
  absl::StatusOr<target::HardwareInfo> hardware = DetectTarget(runner);
  if (!hardware.ok()) {
    std::cerr << "gtco-worker: " << hardware.status().message() << "\n";
    if (absl::IsInvalidArgument(hardware.status())) std::cerr << kUsage;
    return kExitUsage;
  }
  if (runner.target == target::Target::kCpu) runner.threads = hardware->cores;
  std::signal(SIGINT, OnSignal);
  std::signal(SIGTERM, OnSignal);
  std::string token = args->Get("token");
  if (token.empty() && std::getenv("GTCO_TOKEN")) token = std::getenv("GTCO_TOKEN");
  std::shared_ptr<grpc::ChannelCredentials> credentials = grpc::InsecureChannelCredentials();
  if (args->Has("tls-ca")) {
    // --tls-cert/--tls-key: this worker's client certificate, for servers that verify them.
    grpc::SslCredentialsOptions tls;
    for (const auto& [flag, pem] :
         std::vector<std::pair<std::string, std::string*>>{{"tls-ca", &tls.pem_root_certs},
                                                           {"tls-cert", &tls.pem_cert_chain},
                                                           {"tls-key", &tls.pem_private_key}}) {
      if (!args->Has(flag)) continue;
      std::ifstream file(args->Get(flag));
      if (!file) {
        std::cerr << "gtco-worker: cannot read --" << flag << " file '" << args->Get(flag) << "'\n";
        return kExitUsage;
      }
      std::ostringstream text;
      text << file.rdbuf();
      *pem = text.str();
    }
    if (tls.pem_cert_chain.empty() != tls.pem_private_key.empty()) {
      std::cerr << "gtco-worker: --tls-cert and --tls-key go together\n";
      return kExitUsage;
    }
    credentials = grpc::SslCredentials(tls);
  }
  grpc::ChannelArguments channel_args;
  channel_args.SetMaxReceiveMessageSize(64 * 1024 * 1024);
  // Several servers (an active one and its standbys): repeated --server or comma-separated.
  std::vector<std::shared_ptr<grpc::Channel>> channels;
  std::vector<std::string> addresses =
      args->GetAll("server").empty() ? std::vector<std::string>{server} : args->GetAll("server");
  for (const std::string& value : addresses) {
    for (absl::string_view part : absl::StrSplit(value, ',', absl::SkipEmpty())) {
      channels.push_back(grpc::CreateCustomChannel(std::string(part), credentials, channel_args));
    }
  }
  if (channels.empty())
    channels.push_back(grpc::CreateCustomChannel(server, credentials, channel_args));
  GTCO_LOG(kInfo, "worker for target " << target::TargetName(runner.target) << " on "
                                       << hardware->Summary() << ", server " << server);
  WorkerLoop loop(channels, token, *hardware, runner,
                  static_cast<int>(std::max<int64_t>(1, *batch)), static_cast<double>(*timeout));
  return loop.Run();
}

}  // namespace gtco::worker
