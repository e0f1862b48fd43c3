// The dual-task scheduler's choices on synthetic task curves.
#include "server/task_scheduler.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>

namespace gtco::server {
namespace {

TaskCurve Curve(double weight, std::vector<double> history) {
  TaskCurve curve;
  curve.weight = weight;
  curve.best_history = std::move(history);
  return curve;
}

std::vector<double> Flat(int trials, double value) { return std::vector<double>(trials, value); }

TEST(TaskSchedulerTest, WarmUpGoesToTheTaskWithFewestTrials) {
  SchedulerOptions options;
  std::vector<TaskCurve> tasks = {Curve(1, Flat(8, 1.0)), Curve(1, Flat(3, 1.0)),
                                  Curve(1, Flat(5, 1.0))};
  TaskChoice choice = ChooseTask(tasks, options);
  EXPECT_EQ(choice.task, 1);
  EXPECT_NE(choice.reason.find("warm-up"), std::string::npos);
}

TEST(TaskSchedulerTest, MovesAwayFromATaskThatStoppedImproving) {
  SchedulerOptions options;
  std::vector<double> improving;
  for (int trial = 0; trial < 20; ++trial) improving.push_back(2.0 - 0.05 * trial);
  std::vector<TaskCurve> tasks = {Curve(1, Flat(40, 1.0)), Curve(1, improving)};
  TaskChoice choice = ChooseTask(tasks, options);
  EXPECT_EQ(choice.task, 1);
  EXPECT_GT(choice.gain, ExpectedGain(tasks[0], options));
  EXPECT_NE(choice.reason.find("expected gain"), std::string::npos);
}

TEST(TaskSchedulerTest, WeightScalesTheGain) {
  SchedulerOptions options;
  std::vector<TaskCurve> tasks = {Curve(1, Flat(20, 1.0)), Curve(3, Flat(20, 1.0))};
  EXPECT_EQ(ChooseTask(tasks, options).task, 1);
  EXPECT_DOUBLE_EQ(ExpectedGain(tasks[1], options), 3 * ExpectedGain(tasks[0], options));
}

TEST(TaskSchedulerTest, InFlightTrialsLowerTheForwardEstimate) {
  SchedulerOptions options;
  TaskCurve idle = Curve(1, Flat(20, 1.0));
  TaskCurve busy = idle;
  busy.in_flight = 20;
  EXPECT_LT(ExpectedGain(busy, options), ExpectedGain(idle, options));
}

TEST(TaskSchedulerTest, FinishedAndExhaustedTasksAreNeverChosen) {
  SchedulerOptions options;
  std::vector<TaskCurve> tasks = {Curve(1, Flat(1, 1.0)), Curve(1, Flat(2, 1.0))};
  tasks[0].finished = true;
  tasks[1].exhausted = true;
  EXPECT_EQ(ChooseTask(tasks, options).task, -1);
  tasks[1].exhausted = false;
  EXPECT_EQ(ChooseTask(tasks, options).task, 1);
}

TEST(TaskSchedulerTest, EvenSplitsByWeight) {
  SchedulerOptions options;
  options.kind = SchedulerKind::kEven;
  std::vector<TaskCurve> tasks = {Curve(1, Flat(30, 1.0)), Curve(4, Flat(60, 1.0))};
  EXPECT_EQ(ChooseTask(tasks, options).task, 1);  // 60/4 < 30/1
}

/// Simulates a job: each task's latency after n trials follows `curves[i](n)`; returns the final
/// weighted sum of best latencies after `budget` trials.
double Simulate(const std::vector<std::function<double(int)>>& curves,
                const std::vector<double>& weights, int budget, SchedulerKind kind,
                std::vector<int>* trials_per_task) {
  SchedulerOptions options;
  options.kind = kind;
  std::vector<TaskCurve> tasks(curves.size());
  for (size_t index = 0; index < tasks.size(); ++index) tasks[index].weight = weights[index];
  for (int trial = 0; trial < budget; ++trial) {
    TaskChoice choice = ChooseTask(tasks, options);
    if (choice.task < 0) break;
    TaskCurve& task = tasks[choice.task];
    double value = curves[choice.task](static_cast<int>(task.trials()) + 1);
    double best = task.trials() == 0 ? value : std::min(task.best(), value);
    task.best_history.push_back(best);
  }
  double total = 0;
  trials_per_task->clear();
  for (const TaskCurve& task : tasks) {
    total += task.weight * task.best();
    trials_per_task->push_back(static_cast<int>(task.trials()));
  }
  return total;
}

TEST(TaskSchedulerTest, GradientBeatsAnEvenSplitOnSyntheticCurves) {
  // Task 0 converges after ~10 trials; task 1 (heavier) keeps improving for ~150 trials;
  // task 2 is tiny and flat.
  std::vector<std::function<double(int)>> curves = {
      [](int n) { return 1.0 + 4.0 * std::exp(-n / 3.0); },
      [](int n) { return 2.0 + 20.0 * std::exp(-n / 50.0); },
      [](int n) { return 0.1; },
  };
  std::vector<double> weights = {1, 1, 1};
  std::vector<int> gradient_trials, even_trials;
  double gradient = Simulate(curves, weights, 240, SchedulerKind::kGradient, &gradient_trials);
  double even = Simulate(curves, weights, 240, SchedulerKind::kEven, &even_trials);
  EXPECT_LT(gradient, even);
  EXPECT_GT(gradient_trials[1], even_trials[1]);  // moved trials to the improving task
  EXPECT_LT(gradient_trials[0], even_trials[0]);
  EXPECT_LT(gradient_trials[2], even_trials[2]);
}

TEST(MappingBanditTest, ExploresEveryArmFirst) {
  std::vector<MappingArm> arms = {{"avx512_fma", 10, 1.0, false}, {"avx2_fma", 2, 2.0, false},
                                  {"vector", 0, 0, false}};
  MappingChoice choice = ChooseMapping(arms, 4);
  EXPECT_EQ(choice.arm, 2);
  EXPECT_NE(choice.reason.find("exploring"), std::string::npos);
}

TEST(MappingBanditTest, PrefersTheLeaderOnceExplored) {
  std::vector<MappingArm> arms = {{"avx512_fma", 40, 1.0, false}, {"avx2_fma", 40, 2.5, false},
                                  {"vector", 40, 8.0, false}};
  MappingChoice choice = ChooseMapping(arms, 4);
  EXPECT_EQ(choice.arm, 0);
  EXPECT_NE(choice.reason.find("UCB"), std::string::npos);
}

TEST(MappingBanditTest, RevisitsAnUnderExploredArm) {
  // The runner-up has few trials: its exploration bonus outweighs the leader's reward edge.
  std::vector<MappingArm> arms = {{"avx512_fma", 400, 1.0, false}, {"avx2_fma", 4, 1.1, false}};
  EXPECT_EQ(ChooseMapping(arms, 4).arm, 1);
}

TEST(MappingBanditTest, SkipsExhaustedArms) {
  std::vector<MappingArm> arms = {{"avx512_fma", 40, 1.0, true}, {"vector", 40, 3.0, false}};
  EXPECT_EQ(ChooseMapping(arms, 4).arm, 1);
  arms[1].exhausted = true;
  EXPECT_EQ(ChooseMapping(arms, 4).arm, -1);
}

// The farm's best per task and mapping ranks each trace by the mean of its measurements: a lucky
// first measurement stops being the best when the search measures it again.
TEST(TraceMeansTest, ABestMeasuredAgainSlowerGivesWayAndTheBestCanRise) {
  TraceMeans means;
  EXPECT_TRUE(means.Add("a", 2.0));
  EXPECT_TRUE(means.Add("b", 1.0));   // lucky
  EXPECT_FALSE(means.Add("c", 1.5));
  EXPECT_DOUBLE_EQ(means.best, 1.0);
  EXPECT_FALSE(means.Add("b", 3.0));  // b: 2.0
  EXPECT_DOUBLE_EQ(means.best, 1.5);  // c, higher than before
  EXPECT_FALSE(means.Add("c", 1.7));  // c: 1.6, still the best, but not lower
  EXPECT_DOUBLE_EQ(means.best, 1.6);
  EXPECT_TRUE(means.Add("d", 1.2));
}

// A best that rose (see TraceMeans) gives no negative backward gain.
TEST(ExpectedGainTest, ARisingBestIsNoNegativeGain) {
  SchedulerOptions options;
  options.window = 2;
  options.alpha = 1.0;
  TaskCurve curve;
  curve.weight = 1;
  curve.best_history = {1.0, 1.0, 1.5};
  EXPECT_DOUBLE_EQ(ExpectedGain(curve, options), 0.0);
}

}  // namespace
}  // namespace gtco::server
