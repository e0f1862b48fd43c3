// Runner child process and its parent-side handle.
#include "worker/runner.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/codegen/llvm/runtime.h"
#include "common/util/logging.h"
#include "worker/framing.h"
#include "worker/measure.h"

namespace gtco::worker {

int RunRunnerLoop(int threads) {
  // The protocol owns the original stdout; stray prints from libraries go to stderr.
  int protocol_out = ::dup(STDOUT_FILENO);
  ::dup2(STDERR_FILENO, STDOUT_FILENO);
  if (threads > 0) codegen::SetParallelThreads(threads);
  auto measurer = CandidateMeasurer::Create(MeasureOptions{});
  if (!measurer.ok()) {
    GTCO_LOG(kError, "runner cannot start the JIT: " << measurer.status());
    return 1;
  }
  gtco::v1::Candidate candidate;
  while (ReadMessage(STDIN_FILENO, &candidate)) {
    gtco::v1::MeasureResult result = (*measurer)->Measure(candidate);
    if (!WriteMessage(protocol_out, result)) return 1;
  }
  return 0;
}

RunnerProcess::RunnerProcess(std::string executable, int threads)
    : executable_(std::move(executable)), threads_(threads) {}

RunnerProcess::~RunnerProcess() { Stop(); }

absl::Status RunnerProcess::Start() {
  int down[2], up[2];
  if (::pipe2(down, O_CLOEXEC) != 0 || ::pipe2(up, O_CLOEXEC) != 0) {
    return absl::InternalError(absl::StrCat("pipe: ", std::strerror(errno)));
  }
  std::string threads = std::to_string(threads_);
  pid_t pid = ::fork();
  if (pid < 0) return absl::InternalError(absl::StrCat("fork: ", std::strerror(errno)));
  if (pid == 0) {
    ::dup2(down[0], STDIN_FILENO);
    ::dup2(up[1], STDOUT_FILENO);
    ::execl(executable_.c_str(), executable_.c_str(), "--runner", "--threads", threads.c_str(),
            static_cast<char*>(nullptr));
    _exit(127);
  }
  ::close(down[0]);
  ::close(up[1]);
  pid_ = pid;
  to_child_ = down[1];
  from_child_ = up[0];
  return absl::OkStatus();
}

std::string RunnerProcess::Stop() {
  if (pid_ == 0) return "not running";
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
        return absl::StrCat("killed by signal ", WTERMSIG(status), " (",
                            strsignal(WTERMSIG(status)), ")");
      }
      return absl::StrCat("exited with code ", WEXITSTATUS(status));
    }
    ::usleep(5000);
  }
  ::kill(pid, SIGKILL);
  ::waitpid(pid, &status, 0);
  return "killed by the worker";
}

gtco::v1::MeasureResult RunnerProcess::Run(const gtco::v1::Candidate& candidate,
                                           double timeout_seconds) {
  gtco::v1::MeasureResult result;
  result.set_candidate_id(candidate.candidate_id());
  result.set_ok(false);
  if (pid_ == 0) {
    absl::Status started = Start();
    if (!started.ok()) {
      result.set_error_kind(gtco::v1::ERROR_KIND_RUNTIME);
      result.set_error(absl::StrCat("cannot start the runner: ", started.message()));
      return result;
    }
  }
  // A broken pipe on write shows up below as EOF from the child.
  ::signal(SIGPIPE, SIG_IGN);
  bool sent = WriteMessage(to_child_, candidate);
  auto deadline = std::chrono::steady_clock::now() +
                  std::chrono::milliseconds(static_cast<int64_t>(timeout_seconds * 1000));
  bool readable = false;
  while (sent) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                    deadline - std::chrono::steady_clock::now())
                    .count();
    if (left <= 0) break;
    pollfd poll_fd{from_child_, POLLIN, 0};
    int ready = ::poll(&poll_fd, 1, static_cast<int>(left));
    if (ready < 0 && errno == EINTR) continue;
    readable = ready > 0;
    break;
  }
  if (sent && readable && ReadMessage(from_child_, &result)) return result;
  if (sent && !readable) {
    std::string how = Stop();
    result.set_error_kind(gtco::v1::ERROR_KIND_TIMEOUT);
    result.set_error(absl::StrCat("candidate ran longer than ", timeout_seconds,
                                  " s and was killed (runner ", how, ")"));
    return result;
  }
  std::string how = Stop();
  result.set_error_kind(gtco::v1::ERROR_KIND_CRASH);
  result.set_error(absl::StrCat("candidate crashed the runner process: ", how));
  return result;
}

}  // namespace gtco::worker
