// Cost model: predicts which programs of a task run fastest, from features of their lowered
// loop nests. Trained online from measurements; the search ranks candidates with it.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/ir/loop_ir.h"

namespace gtco::costmodel {

/// Fixed-length feature vector of one lowered program (see features.h for the layout).
using Features = std::vector<float>;

/// One measured program: its features, the group it is ranked within (a task or workload key)
/// and its measured latency. Failed measurements are not training samples.
struct Sample {
  Features features;
  std::string group;
  double seconds = 0;
};

/// Ranking model. Scores are only comparable within one workload: higher means faster.
/// Thread-compatible: callers serialize Update/Load against Predict.
class CostModel {
 public:
  virtual ~CostModel() = default;
  /// Retrains on `samples` (the whole history the caller wants used; the caller keeps it).
  virtual absl::Status Update(const std::vector<Sample>& samples) = 0;
  /// Scores for `batch`; all equal (0) before the first successful Update.
  virtual absl::StatusOr<std::vector<float>> Predict(const std::vector<Features>& batch) const = 0;
  /// True once trained on enough data to be worth using.
  virtual bool trained() const = 0;
  /// Writes / reads the trained model (a file path); NOT_FOUND when `path` does not exist.
  virtual absl::Status Save(const std::string& path) const = 0;
  virtual absl::Status Load(const std::string& path) = 0;
};

struct XgbOptions {
  int num_rounds = 40;      ///< boosting rounds per Update
  int max_depth = 6;
  double eta = 0.3;
  int min_samples = 16;     ///< Update below this many samples leaves the model untrained
  int threads = 0;          ///< 0: XGBoost's default
  uint64_t seed = 1;
};

/// XGBoost (C API) with a pairwise ranking objective over groups.
std::unique_ptr<CostModel> MakeXgbCostModel(XgbOptions options = {});

}  // namespace gtco::costmodel
