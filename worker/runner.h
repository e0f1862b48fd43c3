// The runner: a child process that compiles and times candidates, so that a candidate that
// crashes or hangs costs a restarted child, never the worker.
#pragma once

#include <sys/types.h>

#include <string>

#include "absl/status/status.h"
#include "gtco/v1/gtco.pb.h"

namespace gtco::worker {

/// Body of `gtco-worker --runner`: serves framed Candidates on stdin with framed
/// MeasureResults on stdout until EOF. Returns the process exit code.
int RunRunnerLoop(int threads);

/// Parent-side handle of one runner child. Not thread-safe.
class RunnerProcess {
 public:
  /// The child is `executable --runner --threads N`.
  RunnerProcess(std::string executable, int threads);
  ~RunnerProcess();
  RunnerProcess(const RunnerProcess&) = delete;
  RunnerProcess& operator=(const RunnerProcess&) = delete;

  /// Measures `candidate` in the child (starting it if needed). A crash (signal), an early exit
  /// or running past `timeout_seconds` becomes a failed result of kind CRASH / TIMEOUT, and the
  /// child is replaced before the next candidate.
  gtco::v1::MeasureResult Run(const gtco::v1::Candidate& candidate, double timeout_seconds);

  /// Process id of the current child (0 when none); for tests.
  pid_t pid() const { return pid_; }

 private:
  absl::Status Start();
  /// Kills (if still running) and reaps the child; returns a description of how it ended.
  std::string Stop();

  std::string executable_;
  int threads_;
  pid_t pid_ = 0;
  int to_child_ = -1;
  int from_child_ = -1;
};

}  // namespace gtco::worker
