// Runner child process and its parent-side handle.
#include "worker/runner.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>

#include "absl/strings/str_cat.h"
#include "common/util/logging.h"
#include "common/util/status.h"
#include "worker/framing.h"
#include "worker/measurer.h"
#ifdef GTCO_WORKER_HAS_CPU
#include "common/codegen/llvm/runtime.h"
#include "worker/measure.h"
#endif
#ifdef GTCO_WORKER_HAS_CUDA
#include "worker/cuda_measure.h"
#endif

namespace gtco::worker {
namespace {

absl::StatusOr<std::unique_ptr<Measurer>> CreateMeasurer(const RunnerConfig& config) {
  if (config.target == target::Target::kCpu) {
#ifdef GTCO_WORKER_HAS_CPU
    // Each of the kernel's threads on a core of its own: unpinned, a busy process on the same
    // host (a server, even at nice 19 or SCHED_IDLE) made a 2-thread 1x1 conv measure 628 or 427
    // µs instead of 224; pinned, 223 and 227.
    codegen::SetParallelThreads(config.threads, codegen::ThreadPlacement::kPinned);
    GTCO_ASSIGN_OR_RETURN(std::unique_ptr<CandidateMeasurer> measurer,
                          CandidateMeasurer::Create(MeasureOptions{}));
    return std::unique_ptr<Measurer>(std::move(measurer));
#else
    return absl::UnavailableError(
        "this gtco-worker was built without LLVM: it measures CUDA candidates only");
#endif
  }
  if (config.target == target::Target::kCuda) {
#ifdef GTCO_WORKER_HAS_CUDA
    GTCO_ASSIGN_OR_RETURN(std::unique_ptr<CudaMeasurer> measurer,
                          CudaMeasurer::Create(config.device));
    return std::unique_ptr<Measurer>(std::move(measurer));
#else
    return absl::UnavailableError(
        "this gtco-worker was built without the CUDA toolkit: it measures CPU candidates only");
#endif
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown target '", target::TargetName(config.target), "'"));
}

}  // namespace

int RunRunnerLoop(const RunnerConfig& config) {
  // The protocol owns the original stdout; stray prints from libraries go to stderr.
  int protocol_out = ::dup(STDOUT_FILENO);
  ::dup2(STDERR_FILENO, STDOUT_FILENO);
  absl::StatusOr<std::unique_ptr<Measurer>> measurer = CreateMeasurer(config);
  if (!measurer.ok()) {
    GTCO_LOG(kError, "runner cannot measure " << target::TargetName(config.target)
                                              << " candidates: " << measurer.status());
    return 1;
  }
  gtco::v1::Candidate candidate;
  while (ReadMessage(STDIN_FILENO, &candidate)) {
    gtco::v1::MeasureResult result = (*measurer)->Measure(candidate);
    if (!WriteMessage(protocol_out, result)) return 1;
    if (!(*measurer)->Usable()) {
      GTCO_LOG(kWarning, candidate.candidate_id()
                             << " left the runner unable to measure (" << result.error()
                             << "); a fresh runner takes the next candidate");
      std::fflush(stderr);
      ::_exit(kRunnerExitRestart);  // no teardown: the context is lost anyway
    }
  }
  return 0;
}

RunnerProcess::RunnerProcess(std::string executable, RunnerConfig config)
    : executable_(std::move(executable)), config_(std::move(config)) {}

RunnerProcess::~RunnerProcess() { Stop(); }

absl::Status RunnerProcess::Start() {
  int down[2], up[2];
  if (::pipe2(down, O_CLOEXEC) != 0 || ::pipe2(up, O_CLOEXEC) != 0) {
    return absl::InternalError(absl::StrCat("pipe: ", std::strerror(errno)));
  }
  const std::string threads = std::to_string(config_.threads);
  const std::string device = std::to_string(config_.device);
  pid_t pid = ::fork();
  if (pid < 0) return absl::InternalError(absl::StrCat("fork: ", std::strerror(errno)));
  if (pid == 0) {
    ::dup2(down[0], STDIN_FILENO);
    ::dup2(up[1], STDOUT_FILENO);
    ::execl(executable_.c_str(), executable_.c_str(), "--runner", "--target",
            target::TargetName(config_.target), "--threads", threads.c_str(), "--device",
            device.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  ::close(down[0]);
  ::close(up[1]);
  pid_ = pid;
  to_child_ = down[1];
  from_child_ = up[0];
  return absl::OkStatus();
}

RunnerProcess::Ending RunnerProcess::Stop() {
  if (pid_ == 0) return {"not running", false};
  pid_t pid = pid_;
  pid_ = 0;
  if (to_child_ >= 0) ::close(to_child_);
  if (from_child_ >= 0) ::close(from_child_);
  to_child_ = from_child_ = -1;
  int status = 0;
  // Give a child that is dying on its own a moment, so its signal is what gets reported.
  for (int attempt = 0; attempt < 20; ++attempt) {
    if (::waitpid(pid, &status, WNOHANG) == pid) {
      if (WIFSIGNALED(status)) {
        return {absl::StrCat("killed by signal ", WTERMSIG(status), " (",
                             strsignal(WTERMSIG(status)), ")"),
                false};
      }
      return {absl::StrCat("exited with code ", WEXITSTATUS(status)),
              WEXITSTATUS(status) == kRunnerExitRestart};
    }
    ::usleep(5000);
  }
  ::kill(pid, SIGKILL);
  ::waitpid(pid, &status, 0);
  return {"killed by the worker", false};
}

bool RunnerProcess::Exchange(const gtco::v1::Candidate& candidate, double timeout_seconds,
                             gtco::v1::MeasureResult* result, bool* timed_out) {
  *timed_out = false;
  // A broken pipe on write shows up as a failed write or EOF from the child.
  ::signal(SIGPIPE, SIG_IGN);
  if (!WriteMessage(to_child_, candidate)) return false;
  auto deadline = std::chrono::steady_clock::now() +
                  std::chrono::milliseconds(static_cast<int64_t>(timeout_seconds * 1000));
  while (true) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                    deadline - std::chrono::steady_clock::now())
                    .count();
    if (left <= 0) break;
    pollfd poll_fd{from_child_, POLLIN, 0};
    int ready = ::poll(&poll_fd, 1, static_cast<int>(left));
    if (ready < 0 && errno == EINTR) continue;
    if (ready > 0) return ReadMessage(from_child_, result);
    break;
  }
  *timed_out = true;
  return false;
}

gtco::v1::MeasureResult RunnerProcess::Run(const gtco::v1::Candidate& candidate,
                                           double timeout_seconds) {
  gtco::v1::MeasureResult result;
  for (int attempt = 0;; ++attempt) {
    if (pid_ == 0) {
      absl::Status started = Start();
      if (!started.ok()) {
        result.Clear();
        result.set_candidate_id(candidate.candidate_id());
        result.set_error_kind(gtco::v1::ERROR_KIND_RUNTIME);
        result.set_error(absl::StrCat("cannot start the runner: ", started.message()));
        return result;
      }
    }
    bool timed_out = false;
    if (Exchange(candidate, timeout_seconds, &result, &timed_out)) return result;
    Ending ending = Stop();
    // A runner that ended on purpose after its previous result never read this candidate.
    if (ending.restart_requested && attempt == 0) continue;
    result.Clear();
    result.set_candidate_id(candidate.candidate_id());
    result.set_ok(false);
    if (timed_out) {
      result.set_error_kind(gtco::v1::ERROR_KIND_TIMEOUT);
      result.set_error(absl::StrCat("candidate ran longer than ", timeout_seconds,
                                    " s and was killed (runner ", ending.description, ")"));
    } else {
      result.set_error_kind(gtco::v1::ERROR_KIND_CRASH);
      result.set_error(absl::StrCat("candidate crashed the runner process: ", ending.description));
    }
    return result;
  }
}

}  // namespace gtco::worker
