// Dual-task scheduling of a job's tuning budget (GTA / Ansor): across tasks, the next round goes
// where the expected gain in end-to-end latency is largest; within a task, a UCB bandit picks
// the intrinsic mapping whose search to advance. Pure logic, no I/O: unit-tested on synthetic
// curves and replayable from the database.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace gtco::server {

/// Measured seconds per trace, and the best trace's: each trace ranked by the mean of its
/// measurements (the search measures its best again to confirm it), as the database's
/// TopMeasurements and the searches rank them. The best can rise when a second measurement shows
/// the first was a lucky one.
struct TraceMeans {
  /// Adds one ok measurement; true when `trace` is now the best and the best is lower than before.
  bool Add(const std::string& trace, double seconds) {
    auto& [total, count] = by_trace[trace];
    total += seconds;
    ++count;
    const double before = best;
    best = 0;
    std::string best_trace;
    for (const auto& [text, sum] : by_trace) {
      const double mean = sum.first / sum.second;
      if (best == 0 || mean < best) {
        best = mean;
        best_trace = text;
      }
    }
    return best_trace == trace && (before == 0 || best < before);
  }
  std::unordered_map<std::string, std::pair<double, int>> by_trace;  ///< sum, count
  double best = 0;  ///< 0: none yet
};

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
