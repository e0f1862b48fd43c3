// The farm core's own vocabulary: what FarmCore takes and returns. The gRPC handlers
// (service.cc) alone translate these to and from gtco.v1 protos (proto_convert.h).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "common/db/database.h"
#include "common/db/states.h"
#include "common/graph/fallback.h"
#include "common/onnx/onnx_import.h"
#include "common/schedule/cuda_sketch.h"
#include "common/target/target.h"
#include "runtime/artifact.h"

namespace gtco::server {

/// A model to tune (Submit) or to look up (QueryModel).
struct JobSpec {
  std::string model_name;  ///< shown in listings ("model.onnx" when empty)
  target::Target target = target::Target::kCpu;
  int64_t budget = 0;  ///< trials for the whole job (Submit only)
  std::string team;    ///< "default" when empty
  onnx::ShapeOverrides shapes;
  int rounds = 0;         ///< candidates per search round; 0: the server's default
  std::string scheduler;  ///< "gradient" (also when empty) | "even"
};

/// One intrinsic mapping of a task: its verdict and, once its space exists, its progress.
struct MappingInfo {
  std::string name;
  std::string hardware;  ///< the hardware class whose spaces these are (HardwareClassOf)
  bool applies = false;
  std::string reason;
  int64_t trials = 0;
  int64_t in_flight = 0;
  double best_seconds = 0;
  int64_t considered = 0;  ///< schedules before pruning
  int64_t admitted = 0;    ///< after pruning
  std::map<std::string, int64_t> pruned_by_rule;
};

/// A task of a job as users see it.
struct TaskInfo {
  std::string task_id;
  std::string workload_key;
  std::string kind;
  std::string description;
  int weight = 1;    ///< runs per model evaluation, counting every plan alternative's
  int64_t runs = 0;  ///< runs per model evaluation in the chosen plan (0: not chosen)
  int64_t trials_allotted = 0;
  int64_t trials_done = 0;
  int64_t trials_failed = 0;
  double best_seconds = 0;  ///< 0 when none yet
  double eta_seconds = -1;  ///< -1 when unknown
  db::TaskState state = db::TaskState::kPending;
  double gflops = 0;
  double expected_gain_seconds = 0;
  std::vector<MappingInfo> mappings;
  int64_t pruned = 0;  ///< schedules pruned over every mapping
};

/// A job as users see it.
/// One plan choice of a job (onnx::PlanChoice) costed with its tasks' best measurements.
struct PlanChoiceInfo {
  std::string description;
  int instances = 0;
  struct Alternative {
    std::string name;
    double seconds = 0;     ///< per region: the sum of its workloads' best latencies
    bool measured = false;  ///< every workload of it has a measurement (else seconds is partial)
    bool chosen = false;
    /// Too far behind the chosen alternative to draw more tuning budget (not in play,
    /// onnx::PlanCost::in_play).
    bool left_behind = false;
    std::vector<std::pair<std::string, int>> tasks;  ///< task id and runs per region
  };
  std::vector<Alternative> alternatives;
};

struct JobInfo {
  std::string job_id;
  std::string team;
  std::string model_name;
  target::Target target = target::Target::kCpu;
  db::JobState state = db::JobState::kRunning;
  std::string error;
  int64_t budget = 0;
  int64_t trials_done = 0;
  int64_t trials_failed = 0;
  double created_unix_seconds = 0;
  double updated_unix_seconds = 0;
  double eta_seconds = -1;
  /// Sum of runs x best latency over the tasks of the chosen plan.
  double estimated_latency_seconds = 0;
  std::vector<TaskInfo> tasks;
  std::vector<PlanChoiceInfo> plan;  ///< regions the plan may compute in more than one way
  /// Nodes that run as fallback steps (not tuned): op, node, why.
  std::vector<graph::FallbackNode> fallbacks;
  std::string graph_check;  ///< the check of the graph passes at submit, in words
  std::string scheduler;
  int round_size = 0;
  std::vector<std::string> decisions;  ///< the scheduler's latest decisions, newest last
};

/// The best (or one of the best) measured schedules of a workload.
struct ScheduleRecordInfo {
  std::string workload_key;
  std::string description;
  target::Target target = target::Target::kCpu;
  std::string trace;
  std::string program_hash;
  double median_seconds = 0, min_seconds = 0, max_seconds = 0, stddev_seconds = 0;
  int repeats = 0;
  int measurements = 1;  ///< of this trace, averaged into median_seconds (db::MeasurementRow)
  double gflops = 0;
  std::string worker_id;
  std::string hardware;
  double measured_unix_seconds = 0;
  int weight = 0;      ///< occurrences in the queried model
  bool tuned = false;  ///< false: nothing measured yet for this workload and target
};

struct QueryResult {
  std::vector<ScheduleRecordInfo> records;
  double estimated_latency_seconds = 0;
};

/// What an export compiles for (gtco.v1.ExportSpec).
struct ExportTarget {
  std::vector<std::string> cpu_features;  ///< empty: the features of level `isa`
  std::string cpu_model;
  int cores = 1;
  std::string isa;
  bool require_tuned = false;
  std::string cuda_arch;  ///< CUDA: "sm_90", ...; "" = that of the farm's CUDA workers
  bool verify = true;     ///< the whole-model check (ExportOptions::verify)
  /// The user's check inputs: graph input name -> .npy bytes.
  std::vector<std::pair<std::string, std::string>> verify_inputs;
};

/// A node of an export that runs as a fallback step, and its time in the check's profiled run.
struct ExportedFallback {
  std::string op_type, node, reason;
  double seconds = 0;
};

/// An exported artifact and what went into it.
struct ExportOutcome {
  std::string artifact;
  int kernels = 0, tuned = 0;
  std::vector<std::string> warnings;
  std::string cpu;
  std::string tune_cpu;  ///< the CPU the code is scheduled for ("": the level's generic tuning)
  double estimated_latency_seconds = 0;
  runtime::VerificationSpec verification;
  std::vector<ExportedFallback> fallbacks;
  double run_seconds = 0;  ///< the artifact's run in the check (0: not timed)
};

/// The hardware class of a worker: its target and hardware summary (CPU model, cores, vector
/// features; GPU model, SMs, memory). A task gets one set of search spaces per class of the
/// workers measuring it, pruned for that class, and its candidates go only to workers of it.
std::string HardwareClassOf(const target::HardwareInfo& hardware);
/// The class of a stored measurement (target and the `hardware` summary recorded with it).
std::string HardwareClassOf(target::Target target, const std::string& hardware_summary);

/// A measurement with its workload: what `records export` writes and `records import` merges.
struct PortableRecord {
  db::WorkloadRow workload;
  db::MeasurementRow measurement;  ///< task_id is this database's own: not carried over
};

/// What an import stored.
struct ImportSummary {
  int64_t received = 0, added = 0, already_present = 0;
  std::vector<std::string> job_ids;  ///< one import job per target that got new records
};

/// A worker introducing itself.
struct WorkerHello {
  std::string hostname;
  target::HardwareInfo hardware;
  std::string hardware_text;  ///< the hardware as the worker reported it (stored as is)
  std::string worker_id;      ///< re-registration keeps the id; empty: a new id
  /// Program languages it runs besides its target's own; "trace": it replays workload + trace.
  std::vector<std::string> languages;
};

/// What a registered worker is told.
struct WorkerTerms {
  std::string worker_id;
  int lease_seconds = 0;
  int heartbeat_seconds = 0;
};

/// A candidate program handed to a worker under a lease.
struct LeasedCandidate {
  std::string candidate_id;
  std::string task_id;
  std::string workload_key;
  std::string workload;  ///< ir::Workload canonical text
  std::string trace;
  target::Target target = target::Target::kCpu;
  /// "llvm-bc" | "cuda-c" | "trace" (no program: the worker replays `workload` + `trace`)
  std::string language;
  std::string program;
  std::string entry;
  std::string program_hash;
  schedule::CudaPlan launch;  ///< CUDA: how to launch `entry`
  int64_t lease_deadline_unix_ms = 0;
};

/// Why a trial failed. The values are gtco.v1.ErrorKind's.
enum class TrialError {
  kNone = 0,
  kCompile = 1,
  kRuntime = 2,
  kTimeout = 3,
  kWrongResult = 4,
  kCrash = 5
};

/// "compile" | "runtime" | "timeout" | "wrong_result" | "crash"; "" for kNone.
const char* TrialErrorName(TrialError error);

/// A worker's measurement of one candidate.
struct TrialResult {
  std::string candidate_id;
  bool ok = false;
  TrialError error_kind = TrialError::kNone;
  std::string error;
  double median_seconds = 0, min_seconds = 0, max_seconds = 0, stddev_seconds = 0;
  int repeats = 0;
  double compile_seconds = 0;
  bool verified = false;  ///< the output matched the reference before timing
};

/// What became of a worker's report.
struct ReportTally {
  int stored = 0;
  int duplicates = 0;
  int rejected = 0;
};

}  // namespace gtco::server
