// FarmCore, scheduling: which task and mapping the next round of trials goes to (reserved under
// the farm's lock), the search spaces of a task, scoring proposals with the cost model, and
// lowering a schedule to its candidate program.
#include <algorithm>
#include <limits>

#include "absl/strings/str_format.h"
#include "common/kernels/build_program.h"
#include "common/kernels/registry.h"
#include "common/schedule/space.h"
#include "common/util/hash.h"
#include "common/util/logging.h"
#include "common/util/status.h"
#include "server/farm_core.h"
#include "server/farm_state.h"

namespace gtco::server {
namespace {
constexpr const char* kKernelName = kernels::kDefaultEntry;
constexpr size_t kMaxDecisions = 40;
/// Features of scored traces kept per task (cleared when full).
constexpr size_t kMaxScoredFeatures = 8192;
}  // namespace

void FarmCore::LogDecisionLocked(Job& job, const std::string& decision) {
  job.decisions.push_back(decision);
  while (job.decisions.size() > kMaxDecisions) job.decisions.pop_front();
}

absl::StatusOr<FarmCore::Task*> FarmCore::TaskWithPendingLocked(const Worker& worker,
                                                               std::string* candidate_id,
                                                               TaskClass** state) {
  for (auto& [job_id, job] : jobs_) {
    if (job->row.state != db::JobState::kRunning || job->row.target != worker.row.target) continue;
    for (auto& task : job->tasks) {
      if (task->Finished()) continue;
      for (const std::string& id : task->pending) {
        auto owner = task->candidate_class.find(id);
        const bool unowned = owner == task->candidate_class.end() || owner->second.empty();
        if (!unowned && owner->second != worker.hardware_class) continue;
        GTCO_ASSIGN_OR_RETURN(TaskClass* own, SpacesForLocked(*task, worker));
        // One proposed before a restart is this class's only if its mapping is among the class's.
        if (own->MappingOfTrace(task->outstanding.at(id)) < 0) continue;
        *candidate_id = id;
        *state = own;
        return task.get();
      }
    }
  }
  return nullptr;
}

absl::StatusOr<TaskClass*> FarmCore::SpacesForLocked(Task& task, const Worker& worker) {
  if (TaskClass* existing = task.Class(worker.hardware_class)) return existing;
  auto build = std::make_shared<TaskBuild>();
  build->task_id = task.row.task_id;
  build->workload_key = task.row.workload_key;
  build->workload = task.workload;
  build->hardware = worker.hardware;
  build->hardware_class = worker.hardware_class;
  // A class no mapping applies to keeps its verdicts (status --explain says why) and no spaces:
  // it counts as exhausted, so the scheduler leaves the task to the other classes.
  std::vector<schedule::MappingVerdict> verdicts =
      kernels::ExplainMappings(task.workload, worker.hardware);
  const bool any_applies = std::any_of(verdicts.begin(), verdicts.end(),
                                       [](const auto& verdict) { return verdict.applies; });
  std::vector<schedule::SearchSpace> spaces;
  if (any_applies) {
    // A mapping that applies but admits no schedule on this class (its caches, its cores) is
    // left out and says so in its verdict; the others tune the task.
    std::vector<schedule::MappingVerdict> unusable;
    absl::StatusOr<std::vector<schedule::SearchSpace>> created =
        kernels::CreateMappingSpaces(task.workload, worker.hardware, &unusable);
    if (created.ok()) {
      spaces = std::move(*created);
    } else {
      // Every mapping that applies admits no schedule here: as for a class none applies to, the
      // task is exhausted on it (retrying would stall the job; status --explain says why).
      for (schedule::MappingVerdict& verdict : verdicts) {
        if (!verdict.applies) continue;
        verdict.applies = false;
        verdict.reason = std::string(created.status().message());
      }
    }
    for (const schedule::MappingVerdict& left_out : unusable) {
      for (schedule::MappingVerdict& verdict : verdicts) {
        if (verdict.mapping == left_out.mapping) verdict = left_out;
      }
    }
  }
  TaskClass& state = task.classes[worker.hardware_class];
  state.key = worker.hardware_class;
  state.verdicts = std::move(verdicts);
  for (schedule::SearchSpace& space : spaces) {
    MappingState mapping;
    mapping.space = std::make_unique<schedule::SearchSpace>(std::move(space));
    search::EvolutionaryOptions search_options;
    search_options.seed = NewSeed();
    const Task* task_pointer = &task;
    TaskClass* state_pointer = &state;
    search_options.scorer = [this, task_pointer,
                             state_pointer](const std::vector<schedule::Trace>& traces) {
      return ScoreTraces(*task_pointer, *state_pointer, traces);
    };
    mapping.search =
        std::make_unique<search::EvolutionarySearch>(*mapping.space, std::move(search_options));
    mapping.prune_stats = mapping.space->prune_stats();
    state.mappings.push_back(std::move(mapping));
  }
  state.build = std::move(build);
  // Replay what was measured on this class's hardware before (by an earlier server).
  for (const db::MeasurementRow& measurement : task.history) {
    if (HardwareClassOf(measurement.target, measurement.hardware) != state.key) continue;
    int index = state.MappingOfTrace(measurement.trace);
    auto trace = schedule::Trace::Parse(measurement.trace);
    if (index < 0 || !trace.ok()) continue;
    MappingState& mapping = state.mappings[index];
    mapping.search->Observe(*trace, measurement.ok, measurement.median_seconds);
    ++mapping.trials;
    if (measurement.ok) {
      mapping.means.Add(measurement.trace, measurement.median_seconds);
      mapping.best_seconds = mapping.means.best;
    }
  }
  // Candidates proposed and not measured yet are never proposed again; those of this class (or
  // of no class: proposed before a restart) count as in flight.
  for (const auto& [candidate_id, trace_text] : task.outstanding) {
    int index = state.MappingOfTrace(trace_text);
    if (index < 0) continue;
    auto owner = task.candidate_class.find(candidate_id);
    if (owner != task.candidate_class.end() && owner->second == state.key) {
      ++state.mappings[index].in_flight;
    }
    absl::StatusOr<schedule::Trace> trace = schedule::Trace::Parse(trace_text);
    if (trace.ok()) state.mappings[index].search->MarkProposed(*trace);
  }
  return &state;
}

std::vector<double> FarmCore::ScoreTraces(const Task& task, TaskClass& state,
                                          const std::vector<schedule::Trace>& traces) const {
  const target::HardwareInfo& hardware = state.build->hardware;
  const target::Target target = hardware.target;
  if (!models_.Trained(target)) return {};
  std::vector<costmodel::Features> batch;
  batch.reserve(traces.size());
  for (const schedule::Trace& trace : traces) {
    // The search scores the same offspring of its best schedules round after round: lowering
    // each once per task is most of what scoring costs.
    std::string key = trace.ToString();
    auto cached = state.scored_features.find(key);
    if (cached == state.scored_features.end()) {
      absl::StatusOr<costmodel::Features> features =
          kernels::ProgramFeatures(task.workload, trace, hardware);
      if (!features.ok()) return {};
      if (state.scored_features.size() >= kMaxScoredFeatures) state.scored_features.clear();
      cached = state.scored_features.emplace(std::move(key), std::move(*features)).first;
    }
    batch.push_back(cached->second);
  }
  return models_.Score(target, batch);
}

absl::StatusOr<int64_t> FarmCore::TeamTrialsLeftLocked(const Job& job) {
  if (job.team_max_trials_per_day <= 0) return std::numeric_limits<int64_t>::max();
  GTCO_ASSIGN_OR_RETURN(int64_t measured,
                        db_->CountTrialsSince(job.row.team, NowMs() - 24LL * 3600 * 1000));
  int64_t in_flight = 0;  // proposed or leased, not yet measured
  for (const auto& [job_id, other] : jobs_) {
    if (other->row.team != job.row.team || other->Terminal()) continue;
    for (const auto& task : other->tasks) in_flight += task->InFlight();
  }
  return std::max<int64_t>(0, job.team_max_trials_per_day - measured - in_flight);
}

std::vector<FarmCore::Job*> FarmCore::FairShareOrderLocked(target::Target target) {
  std::vector<Job*> running;
  std::map<std::string, double> share;
  for (auto& [job_id, job] : jobs_) {
    if (job->row.state == db::JobState::kRunning && job->row.target == target &&
        job->BudgetLeft() > 0) {
      running.push_back(job.get());
      share[job->row.team] = job->team_share;
    }
  }
  // A team that was idle joins at the clock of the least-served waiting team, so it shares from
  // now on instead of claiming what it did not ask for while idle.
  double least = -1;
  for (const auto& [team, weight] : share) {
    auto clock = team_clock_.find(team);
    if (clock != team_clock_.end() && (least < 0 || clock->second < least)) least = clock->second;
  }
  for (const auto& [team, weight] : share) {
    auto [clock, inserted] = team_clock_.emplace(team, std::max(0.0, least));
    if (!inserted && least >= 0 && clock->second < least) clock->second = least;
  }
  std::stable_sort(running.begin(), running.end(), [this](const Job* a, const Job* b) {
    const double clock_a = team_clock_[a->row.team], clock_b = team_clock_[b->row.team];
    if (clock_a != clock_b) return clock_a < clock_b;
    return a->proposed < b->proposed;
  });
  return running;
}

absl::StatusOr<std::vector<FarmCore::Placement>> FarmCore::ScheduleRoundLocked(
    const Worker& worker) {
  std::vector<Job*> running = FairShareOrderLocked(worker.row.target);
  // Weighted fair share across teams, then across a team's jobs; within a job the dual-task
  // scheduler picks the task, then the mapping.
  for (size_t attempt = 0; attempt < running.size(); ++attempt) {
    Job& job = *running[attempt];
    GTCO_ASSIGN_OR_RETURN(int64_t team_trials_left, TeamTrialsLeftLocked(job));
    if (team_trials_left <= 0) continue;
    // Each task as this worker's hardware class searches it; a task no mapping of this class
    // applies to (or whose schedules this class has all tried) is left to the other classes.
    std::vector<TaskCurve> curves = CurvesLocked(job);
    std::vector<TaskCurve> class_curves = curves;
    for (size_t index = 0; index < job.tasks.size(); ++index) {
      Task& candidate_task = *job.tasks[index];
      if (candidate_task.Finished()) continue;
      GTCO_ASSIGN_OR_RETURN(TaskClass* state, SpacesForLocked(candidate_task, worker));
      if (state->Exhausted()) class_curves[index].exhausted = true;
    }
    TaskChoice task_choice = ChooseTask(class_curves, job.scheduler);
    for (size_t index = 0; index < job.tasks.size(); ++index) {
      job.tasks[index]->last_gain = ExpectedGain(curves[index], job.scheduler);
    }
    if (task_choice.task < 0) continue;
    Task& task = *job.tasks[task_choice.task];
    TaskClass& state = *task.Class(worker.hardware_class);
    std::vector<MappingArm> arms;
    for (const MappingState& mapping : state.mappings) {
      arms.push_back(MappingArm{mapping.space->mapping(), mapping.trials + mapping.in_flight,
                                mapping.best_seconds, mapping.exhausted});
    }
    // Keep one trial for every other task that has none yet, so a small budget still tunes
    // every task.
    int64_t untouched = 0;
    for (const auto& other : job.tasks) {
      bool idle = other->trials_done == 0 && other->InFlight() == 0;
      if (other.get() != &task && !other->Finished() && idle) ++untouched;
    }
    int64_t count = std::max<int64_t>(
        1, std::min<int64_t>(job.options.round_size, job.BudgetLeft() - untouched));
    count = std::min(count, team_trials_left);
    // The bandit places the round's candidates one by one, so a round can explore several
    // mappings; the reason logged is the first placement's.
    std::vector<int64_t> per_arm(arms.size(), 0);
    std::string mapping_reason;
    for (int64_t slot = 0; slot < count; ++slot) {
      MappingChoice mapping_choice = ChooseMapping(arms);
      if (mapping_choice.arm < 0) break;
      if (mapping_reason.empty()) mapping_reason = mapping_choice.reason;
      ++per_arm[mapping_choice.arm];
      ++arms[mapping_choice.arm].trials;
    }
    // Reserved now (the budget and the bandit see them); the preparer runs the search off the
    // lock and turns the reservation into candidates.
    std::vector<Placement> placements;
    std::string placed;
    int64_t proposed = 0;
    for (size_t arm = 0; arm < per_arm.size(); ++arm) {
      if (per_arm[arm] == 0) continue;
      placements.push_back(
          Placement{&job, &task, &state, static_cast<int>(arm), per_arm[arm]});
      state.mappings[arm].in_flight += per_arm[arm];
      task.reserved += per_arm[arm];
      absl::StrAppend(&placed, placed.empty() ? "" : " + ", per_arm[arm], " ", arms[arm].name);
      proposed += per_arm[arm];
    }
    if (proposed == 0) continue;
    ++job.rounds;
    LogDecisionLocked(
        job, absl::StrFormat("round %d: %s (%s) %s — %s; %s%s", job.rounds,
                             task.row.task_id.substr(task.row.task_id.rfind('.') + 1),
                             task.description, placed, task_choice.reason, mapping_reason,
                             task.classes.size() > 1 ? " [for " + state.key + "]" : ""));
    job.proposed += proposed;
    team_clock_[job.row.team] += static_cast<double>(proposed) / std::max(1e-9, job.team_share);
    return placements;
  }
  return std::vector<Placement>();
}

absl::StatusOr<BuiltCandidate> FarmCore::BuildCandidate(const TaskBuild& task,
                                                        const std::string& candidate_id,
                                                        const std::string& trace_text,
                                                        bool as_trace) {
  const ir::Workload& workload = task.workload;
  const target::HardwareInfo& hardware = task.hardware;
  GTCO_ASSIGN_OR_RETURN(schedule::Trace trace, schedule::Trace::Parse(trace_text));
  BuiltCandidate built;
  LeasedCandidate& candidate = built.candidate;
  candidate.candidate_id = candidate_id;
  candidate.task_id = task.task_id;
  candidate.workload_key = task.workload_key;
  candidate.workload = workload.CanonicalString();
  candidate.trace = trace_text;
  candidate.target = hardware.target;
  if (as_trace && hardware.target == target::Target::kCpu) {
    // The worker builds the program with the same kernel families; the server keeps only what
    // the cost model needs. The trace and the workload determine the program, so they name it.
    GTCO_ASSIGN_OR_RETURN(built.features, kernels::ProgramFeatures(workload, trace, hardware));
    candidate.language = "trace";
    candidate.entry = kKernelName;
    candidate.program_hash =
        util::HexDigest128(absl::StrCat("trace\n", candidate.workload, "\n", trace_text));
    return built;
  }
  GTCO_ASSIGN_OR_RETURN(kernels::Program program,
                        kernels::BuildProgram(workload, trace, hardware, kKernelName));
  built.features = std::move(program.features);
  candidate.language = std::move(program.language);
  candidate.entry = std::move(program.entry);
  candidate.launch = program.launch;
  candidate.program_hash = util::HexDigest128(program.code);
  candidate.program = std::move(program.code);
  return built;
}

void FarmCore::WarmStartCostModel(const Worker& worker) {
  absl::Status warm = models_.WarmStart(worker.hardware.target, worker.hardware);
  if (!warm.ok()) {
    GTCO_LOG(kWarning, "cost model warm start for " << target::TargetName(worker.hardware.target)
                                                    << " failed (retried later): " << warm);
  }
}

}  // namespace gtco::server
