// Tests of the XGBoost ranking cost model: untrained behaviour, input errors, ranking quality on
// synthetic data with a known latency function, and Save/Load round trips.
#include "common/costmodel/xgboost_model.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>

#include "tests/unit/costmodel/ranking_metrics.h"
#include "tests/unit/scratch_dir.h"

namespace gtco::costmodel {
namespace {

constexpr int kNumFeatures = 12;

/// Latency of a synthetic program: a known function of features 0..3 (the rest are noise),
/// times a per-group scale, with 2% multiplicative measurement noise.
double SyntheticSeconds(const Features& f, double group_scale, std::mt19937_64& rng) {
  std::normal_distribution<double> noise(0.0, 0.02);
  return group_scale * std::exp(2.0 * f[0] - 1.5 * f[1] * f[2] + 0.5 * f[3]) * (1.0 + noise(rng));
}

/// `num_groups` groups of `per_group` samples named "g<first_group + i>".
std::vector<Sample> MakeSynthetic(int first_group, int num_groups, int per_group, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> uniform(0.0f, 1.0f);
  std::vector<Sample> samples;
  for (int group = 0; group < num_groups; ++group) {
    const double scale = std::exp(4.0 * uniform(rng));
    for (int sample_idx = 0; sample_idx < per_group; ++sample_idx) {
      Sample sample;
      for (int feature = 0; feature < kNumFeatures; ++feature) {
        sample.features.push_back(uniform(rng));
      }
      sample.group = "g" + std::to_string(first_group + group);
      sample.seconds = SyntheticSeconds(sample.features, scale, rng);
      samples.push_back(std::move(sample));
    }
  }
  return samples;
}

std::vector<Features> FeaturesOf(const std::vector<Sample>& samples) {
  std::vector<Features> batch;
  for (const Sample& sample : samples) batch.push_back(sample.features);
  return batch;
}

/// One training thread: OpenMP teams crawl when the tests share a loaded machine's cores.
std::unique_ptr<CostModel> NewModel() {
  XgbOptions options;
  options.threads = 1;
  return MakeXgbCostModel(options);
}

std::string TempPath(const std::string& name) {
  return gtco::testing::ScratchPath(name);
}

TEST(XgbCostModelTest, UntrainedPredictsZeros) {
  std::unique_ptr<CostModel> model = MakeXgbCostModel();
  EXPECT_FALSE(model->trained());
  absl::StatusOr<std::vector<float>> scores = model->Predict({{1, 2, 3}, {4, 5, 6}});
  ASSERT_TRUE(scores.ok()) << scores.status();
  EXPECT_EQ(*scores, std::vector<float>({0.0f, 0.0f}));
  EXPECT_EQ(model->Save(TempPath("untrained.json")).code(), absl::StatusCode::kFailedPrecondition);
}

TEST(XgbCostModelTest, TooFewOrUnrankableSamplesStayUntrained) {
  std::unique_ptr<CostModel> model = NewModel();
  ASSERT_TRUE(model->Update({}).ok());
  EXPECT_FALSE(model->trained());
  ASSERT_TRUE(model->Update(MakeSynthetic(0, 1, 10, 1)).ok());  // 10 < min_samples
  EXPECT_FALSE(model->trained());
  // 40 samples, but each alone in its group: nothing to rank.
  ASSERT_TRUE(model->Update(MakeSynthetic(0, 40, 1, 2)).ok());
  EXPECT_FALSE(model->trained());
  ASSERT_TRUE(model->Update(MakeSynthetic(0, 2, 10, 3)).ok());
  EXPECT_TRUE(model->trained());
}

TEST(XgbCostModelTest, RejectsInconsistentInput) {
  std::unique_ptr<CostModel> model = NewModel();
  std::vector<Sample> samples = MakeSynthetic(0, 2, 10, 4);
  samples[3].features.pop_back();
  EXPECT_EQ(model->Update(samples).code(), absl::StatusCode::kInvalidArgument);
  samples = MakeSynthetic(0, 2, 10, 4);
  samples[5].seconds = 0;
  EXPECT_EQ(model->Update(samples).code(), absl::StatusCode::kInvalidArgument);
  samples = MakeSynthetic(0, 2, 10, 4);
  samples[7].features[2] = NAN;
  EXPECT_EQ(model->Update(samples).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE(model->trained());
  ASSERT_TRUE(model->Update(MakeSynthetic(0, 2, 10, 4)).ok());
  EXPECT_EQ(model->Predict({Features(kNumFeatures - 1, 0.5f)}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(XgbCostModelTest, RanksHeldOutGroupsOfSyntheticLatencies) {
  std::unique_ptr<CostModel> model = NewModel();
  ASSERT_TRUE(model->Update(MakeSynthetic(0, 40, 25, 5)).ok());
  ASSERT_TRUE(model->trained());
  const int kHeldOutGroups = 20, kPerGroup = 25;
  const std::vector<Sample> held_out = MakeSynthetic(100, kHeldOutGroups, kPerGroup, 6);
  double tau_sum = 0;
  int top1_in_top3 = 0;
  for (int group = 0; group < kHeldOutGroups; ++group) {
    const std::vector<Sample> members(held_out.begin() + group * kPerGroup,
                                      held_out.begin() + (group + 1) * kPerGroup);
    absl::StatusOr<std::vector<float>> scores = model->Predict(FeaturesOf(members));
    ASSERT_TRUE(scores.ok()) << scores.status();
    std::vector<double> seconds;
    for (const Sample& sample : members) seconds.push_back(sample.seconds);
    tau_sum += testing::KendallTau(*scores, seconds);
    if (testing::TrueRank(seconds, testing::OrderByScore(*scores)[0]) < 3) ++top1_in_top3;
  }
  const double mean_tau = tau_sum / kHeldOutGroups;
  std::printf("synthetic held-out: mean Kendall tau %.3f, predicted best in true top-3: %d/%d\n",
              mean_tau, top1_in_top3, kHeldOutGroups);
  EXPECT_GE(mean_tau, 0.6);
  EXPECT_GE(top1_in_top3, kHeldOutGroups * 6 / 10);
}

TEST(XgbCostModelTest, SaveLoadRoundTripPredictsIdentically) {
  std::unique_ptr<CostModel> model = NewModel();
  ASSERT_TRUE(model->Update(MakeSynthetic(0, 10, 20, 7)).ok());
  const std::string path = TempPath("costmodel_roundtrip.json");
  ASSERT_TRUE(model->Save(path).ok());
  std::unique_ptr<CostModel> loaded = NewModel();
  ASSERT_TRUE(loaded->Load(path).ok());
  EXPECT_TRUE(loaded->trained());
  const std::vector<Features> batch = FeaturesOf(MakeSynthetic(50, 3, 20, 8));
  absl::StatusOr<std::vector<float>> expected = model->Predict(batch);
  absl::StatusOr<std::vector<float>> actual = loaded->Predict(batch);
  ASSERT_TRUE(expected.ok() && actual.ok());
  EXPECT_EQ(*expected, *actual);
  EXPECT_NE(*expected, std::vector<float>(batch.size(), 0.0f));
  std::filesystem::remove(path);
}

TEST(XgbCostModelTest, LoadErrors) {
  std::unique_ptr<CostModel> model = NewModel();
  EXPECT_EQ(model->Load(TempPath("no_such_model.json")).code(), absl::StatusCode::kNotFound);
  const std::string garbage = TempPath("garbage_model.json");
  std::ofstream(garbage) << "this is not a model";
  EXPECT_EQ(model->Load(garbage).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE(model->trained());
  // A failed Load keeps the trained model.
  ASSERT_TRUE(model->Update(MakeSynthetic(0, 2, 10, 9)).ok());
  EXPECT_FALSE(model->Load(garbage).ok());
  EXPECT_TRUE(model->trained());
  std::filesystem::remove(garbage);
}

TEST(XgbCostModelTest, TrainsThousandsOfSamplesQuickly) {
  // Informative timing only (no assertion): 3000 samples x 72 features, 40 rounds, one thread.
  std::mt19937_64 rng(10);
  std::uniform_real_distribution<float> uniform(0.0f, 1.0f);
  std::vector<Sample> samples;
  for (int sample_idx = 0; sample_idx < 3000; ++sample_idx) {
    Sample sample;
    for (int feature = 0; feature < 72; ++feature) sample.features.push_back(uniform(rng));
    sample.group = "g" + std::to_string(sample_idx % 6);
    sample.seconds = SyntheticSeconds(sample.features, 1.0, rng);
    samples.push_back(std::move(sample));
  }
  std::unique_ptr<CostModel> model = NewModel();
  const auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(model->Update(samples).ok());
  const auto trained = std::chrono::steady_clock::now();
  absl::StatusOr<std::vector<float>> scores = model->Predict(FeaturesOf(samples));
  const auto predicted = std::chrono::steady_clock::now();
  ASSERT_TRUE(scores.ok());
  std::printf("train 3000x72 (40 rounds, 1 thread): %.3f s; predict 3000: %.4f s\n",
              std::chrono::duration<double>(trained - start).count(),
              std::chrono::duration<double>(predicted - trained).count());
}

}  // namespace
}  // namespace gtco::costmodel
