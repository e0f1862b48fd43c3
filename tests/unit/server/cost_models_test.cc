// The farm's cost models as their own concept: samples in, background training, scores out;
// training sets capped; warm start from an empty database.
#include "server/cost_models.h"

#include <gtest/gtest.h>

#include <chrono>
#include <random>
#include <thread>

#include "common/costmodel/features.h"

namespace gtco::server {
namespace {

costmodel::Sample MakeSample(std::mt19937& rng, const std::string& group) {
  std::uniform_real_distribution<float> value(0.0f, 1.0f);
  costmodel::Sample sample;
  sample.features.resize(costmodel::FeatureNames().size());
  for (float& feature : sample.features) feature = value(rng);
  // Faster when the first feature is larger: something a model can learn.
  sample.seconds = 1e-3 * (1.5 - sample.features[0]);
  sample.group = group;
  return sample;
}

TEST(CostModelsTest, SamplesTrainAModelThatScores) {
  CostModels models(/*database=*/nullptr, CostModelOptions{});
  std::mt19937 rng(3);
  EXPECT_FALSE(models.Trained(target::Target::kCpu));
  EXPECT_TRUE(models.Score(target::Target::kCpu, {MakeSample(rng, "w").features}).empty());
  for (int index = 0; index < 40; ++index) {
    models.AddSample(target::Target::kCpu, MakeSample(rng, index % 2 ? "w1" : "w2"));
  }
  EXPECT_EQ(models.TrainDue(), 1);
  EXPECT_TRUE(models.Trained(target::Target::kCpu));
  EXPECT_FALSE(models.Trained(target::Target::kCuda));  // one model per target
  EXPECT_EQ(models.TrainDue(), 0);                      // nothing new since
  costmodel::Sample slow = MakeSample(rng, "w"), fast = slow;
  slow.features[0] = 0.0f;
  fast.features[0] = 1.0f;
  const std::vector<double> scores =
      models.Score(target::Target::kCpu, {slow.features, fast.features});
  ASSERT_EQ(scores.size(), 2u);
  EXPECT_GT(scores[1], scores[0]);
}

TEST(CostModelsTest, PassesAreSpacedOutButTheFirstIsNot) {
  CostModelOptions options;
  options.min_seconds_between_passes = 0.3;
  CostModels models(/*database=*/nullptr, options);
  std::mt19937 rng(5);
  auto add = [&](int count) {
    for (int index = 0; index < count; ++index) {
      models.AddSample(target::Target::kCpu, MakeSample(rng, index % 2 ? "w1" : "w2"));
    }
  };
  add(40);
  EXPECT_EQ(models.TrainDue(), 1);  // the first pass at once
  add(200);                         // far more than the growth asks for
  EXPECT_EQ(models.TrainDue(), 0);  // but too soon after the first
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  EXPECT_EQ(models.TrainDue(), 1);
}

TEST(CostModelsTest, TrainingSetsAreCappedRecentHalfFirst) {
  std::vector<costmodel::Sample> samples(10000);
  for (size_t index = 0; index < samples.size(); ++index) {
    samples[index].seconds = static_cast<double>(index);
  }
  EXPECT_EQ(CostModels::TrainingSet(samples, 20000).size(), samples.size());
  const std::vector<costmodel::Sample> chosen = CostModels::TrainingSet(samples, 1000);
  ASSERT_EQ(chosen.size(), 1000u);
  EXPECT_EQ(chosen.front().seconds, 0);  // the spread over the older samples starts at the oldest
  for (size_t index = 500; index < 1000; ++index) {  // then the 500 most recent, in order
    EXPECT_EQ(chosen[index].seconds, static_cast<double>(9500 + index - 500));
  }
  for (size_t index = 1; index < 500; ++index) {
    EXPECT_LT(chosen[index - 1].seconds, chosen[index].seconds);
    EXPECT_LT(chosen[index].seconds, 9500);
  }
}

}  // namespace
}  // namespace gtco::server
