// Dual-task scheduling of a job's tuning budget (GTA / Ansor): across tasks, the next round goes
// where the expected gain in end-to-end latency is largest; within a task, a UCB bandit picks
// the intrinsic mapping whose search to advance. Pure logic, no I/O: unit-tested on synthetic
// curves and replayable from the database.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace gtco::server {

/// What the scheduler knows of one task.
struct TaskCurve {
  /// Budget weight: occurrences in the model, or for a job with plan choices (gradient
  /// scheduler) its runs in the plan as measured so far (onnx::PlanCost::tuning_weight).
  double weight = 1;
  int64_t in_flight = 0;             ///< candidates proposed but not measured yet
  std::vector<double> best_history;  ///< best-so-far latency after each measured trial (0: none)
  bool exhausted = false;            ///< nothing left to propose
  bool finished = false;             ///< done or answered from the database: never chosen

  int64_t trials() const { return static_cast<int64_t>(best_history.size()); }
  double best() const { return best_history.empty() ? 0 : best_history.back(); }
};

enum class SchedulerKind { kGradient, kEven };
/// "gradient" | "even"; INVALID_ARGUMENT-worthy names return false.
bool ParseSchedulerKind(const std::string& name, SchedulerKind* kind);
const char* SchedulerKindName(SchedulerKind kind);

struct SchedulerOptions {
  SchedulerKind kind = SchedulerKind::kGradient;
  int warmup_trials = 8;  ///< every task gets this many trials before gains are compared
  int window = 8;         ///< trials over which the recent improvement is measured
  double alpha = 0.5;     ///< weight of the backward (observed) vs forward (optimistic) estimate
};

struct TaskChoice {
  int task = -1;       ///< index into the curves; -1 when no task can take trials
  double gain = 0;     ///< expected latency reduction per trial (seconds x weight)
  std::string reason;  ///< one line for `status --explain`
};

/// Expected reduction of weight x latency per additional trial of `task`: a mix of its recent
/// observed improvement rate and an optimistic forward estimate (best / trials).
double ExpectedGain(const TaskCurve& task, const SchedulerOptions& options);

/// The task to spend the next round on. Gradient: warm-up first (fewest trials), then the
/// largest ExpectedGain. Even: fewest trials per unit of weight.
TaskChoice ChooseTask(const std::vector<TaskCurve>& tasks, const SchedulerOptions& options);

/// One intrinsic mapping of a task, as the bandit sees it.
struct MappingArm {
  std::string name;
  int64_t trials = 0;     ///< measured + in flight
  double best = 0;        ///< best latency (0: none yet)
  bool exhausted = false;
};

struct MappingChoice {
  int arm = -1;
  std::string reason;
};

/// UCB1 over the arms' best-so-far: reward = best of all arms / best of this arm (1 for the
/// leader, 0 before any success), plus exploration sqrt(2 ln N / n) x `exploration`. Arms with
/// fewer than `min_trials` trials are tried first.
MappingChoice ChooseMapping(const std::vector<MappingArm>& arms, int min_trials = 4,
                            double exploration = 0.3);

}  // namespace gtco::server
