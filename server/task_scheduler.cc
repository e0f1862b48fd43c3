// Gradient-style task scheduling and a UCB bandit over intrinsic mappings.
#include "server/task_scheduler.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_format.h"

namespace gtco::server {

bool ParseSchedulerKind(const std::string& name, SchedulerKind* kind) {
  if (name == "gradient" || name.empty()) {
    *kind = SchedulerKind::kGradient;
  } else if (name == "even") {
    *kind = SchedulerKind::kEven;
  } else {
    return false;
  }
  return true;
}

const char* SchedulerKindName(SchedulerKind kind) {
  return kind == SchedulerKind::kEven ? "even" : "gradient";
}

double ExpectedGain(const TaskCurve& task, const SchedulerOptions& options) {
  double best = task.best();
  int64_t trials = task.trials();
  if (best <= 0 || trials == 0) return 0;
  // Backward: observed improvement per trial over the last `window` trials.
  int64_t window = std::min<int64_t>(options.window, trials - 1);
  double backward = 0;
  if (window > 0) {
    double before = task.best_history[trials - 1 - window];
    // Not below 0: the best rises when a re-measurement shows a lucky one (TraceMeans).
    if (before > 0) backward = std::max(0.0, (before - best) / window);
  }
  // Forward: optimistic diminishing returns; trials in flight already count as spent.
  double forward = best / static_cast<double>(trials + task.in_flight);
  return task.weight * (options.alpha * backward + (1 - options.alpha) * forward);
}

TaskChoice ChooseTask(const std::vector<TaskCurve>& tasks, const SchedulerOptions& options) {
  TaskChoice choice;
  auto eligible = [](const TaskCurve& task) { return !task.finished && !task.exhausted; };
  // Warm-up (and the even scheduler): fewest trials per unit of weight first.
  int fewest = -1;
  double fewest_load = 0;
  for (size_t index = 0; index < tasks.size(); ++index) {
    const TaskCurve& task = tasks[index];
    if (!eligible(task)) continue;
    int64_t spent = task.trials() + task.in_flight;
    bool warming = spent < options.warmup_trials;
    if (options.kind == SchedulerKind::kGradient && !warming) continue;
    double load = spent / std::max(task.weight, 1e-9);
    if (fewest < 0 || load < fewest_load) {
      fewest = static_cast<int>(index);
      fewest_load = load;
    }
  }
  if (fewest >= 0) {
    choice.task = fewest;
    choice.reason = options.kind == SchedulerKind::kEven
                        ? absl::StrFormat("even split: fewest trials per weight (%.1f)", fewest_load)
                        : absl::StrFormat("warm-up: %d of %d trials", tasks[fewest].trials() +
                                                                             tasks[fewest].in_flight,
                                          options.warmup_trials);
    return choice;
  }
  for (size_t index = 0; index < tasks.size(); ++index) {
    if (!eligible(tasks[index])) continue;
    double gain = ExpectedGain(tasks[index], options);
    if (choice.task < 0 || gain > choice.gain) {
      choice.task = static_cast<int>(index);
      choice.gain = gain;
    }
  }
  if (choice.task >= 0) {
    const TaskCurve& task = tasks[choice.task];
    choice.reason = absl::StrFormat(
        "largest expected gain %.3g s/trial (weight %.0f x best %.3g s after %d trials)",
        choice.gain, task.weight, task.best(), task.trials());
  }
  return choice;
}

MappingChoice ChooseMapping(const std::vector<MappingArm>& arms, int min_trials,
                            double exploration) {
  MappingChoice choice;
  double overall_best = 0;
  int64_t total = 0;
  for (const MappingArm& arm : arms) {
    total += arm.trials;
    if (arm.best > 0 && (overall_best == 0 || arm.best < overall_best)) overall_best = arm.best;
  }
  for (size_t index = 0; index < arms.size(); ++index) {
    const MappingArm& arm = arms[index];
    if (arm.exhausted || arm.trials >= min_trials) continue;
    if (choice.arm < 0 || arm.trials < arms[choice.arm].trials) choice.arm = static_cast<int>(index);
  }
  if (choice.arm >= 0) {
    choice.reason = absl::StrFormat("mapping %s: exploring (%d of %d initial trials)",
                                    arms[choice.arm].name, arms[choice.arm].trials, min_trials);
    return choice;
  }
  double best_score = 0;
  std::string scores;
  for (size_t index = 0; index < arms.size(); ++index) {
    const MappingArm& arm = arms[index];
    if (arm.exhausted) continue;
    double reward = (arm.best > 0 && overall_best > 0) ? overall_best / arm.best : 0;
    double bonus = exploration * std::sqrt(2 * std::log(std::max<int64_t>(total, 2)) /
                                           std::max<int64_t>(arm.trials, 1));
    double score = reward + bonus;
    scores += absl::StrFormat("%s%s %.2f", scores.empty() ? "" : ", ", arm.name, score);
    if (choice.arm < 0 || score > best_score) {
      choice.arm = static_cast<int>(index);
      best_score = score;
    }
  }
  if (choice.arm >= 0) {
    choice.reason = absl::StrFormat("mapping %s: highest UCB (%s)", arms[choice.arm].name, scores);
  }
  return choice;
}

}  // namespace gtco::server
