// FarmCore, cost model: one XGBoost ranking model per target, warm-started from every earlier
// measurement on that target in the database, retrained as results arrive, saved beside the
// database and reloaded on start.
#include <algorithm>
#include <chrono>
#include <fstream>

#include "common/kernels/build_program.h"
#include "common/schedule/space.h"
#include "common/util/logging.h"
#include "common/util/status.h"
#include "server/farm_core.h"
#include "server/farm_state.h"

namespace gtco::server {
namespace {
constexpr int kWarmStartRecords = 20000;

/// One training thread: the server shares its machine with the scheduler's other work, and
/// XGBoost's all-core default slows badly on a loaded host.
std::unique_ptr<costmodel::CostModel> NewModel() {
  costmodel::XgbOptions options;
  options.threads = 1;
  return costmodel::MakeXgbCostModel(options);
}
}  // namespace

std::string FarmCore::ModelPath(const std::string& target) const {
  if (options_.model_dir.empty()) return "";
  return options_.model_dir + "/gtco-costmodel-" + target + ".json";
}

FarmCore::TargetModel& FarmCore::ModelForLocked(const std::string& target) {
  std::unique_ptr<TargetModel>& model = models_[target];
  if (!model) {
    model = std::make_unique<TargetModel>();
    model->model = NewModel();
  }
  return *model;
}

absl::Status FarmCore::WarmStartModelLocked(const std::string& target, const Worker& worker) {
  TargetModel& model = ModelForLocked(target);
  if (model.warm_started) return absl::OkStatus();
  model.warm_started = true;
  std::string path = ModelPath(target);
  if (!path.empty() && std::ifstream(path).good()) {
    absl::Status loaded = model.model->Load(path);
    if (loaded.ok()) {
      GTCO_LOG(kInfo, "cost model for " << target << " loaded from " << path);
    } else {
      GTCO_LOG(kWarning, "cost model " << path << " not loaded: " << loaded);
    }
  }
  GTCO_ASSIGN_OR_RETURN(std::vector<db::MeasurementRow> records,
                        db_->RecentMeasurements(target, kWarmStartRecords));
  std::map<std::string, std::optional<ir::Workload>> workloads;
  for (const db::MeasurementRow& record : records) {
    auto& workload = workloads[record.workload_key];
    if (!workload) {
      GTCO_ASSIGN_OR_RETURN(auto row, db_->GetWorkload(record.workload_key));
      if (!row) continue;
      auto parsed = ir::ParseWorkload(row->canonical);
      if (!parsed.ok()) continue;
      workload = std::move(*parsed);
    }
    auto trace = schedule::Trace::Parse(record.trace);
    if (!trace.ok()) continue;
    auto features = kernels::ProgramFeatures(*workload, *trace, worker.hardware);
    if (!features.ok()) continue;  // a sketch this release no longer replays
    model.samples.push_back(
        costmodel::Sample{std::move(*features), record.workload_key, record.median_seconds});
  }
  if (!model.samples.empty()) {
    GTCO_LOG(kInfo, "cost model for " << target << ": warm start from " << model.samples.size()
                                      << " earlier measurements");
  }
  return absl::OkStatus();
}

void FarmCore::TrainModels() {
  struct Work {
    std::string target;
    std::vector<costmodel::Sample> samples;
  };
  std::vector<Work> work;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto& [target, model] : models_) {
      if (model->training) continue;
      size_t fresh = model->samples.size() - model->samples_at_last_update;
      bool first = !model->model->trained() && model->samples.size() >= 16;
      // Retrain when the samples grew by a fixed fraction (at least model_update_every): a
      // training pass costs time linear in the samples, so this keeps the cost per measured
      // trial constant however long the farm runs (every 16 samples made it grow linearly).
      size_t due = std::max(
          static_cast<size_t>(options_.model_update_every),
          static_cast<size_t>(model->samples_at_last_update * options_.model_growth_to_retrain));
      if (fresh < due && !first) continue;
      if (fresh == 0) continue;
      model->training = true;
      model->samples_at_last_update = model->samples.size();
      work.push_back({target, model->samples});
    }
  }
  for (Work& item : work) {
    // Train a fresh model outside the lock, then swap it in.
    auto start = std::chrono::steady_clock::now();
    std::unique_ptr<costmodel::CostModel> trained = NewModel();
    absl::Status status = trained->Update(item.samples);
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::string path = ModelPath(item.target);
    if (status.ok() && trained->trained() && !path.empty()) {
      absl::Status saved = trained->Save(path);
      if (!saved.ok()) GTCO_LOG(kWarning, "cost model not saved: " << saved);
    }
    std::lock_guard<std::mutex> lock(mutex_);
    TargetModel& model = *models_.at(item.target);
    model.training = false;
    if (!status.ok()) {
      GTCO_LOG(kWarning, "cost model training on " << item.target << " failed: " << status);
      continue;
    }
    if (trained->trained()) model.model = std::move(trained);
    GTCO_LOG(kDebug, "cost model for " << item.target << " trained on " << item.samples.size()
                                       << " samples in " << seconds << " s");
  }
}

}  // namespace gtco::server
