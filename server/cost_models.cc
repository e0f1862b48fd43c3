// The farm's cost models: warm start, samples, scoring and background retraining per target.
#include "server/cost_models.h"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <optional>
#include <utility>

#include "common/kernels/build_program.h"
#include "common/schedule/trace.h"
#include "common/util/logging.h"
#include "common/util/status.h"
#include "common/util/thread_priority.h"

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

CostModels::CostModels(db::Database* database, CostModelOptions options)
    : db_(database), options_(std::move(options)) {}

std::vector<costmodel::Sample> CostModels::TrainingSet(
    const std::vector<costmodel::Sample>& samples, size_t max_samples) {
  if (samples.size() <= max_samples) return samples;
  // The most recent half (where the searches are now) and an even spread over the older ones
  // (what the other tasks and earlier regions of the spaces taught).
  const size_t recent = max_samples / 2;
  const size_t spread = max_samples - recent;
  const size_t older = samples.size() - recent;
  std::vector<costmodel::Sample> chosen;
  chosen.reserve(max_samples);
  for (size_t pick = 0; pick < spread; ++pick) chosen.push_back(samples[pick * older / spread]);
  chosen.insert(chosen.end(), samples.end() - recent, samples.end());
  return chosen;
}

CostModels::TargetModel& CostModels::ModelLocked(target::Target target) {
  std::unique_ptr<TargetModel>& model = models_[target];
  if (!model) {
    model = std::make_unique<TargetModel>();
    model->model = NewModel();
  }
  return *model;
}

std::string CostModels::ModelPath(target::Target target) const {
  if (options_.model_dir.empty()) return "";
  return options_.model_dir + "/gtco-costmodel-" + target::TargetName(target) + ".json";
}

absl::Status CostModels::WarmStart(target::Target target, const target::HardwareInfo& hardware) {
  std::lock_guard<std::mutex> lock(mutex_);
  TargetModel& model = ModelLocked(target);
  if (model.warm_started) return absl::OkStatus();
  const int64_t now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                             std::chrono::steady_clock::now().time_since_epoch())
                             .count();
  if (now_ms < model.warm_start_retry_ms) return absl::OkStatus();
  absl::StatusOr<std::vector<costmodel::Sample>> samples = ReadWarmStartSamples(target, hardware);
  if (!samples.ok()) {
    model.warm_start_retry_ms = now_ms + kWarmStartRetrySeconds * 1000LL;
    return samples.status();
  }
  model.warm_started = true;
  model.samples.insert(model.samples.begin(), std::make_move_iterator(samples->begin()),
                       std::make_move_iterator(samples->end()));
  const std::string target_name = target::TargetName(target);
  const std::string path = ModelPath(target);
  if (!path.empty() && std::ifstream(path).good()) {
    absl::Status loaded = model.model->Load(path);
    if (loaded.ok()) {
      GTCO_LOG(kInfo, "cost model for " << target_name << " loaded from " << path);
    } else {
      GTCO_LOG(kWarning, "cost model " << path << " not loaded: " << loaded);
    }
  }
  if (!samples->empty()) {
    GTCO_LOG(kInfo, "cost model for " << target_name << ": warm start from " << samples->size()
                                      << " earlier measurements");
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<costmodel::Sample>> CostModels::ReadWarmStartSamples(
    target::Target target, const target::HardwareInfo& hardware) const {
  GTCO_ASSIGN_OR_RETURN(std::vector<db::MeasurementRow> records,
                        db_->RecentMeasurements(target, kWarmStartRecords));
  std::vector<costmodel::Sample> samples;
  std::map<std::string, std::optional<ir::Workload>> workloads;
  for (const db::MeasurementRow& record : records) {
    std::optional<ir::Workload>& workload = workloads[record.workload_key];
    if (!workload) {
      GTCO_ASSIGN_OR_RETURN(std::optional<db::WorkloadRow> row,
                            db_->GetWorkload(record.workload_key));
      if (!row) continue;
      absl::StatusOr<ir::Workload> parsed = ir::ParseWorkload(row->canonical);
      if (!parsed.ok()) continue;
      workload = std::move(*parsed);
    }
    absl::StatusOr<schedule::Trace> trace = schedule::Trace::Parse(record.trace);
    if (!trace.ok()) continue;
    absl::StatusOr<costmodel::Features> features =
        kernels::ProgramFeatures(*workload, *trace, hardware);
    if (!features.ok()) continue;  // a sketch this release no longer replays
    samples.push_back(
        costmodel::Sample{std::move(*features), record.workload_key, record.median_seconds});
  }
  return samples;
}

void CostModels::AddSample(target::Target target, costmodel::Sample sample) {
  std::lock_guard<std::mutex> lock(mutex_);
  ModelLocked(target).samples.push_back(std::move(sample));
}

bool CostModels::Trained(target::Target target) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto found = models_.find(target);
  return found != models_.end() && found->second->model && found->second->model->trained();
}

std::vector<double> CostModels::Score(target::Target target,
                                      const std::vector<costmodel::Features>& batch) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto found = models_.find(target);
  if (found == models_.end() || !found->second->model || !found->second->model->trained()) {
    return {};
  }
  absl::StatusOr<std::vector<float>> scores = found->second->model->Predict(batch);
  if (!scores.ok()) return {};
  return std::vector<double>(scores->begin(), scores->end());
}

int CostModels::TrainDue() {
  struct Work {
    target::Target target;
    std::vector<costmodel::Sample> samples;
  };
  std::vector<Work> work;
  const int64_t now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                             std::chrono::steady_clock::now().time_since_epoch())
                             .count();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto& [target, model] : models_) {
      if (model->training) continue;
      const bool too_soon = model->model->trained() &&
                            now_ms - model->last_pass_ms <
                                static_cast<int64_t>(1000 * options_.min_seconds_between_passes);
      if (too_soon) continue;
      const size_t fresh = model->samples.size() - model->samples_at_last_update;
      const bool first = !model->model->trained() && model->samples.size() >= 16;
      // Retrain when the samples grew by a fixed fraction (at least update_every): a training
      // pass costs time linear in its samples, so this keeps the cost per measured trial
      // constant (every 16 samples made it grow linearly). Once a pass is capped at
      // max_training_samples, every that many new samples retrain, at a fixed cost: training
      // then costs at most one sample's share of a pass per trial.
      const size_t due = std::max(static_cast<size_t>(options_.update_every),
                                  std::min(options_.max_training_samples,
                                           static_cast<size_t>(model->samples_at_last_update *
                                                               options_.growth_to_retrain)));
      if ((fresh < due && !first) || fresh == 0) continue;
      model->training = true;
      model->last_pass_ms = now_ms;
      model->samples_at_last_update = model->samples.size();
      work.push_back({target, TrainingSet(model->samples, options_.max_training_samples)});
    }
  }
  int trained_count = 0;
  for (Work& item : work) {
    // Train a fresh model outside the lock, then swap it in.
    const auto start = std::chrono::steady_clock::now();
    std::unique_ptr<costmodel::CostModel> trained = NewModel();
    // Training can wait; a worker timing candidates on this host cannot: it runs in a thread of
    // the lowest CPU priority (util/thread_priority.h) that holds no lock.
    absl::Status status = absl::OkStatus();
    util::RunInBackground([&] { status = trained->Update(item.samples); });
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const std::string path = ModelPath(item.target);
    if (status.ok() && trained->trained() && !path.empty()) {
      absl::Status saved = trained->Save(path);
      if (!saved.ok()) GTCO_LOG(kWarning, "cost model not saved: " << saved);
    }
    std::lock_guard<std::mutex> lock(mutex_);
    TargetModel& model = *models_.at(item.target);
    model.training = false;
    const char* target_name = target::TargetName(item.target);
    if (!status.ok()) {
      GTCO_LOG(kWarning, "cost model training on " << target_name << " failed: " << status);
      continue;
    }
    if (trained->trained()) {
      model.model = std::move(trained);
      ++trained_count;
    }
    GTCO_LOG(kDebug, "cost model for " << target_name << " trained on " << item.samples.size()
                                       << " samples in " << seconds << " s");
  }
  return trained_count;
}

}  // namespace gtco::server
