// The farm's cost models: one XGBoost ranking model per target, warm-started from every earlier
// measurement on that target in the database, retrained in the background as results arrive,
// saved beside the database and reloaded on start. One of the farm core's concepts, with its own
// lock; it never calls back into FarmCore.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "common/costmodel/cost_model.h"
#include "common/db/database.h"
#include "common/target/target.h"

namespace gtco::server {

struct CostModelOptions {
  std::string model_dir;  ///< where models are saved ("" = not saved)
  int update_every = 16;  ///< retrain after at least this many new samples...
  /// ... and after the samples grew by this fraction since the last training.
  double growth_to_retrain = 0.25;
  /// At most this many samples train one model (the most recent half of them and an even spread
  /// over the older ones), so one training pass takes a bounded time however long the farm runs.
  size_t max_training_samples = 4096;
  /// A model's passes start at least this far apart (its first pass excepted): a farm that
  /// measures hundreds of trials a second would otherwise retrain at every tick while its
  /// samples grow, each pass on more samples than the last.
  double min_seconds_between_passes = 2.0;
};

/// Thread-safe. Lock order: a caller may hold FarmCore's lock when it calls in, never the reverse.
class CostModels {
 public:
  /// `database` must outlive this object.
  CostModels(db::Database* database, CostModelOptions options);

  /// Once per target: loads its saved model and the features of its recent measurements
  /// (replayed on `hardware`); later calls return at once. A warm start the database failed
  /// (its error is returned) leaves nothing half-loaded and is tried again at the next call at
  /// least kWarmStartRetrySeconds later; until then calls return OK (the farm tunes without it).
  absl::Status WarmStart(target::Target target, const target::HardwareInfo& hardware);
  static constexpr int kWarmStartRetrySeconds = 30;
  /// One measured program of `target`.
  void AddSample(target::Target target, costmodel::Sample sample);
  /// Whether `target`'s model is trained (Score answers).
  bool Trained(target::Target target) const;
  /// The model's scores of `batch` (higher: predicted faster); empty while it is untrained.
  std::vector<double> Score(target::Target target,
                            const std::vector<costmodel::Features>& batch) const;
  /// Retrains the models that gained enough samples, training outside the lock (the server's
  /// ticker calls it). Returns how many models it trained.
  int TrainDue();

  /// The samples one training pass uses out of `samples` (all of them up to
  /// `max_samples`). Exposed for tests.
  static std::vector<costmodel::Sample> TrainingSet(const std::vector<costmodel::Sample>& samples,
                                                    size_t max_samples);

 private:
  struct TargetModel {
    std::unique_ptr<costmodel::CostModel> model;
    std::vector<costmodel::Sample> samples;
    size_t samples_at_last_update = 0;
    bool warm_started = false;
    int64_t warm_start_retry_ms = 0;  ///< steady-clock ms before which no retry is made
    int64_t last_pass_ms = 0;         ///< steady-clock ms when the latest pass started
    bool training = false;
  };

  TargetModel& ModelLocked(target::Target target);
  /// The features of `target`'s recent measurements, replayed on `hardware`.
  absl::StatusOr<std::vector<costmodel::Sample>> ReadWarmStartSamples(
      target::Target target, const target::HardwareInfo& hardware) const;
  std::string ModelPath(target::Target target) const;

  db::Database* const db_;
  const CostModelOptions options_;
  mutable std::mutex mutex_;
  std::map<target::Target, std::unique_ptr<TargetModel>> models_;
};

}  // namespace gtco::server
