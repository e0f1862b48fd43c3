// The runner: a child process that compiles and times candidates, so that a candidate that
// crashes or hangs costs a restarted child, never the worker.
#pragma once

#include <sys/types.h>

#include <string>

#include "absl/status/status.h"
#include "common/target/target.h"
#include "gtco/v1/gtco.pb.h"

namespace gtco::worker {

/// What a runner measures and with what.
struct RunnerConfig {
  /// kCpu: LLVM IR (JIT); kCuda: CUDA C (NVRTC + driver).
  target::Target target = target::Target::kCpu;
  int threads = 0;  ///< cpu: threads of parallel kernels (0: the runtime's default)
  int device = 0;   ///< cuda: the GPU's ordinal
};

/// Exit code of a runner that ended on purpose right after reporting a result, without reading
/// another candidate (its measurer became unusable, e.g. a CUDA context lost to a faulting
/// kernel). Its parent sends the next candidate to a fresh runner.
constexpr int kRunnerExitRestart = 75;

/// Body of `gtco-worker --runner`: serves framed Candidates on stdin with framed
/// MeasureResults on stdout until EOF. Returns the process exit code.
int RunRunnerLoop(const RunnerConfig& config);

/// Parent-side handle of one runner child. Not thread-safe.
class RunnerProcess {
 public:
  /// The child is `executable --runner --target T --threads N --device D`.
  RunnerProcess(std::string executable, RunnerConfig config);
  ~RunnerProcess();
  RunnerProcess(const RunnerProcess&) = delete;
  RunnerProcess& operator=(const RunnerProcess&) = delete;

  /// Measures `candidate` in the child (starting it if needed). A crash (signal), an early exit
  /// or running past `timeout_seconds` becomes a failed result of kind CRASH / TIMEOUT, and the
  /// child is replaced before the next candidate. A child that ended on purpose after its
  /// previous result (kRunnerExitRestart) never saw this candidate: a fresh one measures it.
  gtco::v1::MeasureResult Run(const gtco::v1::Candidate& candidate, double timeout_seconds);

  /// Process id of the current child (0 when none); for tests.
  pid_t pid() const { return pid_; }

 private:
  /// How a child ended.
  struct Ending {
    std::string description;
    bool restart_requested = false;  ///< exited with kRunnerExitRestart
  };
  absl::Status Start();
  /// Kills (if still running) and reaps the child.
  Ending Stop();
  /// Sends `candidate` to the running child and reads its result; false (with `*timed_out`
  /// set when no answer came within `timeout_seconds`) when none came back.
  bool Exchange(const gtco::v1::Candidate& candidate, double timeout_seconds,
                gtco::v1::MeasureResult* result, bool* timed_out);

  std::string executable_;
  RunnerConfig config_;
  pid_t pid_ = 0;
  int to_child_ = -1;
  int from_child_ = -1;
};

}  // namespace gtco::worker
