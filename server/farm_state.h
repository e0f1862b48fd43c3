// In-memory state of jobs, tasks and workers held by FarmCore (private to the server library).
#pragma once

#include <deque>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/db/database.h"
#include "common/ir/workload.h"
#include "common/search/search_strategy.h"
#include "common/target/target.h"
#include "server/farm_core.h"

namespace gtco::server {

struct FarmCore::TaskState {
  db::TaskRow row;
  ir::Workload workload;
  std::string description;
  int64_t flops = 0;
  std::unique_ptr<search::SearchStrategy> search;  ///< created at the first lease (needs hardware)
  std::vector<db::MeasurementRow> history;         ///< replayed into `search` when it is created
  std::deque<std::string> pending;                 ///< candidate ids ready to lease
  std::map<std::string, std::string> outstanding;  ///< candidate id -> trace (pending or leased)
  std::map<std::string, int64_t> leased_at_ms;     ///< candidate id -> lease time (for metrics)
  int64_t trials_done = 0;
  int64_t trials_failed = 0;
  double best_seconds = 0;  ///< 0: none yet
  bool exhausted = false;   ///< the search space has nothing new to propose
  std::string first_error;

  bool Finished() const {
    return row.state == "done" || row.state == "from_database" || row.state == "cancelled";
  }
  int64_t Remaining() const {
    return row.trials_allotted - trials_done - static_cast<int64_t>(outstanding.size());
  }
};

struct FarmCore::JobState {
  db::JobRow row;
  std::vector<std::unique_ptr<TaskState>> tasks;
  int64_t version = 1;
  int64_t resumed_ms = 0;       ///< when this server started driving the job (for ETAs)
  int64_t trials_at_resume = 0;

  bool Terminal() const {
    return row.state == "done" || row.state == "failed" || row.state == "cancelled";
  }
};

struct FarmCore::WorkerState {
  db::WorkerRow row;
  target::HardwareInfo hardware;
  int64_t last_seen_ms = 0;
};

}  // namespace gtco::server
