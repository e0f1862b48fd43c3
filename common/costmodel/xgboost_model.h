// XGBoost implementation of CostModel: a gradient-boosted tree ensemble trained with the
// pairwise ranking objective over the samples of each group, retrained from scratch on Update.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "common/costmodel/cost_model.h"
#include "common/costmodel/xgb_status.h"

namespace gtco::costmodel {

/// See CostModel. Update drops samples of groups with a single member (nothing to rank them
/// against); with fewer than options.min_samples usable samples it keeps the current model
/// (untrained if there is none) and returns OK. Save writes XGBoost's JSON model format with
/// the feature count stored as attribute "gtco_num_features".
class XgbCostModel final : public CostModel {
 public:
  explicit XgbCostModel(XgbOptions options) : options_(options) {}

  /// INVALID_ARGUMENT for samples of different feature lengths, non-finite features, or
  /// non-positive / non-finite seconds.
  absl::Status Update(const std::vector<Sample>& samples) override;
  /// INVALID_ARGUMENT when a trained model gets features of another length.
  absl::StatusOr<std::vector<float>> Predict(const std::vector<Features>& batch) const override;
  bool trained() const override { return booster_ != nullptr; }
  /// FAILED_PRECONDITION when untrained; INTERNAL when the file cannot be written.
  absl::Status Save(const std::string& path) const override;
  /// NOT_FOUND for a missing file; INVALID_ARGUMENT when it is not a model this class saved.
  /// On error the current model is kept.
  absl::Status Load(const std::string& path) override;

  /// Feature vector length of the trained model (0 when untrained).
  size_t num_features() const { return num_features_; }

 private:
  /// A booster with this model's training parameters, caching `train` (may be null).
  absl::StatusOr<BoosterPtr> NewBooster(void* train) const;

  XgbOptions options_;
  BoosterPtr booster_;
  size_t num_features_ = 0;
};

}  // namespace gtco::costmodel
