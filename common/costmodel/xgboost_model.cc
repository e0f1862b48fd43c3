// XgbCostModel: training-set assembly (grouped, relevance labels), boosting, prediction and
// model files through XGBoost's C API.
#include "common/costmodel/xgboost_model.h"

#include <xgboost/c_api.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <numeric>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/util/status.h"

namespace gtco::costmodel {
namespace {

constexpr char kNumFeaturesAttr[] = "gtco_num_features";

/// Samples laid out for XGBoost: rows sorted by group, one relevance label per row.
struct TrainingSet {
  std::vector<float> rows;  ///< row-major, num_rows x num_features
  std::vector<float> labels;
  std::vector<unsigned> group_sizes;
  size_t num_rows = 0;
  size_t num_features = 0;
};

absl::Status CheckSamples(const std::vector<Sample>& samples) {
  for (size_t sample_idx = 0; sample_idx < samples.size(); ++sample_idx) {
    const Sample& sample = samples[sample_idx];
    if (sample.features.size() != samples[0].features.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("sample ", sample_idx, " has ", sample.features.size(),
                       " features, sample 0 has ", samples[0].features.size()));
    }
    if (!std::isfinite(sample.seconds) || sample.seconds <= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("sample ", sample_idx, " has invalid seconds ", sample.seconds));
    }
    for (float value : sample.features) {
      if (!std::isfinite(value)) {
        return absl::InvalidArgumentError(
            absl::StrCat("sample ", sample_idx, " has a non-finite feature"));
      }
    }
  }
  return absl::OkStatus();
}

/// Groups of two or more samples, in group order; label = fastest-in-group / seconds, so the
/// fastest program of each group gets 1 and slower ones less (only the order matters).
TrainingSet BuildTrainingSet(const std::vector<Sample>& samples) {
  std::vector<size_t> order(samples.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t lhs, size_t rhs) { return samples[lhs].group < samples[rhs].group; });
  TrainingSet set;
  set.num_features = samples.empty() ? 0 : samples[0].features.size();
  for (size_t begin = 0; begin < order.size();) {
    size_t end = begin;
    double best_seconds = std::numeric_limits<double>::infinity();
    while (end < order.size() && samples[order[end]].group == samples[order[begin]].group) {
      best_seconds = std::min(best_seconds, samples[order[end]].seconds);
      ++end;
    }
    if (end - begin >= 2) {
      for (size_t idx = begin; idx < end; ++idx) {
        const Sample& sample = samples[order[idx]];
        set.rows.insert(set.rows.end(), sample.features.begin(), sample.features.end());
        set.labels.push_back(static_cast<float>(best_seconds / sample.seconds));
      }
      set.group_sizes.push_back(static_cast<unsigned>(end - begin));
      set.num_rows += end - begin;
    }
    begin = end;
  }
  return set;
}

absl::StatusOr<DMatrixPtr> MakeDMatrix(const std::vector<float>& rows, size_t num_rows,
                                       size_t num_features) {
  DMatrixHandle handle = nullptr;
  GTCO_RETURN_IF_ERROR(
      XgbStatus(XGDMatrixCreateFromMat(rows.data(), num_rows, num_features,
                                       std::numeric_limits<float>::quiet_NaN(), &handle),
                "XGDMatrixCreateFromMat"));
  return DMatrixPtr(handle);
}

absl::Status SetParam(BoosterHandle booster, const char* name, const std::string& value) {
  return XgbStatus(XGBoosterSetParam(booster, name, value.c_str()),
                   absl::StrCat("XGBoosterSetParam(", name, ")"));
}

}  // namespace

absl::StatusOr<BoosterPtr> XgbCostModel::NewBooster(void* train) const {
  BoosterHandle handle = nullptr;
  DMatrixHandle caches[1] = {train};
  GTCO_RETURN_IF_ERROR(
      XgbStatus(XGBoosterCreate(caches, train != nullptr ? 1 : 0, &handle), "XGBoosterCreate"));
  BoosterPtr booster(handle);
  GTCO_RETURN_IF_ERROR(SetParam(handle, "verbosity", "0"));
  GTCO_RETURN_IF_ERROR(SetParam(handle, "objective", "rank:pairwise"));
  GTCO_RETURN_IF_ERROR(SetParam(handle, "tree_method", "hist"));
  GTCO_RETURN_IF_ERROR(SetParam(handle, "max_bin", "64"));
  GTCO_RETURN_IF_ERROR(SetParam(handle, "max_depth", std::to_string(options_.max_depth)));
  GTCO_RETURN_IF_ERROR(SetParam(handle, "eta", absl::StrCat(options_.eta)));
  // Pairwise gradients give small hessians: allow leaves on few samples, as TVM's model does.
  GTCO_RETURN_IF_ERROR(SetParam(handle, "min_child_weight", "0"));
  GTCO_RETURN_IF_ERROR(SetParam(handle, "gamma", "0.0001"));
  // More sampled pairs per instance and round: steadier gradients on small groups.
  GTCO_RETURN_IF_ERROR(SetParam(handle, "num_pairsample", "8"));
  // XGBoost parses the seed as a signed integer.
  GTCO_RETURN_IF_ERROR(SetParam(handle, "seed", std::to_string(options_.seed % (1ull << 31))));
  if (options_.threads > 0) {
    GTCO_RETURN_IF_ERROR(SetParam(handle, "nthread", std::to_string(options_.threads)));
  }
  return booster;
}

absl::Status XgbCostModel::Update(const std::vector<Sample>& samples) {
  GTCO_RETURN_IF_ERROR(CheckSamples(samples));
  const TrainingSet set = BuildTrainingSet(samples);
  if (set.num_rows < static_cast<size_t>(std::max(options_.min_samples, 2)) ||
      set.num_features == 0) {
    return absl::OkStatus();
  }
  GTCO_ASSIGN_OR_RETURN(DMatrixPtr train, MakeDMatrix(set.rows, set.num_rows, set.num_features));
  GTCO_RETURN_IF_ERROR(
      XgbStatus(XGDMatrixSetFloatInfo(train.get(), "label", set.labels.data(), set.num_rows),
                "XGDMatrixSetFloatInfo(label)"));
  GTCO_RETURN_IF_ERROR(XgbStatus(
      XGDMatrixSetUIntInfo(train.get(), "group", set.group_sizes.data(), set.group_sizes.size()),
      "XGDMatrixSetUIntInfo(group)"));
  GTCO_ASSIGN_OR_RETURN(BoosterPtr booster, NewBooster(train.get()));
  for (int round = 0; round < options_.num_rounds; ++round) {
    GTCO_RETURN_IF_ERROR(
        XgbStatus(XGBoosterUpdateOneIter(booster.get(), round, train.get()), "training round"));
  }
  GTCO_RETURN_IF_ERROR(XgbStatus(
      XGBoosterSetAttr(booster.get(), kNumFeaturesAttr, std::to_string(set.num_features).c_str()),
      "XGBoosterSetAttr"));
  booster_ = std::move(booster);
  num_features_ = set.num_features;
  return absl::OkStatus();
}

absl::StatusOr<std::vector<float>> XgbCostModel::Predict(const std::vector<Features>& batch) const {
  if (booster_ == nullptr || batch.empty()) return std::vector<float>(batch.size(), 0.0f);
  std::vector<float> rows;
  rows.reserve(batch.size() * num_features_);
  for (size_t row_idx = 0; row_idx < batch.size(); ++row_idx) {
    if (batch[row_idx].size() != num_features_) {
      return absl::InvalidArgumentError(absl::StrCat("batch row ", row_idx, " has ",
                                                     batch[row_idx].size(), " features, model ",
                                                     num_features_));
    }
    rows.insert(rows.end(), batch[row_idx].begin(), batch[row_idx].end());
  }
  GTCO_ASSIGN_OR_RETURN(DMatrixPtr matrix, MakeDMatrix(rows, batch.size(), num_features_));
  bst_ulong num_scores = 0;
  const float* scores = nullptr;
  GTCO_RETURN_IF_ERROR(
      XgbStatus(XGBoosterPredict(booster_.get(), matrix.get(), /*option_mask=*/0,
                                 /*ntree_limit=*/0, /*training=*/0, &num_scores, &scores),
                "XGBoosterPredict"));
  if (num_scores != batch.size()) {
    return absl::InternalError(
        absl::StrCat("XGBoost returned ", num_scores, " scores for ", batch.size(), " rows"));
  }
  return std::vector<float>(scores, scores + num_scores);
}

absl::Status XgbCostModel::Save(const std::string& path) const {
  if (booster_ == nullptr) return absl::FailedPreconditionError("cost model is not trained");
  bst_ulong num_bytes = 0;
  const char* bytes = nullptr;
  GTCO_RETURN_IF_ERROR(XgbStatus(
      XGBoosterSaveModelToBuffer(booster_.get(), R"({"format": "json"})", &num_bytes, &bytes),
      "XGBoosterSaveModelToBuffer"));
  // Write a sibling temporary, then rename: readers never see a half-written model.
  const std::string temporary = path + ".tmp";
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    out.write(bytes, static_cast<std::streamsize>(num_bytes));
    out.close();
    if (!out) return absl::InternalError(absl::StrCat("cannot write cost model to '", path, "'"));
  }
  std::error_code error;
  std::filesystem::rename(temporary, path, error);
  if (error) {
    std::filesystem::remove(temporary, error);
    return absl::InternalError(absl::StrCat("cannot write cost model to '", path, "'"));
  }
  return absl::OkStatus();
}

absl::Status XgbCostModel::Load(const std::string& path) {
  std::error_code error;
  if (!std::filesystem::is_regular_file(path, error)) {
    return absl::NotFoundError(absl::StrCat("no cost model file '", path, "'"));
  }
  std::ifstream in(path, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (!in.good() && !in.eof()) {
    return absl::InternalError(absl::StrCat("cannot read cost model '", path, "'"));
  }
  GTCO_ASSIGN_OR_RETURN(BoosterPtr booster, NewBooster(nullptr));
  GTCO_RETURN_IF_ERROR(
      XgbStatus(XGBoosterLoadModelFromBuffer(booster.get(), bytes.data(), bytes.size()),
                absl::StrCat("loading '", path, "'"), absl::StatusCode::kInvalidArgument));
  const char* attr = nullptr;
  int found = 0;
  GTCO_RETURN_IF_ERROR(XgbStatus(XGBoosterGetAttr(booster.get(), kNumFeaturesAttr, &attr, &found),
                                 "XGBoosterGetAttr"));
  size_t num_features = 0;
  if (found == 0 || attr == nullptr || !absl::SimpleAtoi(attr, &num_features) ||
      num_features == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", path, "' is not a GTCO cost model (no ", kNumFeaturesAttr, ")"));
  }
  booster_ = std::move(booster);
  num_features_ = num_features;
  return absl::OkStatus();
}

std::unique_ptr<CostModel> MakeXgbCostModel(XgbOptions options) {
  return std::make_unique<XgbCostModel>(options);
}

}  // namespace gtco::costmodel
