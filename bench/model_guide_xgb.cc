// Model guidance with the XGBoost cost model: features of each trace's lowered loop nest,
// ranked within the task, retrained on the whole measured history after every round.
#include <string>
#include <unordered_map>
#include <utility>

#include "bench/model_guide.h"
#include "common/costmodel/cost_model.h"
#include "common/costmodel/features.h"
#include "common/kernels/registry.h"
#include "common/schedule/space.h"

namespace gtco::bench {
namespace {

/// XGBoost on the calling thread only: training on at most a few thousand samples gains nothing
/// from OpenMP, and on a busy 2-core machine every parallel region's barrier can cost a
/// scheduler time slice (measured on mm512, 100 trials: 29 s of retraining with the default
/// threads vs 0.6 s with one).
costmodel::XgbOptions SingleThreaded() {
  costmodel::XgbOptions options;
  options.threads = 1;
  return options;
}

class XgbModelGuide final : public ModelGuide {
 public:
  XgbModelGuide(ir::Workload workload, target::HardwareInfo hw)
      : workload_(std::move(workload)),
        hw_(std::move(hw)),
        group_(workload_.Key()),
        model_(costmodel::MakeXgbCostModel(SingleThreaded())) {}

  std::vector<double> Score(const std::vector<schedule::Trace>& traces) override {
    if (!model_->trained()) return {};
    std::vector<costmodel::Features> batch;
    batch.reserve(traces.size());
    for (const schedule::Trace& trace : traces) {
      const costmodel::Features* features = FeaturesOf(trace);
      // A trace that cannot be lowered gets empty features; it is scored last below.
      batch.push_back(features != nullptr ? *features : costmodel::Features{});
    }
    std::vector<size_t> unlowerable;
    for (size_t index = 0; index < batch.size(); ++index) {
      if (batch[index].empty()) {
        unlowerable.push_back(index);
        batch[index].assign(costmodel::FeatureNames().size(), 0.0f);
      }
    }
    absl::StatusOr<std::vector<float>> predicted = model_->Predict(batch);
    if (!predicted.ok() || predicted->size() != traces.size()) return {};
    std::vector<double> scores(predicted->begin(), predicted->end());
    for (size_t index : unlowerable) scores[index] = -1e30;
    return scores;
  }

  void Record(const schedule::Trace& trace, double seconds) override {
    const costmodel::Features* features = FeaturesOf(trace);
    if (features == nullptr) return;
    samples_.push_back(costmodel::Sample{*features, group_, seconds});
  }

  bool RecordOther(const ir::Workload& workload, const schedule::Trace& trace,
                   double seconds) override {
    absl::StatusOr<ir::LoweredFunc> func = kernels::LowerSchedule(workload, trace, "f");
    if (!func.ok()) return false;
    samples_.push_back(
        costmodel::Sample{costmodel::ExtractFeatures(*func, hw_), workload.Key(), seconds});
    return true;
  }

  void Retrain() override { (void)model_->Update(samples_); }

 private:
  /// Features of `trace` (memoized by trace text); nullptr when it cannot be lowered.
  const costmodel::Features* FeaturesOf(const schedule::Trace& trace) {
    std::string text = trace.ToString();
    auto found = features_.find(text);
    if (found == features_.end()) {
      absl::StatusOr<ir::LoweredFunc> func = kernels::LowerSchedule(workload_, trace, "f");
      costmodel::Features features;
      if (func.ok()) features = costmodel::ExtractFeatures(*func, hw_);
      found = features_.emplace(std::move(text), std::move(features)).first;
    }
    return found->second.empty() ? nullptr : &found->second;
  }

  ir::Workload workload_;
  target::HardwareInfo hw_;
  std::string group_;
  std::unique_ptr<costmodel::CostModel> model_;
  std::vector<costmodel::Sample> samples_;
  std::unordered_map<std::string, costmodel::Features> features_;
};

}  // namespace

bool ModelGuideAvailable() { return true; }

absl::StatusOr<std::unique_ptr<ModelGuide>> MakeModelGuide(const ir::Workload& workload,
                                                           const target::HardwareInfo& hw) {
  return std::unique_ptr<ModelGuide>(new XgbModelGuide(workload, hw));
}

}  // namespace gtco::bench
